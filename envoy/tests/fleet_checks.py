"""What the fleet-store tests read from the fleet: a client's names, an instance's admin view
polled until it shows a status, a fleet record's status, an instance in step with etcd."""

from __future__ import annotations

import time
from typing import Any, Callable

from fleet_stack import FleetEnvoy, StoreFleet
from stack import baseline_of, mcp_client, status_of


async def names_through(member: FleetEnvoy, server_id: str = "demo") -> list[str]:
    """A fresh SDK 1.x session's tools/list through one Envoy."""
    async with mcp_client(member.url(server_id)) as agent:
        return await agent.tool_names()


def modern_names(listed: dict[str, Any]) -> list[str]:
    """The names in an SDK 2.x tools/list result."""
    return [tool["name"] for tool in listed["tools"]]


def record_is(status: str, baseline: str | None, live: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """A check of a fleet record's status, baseline and (if given) live candidate."""
    def check(record: dict[str, Any]) -> bool:
        return (record.get("status"), record.get("baseline")) == (status, baseline) and (
            live is None or record.get("live") == live)
    return check


def wait_for_view(member: FleetEnvoy, server_id: str, check: Callable[[dict[str, Any]], bool],
                  what: str, timeout: float = 5) -> float:
    """Poll ``GET servers/{id}`` on one Envoy's admin API until ``check(view)``; seconds waited."""
    began = time.monotonic()
    last: Any = None
    while time.monotonic() - began < timeout:
        response = member.admin.get(f"servers/{server_id}")
        last = (response.status_code, response.text[:400])
        if response.status_code == 200 and check(response.json()):
            return time.monotonic() - began
        time.sleep(0.02)
    raise AssertionError(f"Envoy {member.name}: servers/{server_id} never showed {what}; last {last}")


def view_is(status: str, baseline: str | None) -> Callable[[dict[str, Any]], bool]:
    """A check of an admin view's status and baseline."""
    return lambda view: (status_of(view), baseline_of(view)) == (status, baseline)


def assert_in_step(member: FleetEnvoy, server_id: str, fleet: StoreFleet) -> None:
    """The instance's copy is the fleet's record: same mod_revision, nothing waiting to be written."""
    kv, _ = fleet.record(server_id) or (None, None)
    assert kv is not None, f"no fleet record for {server_id}"
    view = member.admin.server(server_id)
    assert view["fleet"] == {"mod_revision": kv.mod_revision, "in_step": True}, view["fleet"]
