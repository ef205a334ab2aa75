"""Admin authentication, requests refused before the upstream, and config loading in Envoy."""

from __future__ import annotations

import json
from typing import Any, Callable

import httpx
import pytest

import envoyctl
from stack import Stack, baseline_of, candidate_of, live_of, mcp_client, status_of
from toolseal_checks import wait_for_audits

pytestmark = pytest.mark.anyio

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "deploy_preview", "arguments": {"branch": "fix-login"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}


async def test_admin_refuses_missing_and_bad_tokens(wasm: Any, stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        await client.list_tools()
    before = stack.admin.server("demo")
    for token in ("", "not-the-token", envoyctl.DEMO_ADMIN_TOKEN + "x"):
        assert stack.admin.get("servers", token=token).status_code == 401
        assert stack.admin.get("servers/demo", token=token).status_code == 401
        assert stack.admin.get("audit", token=token).status_code == 401
        assert stack.admin.post("servers/demo/quarantine", {"reason": "x"}, token=token).status_code == 401
        assert stack.admin.post("servers/demo/approve", {"fingerprint": live_of(before)},
                                token=token).status_code == 401
    assert stack.admin.server("demo") == before
    assert status_of(before) == "verified"
    assert stack.admin.get("servers").status_code == 200


def _raw_post(stack: Stack, body: bytes, content_type: str) -> httpx.Response:
    return httpx.post(stack.mcp_url, content=body, timeout=5,
                      headers={**MCP_HEADERS, "content-type": content_type})


def _assert_upstream_untouched(stack: Stack, response: httpx.Response, status: int,
                               upstream_before: int, http_before: int) -> None:
    assert response.status_code == status, response.text
    assert stack.upstream_requests() == upstream_before
    assert len(stack.upstream.events("http")) == http_before
    assert stack.upstream.calls() == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_non_json_post_is_refused_415(wasm: Any, stack: Stack, content_type: str) -> None:
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    response = _raw_post(stack, json.dumps(CALL).encode(), content_type)
    _assert_upstream_untouched(stack, response, 415, upstream_before, http_before)
    rejected = wait_for_audits(stack, "request.rejected", 1)
    assert len(rejected) == 1


async def test_duplicate_keys_are_refused_before_upstream(wasm: Any, stack: Stack) -> None:
    # A parser differential: a last-wins server would run deploy_preview.
    body = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
            b'"name":"deploy_preview","arguments":{"branch":"fix-login"}}}')
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    response = _raw_post(stack, body, "application/json")
    _assert_upstream_untouched(stack, response, 400, upstream_before, http_before)
    assert response.json()["error"]["code"] == -32700


async def test_oversized_body_is_refused_413_by_toolseal(wasm: Any, stack: Stack) -> None:
    # Over limits.max_request_bytes (1 MiB) but under the buffer filter's own limit.
    padding = "x" * (1024 * 1024)
    body = json.dumps({**CALL, "params": {"name": "add", "arguments": {"a": 1, "b": 2, "p": padding}}})
    assert 1024 * 1024 < len(body) < envoyctl.MAX_REQUEST_BYTES
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    response = _raw_post(stack, body.encode(), "application/json")
    _assert_upstream_untouched(stack, response, 413, upstream_before, http_before)


def test_shipped_config_is_the_rendered_template_and_validates(wasm: Any) -> None:
    assert envoyctl.SHIPPED_CONFIG.read_text() == envoyctl.render()
    result = envoyctl.validate(envoyctl.SHIPPED_CONFIG)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"configuration '{envoyctl.SHIPPED_CONFIG}' OK" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"posture": "paranoid"}, "posture"),
        ({"postur": "strict"}, "postur"),
        ({"server_id": {"from": "cookie"}}, "server_id"),
        ({"limits": {"max_depth": "deep"}}, "max_depth"),
        ({"servers": {"demo": {"pin": "sha256:00", "lock": {"fingerprint": "sha256:00", "tools": []}}}},
         "demo"),
    ],
)
def test_invalid_plugin_config_is_refused_naming_the_field(
    wasm: Any, tmp_path: Any, config: dict[str, Any], field: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(envoyctl.render(plugin_config=config, wasm_path=wasm))
    result = envoyctl.validate(path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    toolseal_lines = [line for line in output.splitlines() if "toolseal" in line and field in line]
    assert toolseal_lines, output[-3000:]


def test_not_json_plugin_config_is_refused(wasm: Any, tmp_path: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(envoyctl.render(plugin_config="{not json", wasm_path=wasm))
    result = envoyctl.validate(path)
    assert result.returncode != 0, result.stdout + result.stderr


async def test_approve_with_bad_token_changes_nothing(wasm: Any, stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        await client.list_tools()
    stack.upstream.set_revision(2)
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == []
    view = stack.admin.server("demo")
    response = stack.admin.post("servers/demo/approve", {"fingerprint": candidate_of(view)},
                                token="wrong")
    assert response.status_code == 401
    after = stack.admin.server("demo")
    assert (status_of(after), baseline_of(after)) == ("changed", baseline_of(view))


async def _baseline_session(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather", "add"]


async def test_accept_encoding_is_removed_before_the_upstream(wasm: Any, stack: Stack) -> None:
    await _baseline_session(stack)
    body = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    response = httpx.post(stack.mcp_url, json=body, timeout=5,
                          headers={**MCP_HEADERS, "accept-encoding": "gzip, br"})
    assert response.status_code in (200, 400, 404), response.text  # no session: the server decides
    pings = [e for e in stack.upstream.events("http") if e["jsonrpc_methods"] == ["ping"]]
    assert [e["accept_encoding"] for e in pings] == [None]


async def test_mcp_name_header_must_match_the_body(wasm: Any, stack: Stack) -> None:
    await _baseline_session(stack)
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    call = {**CALL, "params": {"name": "deploy_preview", "arguments": {"branch": "fix-login"}}}
    response = httpx.post(stack.mcp_url, json=call, timeout=5, headers={
        **MCP_HEADERS, "mcp-method": "tools/call", "mcp-name": "add"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32600
    assert "Mcp-Name" in response.json()["error"]["message"]
    assert stack.upstream_requests() == upstream_before
    assert len(stack.upstream.events("http")) == http_before
    assert stack.upstream.calls() == []


async def test_batch_with_a_denied_call_is_answered_locally_as_a_whole(wasm: Any, stack: Stack) -> None:
    await _baseline_session(stack)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wipe_disk", "arguments": {}}},
    ]
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    response = httpx.post(stack.mcp_url, json=batch, timeout=5,
                          headers={**MCP_HEADERS, "mcp-protocol-version": "2025-03-26"})
    assert response.status_code == 200, response.text
    answers = {a["id"]: a for a in response.json()}
    assert sorted(answers) == [1, 2]
    refusal = answers[2]["result"]["structuredContent"]
    assert (refusal["error_code"], refusal["tool"], refusal["required_action"]) == (
        "TOOL_NOT_APPROVED", "wipe_disk", "refresh_tools")
    # The allowed element is not forwarded either: a JSON-RPC error tells the client to resend it.
    assert "result" not in answers[1] and answers[1]["error"]["code"] == -32600
    assert stack.upstream_requests() == upstream_before
    assert len(stack.upstream.events("http")) == http_before
    assert stack.upstream.calls() == []
