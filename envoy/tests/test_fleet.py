"""A fleet: two real Envoys take toolseal's configuration from one ECDS resource.

The control plane is a watched file (``path_config_source``): the operator's pin, lock or
quarantine is written there once (atomic replace) and reaches both Envoys without a restart.
The upstream is one rug-pull server behind both. Every claim is checked on both instances:
a drift is refused on both; a lock for the reviewed set (``toolseal pin``) re-baselines both,
and until each instance shows ``verified`` every list it serves is filtered; a quarantine in
config holds both and only config can lift it; an invalid config is refused by Envoy and the
last good one keeps working; runtime state (trust-on-first-use baselines, admin actions)
stays per instance and survives config updates.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

import envoyctl
from envoyctl import EnvoyProcess, McpRoute
from fingerprint_ref import server_fingerprint
from rugpull_server import tool_surface as surface
from stack import Admin, Upstream, baseline_of, candidate_of, mcp_client, status_of
from toolseal_checks import assert_denied

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ecds"))
import fleet as ecds  # noqa: E402

pytestmark = pytest.mark.anyio

REPO = envoyctl.REPO
FP1 = server_fingerprint(surface(1))
FP2 = server_fingerprint(surface(2))
REV1_TOOLS = ["deploy_preview", "get_weather", "add"]
# Same names as rev 1; get_weather's description is the poisoned one.
REV2_SURFACE = [(t["name"], t["description"]) for t in surface(2)]
# Applied updates (the first load included). `config_reload` also counts a refused attempt.
RELOADS = "extension_config_discovery.http_filter.toolseal.update_success"
REJECTED = "extension_config_discovery.http_filter.toolseal.update_rejected"


def toolseal_pin(tools: list[dict[str, Any]], server: str, workdir: Path) -> dict[str, Any]:
    """``toolseal pin FILE --server ID`` on a tools/list result, as an operator runs it: the
    ``servers`` entries of the document it prints (``{"servers": {ID: {"lock": ...}}}``).

    TOOLSEAL_BIN points at a built ``toolseal``; otherwise ``cargo run -p toolseal``."""
    listing = workdir / f"{server}-{server_fingerprint(tools)[7:19]}.tools.json"
    listing.write_text(json.dumps({"tools": tools}))
    binary = os.environ.get("TOOLSEAL_BIN")
    command = [binary] if binary else ["cargo", "run", "-q", "-p", "toolseal", "--"]
    result = subprocess.run([*command, "pin", str(listing), "--server", server], cwd=REPO,
                            capture_output=True, text=True, timeout=1800, check=False)
    assert result.returncode == 0, result.stderr
    pinned = json.loads(result.stdout)
    assert list(pinned) == ["servers"] and list(pinned["servers"]) == [server], pinned
    return pinned["servers"]


@dataclasses.dataclass
class Fleet:
    """One upstream, two Envoys, one ECDS file."""

    upstream: Upstream
    envoys: list[EnvoyProcess]
    ecds_path: Path
    version: int = 0
    # Sent with every admin request (the operator's name when ``admin.identity`` is a header).
    admin_headers: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def admin_ecds_path(self) -> Path:
        """The admin listener's resource (the same document with its admin block)."""
        return ecds.default_admin_path(self.ecds_path)

    @property
    def admins(self) -> list[Admin]:
        """toolseal's admin API on each Envoy's admin listener."""
        return [Admin(e.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN, headers=self.admin_headers)
                for e in self.envoys]

    def publish(self, plugin_config: dict[str, Any] | str, wasm: Path | None = None) -> None:
        """Atomically replace the ECDS resources (what the control plane does). A raw string
        (a config the plugin must refuse) goes to the agents' listener only."""
        self.version += 1
        wasm = wasm or envoyctl.wasm_file()
        if isinstance(plugin_config, str):
            ecds.publish(self.ecds_path, ecds.resource(plugin_config, str(self.version), wasm))
            return
        ecds.publish_config(plugin_config, self.ecds_path, self.admin_ecds_path,
                            str(self.version), wasm)

    def reloads(self) -> list[int | None]:
        """ECDS updates applied per Envoy (None while an Envoy's admin is busy: its main
        thread also compiles a new module)."""
        return [_stat(e, RELOADS) for e in self.envoys]

    def views(self) -> list[dict[str, Any]]:
        """``GET servers/demo`` on each Envoy."""
        return [admin.server("demo") for admin in self.admins]


def plugin_config(**servers: dict[str, Any]) -> dict[str, Any]:
    """Strict posture with locks: the production setting (docs/config.md)."""
    return {**envoyctl.default_plugin_config(), "posture": "strict", "servers": servers}


@pytest.fixture
def fleet(wasm: Path, tmp_path: Path) -> Iterator[Fleet]:
    """Two Envoys subscribed to one ECDS file in front of one rug-pull server (rev 1)."""
    upstream = Upstream(tmp_path, rev=1)
    upstream.start()
    ecds_path = tmp_path / "toolseal.ecds.json"
    started = Fleet(upstream, [], ecds_path)
    try:
        started.publish(plugin_config(**toolseal_pin(surface(1), "demo", tmp_path)))
        route = McpRoute("demo", upstream.port)
        for i in range(2):
            listen_port, admin_port = envoyctl.free_port(), envoyctl.free_port()
            admin_api_port = envoyctl.free_port()
            text = ecds.render(ecds_path, node_id=f"envoy-{i}", listen_port=listen_port,
                               admin_port=admin_port, routes=[route],
                               admin_ecds_path=started.admin_ecds_path,
                               admin_api_port=admin_api_port)
            started.envoys.append(envoyctl.start(text, tmp_path / f"envoy-{i}",
                                                 admin_port=admin_port, listen_port=listen_port,
                                                 admin_api_port=admin_api_port))
        yield started
    finally:
        try:
            for envoy in reversed(started.envoys):
                envoy.stop()
        finally:
            # Stopped even when stopping an Envoy failed: nothing started here outlives the test.
            upstream.stop()


def _stat(envoy: EnvoyProcess, name: str) -> int | None:
    status, body = envoyctl.http_get(f"{envoy.admin_url}/stats?filter=^{name}$", timeout=10)
    if status != 200:
        return None
    values = [line.partition(": ")[2] for line in body.splitlines() if line.startswith(f"{name}: ")]
    return int(values[0]) if values else 0


async def _names(envoy: EnvoyProcess) -> list[str]:
    async with mcp_client(f"{envoy.url}/mcp") as client:
        return await client.tool_names()


async def _surface(envoy: EnvoyProcess) -> list[tuple[str, str | None]]:
    async with mcp_client(f"{envoy.url}/mcp") as client:
        return [(t.name, t.description) for t in (await client.list_tools()).tools]


async def _wait_until(check: Any, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.05)


@pytest.mark.parametrize("pin_kind", ["lock", "fingerprint"])
async def test_pin_through_ecds_rebaselines_both_envoys_without_restart(
    fleet: Fleet, tmp_path: Path, pin_kind: str
) -> None:
    for envoy in fleet.envoys:
        assert await _names(envoy) == REV1_TOOLS
    assert [(status_of(v), baseline_of(v)) for v in fleet.views()] == [("verified", FP1)] * 2
    pids, reloads = [e.pid for e in fleet.envoys], fleet.reloads()
    assert reloads == [1, 1]

    fleet.upstream.restart(rev=2)
    for envoy in fleet.envoys:
        assert await _names(envoy) == []
        async with mcp_client(f"{envoy.url}/mcp") as client:
            refused = await client.call("get_weather", {"city": "Paris", "notes": "id_rsa"})
            assert_denied(refused, "SCHEMA_CHANGED", tool="get_weather", schema_status="changed",
                          required_action="admin_review")
    assert [(status_of(v), baseline_of(v), candidate_of(v)) for v in fleet.views()] == [
        ("changed", FP1, FP2)] * 2
    assert fleet.upstream.calls() == []

    # The operator reviewed the drift, ran `toolseal pin` on the reviewed set (or copied the
    # reviewed fingerprint), and pushed.
    lock = toolseal_pin(surface(2), "demo", tmp_path)
    assert lock["demo"]["lock"]["fingerprint"] == FP2
    pin = lock if pin_kind == "lock" else {"demo": {"pin": FP2}}
    fleet.publish(plugin_config(**pin))
    pending = {0, 1}
    observed: list[tuple[int, list[str], str]] = []  # (instance, names served, status after)
    while pending:
        for i in sorted(pending):
            served = await _surface(fleet.envoys[i])
            view = fleet.admins[i].server("demo")
            observed.append((i, [name for name, _ in served], status_of(view)))
            # Served tools only ever appear once this instance has re-baselined to the pin.
            assert served == [] or (served == REV2_SURFACE and (status_of(view), baseline_of(view)) == (
                "verified", FP2)), observed
            if (status_of(view), baseline_of(view)) == ("verified", FP2):
                pending.discard(i)
        assert len(observed) < 400, observed
    for envoy in fleet.envoys:
        assert await _surface(envoy) == REV2_SURFACE
        async with mcp_client(f"{envoy.url}/mcp") as client:
            added = await client.call("add", {"a": 2, "b": 3})
            assert (added.isError, added.content[0].text) == (False, "5")
    assert [(c["tool"], c["arguments"]) for c in fleet.upstream.calls()] == [
        ("add", {"a": 2, "b": 3})] * 2
    # No restart: same processes, one more ECDS reload each.
    assert [e.pid for e in fleet.envoys] == pids
    assert all(e.popen is not None and e.popen.poll() is None for e in fleet.envoys)
    assert fleet.reloads() == [2, 2]
    # Envoy's counters are not reset by a config update: each instance still counts the one
    # call it refused before the pin arrived, and the call it allowed after.
    assert [(_stat(e, "wasmcustom.toolseal_calls_denied_schema_changed"),
             _stat(e, "wasmcustom.toolseal_calls_allowed")) for e in fleet.envoys] == [(1, 1)] * 2
    for envoy in fleet.envoys:
        approved = [e for e in envoy.audit_events() if e.get("event") == "schema.approved"]
        # The first config's lock, then the pushed one: each applied once per Envoy (the
        # other workers' on_configure finds the baseline already pinned).
        assert [(e["server"], e["baseline"], e["reason"]) for e in approved] == [
            ("demo", fp, f"baseline pinned by config to {fp}") for fp in (FP1, FP2)]


async def test_config_quarantine_holds_both_until_config_lifts_it(fleet: Fleet, tmp_path: Path) -> None:
    lock = toolseal_pin(surface(1), "demo", tmp_path)
    for envoy in fleet.envoys:
        assert await _names(envoy) == REV1_TOOLS
    held = json.loads(json.dumps(lock))
    held["demo"]["quarantine"] = "incident 42: vendor account compromised"
    fleet.publish(plugin_config(**held))
    await _wait_until(lambda: [status_of(v) for v in fleet.views()] == ["quarantined"] * 2,
                      "both Envoys to hold the server")
    for envoy, admin in zip(fleet.envoys, fleet.admins):
        assert fleet.admins[0].server("demo")["quarantine"] is not None
        assert await _names(envoy) == []
        async with mcp_client(f"{envoy.url}/mcp") as client:
            refused = await client.call("add", {"a": 1, "b": 1})
            assert_denied(refused, "SERVER_QUARANTINED", tool="add", schema_status="quarantined",
                          required_action="admin_review")
        # A config quarantine is lifted by config only: a runtime release is refused.
        assert admin.release("demo").status_code == 409
    assert fleet.upstream.calls() == []

    fleet.publish(plugin_config(**lock))
    await _wait_until(lambda: [(status_of(v), baseline_of(v)) for v in fleet.views()] == [
        ("verified", FP1)] * 2, "both Envoys to release the server")
    for envoy in fleet.envoys:
        assert await _names(envoy) == REV1_TOOLS
        async with mcp_client(f"{envoy.url}/mcp") as client:
            assert (await client.call("add", {"a": 1, "b": 1})).isError is False
    assert len(fleet.upstream.calls()) == 2
    assert fleet.reloads() == [3, 3]


async def test_invalid_config_is_refused_and_the_last_good_one_keeps_serving(fleet: Fleet) -> None:
    for envoy in fleet.envoys:
        assert await _names(envoy) == REV1_TOOLS
    fleet.publish({**plugin_config(), "posture": "lenient"})
    await _wait_until(lambda: [e.stats().get(REJECTED, 0) for e in fleet.envoys] == [1, 1],
                      "both Envoys to reject the update")
    assert fleet.reloads() == [1, 1]
    for envoy in fleet.envoys:
        assert await _names(envoy) == REV1_TOOLS
        assert ("invalid toolseal config: field `posture`: unknown posture \"lenient\"; expected "
                "\"discovery\" or \"strict\"") in envoy.log_text() and "lenient" in envoy.log_text()
    assert [(status_of(v), baseline_of(v)) for v in fleet.views()] == [("verified", FP1)] * 2


async def test_runtime_state_is_per_instance_and_survives_config_updates(fleet: Fleet, tmp_path: Path) -> None:
    discovery = envoyctl.default_plugin_config()
    fleet.publish(discovery)
    await _wait_until(lambda: fleet.reloads() == [2, 2], "the discovery config")
    a, b = fleet.envoys
    vms_before = [e.stats()["wasm.envoy.wasm.runtime.v8.active"] for e in fleet.envoys]
    # The lock from the first config already baselined both; an admin quarantine is runtime state.
    assert fleet.admins[0].quarantine("demo", "checking a report").status_code == 200
    assert await _names(a) == []
    assert await _names(b) == REV1_TOOLS
    assert [status_of(v) for v in fleet.views()] == ["quarantined", "verified"]

    # An unrelated config update: new plugin contexts in the same VMs, shared data kept.
    fleet.publish({**discovery, "audit": {"call_allowed": True}})
    await _wait_until(lambda: fleet.reloads() == [3, 3], "the config update")
    views = fleet.views()
    assert [(status_of(v), baseline_of(v)) for v in views] == [("quarantined", FP1), ("verified", FP1)]
    assert views[0]["quarantine"]["reason"] == "checking a report"
    assert [e.stats()["wasm.envoy.wasm.runtime.v8.active"] for e in fleet.envoys] == vms_before
    assert await _names(a) == []

    # New plugin code (the same module plus a custom section: other bytes, other hash) under
    # the same vm_id: Envoy builds new VMs, and shared data, keyed by vm_id, is still there.
    upgraded = tmp_path / "toolseal-upgraded.wasm"
    section = b"\x04note" + b"upgrade"
    upgraded.write_bytes(envoyctl.wasm_file().read_bytes() + b"\x00" + bytes([len(section)]) + section)
    created = [e.stats()["wasm.envoy.wasm.runtime.v8.created"] for e in fleet.envoys]
    fleet.publish({**discovery, "audit": {"call_allowed": True}}, wasm=upgraded)
    await _wait_until(lambda: fleet.reloads() == [4, 4], "the code update", timeout=60)
    assert all(e.stats()["wasm.envoy.wasm.runtime.v8.created"] > c for e, c in zip(fleet.envoys, created))
    assert [(status_of(v), baseline_of(v)) for v in fleet.views()] == [("quarantined", FP1), ("verified", FP1)]
    assert await _names(a) == []
    assert fleet.admins[0].release("demo").status_code == 200
    assert await _names(a) == REV1_TOOLS
