"""The MCP reference server (npm server-everything), two published releases, behind toolseal.

Release A is baselined on first contact; redeploying release B on the same address is a real
release-to-release drift: toolseal stops serving the tools, refuses calls, and shows the
reviewer a candidate that, once approved, serves release B exactly as the server lists it.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, Callable

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

import envoyctl
from stack import EVERYTHING_RELEASES, Stack, baseline_of, candidate_of, mcp_client, status_of
from toolseal_checks import assert_denied, list_status_meta, wait_for_audit, wait_for_audits

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


@contextlib.asynccontextmanager
async def _session(url: str) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    """An SDK session and the server's initialize answer as the client received it."""
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=60)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


async def test_a_closed_server_shows_no_prompts_resources_or_instructions(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    stack = stacks(everything=RELEASE_A, server_id="everything")
    direct_url = f"{stack.upstream.base_url}/mcp"
    async with _session(direct_url) as (session, _):
        direct = ((await session.list_prompts()).prompts, (await session.list_resources()).resources,
                  (await session.list_resource_templates()).resourceTemplates)
    async with _session(stack.mcp_url) as (session, init):
        assert (await session.list_tools()).tools
        prompts = (await session.list_prompts()).prompts
        resources = (await session.list_resources()).resources
        templates = (await session.list_resource_templates()).resourceTemplates
        assert prompts and resources and templates
        # A verified server's sections pass whole: its resources screened, none withheld.
        assert (prompts, resources, templates) == direct
        prompt = next(p for p in prompts if not any(a.required for a in p.arguments or []))
        assert (await session.get_prompt(prompt.name)).messages
        assert (await session.read_resource(resources[0].uri)).contents
    instructions = init.instructions
    print(f"server-everything instructions: {len(instructions or '')} characters")

    assert stack.admin.quarantine("everything", "INC-12: under review").status_code == 200
    async with _session(stack.mcp_url) as (session, init):
        assert init.instructions is None, "instructions of a closed server reach no model"
        assert init.serverInfo.name  # the rest of the answer is the server's
        listed = await session.list_prompts()
        assert listed.prompts == []
        assert list_status_meta(listed)["schema_status"] == "quarantined"
        assert (await session.list_resources()).resources == []
        assert (await session.list_resource_templates()).resourceTemplates == []
        upstream_before = stack.upstream_requests()
        with pytest.raises(McpError) as refused:
            await session.get_prompt(prompt.name)
        assert refused.value.error.code == -32003
        data = refused.value.error.data
        assert (data["error_code"], data["prompt"], data["side_effect_started"]) == (
            "SERVER_QUARANTINED", prompt.name, False)
        with pytest.raises(McpError) as refused:
            await session.read_resource(resources[0].uri)
        assert refused.value.error.data["resource"] == str(resources[0].uri)
        assert stack.upstream_requests() == upstream_before, "refused uses never reach the server"
    assert len(wait_for_audits(stack, "use.denied", 2)) == 2
    withheld = 3 + (1 if instructions else 0)  # three lists, and the instructions if any
    assert len(wait_for_audits(stack, "surface.withheld", withheld)) == withheld

    assert stack.admin.release("everything").status_code == 200
    async with _session(stack.mcp_url) as (session, init):
        assert init.instructions == instructions
        assert [p.name for p in (await session.list_prompts()).prompts] == [p.name for p in prompts]


async def test_a_read_of_a_metadata_or_traversal_uri_never_reaches_the_server(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    """The official SDK client asks a verified server-everything to read URIs no list would
    show (cloud metadata addresses, a local Docker API): each is refused by the gateway, the
    server never sees it, and an honest read still works. (The Python SDK sends URIs as
    pydantic normalizes them: `http://2852039166/` leaves as `http://169.254.169.254/`, and a
    `..` path is resolved before it leaves, so the other spellings are the core tests'.)"""
    stack = stacks(everything=RELEASE_A, server_id="everything")
    async with _session(stack.mcp_url) as (session, _):
        assert (await session.list_tools()).tools
        resources = (await session.list_resources()).resources
        upstream_before = stack.upstream_requests()
        for uri in ("http://169.254.169.254/latest/meta-data/iam/security-credentials/",
                    "http://metadata.google.internal/computeMetadata/v1/",
                    "http://localhost:2375/containers/json"):
            with pytest.raises(McpError) as refused:
                await session.read_resource(uri)
            error = refused.value.error
            assert error.code == -32003, uri
            assert (error.data["error_code"], error.data["resource"], error.data["side_effect_started"],
                    error.data["schema_status"]) == ("RESOURCE_NOT_LISTED", uri, False, "verified")
        assert stack.upstream_requests() == upstream_before, "refused reads never reach the server"
        assert (await session.read_resource(resources[0].uri)).contents
        assert stack.upstream_requests() > upstream_before
    denied = wait_for_audits(stack, "use.denied", 3)
    assert {d.get("error_code") for d in denied} == {"RESOURCE_NOT_LISTED"}, denied


@pytest.mark.parametrize("release", EVERYTHING_RELEASES)
async def test_with_listed_reads_a_made_up_uri_never_reaches_the_server(
        wasm: Any, stacks: Callable[..., Stack], release: str) -> None:
    """``resources: "listed"`` with the resource templates sealed: the official SDK client
    reads a resource server-everything listed and a URI one of its (sealed) templates names,
    both served; a URI neither listed nor templated is refused before the server, with
    ``refresh_resources``."""
    config = envoyctl.default_plugin_config()
    config["servers"] = {"everything": {"resources": "listed", "seal": ["resource-templates"]}}
    stack = stacks(everything=release, server_id="everything", plugin_config=config)
    async with _session(stack.mcp_url) as (session, _):
        assert (await session.list_tools()).tools
        templates = (await session.list_resource_templates()).resourceTemplates
        assert templates, "server-everything has resource templates"
        resources = (await session.list_resources()).resources
        assert resources
        upstream_before = stack.upstream_requests()
        made_up = "test://made-up/credentials"
        with pytest.raises(McpError) as refused:
            await session.read_resource(made_up)
        error = refused.value.error
        assert error.code == -32003
        assert (error.data["error_code"], error.data["resource"], error.data["required_action"],
                error.data["side_effect_started"]) == (
            "RESOURCE_NOT_APPROVED", made_up, "refresh_resources", False)
        assert stack.upstream_requests() == upstream_before, "the server never sees it"
        assert (await session.read_resource(resources[0].uri)).contents
        # A URI a sealed template names (each variable given "1") reaches the server, which
        # answers it as it will: not the gateway's refusal.
        template = templates[0].uriTemplate
        named = template.split("{")[0] + "1" + template.split("}", 1)[1].split("{")[0]
        before = stack.upstream_requests()
        try:
            await session.read_resource(named)
        except McpError as answered:
            assert answered.error.code != -32003, answered.error
        assert stack.upstream_requests() > before
    assert status_of(stack.admin.server("everything")) == "verified"
    denied = wait_for_audits(stack, "use.denied", 1)
    assert [d.get("error_code") for d in denied] == ["RESOURCE_NOT_APPROVED"], denied
