"""A server's whole surface sealed like its tools, through a real Envoy.

- server-everything (both published releases the tests pin), every section sealed with
  ``seal`` (the tools' other fields, instructions, prompts, resource templates) and
  ``"resources": "seal"`` (100 resources over 10 pages in release 2025.11.25): two kinds of
  caller (the official Python SDK with no capabilities, and with roots, sampling and
  elicitation), two sessions each, every section listed twice per session: each section is
  sealed once, every answer is the server's own, nothing is closed; reads are limited to the
  approved resources.
- The rug-pull server with ``--sections``: a tool's annotations, its instructions, its prompt,
  its resource template or its resources are rug-pulled in place, the tool definitions the tool fingerprint
  covers untouched. The server closes: the poisoned part never reaches the client, its tools
  and prompt are refused before the server, and the reviewer sees the classified change;
  approving the reviewed candidate serves it.
- Under ``drift_scope: "tool"``, a deploy that changes two tools leaves the unchanged tool and
  the honest sections served; a rug pull of the prompt, the instructions or the unchanged
  tool's annotations while that drift awaits review reaches no client.
- Instructions written per toolset (the rug-pull server names the ``X-MCP-Toolsets`` a
  session asked for): the second caller's text is approved once, or trusted on first use as a
  new view when the header is a view source; then callers of both toolsets alternate and
  nothing closes; a poisoned text still closes the server.
- A prompt listed per toolset (``triage_issue``, to ``issues`` callers only): a caller of
  another toolset that asks for it is refused before the server.
- Policy rules about prompts and resources: a caller whose header they refuse is not listed
  what they refuse and is answered ``POLICY_DENIED`` before the server, one they allow is
  served."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

import envoyctl
from stack import EVERYTHING_RELEASES, Stack, baseline_of, candidate_of, status_of
from surface import INSTRUCTIONS_HONEST
from toolseal_checks import assert_denied, http_methods, list_status_meta, wait_for_audits

pytestmark = pytest.mark.anyio
SEALED = ["tool-fields", "instructions", "prompts", "resource-templates"]


def _config(server_id: str, resources: str = "screen") -> dict[str, Any]:
    """Every section `seal` names sealed, and the resources as `resources` says."""
    config = envoyctl.default_plugin_config()
    config["servers"] = {server_id: {"seal": SEALED, "resources": resources}}
    return config


@contextlib.asynccontextmanager
async def _client(url: str, capable: bool = False, headers: dict[str, str] | None = None
                  ) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    """An SDK 1.x session, without callbacks or with roots, sampling and elicitation ones,
    sending ``headers`` with every request, and the initialize answer it received."""

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/toolseal", name="t")])

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="toolseal-test",
                                         content=types.TextContent(type="text", text="ok"))

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    callbacks: dict[str, Any] = {}
    if capable:
        callbacks = {"list_roots_callback": list_roots, "sampling_callback": sampling,
                     "elicitation_callback": elicitation}
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=60), headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write, **callbacks) as session,
    ):
        yield session, await session.initialize()


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(mode="json", exclude_none=True) for i in items]


async def _surface(session: ClientSession, init: types.InitializeResult) -> dict[str, Any]:
    """Every section the session is shown (each list to its last page)."""
    resources, cursor = [], None
    while True:
        page = await session.list_resources(cursor=cursor) if cursor else await session.list_resources()
        resources += _dump(page.resources)
        cursor = page.nextCursor
        if not cursor:
            break
    return {
        "instructions": init.instructions,
        "tools": _dump((await session.list_tools()).tools),
        "prompts": _dump((await session.list_prompts()).prompts),
        "templates": _dump((await session.list_resource_templates()).resourceTemplates),
        "resources": resources,
    }


@pytest.mark.parametrize("release", EVERYTHING_RELEASES)
async def test_every_section_of_server_everything_is_sealed_and_nothing_closes(
        wasm: Any, stacks: Callable[..., Stack], release: str) -> None:
    """Every section sealed, the resources too (release 2025.11.25 lists 100 of them over 10
    pages): two kinds of client, each listing everything twice in two sessions, are shown
    exactly what the server shows them directly, and nothing closes; a resource of the last
    page reads, one no list shows is refused before the server."""
    config = _config("everything", resources="seal")
    stack = stacks(everything=release, server_id="everything", plugin_config=config)
    direct_url = f"{stack.upstream.base_url}/mcp"
    direct = {}
    for capable in (False, True):
        async with _client(direct_url, capable) as (session, init):
            direct[capable] = await _surface(session, init)
    assert direct[False]["instructions"] and direct[False]["prompts"] and direct[False]["templates"]
    assert len(direct[True]["tools"]) > len(direct[False]["tools"]), "two honest tool views"

    for _ in range(2):
        for capable in (False, True):
            async with _client(stack.mcp_url, capable) as (session, init):
                for _ in range(2):
                    assert await _surface(session, init) == direct[capable]
    view = stack.admin.server("everything")
    assert status_of(view) == "verified", view
    sealed = wait_for_audits(stack, "section.sealed", 5)
    assert len(sealed) == 5, sealed
    audits = [a["event"] for a in stack.envoy.audit_events()]
    assert "schema.changed" not in audits and "schema.pending" not in audits, audits
    async with _client(stack.mcp_url) as (session, _):
        last = direct[False]["resources"][-1]["uri"]
        assert (await session.read_resource(last)).contents
        upstream_before = stack.upstream_requests()
        with pytest.raises(McpError) as refused:
            await session.read_resource("test://made-up/credentials")
        assert (refused.value.error.data["error_code"],
                refused.value.error.data["required_action"]) == (
            "RESOURCE_NOT_APPROVED", "refresh_resources")
        assert stack.upstream_requests() == upstream_before, "the server never sees it"


@pytest.mark.parametrize("part", SEALED + ["resources"])
async def test_a_rug_pull_moved_out_of_the_tool_list_closes_the_server(
        wasm: Any, stacks: Callable[..., Stack], part: str) -> None:
    config = _config("demo", resources="seal")
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    # The first session seals every section (its handshake's instructions first, the
    # catalogue its tools then join); the second verifies them.
    honest = {}
    for _ in range(2):
        async with _client(stack.mcp_url) as (session, init):
            honest = await _surface(session, init)
    assert honest["instructions"] and honest["prompts"] and honest["templates"]
    assert honest["resources"]
    assert len(wait_for_audits(stack, "section.sealed", 5)) == 5
    view = stack.admin.server("demo")
    assert status_of(view) == "verified", view
    sealed_baseline = baseline_of(view)

    stack.upstream.poison_sections([part])
    async with _client(stack.mcp_url) as (session, init):
        if part == "instructions":
            assert init.instructions is None, "poisoned instructions reach no model"
        elif part == "tool-fields":
            assert init.instructions == honest["instructions"]
        else:
            assert init.instructions == honest["instructions"]
            listing = {"prompts": (session.list_prompts, "prompts"),
                       "resource-templates": (session.list_resource_templates, "resourceTemplates"),
                       "resources": (session.list_resources, "resources")}[part]
            listed = await listing[0]()
            assert getattr(listed, listing[1]) == []
            assert list_status_meta(listed)["schema_status"] == "changed"
        assert (await session.list_tools()).tools == []
        upstream_before = stack.upstream_requests()
        with pytest.raises(McpError) as refused:
            await session.get_prompt("forecast_brief", {"city": "Paris"})
        assert (refused.value.error.data["error_code"], refused.value.error.data["prompt"]) == (
            "SCHEMA_CHANGED", "forecast_brief")
        result = await session.call_tool("get_weather", {"city": "Paris"})
        assert_denied(result, "SCHEMA_CHANGED", tool="get_weather", schema_status="changed",
                      required_action="admin_review")
        with pytest.raises(McpError) as refused:
            await session.read_resource("file:///home/user/.ssh/id_ed25519")
        assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        assert stack.upstream_requests() == upstream_before, "the server never sees them"

    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("changed", sealed_baseline)
    changed = wait_for_audits(stack, "schema.changed", 1)[0]
    if part == "tool-fields":
        assert "add" in changed["reason"], changed
        assert view["diff_summary"]["worst"] == "authority", view
    else:
        assert part in changed["reason"], changed
        assert part in view["sections_diff"], view
    candidate = candidate_of(view)
    assert stack.admin.approve("demo", candidate).status_code == 200
    async with _client(stack.mcp_url) as (session, init):
        served = await _surface(session, init)
    member = {"tool-fields": "tools", "instructions": "instructions", "prompts": "prompts",
              "resource-templates": "templates", "resources": "resources"}[part]
    assert served[member] != honest[member], "the approved candidate is what the server lists"
    if part != "tool-fields":
        assert served["tools"] == honest["tools"]
    assert status_of(stack.admin.server("demo")) == "verified"


@pytest.mark.parametrize("told", [False, True], ids=["one-view", "toolset-views"])
async def test_instructions_written_per_toolset_never_flap_and_a_told_view_is_trusted(
        wasm: Any, stacks: Callable[..., Stack], told: bool) -> None:
    """Without a view source for the toolset header, the second toolset's text is a drift
    approved once; with one (``views: ["revision", {"header": "x-mcp-toolsets"}]``), it is a
    new kind of caller's first handshake, trusted on first use under discovery. Either way,
    callers of both toolsets are then served in turn and nothing closes."""
    config = _config("demo")
    if told:
        config["servers"]["demo"]["views"] = ["revision", {"header": "x-mcp-toolsets"}]
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    repos, issues = {"x-mcp-toolsets": "repos"}, {"x-mcp-toolsets": "issues"}
    # The first session's handshake seals its instructions (the server's first catalogue),
    # and its tool list joins them as the view's first list.
    for _ in range(2):
        async with _client(stack.mcp_url, headers=repos) as (session, init):
            assert (await session.list_tools()).tools
    assert init.instructions and init.instructions.endswith("Toolsets: repos.")
    async with _client(stack.mcp_url, headers=issues) as (session, init):
        if told:
            assert init.instructions == f"{INSTRUCTIONS_HONEST} Toolsets: issues."
        else:
            assert init.instructions is None, "an unreviewed text reaches no model"
    view = stack.admin.server("demo")
    if told:
        assert status_of(view) == "verified", view
        # Two views trusted on first use: the tools the first session listed, and the second
        # toolset's handshake.
        trusted = wait_for_audits(stack, "view.baselined", 2)
        assert ["instructions" in t["reason"] for t in trusted] == [False, True], trusted
    else:
        assert status_of(view) == "changed", view
        change = view["sections_diff"]["instructions"]["changes"]
        assert [c.get("after") for c in change] == [
            f"{INSTRUCTIONS_HONEST} Toolsets: issues."], change
        assert stack.admin.approve("demo", candidate_of(view)).status_code == 200
    approved = baseline_of(stack.admin.server("demo"))

    # Both texts are the catalogue's: callers of either toolset, in turn, are served whole.
    for _ in range(2):
        for headers, toolset in ((repos, "repos"), (issues, "issues")):
            async with _client(stack.mcp_url, headers=headers) as (session, init):
                assert init.instructions == f"{INSTRUCTIONS_HONEST} Toolsets: {toolset}."
                result = await session.call_tool("add", {"a": 2, "b": 3})
                assert not result.isError, result
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("verified", approved), view
    audits = [a["event"] for a in stack.envoy.audit_events()]
    assert audits.count("schema.changed") == (0 if told else 1), audits

    # A rug pull of the text is drift whichever toolset asks.
    stack.upstream.poison_sections(["instructions"])
    async with _client(stack.mcp_url, headers=repos) as (session, init):
        assert init.instructions is None
        assert (await session.list_tools()).tools == []
    assert status_of(stack.admin.server("demo")) == "changed"


async def test_a_prompt_listed_to_other_toolsets_only_is_refused_before_the_server(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    """Callers told apart by ``X-MCP-Toolsets`` (a view source): the server lists
    ``triage_issue`` only to a caller that asks for the ``issues`` toolset. That caller's
    first list adds it to the catalogue (a new view, trusted on first use); a ``repos``
    caller that asks for it anyway is refused before the server, while both use the prompt
    they were both listed, and nothing closes."""
    config = _config("demo")
    config["servers"]["demo"]["views"] = ["revision", {"header": "x-mcp-toolsets"}]
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    repos, issues = {"x-mcp-toolsets": "repos"}, {"x-mcp-toolsets": "issues"}

    async def prompt_names(session: ClientSession) -> list[str]:
        return [p.name for p in (await session.list_prompts()).prompts]

    async with _client(stack.mcp_url, headers=repos) as (session, _):
        assert await prompt_names(session) == ["forecast_brief"]
    async with _client(stack.mcp_url, headers=issues) as (session, _):
        assert await prompt_names(session) == ["forecast_brief", "triage_issue"]
        assert (await session.get_prompt("triage_issue", {"number": "7"})).messages
    async with _client(stack.mcp_url, headers=repos) as (session, _):
        logged = len(http_methods(stack.upstream))
        with pytest.raises(McpError) as refused:
            await session.get_prompt("triage_issue", {"number": "7"})
        # (The session's own notifications/initialized and event stream may arrive meanwhile.)
        seen = http_methods(stack.upstream)[logged:]
        assert "prompts/get" not in seen, "the server never sees it"
        data = refused.value.error.data
        assert (data["error_code"], data["required_action"]) == ("PROMPT_NOT_APPROVED", "none")
        assert "not listed to this caller's view" in refused.value.error.message
        assert (await session.get_prompt("forecast_brief", {"city": "Paris"})).messages
    view = stack.admin.server("demo")
    assert status_of(view) == "verified", view
    listed = {tuple(v["names"]) for v in view["section_view_names"]
              if v["key"].startswith("prompts/")}
    assert listed == {("forecast_brief",), ("forecast_brief", "triage_issue")}, view
    assert len(wait_for_audits(stack, "use.denied", 1)) == 1
    audits = [a["event"] for a in stack.envoy.audit_events()]
    assert "schema.changed" not in audits, audits


def _raw_surface(base_url: str) -> dict[str, Any]:
    """The server's surface as it sends it (raw JSON-RPC over a JSON-mode session, no SDK
    model in between): what an operator records and locks."""
    url = f"{base_url}/mcp"
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx.Client(timeout=30) as http:
        init = http.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "lock-recorder", "version": "1"}}})
        init.raise_for_status()
        session = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        http.post(url, headers=session, json={"jsonrpc": "2.0",
                                              "method": "notifications/initialized"})
        surface: dict[str, Any] = {"instructions": init.json()["result"]["instructions"]}
        for n, (method, member) in enumerate([("tools/list", "tools"), ("prompts/list", "prompts"),
                                              ("resources/templates/list", "resourceTemplates")]):
            answer = http.post(url, headers=session,
                               json={"jsonrpc": "2.0", "id": 2 + n, "method": method, "params": {}})
            answer.raise_for_status()
            surface[member] = answer.json()["result"][member]
    return surface


async def test_a_locked_surface_is_served_at_once_under_strict_and_a_rug_pull_of_it_closes_the_server(
        wasm: Any, stacks: Callable[..., Stack], tmp_path: Path) -> None:
    """The operator's path to production: record the server's surface, ``toolseal pin
    --surface`` it, and ship the printed ``seal`` and ``lock`` under ``strict``. Every
    section is served at once (nothing awaits approval); a prompt rug-pulled in place is drift."""
    recorder = stacks(mode="json", upstream_args=("--sections",), server_id="demo")
    surface_file = tmp_path / "demo-surface.json"
    surface_file.write_text(json.dumps(_raw_surface(recorder.upstream.base_url)))
    binary = os.environ.get("TOOLSEAL_BIN")
    command = [binary] if binary else ["cargo", "run", "-q", "-p", "toolseal", "--"]
    printed = subprocess.run([*command, "pin", "--surface", "--server", "demo", str(surface_file)],
                             cwd=envoyctl.REPO, capture_output=True, text=True, timeout=1800, check=False)
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["servers"]["demo"]
    assert entry["seal"] == ["tool-fields", "instructions", "prompts", "resource-templates"], entry

    config = envoyctl.default_plugin_config()
    config["posture"] = "strict"
    config["servers"] = {"demo": entry}
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    async with _client(stack.mcp_url) as (session, init):
        served = await _surface(session, init)
    assert served["instructions"] == INSTRUCTIONS_HONEST
    assert served["tools"] and served["prompts"] and served["templates"], served
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("verified", entry["lock"]["fingerprint"]), view
    audits = [a["event"] for a in stack.envoy.audit_events()]
    assert not {"schema.pending", "schema.changed", "section.sealed"} & set(audits), audits

    stack.upstream.poison_sections(["prompts"])
    async with _client(stack.mcp_url) as (session, init):
        assert (await session.list_prompts()).prompts == []
        assert (await session.list_tools()).tools == []
    assert status_of(stack.admin.server("demo")) == "changed"


async def test_under_tool_scope_a_tool_drift_leaves_no_sealed_section_unchecked(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    """``drift_scope: "tool"``: a deploy changes two tools, and the server keeps serving its
    unchanged tool and its honest prompts and instructions; then the prompt, the
    instructions and the unchanged tool's annotations are rug-pulled while that drift awaits
    review: none of them reaches the client, the prompt and the tool are refused before the
    server, and the drift under review stays the tools'."""
    config = _config("demo")
    config["servers"]["demo"]["drift_scope"] = "tool"
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    for _ in range(2):
        async with _client(stack.mcp_url) as (session, init):
            honest = await _surface(session, init)
    stack.upstream.set_revision(2)
    async with _client(stack.mcp_url) as (session, init):
        assert init.instructions == honest["instructions"]
        assert [t.name for t in (await session.list_tools()).tools] == ["add"]
        assert _dump((await session.list_prompts()).prompts) == honest["prompts"]
    drifted = stack.admin.server("demo")
    assert status_of(drifted) == "changed", drifted
    stack.upstream.poison_sections(["prompts", "instructions", "tool-fields"])
    async with _client(stack.mcp_url) as (session, init):
        assert init.instructions is None, "poisoned instructions reach no model"
        assert (await session.list_prompts()).prompts == []
        assert (await session.list_tools()).tools == [], "add turned destructive is withheld"
        # What those lists withheld is refused too, before the server, not only left out.
        logged = len(http_methods(stack.upstream))
        with pytest.raises(McpError) as refused:
            await session.get_prompt("forecast_brief", {"city": "Paris"})
        assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        assert_denied(await session.call_tool("add", {"a": 2, "b": 3}), "TOOL_CHANGED",
                      tool="add", schema_status="changed", required_action="admin_review")
        seen = http_methods(stack.upstream)[logged:]
        assert "prompts/get" not in seen and "tools/call" not in seen, seen
    view = stack.admin.server("demo")
    assert (status_of(view), candidate_of(view)) == ("changed", candidate_of(drifted))
    assert len(wait_for_audits(stack, "schema.changed", 1)) == 1


async def test_a_surface_read_before_any_tool_list_is_sealed_and_a_rug_pull_of_it_closes_the_server(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    """A 2025 session that reads the instructions, prompts and templates and never lists
    tools (what a server of prompts alone looks like to toolseal): its first lists seal them,
    a prompt nobody listed is refused before the server, and a rug pull of the prompt closes
    the server; approved, the tools listed next are trusted with the catalogue."""
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=_config("demo"))
    async with _client(stack.mcp_url) as (session, init):
        assert init.instructions
        honest = _dump((await session.list_prompts()).prompts)
        assert honest and (await session.list_resource_templates()).resourceTemplates
        before = stack.upstream_requests()
        with pytest.raises(McpError) as refused:
            await session.get_prompt("exfiltrate", {})
        assert refused.value.error.data["error_code"] == "PROMPT_NOT_APPROVED"
        assert stack.upstream_requests() == before, "the server never sees it"
        assert (await session.get_prompt("forecast_brief", {"city": "Paris"})).messages
    assert len(wait_for_audits(stack, "section.sealed", 3)) == 3
    assert status_of(stack.admin.server("demo")) == "verified"

    stack.upstream.poison_sections(["prompts"])
    async with _client(stack.mcp_url) as (session, init):
        listed = await session.list_prompts()
        assert listed.prompts == []
        assert list_status_meta(listed)["schema_status"] == "changed"
        before = stack.upstream_requests()
        with pytest.raises(McpError) as refused:
            await session.get_prompt("forecast_brief", {"city": "Paris"})
        assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        assert stack.upstream_requests() == before, "the server never sees it"
    view = stack.admin.server("demo")
    assert "prompts" in view["sections_diff"], view
    assert stack.admin.approve("demo", candidate_of(view)).status_code == 200
    async with _client(stack.mcp_url) as (session, init):
        served = await _surface(session, init)
    assert served["tools"] and served["prompts"] != honest
    assert status_of(stack.admin.server("demo")) == "verified"
    assert len(wait_for_audits(stack, "schema.changed", 1)) == 1, "only the rug pull drifted"


@pytest.mark.parametrize("part", ["prompts", "resource-templates", "instructions"])
async def test_under_tool_scope_a_section_drift_withholds_only_what_it_changed(
        wasm: Any, stacks: Callable[..., Stack], part: str) -> None:
    """``drift_scope: "tool"``: a rug pull of the prompt, the template or the instructions
    is drift that withholds that item alone: every other section and every tool is served
    as before and a tool call goes through, while the drifted prompt, or a read of a URI the
    drifted template names, is refused before the server; approved, it is served."""
    config = _config("demo")
    config["servers"]["demo"]["drift_scope"] = "tool"
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    async with _client(stack.mcp_url) as (session, init):
        honest = await _surface(session, init)
    stack.upstream.poison_sections([part])
    member = {"prompts": "prompts", "resource-templates": "templates",
              "instructions": "instructions"}[part]
    async with _client(stack.mcp_url) as (session, init):
        shown = await _surface(session, init)
        assert not shown[member], shown
        assert {k: v for k, v in shown.items() if k != member} == {
            k: v for k, v in honest.items() if k != member}
        assert not (await session.call_tool("add", {"a": 2, "b": 3})).isError
        before = stack.upstream_requests()
        if part == "prompts":
            with pytest.raises(McpError) as refused:
                await session.get_prompt("forecast_brief", {"city": "Paris"})
            assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        if part == "resource-templates":
            with pytest.raises(McpError) as refused:
                await session.read_resource("weather://paris/today")
            assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        assert stack.upstream_requests() == before, "the server never sees a refused use"
    view = stack.admin.server("demo")
    assert status_of(view) == "changed" and part in view["sections_diff"], view
    assert stack.admin.approve("demo", candidate_of(view)).status_code == 200
    async with _client(stack.mcp_url) as (session, init):
        served = await _surface(session, init)
    assert served[member] and served[member] != honest[member]
    assert status_of(stack.admin.server("demo")) == "verified"


async def test_policy_rules_about_prompts_and_resources_refuse_uses_before_the_server(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    """Rules with a ``prompt`` or ``resource`` condition decide ``prompts/get`` and
    ``resources/read`` by the caller's header as rules about tools decide calls: a guest is
    not listed what they refuse it and is refused ``POLICY_DENIED`` before the server, a
    forecaster is served, and the rules about prompts and resources leave tool calls
    alone."""
    config = _config("demo")
    group = {"header": "x-user-group", "in": ["forecasters"]}
    config["policy"] = {"rules": [
        {"action": "allow", "prompt": "forecast_*", "principal": group},
        {"action": "deny", "prompt": "forecast_*"},
        {"action": "deny", "resource": "weather://*",
         "principal": {"header": "x-user-group", "in": ["guests"]}},
    ]}
    stack = stacks(mode="json", upstream_args=("--sections",), plugin_config=config)
    async with _client(stack.mcp_url, headers={"x-user-group": "forecasters"}) as (session, _):
        assert [t.name for t in (await session.list_tools()).tools]
        assert [p.name for p in (await session.list_prompts()).prompts] == ["forecast_brief"]
        assert (await session.get_prompt("forecast_brief", {"city": "Paris"})).messages
        logged = len(http_methods(stack.upstream))
        with contextlib.suppress(McpError):  # the server itself has nothing to read there
            await session.read_resource("weather://paris/today")
        assert "resources/read" in http_methods(stack.upstream)[logged:]
    async with _client(stack.mcp_url, headers={"x-user-group": "guests"}) as (session, _):
        # Not listed what the rules refuse this caller whatever the arguments.
        assert (await session.list_prompts()).prompts == []
        uris = [str(r.uri) for r in (await session.list_resources()).resources]
        assert "weather://paris/today" not in uris, uris
        logged = len(http_methods(stack.upstream))
        with pytest.raises(McpError) as prompt:
            await session.get_prompt("forecast_brief", {"city": "Paris"})
        with pytest.raises(McpError) as read:
            await session.read_resource("weather://paris/today")
        seen = http_methods(stack.upstream)[logged:]
        assert "prompts/get" not in seen and "resources/read" not in seen, seen
        for refused, rule in ((prompt, 1), (read, 2)):
            data = refused.value.error.data
            assert (data["error_code"], data["required_action"]) == ("POLICY_DENIED", "none")
            assert f"rule {rule} denies" in refused.value.error.message
        assert not (await session.call_tool("add", {"a": 2, "b": 3})).isError
    assert status_of(stack.admin.server("demo")) == "verified"
    assert len(wait_for_audits(stack, "use.denied", 2)) == 2
