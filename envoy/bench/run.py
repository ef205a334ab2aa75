"""The Envoy benchmark: toolseal side by side with no filter, the buffer filter alone and
Envoy's native MCP filter + RBAC, in one run, on loopback; calls and lists of both MCP eras
(2025 sessions and 2026-07-28 requests).

Usage (from the repository root, after scripts/setup-python.sh and scripts/setup-bench.sh):
    .venv/bin/python envoy/bench/run.py [--duration 5] [--repeat 3] [--connections 4]
        [--only call_json,list100_sse] [--json target/bench/envoy.json]
        [--variant LABEL=PATH.wasm ...] [--perf]
    .venv/bin/python envoy/bench/run.py --startup-only --repeat 7 --variant before=PATH.wasm

Design decision: the four front Envoys (``--concurrency 2`` each) and one canned upstream
Envoy run at the same time and the wrk runs are interleaved (repetition, then workload, then
configuration), so a burst of load from elsewhere on the machine hits every configuration
alike; each figure is the median over repetitions, and every ratio is to the router-only
configuration of the same run. Envoy CPU per request is the front Envoy's utime+stime delta
(/proc/PID/stat) divided by the requests it completed, which on a shared machine is far
steadier than throughput. Every run is checked: all answers 2xx, and toolseal's own counters
show the path under test (lists verified, calls allowed), so a benchmark cannot silently
measure refusals.

With ``--perf`` (Linux ``perf``), each run of a Wasm configuration is also sampled with the
software CPU clock (no hardware counters needed, so it works in a VM), and the samples that
fall in V8's compiled code (``[JIT]``: the module's functions, nothing of Envoy's) give the
guest's microseconds per request: the share of a request that differs between two modules,
without the kernel's and Envoy's own noise around it. The other samples are shown beside it
(Envoy's own code, the kernel, the rest), so that two modules can be compared part by part.
Sampling costs CPU itself, so the CPU columns of such a run are higher than without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

import envoyctl  # noqa: E402
from envoyctl import EnvoyError, free_port  # noqa: E402

import configs  # noqa: E402
import workload  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
FLOOR_WASM = Path("target/wasm32-wasip1/wasm/toolseal_bench_floor.wasm")
LIST_TOOLS = 100
# workload name -> (upstream path, request body, response content type, response body, MCP
# request headers). The *_2026 workloads are the same call and list in MCP 2026-07-28 form (no
# session; revision, method and tool name in headers and _meta; resultType, cache hint), so
# the two eras are measured side by side in the same run.
CALL_2025 = workload.request_headers("2025", "tools/call")
LIST_2025 = workload.request_headers("2025", "tools/list")
WORKLOADS = {
    "call_json": ("/call/json", workload.call_request(), "application/json", workload.call_response(),
                  CALL_2025),
    "call_sse": ("/call/sse", workload.call_request(), "text/event-stream",
                 workload.sse(workload.call_response()), CALL_2025),
    "list100_json": ("/list/json", workload.list_request(), "application/json",
                     workload.list_response(LIST_TOOLS), LIST_2025),
    "list100_sse": ("/list/sse", workload.list_request(), "text/event-stream",
                    workload.sse(workload.list_response(LIST_TOOLS)), LIST_2025),
    "call_json_2026": ("/call/json2026", workload.modern_call_request(), "application/json",
                       workload.modern_call_response(), workload.request_headers("2026", "tools/call")),
    "list100_json_2026": ("/list/json2026", workload.modern_list_request(), "application/json",
                          workload.modern_list_response(LIST_TOOLS),
                          workload.request_headers("2026", "tools/list")),
}
# The cost curve over the number of tools. A server serves one tool set, so each size has its
# own route, i.e. its own toolseal server id (configs.front: /list<N>/ is server "bench<N>").
for n in (10, 1000):
    WORKLOADS[f"list{n}_json"] = (f"/list{n}/json", workload.list_request(), "application/json",
                                  workload.list_response(n), LIST_2025)
# Every server route's 2025 session opens as a client opens it: an initialize (answered with
# the session id) and the notification that follows, at these paths under the route's prefix.
# toolseal keeps what a session's initialize declared per server; a session whose initialize
# it never saw has a view that cannot be told, and its lists are withheld.
INITIALIZE_PATH = "initialize"
INITIALIZED_PATH = "initialized"
# toolseal counter that must grow by one per request of a workload (wasmcustom.* in /stats).
EXPECTED_COUNTER = {"call": "wasmcustom.toolseal_calls_allowed", "list": "wasmcustom.toolseal_lists_verified"}


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process (all threads), in clock ticks."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(") ", 1)[1].split()
    return int(fields[11]) + int(fields[12])


PERF_HZ = 4000


# Where a sampled request's CPU goes, by the object its samples fall in: V8's compiled code
# (the module's functions), Envoy's own code, the kernel, and everything else (libc, vdso).
SAMPLE_PARTS = ("jit", "envoy", "kernel", "other")


def samples_by_part(perf_data: Path) -> dict[str, int]:
    """The samples of a `perf record` file, per part of :data:`SAMPLE_PARTS`."""
    report = subprocess.run(["perf", "report", "-i", str(perf_data), "--sort", "dso", "--stdio",
                             "-F", "sample,dso", "-q"], capture_output=True, text=True, timeout=120,
                            check=False)
    parts = dict.fromkeys(SAMPLE_PARTS, 0)
    for line in report.stdout.splitlines():
        fields = line.split(None, 1)
        if len(fields) != 2 or not fields[0].isdigit():
            continue
        dso = fields[1].strip()
        part = ("jit" if "[JIT]" in dso else "kernel" if "kernel" in dso
                else "envoy" if dso == "envoy" else "other")
        parts[part] += int(fields[0])
    return parts


def wrk(url: str, body_file: Path, headers_file: Path, duration: float,
        connections: int) -> dict[str, int]:
    """One bounded wrk run; the parsed summary line of post.lua."""
    env = dict(os.environ, BENCH_BODY=str(body_file), BENCH_HEADERS=str(headers_file))
    command = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", "--timeout", "5s",
               "-s", str(BENCH_DIR / "post.lua"), url]
    result = subprocess.run(command, capture_output=True, text=True, env=env,
                            timeout=duration + 30, check=False)
    for line in result.stdout.splitlines():
        if line.startswith("BENCH "):
            return {k: int(v) for k, v in (item.split("=") for item in line.split()[1:])}
    raise EnvoyError(f"wrk printed no summary: {result.stdout[-500:]} {result.stderr[-500:]}")


def check_toolseal_counters(name: str, before: dict[str, int], after: dict[str, int],
                            completed: int, connections: int) -> None:
    """The run measured the path it claims: no refusal or filtering at all, and the
    expected counter grew once per request (up to the requests still in flight when the
    statistics were read)."""
    grown = {k: after.get(k, 0) - before.get(k, 0) for k in after if k.startswith("wasmcustom.toolseal_")}
    wrong = {k: v for k, v in grown.items() if v and k not in EXPECTED_COUNTER.values()}
    if wrong:
        raise EnvoyError(f"toolseal {name}: unexpected counters moved: {wrong}")
    counter = EXPECTED_COUNTER["call" if name.startswith("call") else "list"]
    if abs(grown.get(counter, 0) - completed) > connections:
        raise EnvoyError(f"toolseal {name}: {counter} grew by {grown.get(counter, 0)} for {completed} requests")


def post(url: str, body: str, headers: dict[str, str]) -> tuple[int, str]:
    """One POST with the workload's headers (setup and checks)."""
    import urllib.request
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        return response.status, response.read().decode()


def open_session(name: str, route_url: str) -> None:
    """Opens the workloads' 2025 session on one server route: ``initialize`` (no session id
    yet; the answer names it), then ``notifications/initialized`` in the session."""
    status, body = post(route_url + INITIALIZE_PATH, workload.initialize_request(),
                        {"Mcp-Protocol-Version": "2025-06-18"})
    if status != 200 or body != workload.initialize_response():
        raise EnvoyError(f"{name}: {route_url}{INITIALIZE_PATH} answered {status} with an unexpected body")
    status, _ = post(route_url + INITIALIZED_PATH, workload.initialized_notification(),
                     workload.request_headers("2025", "notifications/initialized"))
    if status != 202:
        raise EnvoyError(f"{name}: {route_url}{INITIALIZED_PATH} answered {status}, not 202")


class Bench:
    """The running Envoys of one benchmark run; stops every one of them on exit."""

    def __init__(self, workdir: Path, names: list[str], wasm: dict[str, Path], floor_wasm: Path | None) -> None:
        self.workdir = workdir
        self.names = names
        self.wasm = wasm
        self.floor_wasm = floor_wasm
        self.fronts: dict[str, envoyctl.EnvoyProcess] = {}
        self.upstream: envoyctl.EnvoyProcess | None = None

    def __enter__(self) -> "Bench":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops every Envoy this run started, by PID."""
        for process in [*self.fronts.values(), self.upstream]:
            if process is not None:
                process.stop()

    def _start(self) -> None:
        bodies = {}
        for name, (path, request, content_type, response, headers) in WORKLOADS.items():
            (self.workdir / f"{name}.request").write_text(request)
            (self.workdir / f"{name}.headers").write_text(
                "".join(f"{key}: {value}\n" for key, value in headers.items()))
            response_file = self.workdir / f"{name}.response"
            response_file.write_text(response)
            bodies[path] = (content_type, response_file, "Mcp-Session-Id" in headers)
        initialize_file = self.workdir / "initialize.response"
        initialize_file.write_text(workload.initialize_response())
        prefixes = configs.server_prefixes().values()
        for prefix in prefixes:
            bodies[prefix + INITIALIZE_PATH] = ("application/json", initialize_file, True)
        accepted = [prefix + INITIALIZED_PATH for prefix in prefixes]
        up_port, up_admin = free_port(), free_port()
        self.upstream = envoyctl.start(
            configs.upstream(listen_port=up_port, admin_port=up_admin, bodies=bodies, accepted=accepted),
            self.workdir / "upstream", admin_port=up_admin, listen_port=up_port, concurrency=1)
        allowed = [tool["name"] for tool in workload.tools(LIST_TOOLS)]
        for name in self.names:
            port, admin = free_port(), free_port()
            text = configs.front(name, listen_port=port, admin_port=admin, upstream_port=up_port,
                                 wasm=self.wasm.get(name, self.wasm["toolseal"]), allowed_tools=allowed,
                                 floor_wasm=self.floor_wasm)
            self.fronts[name] = envoyctl.start(text, self.workdir / name, admin_port=admin,
                                               listen_port=port, concurrency=2)
        for name, front in self.fronts.items():
            for prefix in configs.server_prefixes().values():
                open_session(name, front.url + prefix)
            # toolseal trusts the first list (discovery posture): establish the baseline so
            # that calls are checked against it, and check every path answers.
            lists_first = sorted(WORKLOADS.values(), key=lambda w: not w[0].startswith("/list"))
            for path, request, _, response, headers in lists_first:
                status, body = post(front.url + path, request, headers)
                if status != 200 or body != response:
                    raise EnvoyError(f"{name}: {path} answered {status} with an unexpected body")

    def run(self, config: str, name: str, duration: float, connections: int,
            perf: bool = False) -> dict[str, float]:
        """One measured run of workload ``name`` against configuration ``config``; with
        ``perf``, a Wasm configuration's run is sampled too (see the module documentation)."""
        front = self.fronts[config]
        path = WORKLOADS[name][0]
        sampled = perf and config in self.wasm_configs()
        perf_data = self.workdir / f"perf.{config}.{name}.data"
        recorder = None
        if sampled:
            recorder = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_HZ),
                                         "-p", str(front.pid), "-o", str(perf_data)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
        try:
            stats_before = front.stats()
            cpu_before = cpu_ticks(front.pid)
            summary = wrk(front.url + path, self.workdir / f"{name}.request",
                          self.workdir / f"{name}.headers", duration, connections)
            cpu_after = cpu_ticks(front.pid)
            stats_after = front.stats()
        finally:
            if recorder is not None:
                recorder.send_signal(2)
                try:
                    recorder.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    recorder.kill()
                    recorder.wait()
        completed = stats_after.get("http.mcp.downstream_rq_2xx", 0) - stats_before.get("http.mcp.downstream_rq_2xx", 0)
        if summary["errors"] or summary["non2xx"] or completed <= 0:
            raise EnvoyError(f"{config} {name}: {summary['errors']} errors, {summary['non2xx']} non-2xx, "
                             f"{completed} 2xx")
        if config.startswith("toolseal"):
            check_toolseal_counters(name, stats_before, stats_after, completed, connections)
        cpu_seconds = (cpu_after - cpu_before) / CLK_TCK
        measured = {
            "requests": completed,
            "rps": completed / (summary["duration_us"] / 1e6),
            "cpu_us_per_request": cpu_seconds * 1e6 / completed,
            "p50_us": summary["p50_us"],
            "p99_us": summary["p99_us"],
        }
        if sampled:
            # The samples span the whole recording, a little longer than wrk's run: the few
            # requests outside it are none (wrk is the only client).
            for part, samples in samples_by_part(perf_data).items():
                measured[f"{part}_us_per_request"] = samples * 1e6 / PERF_HZ / completed
            perf_data.unlink(missing_ok=True)
        return measured

    def wasm_configs(self) -> set[str]:
        """The configurations whose front Envoy runs a Wasm module."""
        return {name for name in self.names if name.startswith("toolseal") or name in configs.FLOORS}


def startup_times(modules: dict[str, Path], workdir: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Median seconds from start to admin /ready (``ready_s``) and the Envoy CPU time spent by
    then (``cpu_s``: V8 compiles the module on the main thread and its own worker threads,
    so on a loaded machine the CPU time is the steadier figure), without the plugin and with
    each module."""
    keys = {"without_plugin": None, **{f"with_plugin@{label}" if label != "toolseal" else "with_plugin": path
                                       for label, path in modules.items()}}
    ready: dict[str, list[float]] = {key: [] for key in keys}
    cpu: dict[str, list[float]] = {key: [] for key in keys}
    for i in range(repeat):
        for key, module in keys.items():
            port, admin = free_port(), free_port()
            text = envoyctl.render(listen_port=port, admin_port=admin,
                                   wasm_path=module or modules["toolseal"],
                                   routes=[envoyctl.McpRoute(configs.SERVER_ID, free_port())],
                                   with_plugin=module is not None, admin_api_port=0)
            process = envoyctl.start(text, workdir / f"startup-{key}-{i}", admin_port=admin,
                                     listen_port=port, concurrency=2)
            try:
                cpu[key].append(cpu_ticks(process.pid) / CLK_TCK)
            finally:
                process.stop()
            ready[key].append(process.startup_seconds)
    return {key: {"ready_s": statistics.median(ready[key]), "cpu_s": statistics.median(cpu[key])}
            for key in keys}


def median_runs(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per-key median over repetitions."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def print_table(results: dict[str, dict[str, dict[str, float]]], names: list[str]) -> None:
    """One block per workload; ratios to the router-only configuration."""
    sampled = any("jit_us_per_request" in m for per in results.values() for m in per.values())
    print(f"{'workload':<18} {'config':<16} {'req/s':>8} {'CPU µs/req':>11} {'CPU ×':>7} "
          f"{'p50 µs':>8} {'p50 ×':>7} {'p99 µs':>8} {'p99 ×':>7}"
          + (f" {'guest µs':>9} {'envoy µs':>9} {'kernel µs':>10} {'other µs':>9}" if sampled else ""))
    for name, per_config in results.items():
        base = per_config.get("router")
        for config in names:
            m = per_config[config]
            cpu_x = m["cpu_us_per_request"] / base["cpu_us_per_request"] if base else float("nan")
            p50_x = m["p50_us"] / base["p50_us"] if base else float("nan")
            p99_x = m["p99_us"] / base["p99_us"] if base else float("nan")
            guest = (f" {m['jit_us_per_request']:>9.1f} {m['envoy_us_per_request']:>9.1f}"
                     f" {m['kernel_us_per_request']:>10.1f} {m['other_us_per_request']:>9.1f}"
                     if "jit_us_per_request" in m else
                     f" {'-':>9} {'-':>9} {'-':>10} {'-':>9}" if sampled else "")
            print(f"{name:<18} {config:<16} {m['rps']:>8.0f} {m['cpu_us_per_request']:>11.1f} {cpu_x:>6.2f}x "
                  f"{m['p50_us']:>8.0f} {p50_x:>6.2f}x {m['p99_us']:>8.0f} {p99_x:>6.2f}x{guest}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point (median)")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    parser.add_argument("--configs", default=",".join(configs.CONFIGS))
    parser.add_argument("--json", type=Path, default=envoyctl.REPO / "target" / "bench" / "envoy.json")
    parser.add_argument("--no-startup", action="store_true", help="skip the startup-time runs")
    parser.add_argument("--startup-only", action="store_true",
                        help="only the startup-time runs (--repeat starts per module, interleaved)")
    parser.add_argument("--floor-wasm", type=Path, default=envoyctl.REPO / FLOOR_WASM,
                        help="the floor filter's .wasm (configs wasm_empty, wasm_read)")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL=PATH",
                        help="also run toolseal with another .wasm, as configuration toolseal@LABEL")
    parser.add_argument("--perf", action="store_true",
                        help="also sample each Wasm configuration's runs with `perf record` and "
                             "print the guest's (V8 compiled code) µs per request; the sampling "
                             "adds CPU to every column")
    args = parser.parse_args(argv)
    if args.perf and shutil.which("perf") is None:
        raise EnvoyError("--perf needs Linux perf (the linux-perf package) on PATH")
    names = [c for c in args.configs.split(",") if c]
    if "router" not in names:
        names.insert(0, "router")
    selected = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    wasm = envoyctl.wasm_file().resolve()
    modules = {"toolseal": wasm}
    for variant in args.variant:
        label, _, path = variant.partition("=")
        if not label or not Path(path).is_file():
            raise EnvoyError(f"--variant {variant!r}: expected LABEL=PATH of an existing .wasm")
        modules[f"toolseal@{label}"] = Path(path).resolve()
        names.append(f"toolseal@{label}")
    if args.startup_only:
        with tempfile.TemporaryDirectory(prefix="toolseal-bench-") as tmp:
            startup = startup_times(modules, Path(tmp), args.repeat)
        for name, path in modules.items():
            print(f".wasm {name}: {path.stat().st_size} bytes")
        for key, times in startup.items():
            print(f"startup to /ready, {key}: {times['ready_s'] * 1000:.0f} ms, "
                  f"Envoy CPU by then {times['cpu_s'] * 1000:.0f} ms")
        return 0
    floor_wasm = None
    if any(name in configs.FLOORS for name in names):
        if not args.floor_wasm.is_file():
            raise EnvoyError(f"{args.floor_wasm} does not exist: build it with `cargo build -p "
                             "toolseal-bench-floor --target wasm32-wasip1 --profile wasm`")
        floor_wasm = args.floor_wasm.resolve()
    results: dict[str, dict[str, list[dict[str, float]]]] = {w: {c: [] for c in names} for w in selected}
    with tempfile.TemporaryDirectory(prefix="toolseal-bench-") as tmp:
        workdir = Path(tmp)
        with Bench(workdir, names, modules, floor_wasm) as bench:
            for rep in range(args.repeat):
                # Each repetition starts one configuration later, so that no configuration
                # always runs right after the same one (the host's state carries over).
                shift = rep % len(names)
                order = names[shift:] + names[:shift]
                for name in selected:
                    for config in order:
                        results[name][config].append(
                            bench.run(config, name, args.duration, args.connections, args.perf))
                print(f"repetition {rep + 1}/{args.repeat} done", file=sys.stderr)
        startup = {} if args.no_startup else startup_times(modules, workdir, max(args.repeat, 3))
    medians = {name: {config: median_runs(runs) for config, runs in per.items()} for name, per in results.items()}
    print(f"Envoy {args.duration:g} s per run, {args.repeat} runs per point (median), "
          f"{args.connections} connections, front --concurrency 2, upstream: canned Envoy")
    print_table(medians, names)
    wasm_bytes = wasm.stat().st_size
    print(f".wasm: {wasm_bytes} bytes" + "".join(
        f", {name}: {path.stat().st_size} bytes" for name, path in modules.items() if name != "toolseal"))
    for key, times in startup.items():
        print(f"startup to /ready, {key}: {times['ready_s'] * 1000:.0f} ms, "
              f"Envoy CPU by then {times['cpu_s'] * 1000:.0f} ms")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "duration_s": args.duration, "repeat": args.repeat, "connections": args.connections,
        "results": medians, "runs": results, "startup_s": startup, "wasm_bytes": wasm_bytes,
    }, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except EnvoyError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
