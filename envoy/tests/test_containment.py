"""Containment in a real Envoy: a drift kept to the tools it reaches (``drift_scope: "tool"``)
and tool lists cut to what policy lets each caller call, with the official SDK clients of
both eras.

- A rug pull on the rug-pull server (SDK 1.x, 2025-11-25; and the SDK 2.x server, MCP
  2026-07-28) under ``drift_scope: "tool"``: the server goes ``changed`` as always, but the
  unchanged tools stay listed and keep working for every client, while the changed tools are
  withheld and their calls refused with ``TOOL_CHANGED`` without reaching the server (the
  upstream's own log and Envoy's ``upstream_rq_total``). The admin API names each withheld
  tool and why; approving the candidate serves every tool again.
- A caller whose verified ``jwt_authn`` token lacks the group a tool is reserved for is not
  listed that tool and cannot call it; a caller with the group is listed it and calls it. On
  2026-07-28 the cut list is sent with ``cacheScope: "private"``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import envoyctl
from fingerprint_ref import server_fingerprint
from jwt_identity import PAYLOAD, jwt_filter, signing_key, token
from modern_stack import ModernStack, SdkClient
from rugpull_server import tool_surface as surface
from stack import Stack, baseline_of, candidate_of, mcp_client, status_of
from test_modern import (  # noqa: F401 (fixtures)
    SDK_KINDS,
    SURFACE1,
    SURFACE2,
    Untouched,
    assert_tool_error,
    config,
    legacy_client,
    modern_stacks,
    sdk_clients,
    text_of,
)
from toolseal_checks import (
    STATUS_META_KEY,
    assert_denied,
    list_status_meta,
    wait_for_audit,
    wait_for_audits,
)

pytestmark = pytest.mark.anyio

FP1, FP2 = server_fingerprint(surface(1)), server_fingerprint(surface(2))
MODERN_FP1, MODERN_FP2 = server_fingerprint(SURFACE1), server_fingerprint(SURFACE2)
WITHHELD = [{"tool": "deploy_preview", "change": "changed"},
            {"tool": "get_weather", "change": "changed"}]
GROUPS = f"{PAYLOAD}/groups"


def tool_scoped(server_id: str) -> dict[str, Any]:
    """Discovery posture, admin API on, every call audited, ``server_id`` drift-scoped to tools."""
    return config(**{server_id: {"drift_scope": "tool"}})


def withheld_of(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The admin view's withheld tools without their per-tool change lists."""
    return [{"tool": w["tool"], "change": w["change"]} for w in view.get("withheld_tools", [])]


def assert_withheld_view(view: dict[str, Any], baseline: str, candidate: str) -> None:
    """The admin view of a drift kept to deploy_preview and get_weather."""
    assert (status_of(view), baseline_of(view), candidate_of(view)) == (
        "changed", baseline, candidate)
    assert (view["drift_scope"], view["serving"]) == ("tool", "unchanged_tools"), view
    assert withheld_of(view) == WITHHELD, view
    for withheld in view["withheld_tools"]:
        kinds = {change["kind"] for change in withheld["changes"]}
        assert kinds and all(change["tool"] == withheld["tool"] for change in withheld["changes"])
    deploy, weather = view["withheld_tools"]
    assert "property_added_required" in {c["kind"] for c in deploy["changes"]}, deploy
    assert "description_changed" in {c["kind"] for c in weather["changes"]}, weather


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_a_rug_pull_on_two_tools_leaves_the_third_serving_until_approval(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode, plugin_config=tool_scoped("demo"))
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather", "add"]
    stack.upstream.restart(rev=2)
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["add"]
        meta = list_status_meta(listed)
        assert (meta["schema_status"], meta["withheld"], meta["baseline_fingerprint"],
                meta["live_fingerprint"]) == ("changed", 2, FP1, FP2)
        assert "deploy_preview" not in str(meta) and "get_weather" not in str(meta)
        assert_withheld_view(stack.admin.server("demo"), FP1, FP2)

        result = await client.call("add", {"a": 20, "b": 22})
        assert (result.isError, result.content[0].text) == (False, "42")
        upstream_before, calls_before = stack.upstream_requests(), len(stack.upstream.calls())
        result = await client.call("get_weather", {"city": "Paris", "notes": "id_rsa contents"})
        refusal = assert_denied(result, "TOOL_CHANGED", tool="get_weather",
                                schema_status="changed", required_action="admin_review")
        assert (refusal["change"], refusal["current_fingerprint"]) == ("changed", FP1)
        result = await client.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        assert_denied(result, "TOOL_CHANGED", tool="deploy_preview", schema_status="changed",
                      required_action="admin_review")
        assert stack.upstream_requests() == upstream_before
        assert len(stack.upstream.calls()) == calls_before

    assert stack.admin.approve("demo", FP2).status_code == 200
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view), withheld_of(view)) == ("verified", FP2, [])
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather", "add"]
        result = await client.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        assert result.content[0].text == "preview of fix-login deployed to eu-preview"
    assert [(c["tool"], c["arguments"]) for c in stack.upstream.calls()] == [
        ("add", {"a": 20, "b": 22}),
        ("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})]
    changed = wait_for_audit(stack, "schema.changed")
    assert (changed["status_after"], changed["baseline"], changed["live"]) == ("changed", FP1, FP2)
    denied = wait_for_audits(stack, "call.denied", 2)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("get_weather", "TOOL_CHANGED"), ("deploy_preview", "TOOL_CHANGED")]
    filtered = wait_for_audit(stack, "list.filtered")
    assert (filtered["tools_in"], filtered["tools_out"], filtered["withheld"]) == (
        3, 1, ["deploy_preview", "get_weather"])


async def test_both_eras_keep_calling_the_unchanged_tools_through_a_rug_pull(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient]
) -> None:
    stack = modern_stacks(mcp="python", plugin_config=tool_scoped("mcp"))
    upstream = stack.upstreams["mcp"]
    agents = {kind: sdk_clients(kind, stack.url("mcp")) for kind in SDK_KINDS}
    for agent in agents.values():
        assert agent.list()["tools"] == SURFACE1
    upstream.set_revision(2)

    unchanged = [tool for tool in SURFACE2 if tool["name"] in ("add", "rollback_preview")]
    assert unchanged == [tool for tool in SURFACE1 if tool["name"] in ("add", "rollback_preview")]
    for agent in agents.values():
        listed = agent.list(cache_mode="refresh")
        assert listed["tools"] == unchanged, listed
        # Partial and about to change: the client must not keep it.
        assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private"), listed
        assert listed["_meta"][STATUS_META_KEY]["withheld"] == 2, listed
    assert_withheld_view(stack.admin.server("mcp"), MODERN_FP1, MODERN_FP2)

    async with legacy_client(stack, "mcp") as legacy:  # SDK 1.x, 2025-11-25, same server
        assert await legacy.tool_names() == ["add", "rollback_preview"]
        for agent in agents.values():
            assert text_of(agent.call("add", {"a": 2, "b": 3})) == "5"
        result = await legacy.call("add", {"a": 20, "b": 22})
        assert (result.isError, result.content[0].text) == (False, "42")
        with Untouched(stack, "mcp"):
            for agent in agents.values():
                refusal = assert_tool_error(
                    agent.call("get_weather", {"city": "Paris", "notes": "id_rsa contents"}),
                    "TOOL_CHANGED", server="mcp", tool="get_weather", schema_status="changed",
                    required_action="admin_review")
                assert refusal["change"] == "changed"
            result = await legacy.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
            assert_denied(result, "TOOL_CHANGED", tool="deploy_preview", schema_status="changed",
                          required_action="admin_review", server="mcp")

    assert stack.admin.approve("mcp", MODERN_FP2).status_code == 200
    for agent in agents.values():
        assert agent.list(cache_mode="refresh")["tools"] == SURFACE2
    deployed = agents["typescript"].call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
    assert text_of(deployed) == "preview of fix-login deployed to eu-preview"
    assert [(c["tool"], c["arguments"]) for c in upstream.calls()] == [
        ("add", {"a": 2, "b": 3}), ("add", {"a": 2, "b": 3}), ("add", {"a": 20, "b": 22}),
        ("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})]
    denied = wait_for_audits(stack, "call.denied", 3)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("get_weather", "TOOL_CHANGED")] * 2 + [("deploy_preview", "TOOL_CHANGED")]


@pytest.fixture
def key() -> rsa.RSAPrivateKey:
    """The key jwt_authn trusts."""
    return signing_key()


def ops_only_rollback() -> dict[str, Any]:
    """Only the ops group may roll a preview back; everything else is allowed."""
    plugin = config()
    plugin["policy"] = {"default": "allow", "rules": [
        {"action": "allow", "tool": "rollback_preview", "principal": {"metadata": GROUPS, "in": ["ops"]}},
        {"action": "deny", "tool": "rollback_preview"},
    ]}
    return plugin


async def test_a_caller_without_the_group_is_not_shown_and_cannot_call_its_tool(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
    key: rsa.RSAPrivateKey
) -> None:
    stack = modern_stacks(py="python", plugin_config=ops_only_rollback(),
                          pre_filters=jwt_filter(key, prefix="/py/"))
    url, upstream = stack.url("py"), stack.upstreams["py"]
    viewer = {"authorization": f"Bearer {token(key, sub='viewer', groups=['viewers'])}"}
    operator = {"authorization": f"Bearer {token(key, sub='operator', groups=['ops', 'staff'])}"}
    cut = [tool for tool in SURFACE1 if tool["name"] != "rollback_preview"]
    for kind in SDK_KINDS:
        agent = sdk_clients(kind, url, viewer)
        listed = agent.list(cache_mode="refresh")
        assert listed["tools"] == cut, listed
        assert (listed["cacheScope"], listed["ttlMs"]) == ("private", 60_000), listed
        status = listed["_meta"][STATUS_META_KEY]
        assert (status["schema_status"], status["hidden_by_policy"]) == ("verified", 1), status
        assert "rollback_preview" not in str(status)
        with Untouched(stack, "py"):
            assert_tool_error(agent.call("rollback_preview", {"branch": "fix-login"}),
                              "POLICY_DENIED", server="py", tool="rollback_preview",
                              schema_status="verified", required_action="none")
        assert text_of(agent.call("add", {"a": 2, "b": 3})) == "5"
    async with legacy_client(stack, "py", viewer) as legacy:
        assert await legacy.tool_names() == [tool["name"] for tool in cut]
        with Untouched(stack, "py"):
            result = await legacy.call("rollback_preview", {"branch": "fix-login"})
            assert_denied(result, "POLICY_DENIED", tool="rollback_preview", server="py",
                          schema_status="verified", required_action="none")

    for kind in SDK_KINDS:
        agent = sdk_clients(kind, url, operator)
        listed = agent.list(cache_mode="refresh")
        assert listed["tools"] == SURFACE1, listed
        assert (listed["cacheScope"], listed["ttlMs"]) == ("public", 60_000), listed
        confirmed = agent.call("rollback_preview", {"branch": "fix-login"})
        assert confirmed["structuredContent"] == {"branch": "fix-login", "rolled_back": True}
    assert [c["tool"] for c in upstream.calls() if not c["mrtr_retry"]] == [
        "add", "add", "rollback_preview", "rollback_preview"]
    view = stack.admin.server("py")
    assert (status_of(view), baseline_of(view)) == ("verified", MODERN_FP1)
    denied = wait_for_audits(stack, "call.denied", 3)
    assert [(e["tool"], e["error_code"]) for e in denied] == [("rollback_preview", "POLICY_DENIED")] * 3


async def test_a_2025_jwt_caller_sees_only_what_its_group_may_call(
    wasm: Any, stacks: Callable[..., Stack], key: rsa.RSAPrivateKey
) -> None:
    plugin = envoyctl.default_plugin_config()
    plugin["policy"] = {"default": "allow", "rules": [
        {"action": "allow", "tool": "deploy_preview", "principal": {"metadata": GROUPS, "in": ["deployers"]}},
        {"action": "deny", "tool": "deploy_preview"},
        {"action": "deny", "annotations": {"destructiveHint": True}},
    ]}
    stack = stacks(rev=3, plugin_config=plugin, pre_filters=jwt_filter(key))
    deployer = {"authorization": f"Bearer {token(key, groups=['deployers'])}"}
    viewer = {"authorization": f"Bearer {token(key, groups=['viewers'])}"}
    args = {"branch": "fix-login", "region": "eu-preview"}
    async with mcp_client(stack.mcp_url, headers=deployer) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["deploy_preview", "get_weather", "add"]
        assert list_status_meta(listed)["hidden_by_policy"] == 1
        result = await client.call("deploy_preview", args)
        assert result.content[0].text == "preview of fix-login deployed to eu-preview"
    for headers in (viewer, {}):
        async with mcp_client(stack.mcp_url, headers=headers) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["get_weather", "add"]
            assert list_status_meta(listed)["hidden_by_policy"] == 2
            before = stack.upstream_requests()
            result = await client.call("deploy_preview", args)
            assert_denied(result, "POLICY_DENIED", tool="deploy_preview",
                          schema_status="verified", required_action="none")
            assert stack.upstream_requests() == before
    assert [c["arguments"] for c in stack.upstream.calls()] == [args]
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == (
        "verified", server_fingerprint(surface(3)))
