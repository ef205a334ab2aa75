"""The MCP reference server (npm server-everything), two published releases, behind toolseal.

Release A is baselined on first contact; redeploying release B on the same address is a real
release-to-release drift: toolseal stops serving the tools, refuses calls, and shows the
reviewer a candidate that, once approved, serves release B exactly as the server lists it.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from stack import EVERYTHING_RELEASES, Stack, baseline_of, candidate_of, mcp_client, status_of
from toolseal_checks import assert_denied, list_status_meta, wait_for_audit

pytestmark = pytest.mark.anyio
RELEASE_A, RELEASE_B = EVERYTHING_RELEASES


async def _tools(url: str) -> list[dict[str, Any]]:
    async with mcp_client(url) as client:
        return [t.model_dump(mode="json", exclude_none=True) for t in (await client.list_tools()).tools]


async def test_release_drift_is_detected_and_filtered(wasm: Any, stacks: Callable[..., Stack]) -> None:
    stack = stacks(everything=RELEASE_A, server_id="everything")
    direct_url = f"{stack.upstream.base_url}/mcp"
    release_a = await _tools(direct_url)
    assert await _tools(stack.mcp_url) == release_a
    view = stack.admin.server("everything")
    assert status_of(view) == "verified"
    fingerprint_a = baseline_of(view)

    stack.upstream.restart(everything=RELEASE_B)
    release_b = await _tools(direct_url)
    assert release_b != release_a
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        assert listed.tools == []
        assert list_status_meta(listed)["schema_status"] == "changed"
        view = stack.admin.server("everything")
        assert (status_of(view), baseline_of(view)) == ("changed", fingerprint_a)
        assert candidate_of(view) not in (None, fingerprint_a)
        upstream_before = stack.upstream_requests()
        result = await client.call("echo", {"message": "hello"})
        assert_denied(result, "SCHEMA_CHANGED", tool="echo", schema_status="changed",
                      required_action="admin_review", server="everything")
        assert stack.upstream_requests() == upstream_before

    changed = wait_for_audit(stack, "schema.changed")
    assert (changed["server"], changed["baseline"], changed["live"]) == (
        "everything", fingerprint_a, candidate_of(view))

    assert stack.admin.approve("everything", candidate_of(view)).status_code == 200
    assert await _tools(stack.mcp_url) == release_b
    async with mcp_client(stack.mcp_url) as client:
        await client.list_tools()
        result = await client.call("echo", {"message": "hello"})
        assert result.isError is False
        assert "hello" in result.content[0].text
