"""toolseal in a real Envoy, against the rug-pull server, driven by the official MCP SDK client.

Discovery and baselining, the rug pull failing closed, approval with conflict detection,
quarantine and release, strict posture, stale calls after an approval, list_changed holds.
Every denial is checked field by field, and the upstream's own request log plus Envoy's
``upstream_rq_total`` prove that a denied call never left Envoy.
"""

from __future__ import annotations

from typing import Any, Callable

import anyio
import pytest

import envoyctl
from fingerprint_ref import server_fingerprint
from rugpull_server import tool_surface as surface
from stack import Stack, baseline_of, candidate_of, denial, live_of, mcp_client, status_of
from toolseal_checks import (
    assert_denied,
    counter,
    list_status_meta,
    wait_for_audit,
    wait_for_audits,
)

pytestmark = pytest.mark.anyio

FP1 = server_fingerprint(surface(1))
FP2 = server_fingerprint(surface(2))
REV1_TOOLS = ["deploy_preview", "get_weather", "add"]


async def _baseline(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS


async def _drift_to_rev2(stack: Stack) -> None:
    """Baseline rev 1, redeploy as rev 2, list once: the server is now `changed`."""
    await _baseline(stack)
    stack.upstream.restart(rev=2)
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == []


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_discovery_baselines_first_list_and_calls_pass(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode)
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
        view = stack.admin.server("demo")
        assert (status_of(view), baseline_of(view), live_of(view), candidate_of(view)) == (
            "verified", FP1, FP1, None)
        deployed = await client.call("deploy_preview", {"branch": "fix-login"})
        assert (deployed.isError, deployed.content[0].text) == (
            False, "preview of fix-login deployed to us-east-preview")
        weather = await client.call("get_weather", {"city": "Paris"})
        assert weather.structuredContent == {"city": "Paris", "temperature_c": 21, "conditions": "sunny"}
    assert [(c["tool"], c["arguments"]) for c in stack.upstream.calls()] == [
        ("deploy_preview", {"branch": "fix-login"}), ("get_weather", {"city": "Paris"})]
    baselined = wait_for_audit(stack, "schema.baselined")
    assert (baselined["server"], baselined["status_after"], baselined["baseline"]) == (
        "demo", "verified", FP1)
    assert counter(stack, "calls_allowed") == 2


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_rug_pull_fails_closed_and_never_reaches_upstream(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode)
    await _baseline(stack)
    stack.upstream.restart(rev=2)
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        assert listed.tools == []
        assert list_status_meta(listed)["schema_status"] == "changed"
        view = stack.admin.server("demo")
        assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", FP1, FP2)

        upstream_before = stack.upstream_requests()
        calls_before = len(stack.upstream.calls())
        result = await client.call("get_weather", {"city": "Paris", "notes": "id_rsa contents"})
        assert_denied(result, "SCHEMA_CHANGED", tool="get_weather", schema_status="changed",
                      required_action="admin_review")
        result = await client.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        assert_denied(result, "SCHEMA_CHANGED", tool="deploy_preview", schema_status="changed",
                      required_action="admin_review")
        assert stack.upstream_requests() == upstream_before
        assert len(stack.upstream.calls()) == calls_before == 0

    changed = wait_for_audit(stack, "schema.changed")
    assert (changed["status_before"], changed["status_after"], changed["baseline"], changed["live"]) == (
        "verified", "changed", FP1, FP2)
    denied = wait_for_audits(stack, "call.denied", 2)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("get_weather", "SCHEMA_CHANGED"), ("deploy_preview", "SCHEMA_CHANGED")]
    assert counter(stack, "calls_denied_schema_changed") == 2
    assert counter(stack, "lists_changed") >= 1
    assert counter(stack, "lists_filtered") >= 1


async def test_approve_requires_the_reviewed_candidate(wasm: Any, stack: Stack) -> None:
    await _drift_to_rev2(stack)
    for wrong in ("sha256:" + "0" * 64, FP1):
        response = stack.admin.approve("demo", wrong)
        assert response.status_code == 409, response.text
        view = stack.admin.server("demo")
        assert (status_of(view), baseline_of(view)) == ("changed", FP1)

    reviewed = candidate_of(stack.admin.server("demo"))
    assert reviewed == FP2
    response = stack.admin.approve("demo", reviewed)
    assert response.status_code == 200, response.text
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("verified", FP2)

    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
        result = await client.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        assert result.content[0].text == "preview of fix-login deployed to eu-preview"
    assert [c["tool"] for c in stack.upstream.calls()] == ["deploy_preview"]
    approved = wait_for_audit(stack, "schema.approved")
    assert (approved["status_before"], approved["status_after"], approved["baseline"]) == (
        "changed", "verified", FP2)


async def test_quarantine_refuses_calls_until_release(wasm: Any, stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
        assert stack.admin.quarantine("demo", "incident 42: suspicious deploy").status_code == 200
        assert status_of(stack.admin.server("demo")) == "quarantined"
        result = await client.call("add", {"a": 1, "b": 2})
        assert_denied(result, "SERVER_QUARANTINED", tool="add", schema_status="quarantined",
                      required_action="admin_review")
        listed = await client.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "quarantined")

        assert stack.admin.release("demo").status_code == 200
        assert status_of(stack.admin.server("demo")) == "verified"
        assert await client.tool_names() == REV1_TOOLS
        result = await client.call("add", {"a": 1, "b": 2})
        assert (result.isError, result.content[0].text) == (False, "3")
    assert [c["arguments"] for c in stack.upstream.calls()] == [{"a": 1, "b": 2}]
    quarantined = wait_for_audit(stack, "server.quarantined")
    assert quarantined["reason"] == "incident 42: suspicious deploy"
    released = wait_for_audit(stack, "server.released")
    assert (released["status_before"], released["status_after"]) == ("quarantined", "verified")


async def test_strict_posture_holds_server_pending_until_approved(
    wasm: Any, stacks: Callable[..., Stack]
) -> None:
    config = envoyctl.default_plugin_config()
    config["posture"] = "strict"
    stack = stacks(plugin_config=config)
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        assert (listed.tools, list_status_meta(listed)["schema_status"]) == ([], "pending")
        view = stack.admin.server("demo")
        assert (status_of(view), baseline_of(view), candidate_of(view)) == ("pending", None, FP1)
        result = await client.call("add", {"a": 1, "b": 2})
        assert_denied(result, "SCHEMA_PENDING", tool="add", schema_status="pending",
                      required_action="admin_review")
        assert stack.admin.approve("demo", FP1).status_code == 200
        assert await client.tool_names() == REV1_TOOLS
        result = await client.call("add", {"a": 1, "b": 2})
        assert result.content[0].text == "3"
    assert len(stack.upstream.calls()) == 1


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_stale_call_after_approval_needs_a_relist(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode)
    async with mcp_client(stack.mcp_url) as agent:
        assert await agent.tool_names() == REV1_TOOLS  # the agent plans against rev 1
        stack.upstream.set_revision(2)  # same process: the agent's session survives
        async with mcp_client(stack.mcp_url) as reviewer_view:
            assert await reviewer_view.tool_names() == []
        assert stack.admin.approve("demo", FP2).status_code == 200

        result = await agent.call("deploy_preview", {"branch": "fix-login"})
        assert_denied(result, "STALE_TOOL_SCHEMA", tool="deploy_preview", schema_status="verified",
                      required_action="refresh_tools")
        assert denial(result)["current_fingerprint"] == FP2
        assert stack.upstream.calls() == []

        # add did not change: the agent's snapshot of it is still the approved one.
        result = await agent.call("add", {"a": 2, "b": 3})
        assert (result.isError, result.content[0].text) == (False, "5")

        assert await agent.tool_names() == REV1_TOOLS  # re-list: snapshot now rev 2
        result = await agent.call("deploy_preview", {"branch": "fix-login"})
        assert_denied(result, "INVALID_ARGUMENTS", tool="deploy_preview", schema_status="verified",
                      required_action="fix_arguments")
        result = await agent.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        assert (result.isError, result.content[0].text) == (
            False, "preview of fix-login deployed to eu-preview")
    assert [(c["tool"], c["arguments"]) for c in stack.upstream.calls()] == [
        ("add", {"a": 2, "b": 3}),
        ("deploy_preview", {"branch": "fix-login", "region": "eu-preview"}),
    ]
    denied = wait_for_audits(stack, "call.denied", 2)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("deploy_preview", "STALE_TOOL_SCHEMA"), ("deploy_preview", "INVALID_ARGUMENTS")]


async def test_list_changed_holds_calls_until_relisted(wasm: Any, stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
        assert stack.upstream.announce_list_changed() == 1
        with anyio.fail_after(10):
            while not client.notifications:
                await anyio.sleep(0.02)
        assert client.notifications[0].method == "notifications/tools/list_changed"
        result = await client.call("add", {"a": 1, "b": 1})
        assert_denied(result, "SCHEMA_UNVERIFIED", tool="add", schema_status="verified",
                      required_action="refresh_tools")
        assert await client.tool_names() == REV1_TOOLS  # same set: verifies again
        result = await client.call("add", {"a": 1, "b": 1})
        assert (result.isError, result.content[0].text) == (False, "2")
    assert len(stack.upstream.calls()) == 1


async def test_drift_review_shows_the_classified_diff_and_the_audit_ring(wasm: Any, stack: Stack) -> None:
    await _drift_to_rev2(stack)
    view = stack.admin.server("demo")
    changes = {(c["class"], c["kind"], c["tool"], c["path"]) for c in view["diff"]["changes"]}
    assert changes == {
        ("breaking", "property_added_required", "deploy_preview", "/inputSchema/properties/region"),
        ("semantic", "description_changed", "get_weather", "/description"),
        ("additive", "property_added_optional", "get_weather", "/inputSchema/properties/notes"),
    }
    poisoned = next(c for c in view["diff"]["changes"] if c["kind"] == "description_changed")
    assert "<IMPORTANT>" in poisoned["after"] and "<IMPORTANT>" not in poisoned["before"]
    assert isinstance(view["drift_at_ms"], int) and view["drift_at_ms"] > 0

    servers = stack.admin.get("servers").json()["servers"]
    assert [(s["server"], s["schema_status"]) for s in servers] == [("demo", "changed")]
    assert servers[0]["diff_summary"]["classes"] == {
        "additive": 1, "authority": 0, "breaking": 1, "semantic": 1}

    wait_for_audits(stack, "list.filtered", 1)
    ring = [e["event"] for e in stack.admin.get("audit").json()["events"] if e["event"] != "config.loaded"]
    logged = [e["event"] for e in stack.envoy.audit_events() if e["event"] != "config.loaded"]
    assert ring == logged == ["schema.baselined", "schema.changed", "list.filtered"]
