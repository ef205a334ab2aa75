"""What the fleet store costs, measured with real components (docs/fleet.md, "What it costs").

Starts one etcd, the rug-pull server (SDK 1.x, JSON responses) behind ``SERVERS`` route names
(each route is a server id of its own, so each gives one first contact and one drift), two
Envoys of two workers with the store (A, B) and one without (P, per-process state, the
comparison). Then, per decision, through raw MCP requests on an initialized 2025 session:

- round trips: Envoy's own count of requests to the store cluster
  (``cluster.toolseal_store.upstream_rq_total``), toolseal's ``toolseal_store_round_trips``,
  and what etcd says it served (gRPC ``Range``/``Txn`` counters from its ``/metrics``);
- latency of the ``tools/list`` that makes the decision, with the store and without;
- how long a closure made on A takes to show on B (B's admin view polled every 5 ms);
- keys and bytes in etcd for one server seen through 16 views (a header view source);
- etcd's own idle load: what the instances' background sync asks per second.

Run it twice: ``--sync-ms 600000`` (no background sync during the run: each decision's own
round trips, exactly) and ``--sync-ms 200`` (how fast closures travel, the sync's load).

Usage: .venv/bin/python envoy/bench/fleet_store.py [--servers N] [--sync-ms MS] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ENVOY_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ENVOY_DIR))
sys.path.insert(0, str(ENVOY_DIR / "testserver"))

from fleet_stack import FleetEnvoy, StoreFleet, fleet_plugin_config  # noqa: E402
from stack import Upstream  # noqa: E402
from surface import WEATHER_HONEST  # noqa: E402

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
VERSION = "2025-11-25"
VIEWS_SERVER = "views16"
# With a longer sync the closures' way to B is not measured (a run with a sync that never
# fires in the run counts each decision's own round trips, without the background sync's).
PROPAGATION_MAX_SYNC_MS = 5000


class RawSession:
    """One initialized 2025-11-25 session through one Envoy, on a kept-alive connection."""

    def __init__(self, http: httpx.Client, url: str, headers: dict[str, str] | None = None) -> None:
        self.http, self.url, self.headers = http, url, dict(headers or {})
        answer = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "fleet-bench", "version": "1"}}})
        self.headers |= {"mcp-session-id": answer.headers["mcp-session-id"],
                         "mcp-protocol-version": VERSION}
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ids = 1

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        response = self.http.post(self.url, json=body, headers=HEADERS | self.headers)
        response.raise_for_status()
        return response

    def list_tools(self) -> tuple[float, dict[str, Any]]:
        """Seconds the tools/list took end to end, and its result."""
        self.ids += 1
        began = time.perf_counter()
        response = self._post({"jsonrpc": "2.0", "id": self.ids, "method": "tools/list"})
        return time.perf_counter() - began, response.json()["result"]


def store_requests(member: FleetEnvoy) -> int:
    """Envoy's own count of requests it sent to etcd."""
    return member.envoy.stats().get("cluster.toolseal_store.upstream_rq_total", 0)


def plugin_trips(member: FleetEnvoy) -> int:
    """toolseal's count of fleet round trips."""
    return member.counters().get("store_round_trips", 0)


def etcd_served(fleet: StoreFleet) -> dict[str, int]:
    """Range and Txn requests etcd handled so far."""
    served = fleet.store.requests_served()
    return {"Range": served["Range"], "Txn": served["Txn"]}


class Meter:
    """Round trips of one decision as Envoy, toolseal and etcd count them. etcd's own
    reads by this script are subtracted (``own_ranges``)."""

    def __init__(self, fleet: StoreFleet, members: list[FleetEnvoy]) -> None:
        self.fleet, self.members = fleet, members

    def snapshot(self) -> tuple[int, int, dict[str, int]]:
        return (sum(store_requests(m) for m in self.members),
                sum(plugin_trips(m) for m in self.members), etcd_served(self.fleet))

    @staticmethod
    def delta(before: tuple[int, int, dict[str, int]], after: tuple[int, int, dict[str, int]],
              own_ranges: int) -> dict[str, int]:
        return {"envoy_store_requests": after[0] - before[0],
                "toolseal_round_trips": after[1] - before[1],
                "etcd_range": after[2]["Range"] - before[2]["Range"] - own_ranges,
                "etcd_txn": after[2]["Txn"] - before[2]["Txn"]}


def summary(seconds: list[float]) -> dict[str, float]:
    """Median and max in milliseconds."""
    return {"median_ms": round(statistics.median(seconds) * 1000, 2),
            "max_ms": round(max(seconds) * 1000, 2), "n": len(seconds)}


def quiet_window(fleet: StoreFleet, members: list[FleetEnvoy], seconds: float) -> dict[str, float]:
    """What the instances ask etcd per second while no request arrives (the background sync)."""
    meter = Meter(fleet, members)
    before = meter.snapshot()
    time.sleep(seconds)
    after = meter.snapshot()
    # snapshot() reads etcd's /metrics, not its KV API: nothing of ours to subtract.
    delta = Meter.delta(before, after, 0)
    return {k: round(v / seconds, 2) for k, v in delta.items()}


def timed_lists(sessions: dict[str, RawSession], meter: Meter, tools: int | None,
                settle: float = 0.0) -> tuple[list[float], list[dict[str, int]]]:
    """One tools/list per session: seconds each took, and the store requests each made
    (``settle``: wait that long after the answer, for the writes sent right after it)."""
    took_all, trips = [], []
    for session in sessions.values():
        before = meter.snapshot()
        took, result = session.list_tools()
        assert tools is None or len(result["tools"]) == tools, result
        took_all.append(took)
        if settle:
            time.sleep(settle)
        trips.append(Meter.delta(before, meter.snapshot(), 0))
    return took_all, trips


def distinct(trips: list[dict[str, int]]) -> list[dict[str, int]]:
    """The different round-trip counts seen, each once."""
    return [json.loads(s) for s in sorted({json.dumps(d, sort_keys=True) for d in trips})]


def decisions(fleet: StoreFleet, a: FleetEnvoy, b: FleetEnvoy, p: FleetEnvoy,
              servers: list[str], http: httpx.Client) -> dict[str, Any]:
    """First contact (A), a known server's first request on another instance (B), verified
    lists, a drift, through the store and through P (per process); the drift's way to B."""
    meter_a, meter_b = Meter(fleet, [a]), Meter(fleet, [b])
    on_a = {sid: RawSession(http, a.url(sid)) for sid in servers}
    on_b = {sid: RawSession(http, b.url(sid)) for sid in servers}
    on_p = {sid: RawSession(http, p.url(sid)) for sid in servers}
    out: dict[str, Any] = {}
    took, trips = timed_lists(on_a, meter_a, 3, settle=0.05)
    out["first_contact"] = {"store": summary(took), "store_trips": distinct(trips)}
    took, trips = timed_lists(on_b, meter_b, 3, settle=0.05)
    out["known_server_first_request_on_another_instance"] = {
        "store": summary(took), "store_trips": distinct(trips)}
    took, _ = timed_lists(on_p, meter_a, 3)
    out["first_contact"]["per_process"] = summary(took)
    verified, trips = [], []
    for _ in range(5):
        took, more = timed_lists(on_a, meter_a, 3)
        verified += took
        trips += more
    out["verified_list"] = {"store": summary(verified), "store_trips_total": _sum(trips),
                            "lists": len(verified)}
    verified = []
    for _ in range(5):
        verified += timed_lists(on_p, meter_a, 3)[0]
    out["verified_list"]["per_process"] = summary(verified)
    fleet.upstreams["shared"].set_revision(2)
    drift, trips, reach_b = [], [], []
    for sid, session in on_a.items():
        before = meter_a.snapshot()
        took, result = session.list_tools()
        assert result["tools"] == [], result
        answered = time.perf_counter()
        drift.append(took)
        time.sleep(0.05)  # the closure is pushed right after the answer
        trips.append(Meter.delta(before, meter_a.snapshot(), 0))
        if fleet.sync_ms > PROPAGATION_MAX_SYNC_MS:
            continue
        while b.admin.server(sid)["schema_status"] != "changed":
            if time.perf_counter() - answered > 10:
                raise RuntimeError(f"B never closed {sid}")
            time.sleep(0.005)
        reach_b.append(time.perf_counter() - answered)
    out["drift"] = {"store": summary(drift), "store_trips": distinct(trips),
                    "per_process": summary(timed_lists(on_p, meter_a, 0)[0])}
    if reach_b:
        out["drift_reaches_other_instance"] = summary(reach_b)
    return out


def _sum(deltas: list[dict[str, int]]) -> dict[str, int]:
    return {k: sum(d[k] for d in deltas) for k in deltas[0]}


def propagation(a: FleetEnvoy, b: FleetEnvoy, servers: list[str]) -> dict[str, Any]:
    """A quarantine through A's admin API until B's view shows it."""
    waits = []
    for sid in servers:
        began = time.perf_counter()
        assert a.admin.quarantine(sid, "fleet bench").status_code == 200
        while b.admin.server(sid)["schema_status"] != "quarantined":
            if time.perf_counter() - began > 10:
                raise RuntimeError(f"B never showed the quarantine of {sid}")
            time.sleep(0.005)
        waits.append(time.perf_counter() - began)
    return summary(waits)


def views_footprint(fleet: StoreFleet, a: FleetEnvoy, http: httpx.Client) -> dict[str, Any]:
    """Keys and bytes in etcd for one server listed through 16 views."""
    for tenant in range(16):
        session = RawSession(http, a.url(VIEWS_SERVER), {"x-tenant": f"tenant-{tenant}"})
        _, result = session.list_tools()
        assert len(result["tools"]) == 3, result
    time.sleep(0.3)
    record_kv = fleet.store.get(fleet.server_key(VIEWS_SERVER))
    assert record_kv is not None
    record = record_kv.json()["record"]
    views = record.get("views", [])
    named = {v for v in json.dumps(record).split('"') if v.startswith("sha256:")}
    sets = [kv for kv in fleet.keys() if kv.key.startswith(f"{fleet.prefix}sets/")
            and kv.key.rsplit("/", 1)[-1] in named]
    return {"views_recorded": len(views), "record_bytes": len(record_kv.value),
            "set_keys": len(sets), "set_bytes": sum(len(kv.value) for kv in sets),
            "keys": 1 + len(sets),
            "bytes": len(record_kv.value) + sum(len(kv.value) for kv in sets)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=12)
    parser.add_argument("--sync-ms", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    servers = [f"s{i}" for i in range(args.servers)]
    workdir = Path(tempfile.mkdtemp(prefix="toolseal-fleet-bench-"))
    shared = Upstream(workdir / "up", mode="json", extra_args=("--poisoned-description", WEATHER_HONEST))
    config = fleet_plugin_config("/toolseal/bench/", sync_ms=args.sync_ms)
    config["servers"] = {VIEWS_SERVER: {"views": [{"header": "x-tenant"}]}}
    config["limits"] = {"max_views": 16}
    fleet = StoreFleet(workdir, {"shared": shared}, prefix="/toolseal/bench/", plugin_config=config,
                       sync_ms=args.sync_ms)
    report: dict[str, Any] = {"sync_ms": args.sync_ms, "servers": args.servers}
    try:
        fleet.start()
        ports = {sid: shared.port for sid in servers + [VIEWS_SERVER]}
        a = fleet.add_envoy("A", ports)
        b = fleet.add_envoy("B", ports)
        per_process = {k: v for k, v in config.items() if k != "store"}
        fleet.config = per_process
        p = fleet.add_envoy("P", ports)
        fleet.config = config
        fleet.start_envoys(a, b, p)
        with httpx.Client(timeout=30, trust_env=False) as http:
            report["idle_before_any_server"] = quiet_window(fleet, [a, b], 2.0)
            report["decisions"] = decisions(fleet, a, b, p, servers, http)
            report["idle_with_servers"] = quiet_window(fleet, [a, b], 2.0)
            if args.sync_ms <= PROPAGATION_MAX_SYNC_MS:
                report["quarantine_a_to_b"] = propagation(a, b, servers[:8])
            report["views16"] = views_footprint(fleet, a, http)
            record = fleet.store.get(fleet.server_key(servers[0]))
            report["one_server_record_bytes"] = len(record.value) if record else None
            report["etcd_keys_total"] = len(fleet.keys())
            report["etcd_bytes_total"] = sum(len(kv.value) for kv in fleet.keys())
    finally:
        fleet.stop()
        text = json.dumps(report, indent=2)
        print(text)
        if args.json:
            args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
