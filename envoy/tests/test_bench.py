"""The Envoy benchmark (envoy/bench/run.py, step 3 of scripts/bench.sh), once, short: every
workload through toolseal and through the router alone, so that a change to the plugin or to
the workloads that breaks the benchmark's own checks (every answer 2xx and the expected body,
toolseal's counters showing the path under test) fails here rather than on the next
benchmark day. It broke that way once, unnoticed: its 2025 session had no initialize.

Nothing here judges speed: wall-clock figures on a shared machine are noise at one second per
run. The test asserts that the run completed its checks and reported a ratio to the router
for every workload.

Load comes from wrk (scripts/setup-bench.sh); without it the test skips, unless
TOOLSEAL_REQUIRE_BENCH=1 (scripts/test.sh), where it fails.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import envoyctl

BENCH_DIR = envoyctl.REPO / "envoy" / "bench"
sys.path.insert(0, str(BENCH_DIR))

import run as bench_run  # noqa: E402  (envoy/bench/run.py: its workload names)

RUN = BENCH_DIR / "run.py"
CONFIGS = ("router", "toolseal")
# The whole run is 16 one-second wrk runs plus starting three Envoys.
RUN_TIMEOUT_SECONDS = 150
# One table row: workload, config, req/s, CPU µs/req, CPU ×, p50 µs, p50 ×, p99 µs, p99 ×.
ROW = re.compile(r"^(\S+)\s+(\S+)\s+\d+\s+[\d.]+\s+([\d.]+|nan)x\s+\d+\s+([\d.]+|nan)x\s+\d+\s+([\d.]+|nan)x$")


def wrk() -> str:
    """The wrk binary, or skip (fail under TOOLSEAL_REQUIRE_BENCH=1)."""
    path = shutil.which("wrk")
    if path is None:
        message = "wrk is not installed: run scripts/setup-bench.sh"
        if os.environ.get("TOOLSEAL_REQUIRE_BENCH") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_bench(tmp_path: Path, report: Path) -> subprocess.CompletedProcess:
    """run.py with one repetition of one second per point; its Envoys' work directories are
    under ``tmp_path`` (TMPDIR). On a timeout it is interrupted (it stops its Envoys on the
    way out), then killed."""
    command = [sys.executable, str(RUN), "--duration", "1", "--repeat", "1", "--no-startup",
               "--configs", ",".join(CONFIGS), "--json", str(report)]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with subprocess.Popen(command, cwd=envoyctl.REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        try:
            out, err = process.communicate(timeout=RUN_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                out, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
            pytest.fail(f"run.py took over {RUN_TIMEOUT_SECONDS} s: {err[-2000:]}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60, method="signal")
def test_the_envoy_benchmark_runs_its_checks_and_reports_every_ratio(wasm: Path, tmp_path: Path) -> None:
    wrk()
    report = tmp_path / "envoy.json"
    result = run_bench(tmp_path, report)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]

    # Every Envoy the run started was stopped (each has its work directory on its command line).
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False)
    assert leftovers.stdout.split() == [], f"processes left behind in {tmp_path}"

    workloads = set(bench_run.WORKLOADS)
    results = json.loads(report.read_text())["results"]
    assert set(results) == workloads
    for name, per_config in results.items():
        assert set(per_config) == set(CONFIGS), name
        for config, figures in per_config.items():
            assert figures["requests"] > 0, (name, config)

    rows = [m.groups() for m in map(ROW.match, result.stdout.splitlines()) if m]
    assert {(row[0], row[1]) for row in rows} == {(w, c) for w in workloads for c in CONFIGS}, result.stdout
    for workload, config, *ratios in rows:
        assert all(math.isfinite(float(r)) and float(r) > 0 for r in ratios), (workload, config, ratios)


V8_PROFILE = BENCH_DIR / "v8_profile.mjs"


@pytest.mark.timeout(120, method="signal")
@pytest.mark.parametrize(("row", "chunk", "declared"), [
    ("list100", 0, False), ("call", 0, False), ("list100", 4096, False),
    ("list100_2026", 4096, True)])
def test_the_v8_profile_harness_replays_the_bench_rows_through_the_module(
        wasm: Path, tmp_path: Path, row: str, chunk: int, declared: bool) -> None:
    """envoy/bench/v8_profile.mjs (the module in Node's V8, outside Envoy) replays a bench row
    through the very module under test and checks each measured exchange (passed, its body
    unchanged), under the profiler too, and its summary reads the profile: a change of the
    plugin's host calls or start sequence that breaks the harness fails here. With `--chunk`,
    the response arrives in callbacks of that many bytes (a held body read as it arrives, in
    V8's SIMD lanes), as Envoy may deliver it; with `--declared`, the answer carries its
    Content-Length, as envoy/bench's upstream sends it."""
    from conformance_suite import node_binary
    node = str(node_binary())
    run = [node, "--cpu-prof", "--cpu-prof-dir", str(tmp_path), str(V8_PROFILE),
           "--wasm", str(wasm), "--row", row, "--warmup", "20", "--iterations", "200",
           "--batches", "4", "--chunk", str(chunk), *(["--declared"] if declared else [])]
    result = subprocess.run(run, capture_output=True, text=True, timeout=100, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "each checked PassedUnchanged" in result.stdout, result.stdout
    profiles = sorted(tmp_path.glob("*.cpuprofile"))
    assert len(profiles) == 1, profiles
    summary = subprocess.run([node, str(V8_PROFILE), "--summarize", str(profiles[0]), "--top", "5"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert summary.returncode == 0, summary.stderr[-2000:]
    assert summary.stdout.strip(), "the summary names the functions sampled"
