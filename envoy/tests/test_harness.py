"""The harness itself, without toolseal: plain Envoy in front of the real servers.

These prove that what the toolseal tests rely on is true of the bare stack: the SDK client
works through Envoy (JSON and SSE responses), the upstream request log records every call,
Envoy counts upstream requests, list_changed reaches the client through Envoy, and the two
server-everything releases really differ.
"""

from __future__ import annotations

from typing import Any, Callable

import anyio
import pytest

from stack import Stack, mcp_client

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_client_through_plain_envoy(stacks: Callable[..., Stack], mode: str) -> None:
    stack = stacks(with_plugin=False, mode=mode)
    before = stack.upstream_requests()
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather", "add"]
        result = await client.call("add", {"a": 2, "b": 40})
        assert result.isError is False
        assert result.content[0].text == "42"
    assert [(c["tool"], c["arguments"]) for c in stack.upstream.calls()] == [("add", {"a": 2, "b": 40})]
    # initialize, initialized, GET stream, tools/list, tools/call, DELETE: each went upstream.
    http = stack.upstream.events("http")
    assert stack.upstream_requests() - before == len(http)
    assert [e["method"] for e in http].count("POST") == 4


async def test_revision_switch_and_list_changed_reach_client(stacks: Callable[..., Stack]) -> None:
    stack = stacks(with_plugin=False)
    async with mcp_client(stack.mcp_url) as client:
        tools = (await client.list_tools()).tools
        assert sorted(tools[0].inputSchema["required"]) == ["branch"]
        assert stack.upstream.set_revision(2, notify=True) == {"rev": 2, "notified": 1}
        with anyio.fail_after(10):
            while not client.notifications:
                await anyio.sleep(0.02)
        assert client.notifications[0].method == "notifications/tools/list_changed"
        tools = (await client.list_tools()).tools
        weather = next(t for t in tools if t.name == "get_weather")
        assert "<IMPORTANT>" in (weather.description or "")
        assert sorted(weather.inputSchema["properties"]) == ["city", "notes"]
        deploy = next(t for t in tools if t.name == "deploy_preview")
        assert sorted(deploy.inputSchema["required"]) == ["branch", "region"]


async def test_restart_is_a_new_deploy(stacks: Callable[..., Stack]) -> None:
    stack = stacks(with_plugin=False)
    stack.upstream.restart(rev=3)
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather", "add", "delete_preview"]
    assert [e["rev"] for e in stack.upstream.events("revision")] == [1, 3]


async def _everything_tools(stack: Stack) -> dict[str, Any]:
    async with mcp_client(stack.mcp_url) as client:
        return {t.name: t.model_dump(mode="json", exclude_none=True) for t in (await client.list_tools()).tools}


async def test_everything_releases_differ(stacks: Callable[..., Stack]) -> None:
    old = await _everything_tools(stacks(with_plugin=False, everything="2025.11.25"))
    new = await _everything_tools(stacks(with_plugin=False, everything="2026.1.26"))
    assert old and new
    assert old != new


async def test_served_surface_is_the_declared_one(stacks: Callable[..., Stack]) -> None:
    """The fingerprinted fields on the wire equal rugpull_server.tool_surface (the reference)."""
    from rugpull_server import tool_surface

    stack = stacks(with_plugin=False)
    for rev in (1, 2, 3):
        stack.upstream.set_revision(rev)
        async with mcp_client(stack.mcp_url) as client:
            served = [t.model_dump(mode="json", exclude_none=True) for t in (await client.list_tools()).tools]
        views = [{k: t[k] for k in ("name", "description", "inputSchema") if k in t} for t in served]
        declared = [{k: t[k] for k in ("name", "description", "inputSchema")} for t in tool_surface(rev)]
        assert views == declared
