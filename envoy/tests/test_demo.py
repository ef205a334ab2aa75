"""The demo is part of the product (README's first command): it must keep telling the truth.

Runs envoy/demo.py end to end as a user would and checks its exit status and the claims it
prints (the single Envoy's story, then the fleet's: two Envoys on one etcd); a broken plugin
must make it fail (exit 1) and still leave no process behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parents[1] / "demo.py"


def _run_demo(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True,
                          timeout=180, env=env, check=False)


def test_demo_runs_every_step(wasm: Any) -> None:
    result = _run_demo(dict(os.environ))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for claim in (
        "ok: three tools served",
        "ok: no tools served, schema_status changed (fail closed)",
        "ok: error_code SCHEMA_CHANGED, required_action admin_review, side_effect_started false",
        "ok: Envoy opened no upstream request for it (cluster upstream_rq_total unchanged)",
        "ok: approving the rug pull's fingerprint is refused (409): the live set moved since",
        "ok: error_code POLICY_DENIED, required_action none, side_effect_started false",
        "ok: every refusal is in the audit trail, in order",
        "ok: no tools served, sent with ttlMs 0 and cacheScope private (no cache keeps it after an approval)",
        "ok: the 2026-07-28 agent sees error_code SCHEMA_CHANGED as structured content",
        "ok: the server never saw the call (its request log and upstream_rq_total unchanged)",
        # The fleet acts: two Envoys, one etcd.
        "ok: A trusted the first list and wrote the baseline to etcd",
        "ok: B serves the same tools from the fleet's record, without a baseline of its own",
        "ok: the call never left B (the server's request log and every Envoy's upstream_rq_total unchanged)",
        "ok: the restarted A serves no tools: schema_status changed",
        "ok: the restarted A made no new baseline (no schema.baselined in its log)",
        "ok: the quarantine is in etcd: every instance, and every restart, holds the server",
        "ok: the fleet's server executed no call at all",
    ):
        assert claim in out, out
    assert "ok: B, which never saw the new tools, holds the server too" in out, out
    assert out.rstrip().endswith("All 40 checks held. Everything started was stopped.")


def test_demo_fails_loudly_on_a_broken_plugin(tmp_path: Path) -> None:
    broken = tmp_path / "broken.wasm"
    broken.write_bytes(b"\x00asm not a module")
    result = _run_demo({**os.environ, "TOOLSEAL_WASM": str(broken)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "DEMO FAILED at step 0: Envoy exited with 1" in result.stderr
    workdir = result.stderr.split("logs: ")[-1].strip()
    assert workdir.startswith("/") and "toolseal-demo-" in workdir, result.stderr
    # Every process the demo starts has its work directory on its command line.
    leftovers = subprocess.run(["pgrep", "-f", workdir], capture_output=True, text=True, check=False)
    assert leftovers.stdout.split() == [], f"processes left behind in {workdir}"
