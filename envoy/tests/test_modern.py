"""MCP 2026-07-28 next to the 2025 revisions, through the shipped Envoy chain, with the official
SDKs of both eras.

Upstreams: the rug-pull server on the MCP Python SDK 2.x (``MCPServer``, stateless HTTP) and
on the TypeScript SDK v2; both list ``ttlMs: 3600000, cacheScope: "public"`` as a real server
may, and serve 2025 clients on the same endpoint. Clients: the Python SDK 2.x ``mcp.Client``
(its default ``auto`` mode, which speaks 2026-07-28), the TypeScript SDK v2 client pinned to
2026-07-28 (its default is the 2025 handshake), and the SDK 1.x client (2025-11-25) in the
same run, on the same Envoy. This proves:

- lists and calls of both eras pass; a verified list keeps the server's cache scope and its
  ``ttlMs`` is lowered to ``limits.max_list_ttl_ms`` (60 s by default);
- a rug pull is served as ``tools: []`` with ``ttlMs: 0, cacheScope: "private"``, so after
  the approval the SDK 2.x client, whose cache honours the hint, lists again and sees the
  tools at once (no hour-long cache);
- every denial (``SCHEMA_CHANGED``, ``SCHEMA_PENDING``, ``SERVER_QUARANTINED``,
  ``TOOL_NOT_APPROVED``, ``INVALID_ARGUMENTS``, ``POLICY_DENIED``, ``STALE_TOOL_SCHEMA`` with a
  header or a ``jwt_authn`` subject as snapshot key, ``SCHEMA_UNVERIFIED``) reaches each
  client as a tool result carrying the structured denial, never as an exception; the
  upstream's own request log and Envoy's ``upstream_rq_total`` show it was never forwarded;
- a tool that asks the user to confirm (an MRTR ``input_required`` round) completes under
  ``results: "enforce"``, and a final result that breaks its ``outputSchema`` is replaced by
  ``RESULT_CONTRACT_CHANGED``;
- ``notifications/tools/list_changed`` on a ``subscriptions/listen`` stream holds calls until
  a list verifies;
- a server that seals its whole surface (``seal``) has its tools' fields, prompts, templates
  and ``server/discover`` instructions sealed for each client (Python SDK 2.x, TypeScript
  v2), and a prompt rug-pulled in place closes it for this era too;
- a request whose ``MCP-Protocol-Version``, ``Mcp-Method`` or ``Mcp-Name`` header disagrees
  with its body, and a batch, are refused (HTTP 400) before the upstream.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import anyio
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import envoyctl
from fingerprint_ref import server_fingerprint
from jwt_identity import PAYLOAD, jwt_filter, signing_key, token
from modern_stack import ClientRaised, ModernStack, ModernUpstream, SdkClient, start_modern_stack
from stack import McpClient, baseline_of, candidate_of, mcp_client, status_of
from surface import modern_tool_surface
from toolseal_checks import STATUS_META_KEY, Untouched, assert_denied, http_methods, wait_for_audits

pytestmark = pytest.mark.anyio

SURFACE1, SURFACE2 = modern_tool_surface(1), modern_tool_surface(2)
NAMES = [tool["name"] for tool in SURFACE1]
FP1, FP2 = server_fingerprint(SURFACE1), server_fingerprint(SURFACE2)
SERVER_TTL_MS = 3_600_000
CAPPED_TTL_MS = 60_000
WEATHER = {"city": "Paris", "temperature_c": 21, "conditions": "sunny"}
SDK_KINDS = ("python", "typescript")
MODERN_VERSION = "2026-07-28"


@pytest.fixture
def modern_stacks(wasm: Any, tmp_path: Path) -> Iterator[Callable[..., ModernStack]]:
    """Factory: ``modern_stacks(py=..., ts=..., plugin_config=...)`` starts the named upstreams
    (``kind`` python or typescript, or ``(kind, options)``) behind one Envoy; all stopped after."""
    started: list[ModernStack] = []

    def make(*, plugin_config: dict[str, Any] | None = None, pre_filters: str = "",
             **servers: Any) -> ModernStack:
        upstreams = {}
        for server_id, spec in servers.items():
            kind, options = (spec, {}) if isinstance(spec, str) else spec
            upstreams[server_id] = ModernUpstream(tmp_path / f"up-{server_id}", kind, **options)
        stack = start_modern_stack(tmp_path / f"stack{len(started)}", upstreams,
                                   plugin_config=plugin_config, pre_filters=pre_filters)
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        stack.stop()


@pytest.fixture
def sdk_clients(tmp_path: Path) -> Iterator[Callable[..., SdkClient]]:
    """Factory: ``sdk_clients(kind, url, headers)`` starts and connects an official client."""
    started: list[SdkClient] = []

    def make(kind: str, url: str, headers: dict[str, str] | None = None) -> SdkClient:
        client = SdkClient(kind, tmp_path / "clients")
        started.append(client)
        connected = client.connect(url, headers)
        assert connected["protocol_version"] == MODERN_VERSION, connected
        return client

    yield make
    for client in started:
        client.close()


def config(**servers: dict[str, Any]) -> dict[str, Any]:
    """Discovery posture, server id from the route, admin API on, every call audited."""
    plugin = envoyctl.default_plugin_config()
    plugin["audit"] = {"call_allowed": True}
    if servers:
        plugin["servers"] = servers
    return plugin


def assert_tool_error(result: dict[str, Any], error_code: str, *, server: str, tool: str,
                      schema_status: str, required_action: str,
                      side_effect_started: bool = False) -> dict[str, Any]:
    """A toolseal denial as the 2026-07-28 client returned it: a tool result (no exception),
    ``isError: true``, the structured denial, a text naming the tool."""
    assert result.get("isError") is True, result
    refusal = result.get("structuredContent")
    assert isinstance(refusal, dict), result
    expected = {"error_code": error_code, "server": server, "tool": tool,
                "schema_status": schema_status, "required_action": required_action,
                "side_effect_started": side_effect_started}
    assert {k: refusal.get(k) for k in expected} == expected, refusal
    assert result["content"][0]["type"] == "text" and tool in result["content"][0]["text"], result
    return refusal


def assert_filtered(listed: dict[str, Any], schema_status: str) -> None:
    """An emptied list, sent with the gateway's own cache hint."""
    assert listed["tools"] == [], listed
    assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private"), listed
    assert listed["_meta"][STATUS_META_KEY]["schema_status"] == schema_status, listed


def assert_verified(listed: dict[str, Any], surface: list[dict[str, Any]]) -> None:
    """The server's list, unchanged but for the lowered ttlMs."""
    assert listed["tools"] == surface, listed
    assert (listed["ttlMs"], listed["cacheScope"]) == (CAPPED_TTL_MS, "public"), listed


def text_of(result: dict[str, Any]) -> str:
    """The text of a one-block tool result that is not an error."""
    assert not result.get("isError"), result
    assert [block["type"] for block in result["content"]] == ["text"], result
    return result["content"][0]["text"]


@contextlib.asynccontextmanager
async def legacy_client(stack: ModernStack, server_id: str,
                        headers: dict[str, str] | None = None) -> AsyncIterator[McpClient]:
    """The SDK 1.x client (2025-11-25 handshake) once its whole handshake has reached the
    server: it posts ``notifications/initialized`` in the background, which must not land in
    a window that asserts the upstream is untouched."""
    upstream = stack.upstreams[server_id]
    before = http_methods(upstream).count("notifications/initialized")
    async with mcp_client(stack.url(server_id), headers=headers) as client:
        with anyio.fail_after(10):
            while http_methods(upstream).count("notifications/initialized") == before:
                await anyio.sleep(0.02)
        yield client


async def test_both_eras_list_and_call_through_one_envoy(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient]
) -> None:
    stack = modern_stacks(py="python", ts="typescript", plugin_config=config())
    for server_id in ("py", "ts"):
        url = stack.url(server_id)
        for kind in SDK_KINDS:
            client = sdk_clients(kind, url)
            assert_verified(client.list(), SURFACE1)
            assert text_of(client.call("add", {"a": 2, "b": 3})) == "5"
            assert client.call("get_weather", {"city": "Paris"})["structuredContent"] == WEATHER
            confirmed = client.call("rollback_preview", {"branch": "fix-login"})
            assert confirmed["structuredContent"] == {"branch": "fix-login", "rolled_back": True}
        async with legacy_client(stack, server_id) as legacy:  # SDK 1.x: 2025-11-25 handshake
            assert await legacy.tool_names() == NAMES
            result = await legacy.call("add", {"a": 20, "b": 22})
            assert (result.isError, result.content[0].text) == (False, "42")
        view = stack.admin.server(server_id)
        assert (status_of(view), baseline_of(view), candidate_of(view)) == ("verified", FP1, None)
        calls = [(c["tool"], c["mrtr_retry"]) for c in stack.upstreams[server_id].calls()]
        per_client = [("add", False), ("get_weather", False), ("rollback_preview", False),
                      ("rollback_preview", True)]
        assert calls == per_client * 2 + [("add", False)]
    baselined = wait_for_audits(stack, "schema.baselined", 2)
    assert sorted((e["server"], e["baseline"]) for e in baselined) == [("py", FP1), ("ts", FP1)]
    assert wait_for_audits(stack, "call.allowed", 18)  # 4 + 4 + 1 per server, and no denial
    assert [e for e in stack.envoy.audit_events() if e["event"] == "call.denied"] == []


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_rug_pull_is_filtered_uncached_and_lists_again_after_approval(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient], kind: str
) -> None:
    stack = modern_stacks(mcp=kind, plugin_config=config())
    upstream = stack.upstreams["mcp"]
    agents = {k: sdk_clients(k, stack.url("mcp")) for k in SDK_KINDS}
    for agent in agents.values():
        assert_verified(agent.list(), SURFACE1)
    upstream.set_revision(2)  # the rug pull, deployed in place

    for agent in agents.values():
        assert_filtered(agent.list(cache_mode="refresh"), "changed")
    view = stack.admin.server("mcp")
    assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", FP1, FP2)
    async with legacy_client(stack, "mcp") as legacy:  # the SDK 1.x client, same server
        assert await legacy.tool_names() == []
        with Untouched(stack, "mcp"):
            for agent in agents.values():
                result = agent.call("get_weather", {"city": "Paris", "notes": "id_rsa contents"})
                assert_tool_error(result, "SCHEMA_CHANGED", server="mcp", tool="get_weather",
                                  schema_status="changed", required_action="admin_review")
            result = await legacy.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
            assert_denied(result, "SCHEMA_CHANGED", tool="deploy_preview", schema_status="changed",
                          required_action="admin_review", server="mcp")

    assert stack.admin.approve("mcp", FP2).status_code == 200
    lists_before = http_methods(upstream).count("tools/list")
    # The emptied list was sent with ttlMs 0: the client's cache (default mode "use") did not
    # keep it, so this list goes to the server and shows the approved tools at once.
    assert_verified(agents["python"].list(cache_mode="use"), SURFACE2)
    assert_verified(agents["typescript"].list(), SURFACE2)
    assert http_methods(upstream).count("tools/list") == lists_before + 2
    deployed = agents["python"].call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
    assert text_of(deployed) == "preview of fix-login deployed to eu-preview"
    assert [(c["tool"], c["arguments"]) for c in upstream.calls()] == [
        ("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})]
    denied = wait_for_audits(stack, "call.denied", 3)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("get_weather", "SCHEMA_CHANGED")] * 2 + [("deploy_preview", "SCHEMA_CHANGED")]


async def test_every_denial_reaches_both_eras_as_a_structured_tool_error(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient]
) -> None:
    plugin = config(py={"posture": "strict"})
    plugin["policy"] = {"default": "allow", "rules": [
        {"action": "deny", "tool": "deploy_preview", "arguments": {"/branch": {"prefix": "release/"}}},
    ]}
    stack = modern_stacks(py="python", plugin_config=plugin)
    url = stack.url("py")
    agents = [sdk_clients(kind, url) for kind in SDK_KINDS]
    expected_denials: list[tuple[str, str]] = []
    async with legacy_client(stack, "py") as legacy:  # the SDK 1.x client, same server

        async def refused_everywhere(tool: str, arguments: dict[str, Any], error_code: str,
                                     schema_status: str, required_action: str) -> None:
            with Untouched(stack, "py"):
                for agent in agents:
                    assert_tool_error(agent.call(tool, arguments), error_code, server="py",
                                      tool=tool, schema_status=schema_status,
                                      required_action=required_action)
                assert_denied(await legacy.call(tool, arguments), error_code, tool=tool,
                              schema_status=schema_status, required_action=required_action,
                              server="py")
            expected_denials.extend([(tool, error_code)] * 3)

        for agent in agents:
            assert_filtered(agent.list(), "pending")
        await refused_everywhere("add", {"a": 1, "b": 2}, "SCHEMA_PENDING", "pending",
                                 "admin_review")
        assert stack.admin.approve("py", FP1).status_code == 200
        for agent in agents:
            assert_verified(agent.list(), SURFACE1)  # the pending list was not cached either

        await refused_everywhere("delete_preview", {"branch": "fix-login"}, "TOOL_NOT_APPROVED",
                                 "verified", "refresh_tools")
        await refused_everywhere("add", {"a": "one", "b": 2}, "INVALID_ARGUMENTS", "verified",
                                 "fix_arguments")
        await refused_everywhere("deploy_preview", {"branch": "release/1.0"}, "POLICY_DENIED",
                                 "verified", "none")
        assert stack.admin.quarantine("py", "incident 42").status_code == 200
        await refused_everywhere("add", {"a": 1, "b": 2}, "SERVER_QUARANTINED", "quarantined",
                                 "admin_review")
        assert stack.admin.release("py").status_code == 200
        assert text_of(agents[0].call("add", {"a": 1, "b": 2})) == "3"

    assert [c["tool"] for c in stack.upstreams["py"].calls()] == ["add"]
    denied = wait_for_audits(stack, "call.denied", len(expected_denials))
    assert [(e["tool"], e["error_code"]) for e in denied] == expected_denials


@pytest.fixture
def key() -> rsa.RSAPrivateKey:
    """The key jwt_authn trusts in the snapshot-key test."""
    return signing_key()


@pytest.mark.parametrize("identity", ["header", "jwt"])
async def test_stale_call_without_a_relist_is_refused_per_snapshot_key(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
    key: rsa.RSAPrivateKey, identity: str
) -> None:
    plugin = config()
    if identity == "header":
        plugin["snapshots"] = {"key": [{"header": "x-agent-id"}]}
        pre_filters = ""

        def headers(name: str) -> dict[str, str]:
            return {"x-agent-id": name}
    else:
        plugin["snapshots"] = {"key": [{"metadata": f"{PAYLOAD}/sub"}]}
        pre_filters = jwt_filter(key, prefix="/py/")

        def headers(name: str) -> dict[str, str]:
            return {"authorization": f"Bearer {token(key, sub=name)}"}

    stack = modern_stacks(py="python", plugin_config=plugin, pre_filters=pre_filters)
    url = stack.url("py")
    upstream = stack.upstreams["py"]
    python_agent = sdk_clients("python", url, headers("agent-a"))
    ts_agent = sdk_clients("typescript", url, headers("agent-b"))
    for agent in (python_agent, ts_agent):
        assert_verified(agent.list(), SURFACE1)  # each plans against release A
    async with legacy_client(stack, "py", headers("agent-c")) as legacy:
        assert await legacy.tool_names() == NAMES
        upstream.set_revision(2)
        reviewer = sdk_clients("python", url, headers("reviewer"))
        assert_filtered(reviewer.list(), "changed")
        assert stack.admin.approve("py", FP2).status_code == 200

        with Untouched(stack, "py"):
            for agent in (python_agent, ts_agent):
                refusal = assert_tool_error(
                    agent.call("deploy_preview", {"branch": "fix-login"}), "STALE_TOOL_SCHEMA",
                    server="py", tool="deploy_preview", schema_status="verified",
                    required_action="refresh_tools")
                assert refusal["current_fingerprint"] == FP2
            result = await legacy.call("deploy_preview", {"branch": "fix-login"})
            assert_denied(result, "STALE_TOOL_SCHEMA", tool="deploy_preview", server="py",
                          schema_status="verified", required_action="refresh_tools")
    # add did not change: agent-a's snapshot of it is the approved one.
    assert text_of(python_agent.call("add", {"a": 2, "b": 3})) == "5"
    # A caller without a key is checked against the baseline alone.
    anonymous = sdk_clients("python", url)
    with Untouched(stack, "py"):
        assert_tool_error(anonymous.call("deploy_preview", {"branch": "fix-login"}),
                          "INVALID_ARGUMENTS", server="py", tool="deploy_preview",
                          schema_status="verified", required_action="fix_arguments")
    # Listing again renews agent-a's snapshot: the call is now checked as a current one.
    assert_verified(python_agent.list(cache_mode="refresh"), SURFACE2)
    assert_tool_error(python_agent.call("deploy_preview", {"branch": "fix-login"}),
                      "INVALID_ARGUMENTS", server="py", tool="deploy_preview",
                      schema_status="verified", required_action="fix_arguments")
    deployed = python_agent.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
    assert text_of(deployed) == "preview of fix-login deployed to eu-preview"
    assert [(c["tool"], c["arguments"]) for c in upstream.calls()] == [
        ("add", {"a": 2, "b": 3}),
        ("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})]
    denied = wait_for_audits(stack, "call.denied", 5)
    assert [e["error_code"] for e in denied] == ["STALE_TOOL_SCHEMA"] * 3 + ["INVALID_ARGUMENTS"] * 2


def enforced(server: str, tool: str) -> dict[str, Any]:
    """The tool error that replaces a result breaking its outputSchema: the call did run."""
    return {"error_code": "RESULT_CONTRACT_CHANGED", "server": server, "tool": tool,
            "schema_status": "verified", "required_action": "admin_review",
            "side_effect_started": True, "current_fingerprint": FP1}


async def test_mrtr_confirmation_completes_under_enforce_and_a_broken_final_result_is_replaced(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient]
) -> None:
    plugin = config(py={"results": "enforce"}, ts={"results": "enforce"})
    stack = modern_stacks(py=("python", {"mode": "sse"}), ts="typescript", plugin_config=plugin)
    for server_id, kind in (("py", "python"), ("ts", "typescript")):
        agent = sdk_clients(kind, stack.url(server_id))
        upstream = stack.upstreams[server_id]
        assert_verified(agent.list(), SURFACE1)
        # input_required passes as an interim answer; the retry carries the user's answer and
        # its final result (SSE, after a progress event, from the Python server) is checked.
        done = agent.call("rollback_preview", {"branch": "fix-login"}, progress=kind == "python")
        assert done["structuredContent"] == {"branch": "fix-login", "rolled_back": True}
        assert not done.get("isError")

        upstream.set_result_shape("v2")
        for tool, arguments in (("rollback_preview", {"branch": "fix-login"}),
                                ("get_weather", {"city": "Paris"})):
            replaced = agent.call(tool, arguments)
            assert (replaced.get("isError"), replaced["structuredContent"]) == (
                True, enforced(server_id, tool)), replaced
            assert "yes" not in json.dumps(replaced) and "summary" not in json.dumps(replaced)
        assert [(c["tool"], c["mrtr_retry"], c["result_shape"]) for c in upstream.calls()] == [
            ("rollback_preview", False, "v1"), ("rollback_preview", True, "v1"),
            ("rollback_preview", False, "v2"), ("rollback_preview", True, "v2"),
            ("get_weather", False, "v2")]
    mismatches = wait_for_audits(stack, "result.mismatch", 4)
    assert [(e["server"], e["tool"]) for e in mismatches] == [
        ("py", "rollback_preview"), ("py", "get_weather"),
        ("ts", "rollback_preview"), ("ts", "get_weather")]


async def test_list_changed_on_a_listen_stream_holds_calls_until_a_list_verifies(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient]
) -> None:
    stack = modern_stacks(py="python", ts="typescript", plugin_config=config())
    for server_id, kind in (("py", "python"), ("ts", "typescript")):
        agent = sdk_clients(kind, stack.url(server_id))
        upstream = stack.upstreams[server_id]
        assert_verified(agent.list(), SURFACE1)
        async with legacy_client(stack, server_id) as legacy:  # a 2025 client, same server
            assert agent.listen_once(upstream.list_changed_trigger)
            with Untouched(stack, server_id):
                assert_tool_error(agent.call("add", {"a": 1, "b": 1}), "SCHEMA_UNVERIFIED",
                                  server=server_id, tool="add", schema_status="verified",
                                  required_action="refresh_tools")
                result = await legacy.call("add", {"a": 1, "b": 1})  # the hold is the server's
                assert_denied(result, "SCHEMA_UNVERIFIED", tool="add", schema_status="verified",
                              required_action="refresh_tools", server=server_id)
        assert_verified(agent.list(cache_mode="refresh"), SURFACE1)  # same set: verifies
        assert text_of(agent.call("add", {"a": 1, "b": 1})) == "2"
        assert [c["tool"] for c in upstream.calls()] == ["add"]


MODERN_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                  "mcp-protocol-version": MODERN_VERSION}


def modern_call(name: str, meta_version: str = MODERN_VERSION) -> dict[str, Any]:
    """A 2026-07-28 tools/call body with its ``_meta`` envelope."""
    return {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": name, "arguments": {"a": 1, "b": 2},
        "_meta": {"io.modelcontextprotocol/protocolVersion": meta_version,
                  "io.modelcontextprotocol/clientCapabilities": {}}}}


@pytest.mark.parametrize("case", ["protocol_version", "mcp_name", "mcp_method", "batch"])
async def test_mismatched_routing_headers_and_batches_never_reach_the_upstream(
    modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient], case: str
) -> None:
    stack = modern_stacks(py="python", plugin_config=config())
    assert_verified(sdk_clients("python", stack.url("py")).list(), SURFACE1)  # add is callable
    good_headers = {**MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "add"}
    headers, body = dict(good_headers), modern_call("add")
    if case == "protocol_version":
        body = modern_call("add", meta_version="2025-11-25")
    elif case == "mcp_name":
        headers["mcp-name"] = "deploy_preview"
    elif case == "mcp_method":
        headers["mcp-method"] = "tools/list"
    else:
        body = [modern_call("add"), {**modern_call("add"), "id": 10}]
    with Untouched(stack, "py"):
        response = httpx.post(stack.url("py"), json=body, headers=headers, timeout=5)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == (-32600 if case == "batch" else -32020), error
    rejected = wait_for_audits(stack, "request.rejected", 1)
    assert len(rejected) == 1
    # The same call with headers that agree with its body is allowed and reaches the server.
    response = httpx.post(stack.url("py"), json=modern_call("add"), headers=good_headers, timeout=5)
    assert (response.status_code, response.json()["result"]["content"]) == (
        200, [{"type": "text", "text": "3"}]), response.text
    assert [c["arguments"] for c in stack.upstreams["py"].calls()] == [{"a": 1, "b": 2}]


SEALED = ["tool-fields", "instructions", "prompts", "resource-templates"]


def _prompt_refused_before_the_server(stack: ModernStack, client: SdkClient) -> None:
    """``prompts/get forecast_brief`` is refused as changed, and the server never sees it."""
    with Untouched(stack, "py"):
        with pytest.raises(ClientRaised, match="SCHEMA_CHANGED|changed"):
            client.get_prompt("forecast_brief", {"city": "Paris"})


def _approve_the_prompt_drift(stack: ModernStack) -> None:
    """The server is ``changed`` by its prompts; the reviewed candidate is approved."""
    view = stack.admin.server("py")
    assert status_of(view) == "changed" and "prompts" in view["sections_diff"], view
    assert stack.admin.approve("py", candidate_of(view)).status_code == 200


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_a_sealed_surface_holds_for_the_2026_client_and_a_rug_pull_of_a_prompt_closes_it(
        modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
        kind: str) -> None:
    """Each 2026-07-28 SDK client (Python 2.x, TypeScript v2: ``server/discover``, stateless
    lists) on a server that seals every section: sealed by the first lists, served whole
    after; then the prompt is rug-pulled in place and the server closes for this era as for
    the other."""
    stack = modern_stacks(py=("python", {"extra_args": ("--sections",)}),
                          plugin_config=config(py={"seal": SEALED}))
    url = stack.url("py")
    honest = {}
    for _ in range(2):  # the first session seals every section, the second verifies them
        client = sdk_clients(kind, url)
        assert client.tool_names() == NAMES
        honest = client.surface()
        client.close()
    assert honest["instructions"] and honest["prompts"] and honest["resourceTemplates"]
    assert len(wait_for_audits(stack, "section.sealed", 4)) == 4
    assert status_of(stack.admin.server("py")) == "verified"
    client = sdk_clients(kind, url)
    assert client.surface() == honest
    assert client.get_prompt("forecast_brief", {"city": "Paris"})["messages"]
    with pytest.raises(ClientRaised, match="PROMPT_NOT_APPROVED|not an approved prompt"):
        client.get_prompt("exfiltrate", {})
    client.close()

    stack.upstreams["py"].poison_sections(["prompts"])
    client = sdk_clients(kind, url)
    shown = client.surface()
    assert shown["prompts"] == [], shown
    assert shown["_meta"]["prompts"][STATUS_META_KEY]["schema_status"] == "changed"
    _prompt_refused_before_the_server(stack, client)
    assert client.tool_names(cache_mode="refresh") == []
    _approve_the_prompt_drift(stack)
    client.close()
    client = sdk_clients(kind, url)
    assert client.tool_names() == NAMES
    assert client.surface()["prompts"] != honest["prompts"]


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_a_prompt_listed_to_other_toolsets_only_is_refused_to_the_2026_client(
        modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
        kind: str) -> None:
    """Each 2026-07-28 SDK client, callers told apart by ``X-MCP-Toolsets``: the server lists
    ``triage_issue`` only to ``issues`` callers; a ``repos`` caller that asks for it is
    refused before the server, both use the prompt both were listed, nothing closes."""
    views = ["revision", {"header": "x-mcp-toolsets"}]
    stack = modern_stacks(py=("python", {"extra_args": ("--sections",)}),
                          plugin_config=config(py={"seal": SEALED[1:], "views": views}))
    url = stack.url("py")
    repos = sdk_clients(kind, url, {"x-mcp-toolsets": "repos"})
    issues = sdk_clients(kind, url, {"x-mcp-toolsets": "issues"})
    assert [p["name"] for p in repos.surface()["prompts"]] == ["forecast_brief"]
    shown = [p["name"] for p in issues.surface()["prompts"]]
    assert shown == ["forecast_brief", "triage_issue"]
    assert issues.get_prompt("triage_issue", {"number": "7"})["messages"]
    with Untouched(stack, "py"):
        with pytest.raises(ClientRaised, match="not listed to this caller"):
            repos.get_prompt("triage_issue", {"number": "7"})
    assert repos.get_prompt("forecast_brief", {"city": "Paris"})["messages"]
    repos.close()
    issues.close()
    assert status_of(stack.admin.server("py")) == "verified"
    assert len(wait_for_audits(stack, "use.denied", 1)) == 1
    audits = [a["event"] for a in stack.envoy.audit_events()]
    assert "schema.changed" not in audits, audits


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_a_surface_read_before_any_tool_list_is_sealed_and_the_tools_join_it(
        modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
        kind: str) -> None:
    """A 2026-07-28 client that reads the instructions (``server/discover``), prompts and
    templates before it ever lists tools, as a client of a server of prompts alone does: the
    first lists seal them (no tool baseline needed), a prompt nobody listed is refused before
    the server, a rug pull of the prompt closes the server; approved, the tools listed after
    are trusted with the catalogue, nothing drifting."""
    stack = modern_stacks(py=("python", {"extra_args": ("--sections",)}),
                          plugin_config=config(py={"seal": SEALED[1:]}))
    url = stack.url("py")
    client = sdk_clients(kind, url)
    honest = client.surface()
    assert honest["instructions"] and honest["prompts"] and honest["resourceTemplates"]
    assert len(wait_for_audits(stack, "section.sealed", 3)) == 3
    assert status_of(stack.admin.server("py")) == "verified"
    with Untouched(stack, "py"):
        with pytest.raises(ClientRaised, match="PROMPT_NOT_APPROVED|not an approved prompt"):
            client.get_prompt("exfiltrate", {})
    assert client.get_prompt("forecast_brief", {"city": "Paris"})["messages"]
    client.close()

    stack.upstreams["py"].poison_sections(["prompts"])
    client = sdk_clients(kind, url)
    shown = client.surface()
    assert shown["prompts"] == [], shown
    assert shown["instructions"] == honest["instructions"]
    _prompt_refused_before_the_server(stack, client)
    _approve_the_prompt_drift(stack)
    client.close()

    client = sdk_clients(kind, url)
    assert client.tool_names() == NAMES
    assert client.surface()["prompts"] != honest["prompts"]
    client.close()
    assert status_of(stack.admin.server("py")) == "verified"
    assert len(wait_for_audits(stack, "view.baselined", 1)) == 1
    assert len(wait_for_audits(stack, "schema.changed", 1)) == 1, "only the rug pull drifted"


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_under_tool_scope_a_prompt_rug_pull_withholds_the_prompt_alone_for_the_2026_client(
        modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
        kind: str) -> None:
    """``drift_scope: "tool"`` on a server that seals its surface, through each 2026-07-28 SDK
    client: the prompt rug-pulled in place is withheld and refused before the server, while
    the tools, the instructions and the templates are served and a tool call goes through."""
    stack = modern_stacks(py=("python", {"extra_args": ("--sections",)}),
                          plugin_config=config(py={"seal": SEALED, "drift_scope": "tool"}))
    url = stack.url("py")
    client = sdk_clients(kind, url)
    assert client.tool_names() == NAMES
    honest = client.surface()
    client.close()
    stack.upstreams["py"].poison_sections(["prompts"])
    client = sdk_clients(kind, url)
    shown = client.surface()
    assert shown["prompts"] == [], shown
    assert (shown["instructions"], shown["resourceTemplates"]) == (
        honest["instructions"], honest["resourceTemplates"])
    assert client.tool_names(cache_mode="refresh") == NAMES
    _prompt_refused_before_the_server(stack, client)
    assert client.call("add", {"a": 1, "b": 2})["content"] == [{"type": "text", "text": "3"}]
    client.close()
    view = stack.admin.server("py")
    assert status_of(view) == "changed" and "prompts" in view["sections_diff"], view
    assert [w["tool"] for w in view["withheld_tools"]] == ["prompts/forecast_brief"], view


@pytest.mark.parametrize("kind", SDK_KINDS)
async def test_policy_rules_about_prompts_hold_for_the_2026_client(
        modern_stacks: Callable[..., ModernStack], sdk_clients: Callable[..., SdkClient],
        kind: str) -> None:
    """Each 2026-07-28 SDK client: a rule about prompts refuses ``forecast_*`` to callers
    outside the ``forecasters`` group. Such a caller is not listed the prompt and its
    ``prompts/get`` is refused before the server; a forecaster is listed and served it, and
    nothing closes."""
    plugin = config(py={"seal": SEALED})
    plugin["policy"] = {"rules": [
        {"action": "allow", "prompt": "forecast_*",
         "principal": {"header": "x-user-group", "in": ["forecasters"]}},
        {"action": "deny", "prompt": "forecast_*"},
    ]}
    stack = modern_stacks(py=("python", {"extra_args": ("--sections",)}), plugin_config=plugin)
    url = stack.url("py")
    forecaster = sdk_clients(kind, url, {"x-user-group": "forecasters"})
    assert forecaster.tool_names() == NAMES
    assert [p["name"] for p in forecaster.surface()["prompts"]] == ["forecast_brief"]
    assert forecaster.get_prompt("forecast_brief", {"city": "Paris"})["messages"]
    guest = sdk_clients(kind, url, {"x-user-group": "guests"})
    assert guest.surface()["prompts"] == []
    with Untouched(stack, "py"):
        with pytest.raises(ClientRaised, match="a policy rule refuses"):
            guest.get_prompt("forecast_brief", {"city": "Paris"})
    forecaster.close()
    guest.close()
    assert status_of(stack.admin.server("py")) == "verified"
    assert len(wait_for_audits(stack, "use.denied", 1)) == 1
