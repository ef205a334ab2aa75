"""Fleet memory on etcd: two real Envoys (two workers each) share one etcd, and no restart,
replica, outage or bad store data lets a drift through.

Real components only: etcd from Debian's ``etcd-server`` on loopback (started and stopped by
PID), Envoy 1.40 with the built plugin, the rug-pull servers on the MCP Python SDK 1.x
(``demo``: 2025-11-25 handshake, ``Mcp-Session-Id``) and 2.x (``modern``: 2026-07-28,
stateless), and the official clients of both eras. The drift is the one no screening cue can
see: ``deploy_preview`` gains a required ``region`` (``demo`` keeps an honest ``get_weather``
description in every revision).

What is asserted, per behaviour: what each client was served (tool names, denial
``error_code``), what each Envoy logged (audit events), what etcd holds (the server's record
under ``{prefix}servers/{id}``, read with etcd's own JSON API), and that a refused call was not
forwarded (the upstream's own request log and every Envoy's ``upstream_rq_total``).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import anyio
import pytest

from fingerprint_ref import server_fingerprint
from fleet_checks import (assert_in_step, modern_names, names_through, record_is, view_is,
                          wait_for_view)
from fleet_stack import FleetEnvoy, NotForwarded, StoreFleet, balanced_client, running_fleet
from modern_stack import ModernUpstream, SdkClient
from stack import Upstream, baseline_of, candidate_of, denial, mcp_client, status_of
from surface import WEATHER_HONEST, modern_tool_surface, tool_surface
from test_modern import assert_filtered, assert_tool_error
from toolseal_checks import STATUS_META_KEY, assert_denied, list_status_meta

pytestmark = pytest.mark.anyio

SYNC_MS = 200
# A closure made on one instance must reach the other within sync_ms plus a round trip; the
# bound leaves a shared CI machine room (the measured time is printed, see docs/fleet.md).
PROPAGATION_BOUND_S = SYNC_MS / 1000 + 1.0
# The drift no screening cue can see: rev 2 of `demo` keeps get_weather's honest description.
HONEST = ("--poisoned-description", WEATHER_HONEST)
FP1 = server_fingerprint(tool_surface(1))
FP2 = server_fingerprint(tool_surface(2, WEATHER_HONEST))
FPM1 = server_fingerprint(modern_tool_surface(1))
FPM2 = server_fingerprint(modern_tool_surface(2))
REV1_TOOLS = ["deploy_preview", "get_weather", "add"]
MODERN_NAMES = [tool["name"] for tool in modern_tool_surface(1)]
MODERN_VERSION = "2026-07-28"
# Arguments valid under rev 2 (and refused under rev 1 only for the extra `region`).
DEPLOY_REV2 = {"branch": "fix-login", "region": "eu-preview"}


def _fleet(tmp_path: Path, request: pytest.FixtureRequest, tls: bool) -> Iterator[StoreFleet]:
    prefix = f"/toolseal/{request.node.name[:40].replace('[', '-').rstrip(']')}-{uuid.uuid4().hex[:8]}/"
    upstreams = {
        "demo": Upstream(tmp_path / "up-demo", rev=1, extra_args=HONEST),
        "modern": ModernUpstream(tmp_path / "up-modern", "python"),
    }
    with running_fleet(tmp_path, upstreams, prefix=prefix, sync_ms=SYNC_MS, tls=tls) as started:
        yield started


@pytest.fixture
def fleet(wasm: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StoreFleet]:
    """etcd, ``demo`` (SDK 1.x, SSE) and ``modern`` (SDK 2.x) at rev 1; Envoys are added by
    each test. A prefix of its own per test, as a fleet has."""
    yield from _fleet(tmp_path, request, tls=False)


@pytest.fixture
def mtls_fleet(wasm: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StoreFleet]:
    """The same, with etcd requiring client certificates and the store cluster presenting one."""
    yield from _fleet(tmp_path, request, tls=True)


@pytest.fixture
def sdk_clients(tmp_path: Path) -> Iterator[Callable[[str], SdkClient]]:
    """Factory: ``sdk_clients(url)`` connects an MCP Python SDK 2.x client (2026-07-28)."""
    started: list[SdkClient] = []

    def make(url: str) -> SdkClient:
        client = SdkClient("python", tmp_path / "clients")
        started.append(client)
        connected = client.connect(url)
        assert connected["protocol_version"] == MODERN_VERSION, connected
        return client

    yield make
    for client in started:
        client.close()


def envoys(fleet: StoreFleet, *names: str) -> list[FleetEnvoy]:
    """Add and start Envoys side by side."""
    members = [fleet.add_envoy(name) for name in names]
    fleet.start_envoys(*members)
    return members



# With the plugin: every fleet behaviour of issue 31.

@pytest.mark.timeout(60, method="signal")
async def test_a_restart_re_trusts_nothing(fleet: StoreFleet,
                                           sdk_clients: Callable[[str], SdkClient]) -> None:
    (a,) = envoys(fleet, "A")
    assert await names_through(a) == REV1_TOOLS
    assert modern_names(sdk_clients(a.url("modern")).list()) == MODERN_NAMES
    fleet.wait_for_record("demo", record_is("verified", FP1), "the baseline")
    fleet.wait_for_record("modern", record_is("verified", FPM1), "the baseline")

    fleet.upstreams["demo"].set_revision(2)  # deploy_preview now requires region
    fleet.upstreams["modern"].set_revision(2)
    async with mcp_client(a.url("demo")) as agent:
        listed = await agent.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "changed")
    assert_filtered(sdk_clients(a.url("modern")).list(cache_mode="refresh"), "changed")
    fleet.wait_for_record("demo", record_is("changed", FP1, FP2), "the drift")
    fleet.wait_for_record("modern", record_is("changed", FPM1, FPM2), "the drift")

    a.restart()  # a rollout: a new process, no local state, the same etcd prefix
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        listed = await agent.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "changed")
        with NotForwarded(fleet, "demo"):
            refused = await agent.call("deploy_preview", DEPLOY_REV2)
        assert_denied(refused, "SCHEMA_CHANGED", tool="deploy_preview", schema_status="changed",
                      required_action="admin_review")
    modern = sdk_clients(a.url("modern"))
    assert_filtered(modern.list(), "changed")
    with NotForwarded(fleet, "modern"):
        refused = modern.call("get_weather", {"city": "Paris", "notes": "id_rsa"})
    assert_tool_error(refused, "SCHEMA_CHANGED", server="modern", tool="get_weather",
                      schema_status="changed", required_action="admin_review")

    assert a.audit_events("schema.baselined") == []
    for server_id, base, live in (("demo", FP1, FP2), ("modern", FPM1, FPM2)):
        view = a.admin.server(server_id)
        assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", base, live)
        kv, doc = fleet.wait_for_record(server_id, record_is("changed", base, live), "the drift")
        assert doc["format"] == 1
    assert [c["tool"] for c in fleet.upstreams["demo"].calls()] == []
    assert [c["tool"] for c in fleet.upstreams["modern"].calls()] == []
    denied = a.wait_for_audits("call.denied", 2)
    assert sorted((e["server"], e["error_code"]) for e in denied) == [
        ("demo", "SCHEMA_CHANGED"), ("modern", "SCHEMA_CHANGED")]
    for server_id in ("demo", "modern"):
        assert_in_step(a, server_id, fleet)


@pytest.mark.timeout(60, method="signal")
async def test_a_session_initialized_on_another_instance_is_served_its_tools(fleet: StoreFleet) -> None:
    a, b = envoys(fleet, "A", "B")
    upstream = fleet.upstreams["demo"]
    async with balanced_client(fleet, "demo", "A") as (agent, balancer):
        assert await agent.tool_names() == REV1_TOOLS
        fleet.wait_for_record("demo", record_is("verified", FP1), "the baseline")

        balancer.target = "B"  # the balancer moves the session: B never saw its initialize
        b_before = b.upstream_requests("demo")
        assert await agent.tool_names() == REV1_TOOLS
        added = await agent.call("add", {"a": 2, "b": 3})
        assert (added.isError, added.content[0].text) == (False, "5")
        assert b.upstream_requests("demo") == b_before + 2

        a.restart()  # and back to A, which restarted in between
        balancer.target = "A"
        assert await agent.tool_names() == REV1_TOOLS
        added = await agent.call("add", {"a": 20, "b": 22})
        assert (added.isError, added.content[0].text) == (False, "42")
        session = agent.session_id()
    assert session
    # initialize, initialized, list (A); list, call (B); list, call (A, restarted)
    assert [target for target, method in balancer.sent if method == "POST"] == [
        "A", "A", "A", "B", "B", "A", "A"]
    lists = [e for e in upstream.events("http") if e["jsonrpc_methods"] == ["tools/list"]]
    assert [e["session"] for e in lists] == [session] * 3  # one session, three instances' lists
    assert [(c["tool"], c["arguments"]) for c in upstream.calls()] == [
        ("add", {"a": 2, "b": 3}), ("add", {"a": 20, "b": 22})]
    assert b.audit_events("schema.baselined") == [] and a.audit_events("schema.baselined") == []
    for member in (a, b):
        assert (status_of(member.admin.server("demo")), baseline_of(member.admin.server("demo"))) == (
            "verified", FP1)
        assert_in_step(member, "demo", fleet)


@pytest.mark.timeout(60, method="signal")
async def test_a_drift_seen_through_one_instance_closes_the_other(
    fleet: StoreFleet, sdk_clients: Callable[[str], SdkClient]
) -> None:
    a, b = envoys(fleet, "A", "B")
    # demo (2025): both instances serve it, then A alone sees the drift.
    assert await names_through(a) == REV1_TOOLS
    assert await names_through(b) == REV1_TOOLS
    fleet.upstreams["demo"].set_revision(2)
    async with balanced_client(fleet, "demo", "B") as (agent_on_b, _):
        async with mcp_client(a.url("demo")) as agent_on_a:
            assert await agent_on_a.tool_names() == []
            waited = wait_for_view(b, "demo", view_is("changed", FP1), "the drift A saw")
        print(f"closure A -> B: {waited * 1000:.0f} ms after A's answer (sync_ms {SYNC_MS})")
        assert waited < PROPAGATION_BOUND_S, f"B closed after {waited:.3f}s"
        with NotForwarded(fleet, "demo"):
            refused = await agent_on_b.call("deploy_preview", DEPLOY_REV2)
        assert_denied(refused, "SCHEMA_CHANGED", tool="deploy_preview", schema_status="changed",
                      required_action="admin_review")
    assert fleet.upstreams["demo"].calls() == []

    # modern (2026-07-28): A baselines it, the drift is deployed, and B's first contact ever
    # is the drifted set: drift, not a second baseline. A, which never saw it, closes too.
    on_a = sdk_clients(a.url("modern"))
    assert modern_names(on_a.list()) == MODERN_NAMES
    fleet.wait_for_record("modern", record_is("verified", FPM1), "A's baseline")
    fleet.upstreams["modern"].set_revision(2)
    on_b = sdk_clients(b.url("modern"))
    assert_filtered(on_b.list(), "changed")
    with NotForwarded(fleet, "modern"):
        refused = on_b.call("get_weather", {"city": "Paris", "notes": "id_rsa"})
    assert_tool_error(refused, "SCHEMA_CHANGED", server="modern", tool="get_weather",
                      schema_status="changed", required_action="admin_review")
    changed = b.wait_for_audits("schema.changed")
    assert [(e["server"], e["baseline"], e["live"]) for e in changed] == [("modern", FPM1, FPM2)]
    waited = wait_for_view(a, "modern", view_is("changed", FPM1), "the drift B saw")
    assert waited < PROPAGATION_BOUND_S, f"A closed after {waited:.3f}s"
    with NotForwarded(fleet, "modern"):
        refused = on_a.call("add", {"a": 1, "b": 2})
    assert_tool_error(refused, "SCHEMA_CHANGED", server="modern", tool="add",
                      schema_status="changed", required_action="admin_review")
    fleet.wait_for_record("modern", record_is("changed", FPM1, FPM2), "the drift")
    baselined = a.audit_events("schema.baselined") + b.audit_events("schema.baselined")
    assert sorted((e["server"], e["baseline"]) for e in baselined) == [("demo", FP1), ("modern", FPM1)]
    assert [e["server"] for e in b.audit_events("schema.baselined")] == []
    assert fleet.upstreams["modern"].calls() == []


@pytest.mark.timeout(60, method="signal")
async def test_admin_decisions_made_on_one_instance_hold_on_the_other(fleet: StoreFleet) -> None:
    a, b = envoys(fleet, "A", "B")
    assert await names_through(a) == REV1_TOOLS
    assert await names_through(b) == REV1_TOOLS
    upstream = fleet.upstreams["demo"]

    # A quarantine on A's admin API holds on B.
    assert a.admin.quarantine("demo", "INC-7: vendor account compromised").status_code == 200
    waited = wait_for_view(b, "demo", lambda v: status_of(v) == "quarantined", "A's quarantine")
    assert waited < PROPAGATION_BOUND_S, f"B held the server after {waited:.3f}s"
    assert b.admin.server("demo")["quarantine"]["reason"] == "INC-7: vendor account compromised"
    async with balanced_client(fleet, "demo", "B") as (agent, _):
        listed = await agent.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "quarantined")
        with NotForwarded(fleet, "demo"):
            refused = await agent.call("add", {"a": 1, "b": 2})
        assert_denied(refused, "SERVER_QUARANTINED", tool="add", schema_status="quarantined",
                      required_action="admin_review")
    _, doc = fleet.wait_for_record("demo", lambda r: r["status"] == "quarantined", "the quarantine")
    assert doc["record"]["quarantine"][0] == "INC-7: vendor account compromised"

    # Released on B (what opens waits for etcd's yes): A serves again.
    assert b.admin.release("demo").status_code == 200
    wait_for_view(a, "demo", view_is("verified", FP1), "B's release")
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        added = await agent.call("add", {"a": 1, "b": 2})
        assert (added.isError, added.content[0].text) == (False, "3")

    # A drift seen on A, approved on B: A serves the approved set.
    upstream.set_revision(2)
    assert await names_through(a) == []
    wait_for_view(b, "demo", lambda v: (status_of(v), candidate_of(v)) == ("changed", FP2),
                  "A's drift with its candidate")
    response = b.admin.approve("demo", FP2)
    assert response.status_code == 200, response.text
    assert (status_of(b.admin.server("demo")), baseline_of(b.admin.server("demo"))) == ("verified", FP2)
    fleet.wait_for_record("demo", record_is("verified", FP2), "the approval")
    waited = wait_for_view(a, "demo", view_is("verified", FP2), "B's approval")
    print(f"approval B -> A: {waited * 1000:.0f} ms")
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        assert await agent.tool_names() == REV1_TOOLS
        deployed = await agent.call("deploy_preview", DEPLOY_REV2)
        assert (deployed.isError, deployed.content[0].text) == (
            False, "preview of fix-login deployed to eu-preview")
    assert [(c["tool"], c["arguments"]) for c in upstream.calls()] == [
        ("add", {"a": 1, "b": 2}), ("deploy_preview", DEPLOY_REV2)]
    assert [e["reason"] for e in a.wait_for_audits("server.quarantined")] == [
        "INC-7: vendor account compromised"]
    assert len(b.wait_for_audits("server.released")) == 1
    approved = b.wait_for_audits("schema.approved")
    assert [(e["server"], e["baseline"]) for e in approved] == [("demo", FP2)]
    for member in (a, b):
        assert_in_step(member, "demo", fleet)


@pytest.mark.timeout(60, method="signal")
async def test_two_first_contacts_at_once_make_one_baseline(fleet: StoreFleet, tmp_path: Path) -> None:
    other_deploy = Upstream(tmp_path / "up-demo-rev2", rev=2, extra_args=HONEST)
    other_deploy.start()
    try:
        a = fleet.add_envoy("A")
        b = fleet.add_envoy("B", {"demo": other_deploy.port})  # B's zone runs rev 2
        fleet.start_envoys(a, b)
        async with mcp_client(a.url("demo")) as on_a, mcp_client(b.url("demo")) as on_b:
            served: dict[str, Any] = {}

            async def first_list(name: str, agent: Any) -> None:
                served[name] = await agent.list_tools()

            async with anyio.create_task_group() as group:  # both first contacts at once
                group.start_soon(first_list, "A", on_a)
                group.start_soon(first_list, "B", on_b)
    finally:
        other_deploy.stop()
    fingerprints = {"A": FP1, "B": FP2}
    baselined = [(name, e) for name, m in (("A", a), ("B", b)) for e in m.audit_events("schema.baselined")]
    assert len(baselined) == 1, baselined
    winner, event = baselined[0]
    loser = "B" if winner == "A" else "A"
    print(f"first contacts at once: {winner} baselined, {loser} saw drift; conflicts "
          f"A {a.counters().get('store_conflicts')} B {b.counters().get('store_conflicts')}")
    assert event["baseline"] == fingerprints[winner]
    assert [t.name for t in served[winner].tools] == REV1_TOOLS
    assert served[loser].tools == []
    assert list_status_meta(served[loser])["schema_status"] == "changed"
    changed = fleet.envoys[loser].wait_for_audits("schema.changed")
    assert [(e["baseline"], e["live"]) for e in changed] == [(fingerprints[winner], fingerprints[loser])]
    fleet.wait_for_record("demo", record_is("changed", fingerprints[winner], fingerprints[loser]),
                          "one baseline, the other set as drift")
    wait_for_view(fleet.envoys[winner], "demo", view_is("changed", fingerprints[winner]),
                  "the loser's drift")


@pytest.mark.timeout(75, method="signal")
async def test_a_store_outage_opens_nothing_and_writes_what_closed_when_etcd_returns(
    fleet: StoreFleet, sdk_clients: Callable[[str], SdkClient]
) -> None:
    a, b = envoys(fleet, "A", "B")
    assert await names_through(a) == REV1_TOOLS
    assert await names_through(b) == REV1_TOOLS
    kv_before, _ = fleet.wait_for_record("demo", record_is("verified", FP1), "the baseline")
    assert fleet.etcd is not None
    fleet.etcd.stop()

    # A known, verified server keeps serving as its record says.
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        assert await agent.tool_names() == REV1_TOOLS
        added = await agent.call("add", {"a": 1, "b": 2})
        assert (added.isError, added.content[0].text) == (False, "3")

    # A new server's first contact is answered closed; nothing is recorded, nothing approved.
    fresh = sdk_clients(a.url("modern"))
    listed = fresh.list()
    assert listed["tools"] == [] and (listed["ttlMs"], listed["cacheScope"]) == (0, "private"), listed
    assert "fleet store unreachable" in listed["_meta"][STATUS_META_KEY]["reason"], listed["_meta"]
    with NotForwarded(fleet, "modern"):
        refused = fresh.call("add", {"a": 1, "b": 2})
    refusal = refused.get("structuredContent") or {}
    assert refused.get("isError") is True, refused
    assert {k: refusal.get(k) for k in ("error_code", "server", "tool", "required_action",
                                         "side_effect_started")} == {
        "error_code": "SCHEMA_UNVERIFIED", "server": "modern", "tool": "add",
        "required_action": "refresh_tools", "side_effect_started": False}, refusal
    assert a.wait_for_audits("store.unreachable")

    # A drift during the outage closes A at once, and waits to be written.
    fleet.upstreams["demo"].set_revision(2)
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        listed_demo = await agent.list_tools()
        assert (listed_demo.tools, list_status_meta(listed_demo)["schema_status"]) == ([], "changed")
        with NotForwarded(fleet, "demo"):
            refused_demo = await agent.call("deploy_preview", DEPLOY_REV2)
        assert_denied(refused_demo, "SCHEMA_CHANGED", tool="deploy_preview",
                      schema_status="changed", required_action="admin_review")
    view = a.admin.server("demo")
    assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", FP1, FP2)
    fleet_during_outage = view.get("fleet")  # asserted last
    # Approving opens: it needs etcd's yes, so it is refused and nothing changes.
    response = a.admin.approve("demo", FP2)
    assert response.status_code == 503, response.text
    assert (status_of(a.admin.server("demo")), baseline_of(a.admin.server("demo"))) == ("changed", FP1)
    store_during_outage = a.admin.get("store")  # asserted last
    failures = a.counters().get("store_failures", 0)
    assert failures > 0, a.counters()

    # etcd returns (same data): the closure reaches etcd, then B.
    returned = time.monotonic()
    fleet.etcd.start()
    fleet.wait_for_record("demo", record_is("changed", FP1, FP2), "the drift made during the outage")
    waited = wait_for_view(b, "demo", view_is("changed", FP1), "the drift A saw during the outage")
    print(f"outage end -> B closed: {(time.monotonic() - returned) * 1000:.0f} ms")
    async with balanced_client(fleet, "demo", "B") as (agent, _):
        with NotForwarded(fleet, "demo"):
            refused_demo = await agent.call("deploy_preview", DEPLOY_REV2)
        assert_denied(refused_demo, "SCHEMA_CHANGED", tool="deploy_preview",
                      schema_status="changed", required_action="admin_review")
    assert a.wait_for_audits("store.recovered", timeout=10)
    assert fleet.record("modern") is None  # the outage recorded nothing for the new server
    assert [(c["tool"], c["arguments"]) for c in fleet.upstreams["demo"].calls()] == [
        ("add", {"a": 1, "b": 2})]
    assert fleet.upstreams["modern"].calls() == []
    assert waited < 10
    assert store_during_outage.status_code == 200, store_during_outage.text
    store_view = store_during_outage.json()
    assert (store_view["store"], store_view["prefix"], store_view["reachable"], store_view["dirty"]) == (
        "etcd", fleet.prefix, False, ["demo"])
    deadline = time.monotonic() + 5
    while a.admin.get("store").json()["dirty"] and time.monotonic() < deadline:
        time.sleep(0.05)
    store_view = a.admin.get("store").json()
    assert (store_view["reachable"], store_view["dirty"]) == (True, [])
    # The server's fleet bookkeeping: behind the fleet during the outage, in step after it.
    assert fleet_during_outage == {"mod_revision": kv_before.mod_revision, "in_step": False}
    assert_in_step(a, "demo", fleet)


@pytest.mark.timeout(60, method="signal")
async def test_store_data_that_does_not_parse_fails_its_server_closed_and_is_kept(
    fleet: StoreFleet, sdk_clients: Callable[[str], SdkClient]
) -> None:
    (a,) = envoys(fleet, "A")
    assert await names_through(a) == REV1_TOOLS
    assert modern_names(sdk_clients(a.url("modern")).list()) == MODERN_NAMES
    _, modern_doc = fleet.wait_for_record("modern", record_is("verified", FPM1), "the baseline")
    fleet.wait_for_record("demo", record_is("verified", FP1), "the baseline")
    a.stop()
    # Garbage under one server's key, a record of an unknown format under the other's.
    corrupt = {
        "demo": b"\x00not a record {",
        "modern": json.dumps({"format": 99, "record": modern_doc["record"]}).encode(),
    }
    for server_id, value in corrupt.items():
        fleet.store.put(fleet.server_key(server_id), value)
    kept = {kv.key: (kv.value, kv.mod_revision) for kv in fleet.keys()}

    a.start()  # a restarted Envoy reads them on first contact
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        listed = await agent.list_tools()
        assert listed.tools == [], listed
        with NotForwarded(fleet, "demo"):
            refused = await agent.call("add", {"a": 1, "b": 2})
        refusal = denial(refused) or {}
        assert (refusal.get("error_code"), refusal.get("side_effect_started")) == (
            "SCHEMA_UNVERIFIED", False), refused
    modern = sdk_clients(a.url("modern"))
    listed_modern = modern.list()
    assert listed_modern["tools"] == [], listed_modern
    with NotForwarded(fleet, "modern"):
        refused_modern = modern.call("add", {"a": 1, "b": 2})
    assert refused_modern["isError"] is True, refused_modern
    refusal = refused_modern["structuredContent"]
    assert (refusal["error_code"], refusal["side_effect_started"]) == ("SCHEMA_UNVERIFIED", False)
    deadline = time.monotonic() + 5
    while {e["server"] for e in a.audit_events("store.corrupt")} != set(corrupt):
        assert time.monotonic() < deadline, [e["server"] for e in a.audit_events("store.corrupt")]
        time.sleep(0.05)
    corrupted = a.audit_events("store.corrupt")
    for event in corrupted:
        assert fleet.server_key(event["server"]) in event["reason"], event
    print(f"store.corrupt audited {len(corrupted)} times for {len(corrupt)} keys")
    assert a.audit_events("schema.baselined") == []
    time.sleep(5 * SYNC_MS / 1000)  # several syncs: nothing rewrites what could not be read
    assert {kv.key: (kv.value, kv.mod_revision) for kv in fleet.keys()} == kept
    assert fleet.upstreams["demo"].calls() == [] and fleet.upstreams["modern"].calls() == []


@pytest.mark.timeout(60, method="signal")
async def test_the_fleet_store_works_over_mtls(mtls_fleet: StoreFleet) -> None:
    fleet = mtls_fleet
    assert fleet.etcd is not None and fleet.etcd.url.startswith("https://")
    a, b = envoys(fleet, "A", "B")
    assert await names_through(a) == REV1_TOOLS
    fleet.wait_for_record("demo", record_is("verified", FP1), "the baseline, written over mTLS")
    assert await names_through(b) == REV1_TOOLS
    fleet.upstreams["demo"].set_revision(2)
    assert await names_through(a) == []
    wait_for_view(b, "demo", view_is("changed", FP1), "A's drift, read over mTLS")
    fleet.wait_for_record("demo", record_is("changed", FP1, FP2), "the drift")
    assert b.audit_events("schema.baselined") == []
    for member in (a, b):
        assert member.audit_events("store.unreachable") == []
        assert member.counters().get("store_failures", 0) == 0, member.counters()
        assert member.envoy.stats().get("cluster.toolseal_store.ssl.handshake", 0) >= 1


@pytest.mark.timeout(60, method="signal")
async def test_moving_a_fleet_onto_the_store_under_pins_re_trusts_nothing(fleet: StoreFleet) -> None:
    store_config = fleet.config
    pins = {"demo": {"pin": FP1}, "modern": {"pin": FPM1}}
    # Before: per-process state, strict posture, every server pinned (docs/fleet.md, step 1).
    fleet.config = {**{k: v for k, v in store_config.items() if k != "store"},
                    "posture": "strict", "servers": pins}
    before = fleet.add_envoy("before")
    fleet.start_envoys(before)
    assert await names_through(before) == REV1_TOOLS
    fleet.upstreams["demo"].set_revision(2)  # a drift nobody reviewed yet
    assert await names_through(before) == []
    assert status_of(before.admin.server("demo")) == "changed"
    before.stop()
    assert fleet.keys() == []

    # The switch: the same pins, the store on a new prefix; a rolling restart (new processes).
    fleet.config = {**store_config, "posture": "strict", "servers": pins}
    a, b = fleet.add_envoy("A"), fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        listed = await agent.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "changed")
        with NotForwarded(fleet, "demo"):
            refused = await agent.call("deploy_preview", DEPLOY_REV2)
        assert_denied(refused, "SCHEMA_CHANGED", tool="deploy_preview", schema_status="changed",
                      required_action="admin_review")
    fleet.wait_for_record("demo", record_is("changed", FP1, FP2), "the drift, against the pin")
    wait_for_view(b, "demo", view_is("changed", FP1), "A's drift")
    # A server that matches its pin verifies on its first list and is recorded once.
    assert await names_through(b, "modern") == MODERN_NAMES
    fleet.wait_for_record("modern", record_is("verified", FPM1), "the pinned baseline")
    assert await names_through(a, "modern") == MODERN_NAMES
    assert a.audit_events("schema.baselined") + b.audit_events("schema.baselined") == []
    assert fleet.upstreams["demo"].calls() == []


@pytest.mark.timeout(60, method="signal")
async def test_a_tool_set_that_does_not_parse_fails_its_server_closed(
    fleet: StoreFleet, sdk_clients: Callable[[str], SdkClient]
) -> None:
    (a,) = envoys(fleet, "A")
    assert modern_names(sdk_clients(a.url("modern")).list()) == MODERN_NAMES
    fleet.wait_for_record("modern", record_is("verified", FPM1), "the baseline")
    set_key = f"{fleet.prefix}sets/{FPM1}"
    stored = fleet.store.get(set_key)
    assert stored is not None and stored.json()["fingerprint"] == FPM1
    a.stop()
    fleet.store.put(set_key, b'{"fingerprint": "' + FPM1.encode() + b'", "tools": "not a list"}')
    kept = {kv.key: (kv.value, kv.mod_revision) for kv in fleet.keys()}

    a.start()  # a restarted Envoy needs the set its record names
    agent = sdk_clients(a.url("modern"))
    listed = agent.list()
    with NotForwarded(fleet, "modern"):
        refused = agent.call("add", {"a": 1, "b": 2})
    print("unparseable set: listed", modern_names(listed), "call", refused.get("structuredContent"))
    assert listed["tools"] == [], listed
    assert refused["isError"] is True, refused
    refusal = refused["structuredContent"]
    assert (refusal["error_code"], refusal["side_effect_started"]) == ("SCHEMA_UNVERIFIED", False)
    corrupted = a.wait_for_audits("store.corrupt")
    assert set_key in corrupted[0]["reason"], corrupted[0]
    time.sleep(5 * SYNC_MS / 1000)
    assert {kv.key: (kv.value, kv.mod_revision) for kv in fleet.keys()} == kept
    assert fleet.upstreams["modern"].calls() == []


@pytest.mark.timeout(60, method="signal")
async def test_etcd_with_auth_on_is_a_store_toolseal_cannot_use_and_opens_nothing(
    fleet: StoreFleet,
) -> None:
    # etcd's JSON gateway wants a token per request once auth is on (it ignores a client
    # certificate's CN), and toolseal sends none: every store request is refused (docs/fleet.md).
    assert fleet.etcd is not None
    etcdctl_cmd = ["etcdctl", "--endpoints", fleet.etcd.url]
    for args in (["user", "add", "root:rootpw"], ["user", "grant-role", "root", "root"],
                 ["role", "add", "toolseal"],
                 ["role", "grant-permission", "toolseal", "readwrite", fleet.prefix, "--prefix=true"],
                 ["user", "add", "toolseal:pw"], ["user", "grant-role", "toolseal", "toolseal"],
                 ["auth", "enable"]):
        subprocess.run(etcdctl_cmd + args, capture_output=True, check=True, timeout=30)
    (a,) = envoys(fleet, "A")
    async with balanced_client(fleet, "demo", "A") as (agent, _):
        listed = await agent.list_tools()
        status = list_status_meta(listed)
        with NotForwarded(fleet, "demo"):
            refused = await agent.call("add", {"a": 1, "b": 2})
    assert listed.tools == [] and status["schema_status"] == "unbaselined", status
    assert "fleet store unreachable" in status["reason"] and "user name is empty" in status["reason"]
    assert (denial(refused) or {}).get("error_code") == "SCHEMA_UNVERIFIED", refused
    unreachable = a.wait_for_audits("store.unreachable")
    assert "user name is empty" in unreachable[0]["reason"]
    assert a.admin.get("store").json()["reachable"] is False
    assert a.audit_events("schema.baselined") == [] and fleet.upstreams["demo"].calls() == []
