"""A whole surface sealed across a fleet: two real Envoys (two workers each) share one etcd.

The rug-pull server on the MCP Python SDK 1.x with ``--sections`` (instructions, a prompt, a
resource template), its ``demo`` server sealing its instructions and prompts. One instance
seals them, the other verifies against the same catalogue; a prompt rug-pulled in place and
seen through one instance closes the other, survives a restart of both, and an approval made
on one serves on the other. What is asserted: what the official client was served, each
instance's admin view and audit events, the record etcd holds, and that a refused
``prompts/get`` never reached the server. A prompt the server lists to one toolset's callers
only is refused to the others' through either instance.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from fleet_checks import assert_in_step, wait_for_view
from fleet_stack import FleetEnvoy, NotForwarded, StoreFleet, fleet_plugin_config, running_fleet
from mcp.shared.exceptions import McpError
from stack import Upstream, baseline_of, candidate_of, mcp_client, status_of
from surface import INSTRUCTIONS_HONEST
from toolseal_checks import http_methods

pytestmark = pytest.mark.anyio

SYNC_MS = 200
SEALED = ["instructions", "prompts"]


def _fleet(tmp_path: Path, request: pytest.FixtureRequest,
           **settings: Any) -> contextlib.AbstractContextManager[StoreFleet]:
    """etcd and the ``--sections`` rug-pull server, whose ``demo`` seals ``SEALED`` (and has
    ``settings``); Envoys are added by the test."""
    prefix = f"/toolseal/{request.node.name[:40]}-{uuid.uuid4().hex[:8]}/"
    servers = {"demo": {"seal": SEALED, **settings}}
    config = fleet_plugin_config(prefix, sync_ms=SYNC_MS, servers=servers)
    upstreams = {"demo": Upstream(tmp_path / "up-demo", rev=1, extra_args=("--sections",))}
    return running_fleet(tmp_path, upstreams, prefix=prefix, sync_ms=SYNC_MS,
                         plugin_config=config)


@pytest.fixture
def fleet(wasm: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StoreFleet]:
    """The fleet of :func:`_fleet`."""
    with _fleet(tmp_path, request) as started:
        yield started


@pytest.fixture
def tool_scoped_fleet(wasm: Path, tmp_path: Path,
                      request: pytest.FixtureRequest) -> Iterator[StoreFleet]:
    """The fleet of :func:`_fleet`, its server under ``drift_scope: "tool"``."""
    with _fleet(tmp_path, request, drift_scope="tool") as started:
        yield started


@pytest.fixture
def toolset_fleet(wasm: Path, tmp_path: Path,
                  request: pytest.FixtureRequest) -> Iterator[StoreFleet]:
    """The fleet of :func:`_fleet`, its callers told apart by ``X-MCP-Toolsets`` too."""
    with _fleet(tmp_path, request, views=["revision", {"header": "x-mcp-toolsets"}]) as started:
        yield started


async def _shown(member: FleetEnvoy) -> dict[str, Any]:
    """What one fresh session through ``member`` is shown: instructions, prompts, tools."""
    async with mcp_client(member.url("demo")) as agent:
        prompts = await agent.session.list_prompts()
        return {"instructions": agent.initialized.instructions,
                "prompts": [p.name for p in prompts.prompts],
                "tools": await agent.tool_names()}


@pytest.mark.timeout(90, method="signal")
async def test_a_sealed_surface_is_one_catalogue_for_the_fleet_and_a_prompt_rug_pull_closes_both(
        fleet: StoreFleet) -> None:
    a = fleet.add_envoy("A")
    b = fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    # A's first session seals the instructions (its handshake), its tools join them and its
    # prompts are sealed. B is then shown the same surface, verified against that catalogue.
    first = await _shown(a)
    assert first["tools"] and first["prompts"] == ["forecast_brief"]
    honest = await _shown(a)
    assert honest["instructions"] == INSTRUCTIONS_HONEST
    assert len(a.wait_for_audits("section.sealed", 2)) == 2
    sealed = baseline_of(a.admin.server("demo"))
    _, doc = fleet.wait_for_record("demo", lambda r: r.get("baseline") == sealed, "the sealing")
    assert doc["record"]["status"] == "verified"
    wait_for_view(b, "demo", lambda v: baseline_of(v) == sealed, "A's catalogue")
    assert await _shown(b) == honest
    assert b.audit_events("section.sealed") == [] and b.audit_events("schema.changed") == []

    # The prompt rug-pulled in place, seen through B: both instances close.
    fleet.upstreams["demo"].poison_sections(["prompts"])
    assert (await _shown(b))["prompts"] == []
    wait_for_view(a, "demo", lambda v: status_of(v) == "changed", "B's drift")
    async with mcp_client(a.url("demo")) as agent:
        assert await agent.tool_names() == []
        with NotForwarded(fleet, "demo"):
            with pytest.raises(McpError) as refused:
                await agent.session.get_prompt("forecast_brief", {"city": "Paris"})
        assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
    fleet.wait_for_record("demo", lambda r: r.get("status") == "changed", "the drift")

    # A restart of both re-trusts nothing.
    a.restart()
    b.restart()
    for member in (a, b):
        shown = await _shown(member)
        assert (shown["prompts"], shown["tools"]) == ([], []), member.name

    # Approved on A, served on B.
    view = a.admin.server("demo")
    assert "prompts" in view["sections_diff"], view
    assert a.admin.approve("demo", candidate_of(view)).status_code == 200
    approved = candidate_of(view)
    wait_for_view(b, "demo", lambda v: (status_of(v), baseline_of(v)) == ("verified", approved),
                  "A's approval")
    served = await _shown(b)
    assert served["prompts"] == ["forecast_brief"] and served["tools"] == honest["tools"]
    for member in (a, b):
        assert_in_step(member, "demo", fleet)


@pytest.mark.timeout(90, method="signal")
async def test_under_tool_scope_a_prompt_rug_pull_withholds_the_prompt_alone_on_every_instance(
        tool_scoped_fleet: StoreFleet) -> None:
    """``drift_scope: "tool"``: the prompt rug-pulled in place, seen through B, is withheld and
    refused on A too (the drift's reach is the fleet's record), while both serve the tools and
    the instructions; a restart of both re-trusts nothing, and an approval on A serves on B."""
    fleet = tool_scoped_fleet
    a = fleet.add_envoy("A")
    b = fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    honest = await _shown(a)
    assert honest["tools"] and honest["prompts"] == ["forecast_brief"]
    sealed = baseline_of(a.admin.server("demo"))
    wait_for_view(b, "demo", lambda v: baseline_of(v) == sealed, "A's catalogue")

    fleet.upstreams["demo"].poison_sections(["prompts"])
    assert await _shown(b) == {**honest, "prompts": []}
    wait_for_view(a, "demo", lambda v: status_of(v) == "changed", "B's drift")
    async with mcp_client(a.url("demo")) as agent:
        assert await agent.tool_names() == honest["tools"]
        with NotForwarded(fleet, "demo"):
            with pytest.raises(McpError) as refused:
                await agent.session.get_prompt("forecast_brief", {"city": "Paris"})
        assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED"
        assert not (await agent.session.call_tool("add", {"a": 2, "b": 3})).isError
    _, doc = fleet.wait_for_record("demo", lambda r: r.get("status") == "changed", "the drift")
    assert doc["record"]["drift_changed"] == ["prompts/forecast_brief"], doc

    a.restart()
    b.restart()
    for member in (a, b):
        assert await _shown(member) == {**honest, "prompts": []}, member.name

    view = a.admin.server("demo")
    assert a.admin.approve("demo", candidate_of(view)).status_code == 200
    approved = candidate_of(view)
    wait_for_view(b, "demo", lambda v: (status_of(v), baseline_of(v)) == ("verified", approved),
                  "A's approval")
    assert await _shown(b) == honest
    for member in (a, b):
        assert_in_step(member, "demo", fleet)


@pytest.mark.timeout(90, method="signal")
async def test_under_tool_scope_a_prompt_rug_pulled_while_a_tool_drift_awaits_review_is_refused_everywhere(
        tool_scoped_fleet: StoreFleet) -> None:
    """``drift_scope: "tool"``: a deploy drifts two tools, seen through A; while that drift
    awaits review the prompt is rug-pulled, seen through B. The prompt joins the drift's reach
    in the fleet's record: A refuses it before the server, after a restart of both too, while
    the unchanged tool serves; the candidate under review stays the tools'; approving it on A
    clears what it reached."""
    fleet = tool_scoped_fleet
    a = fleet.add_envoy("A")
    b = fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    honest = await _shown(a)
    sealed = baseline_of(a.admin.server("demo"))
    wait_for_view(b, "demo", lambda v: baseline_of(v) == sealed, "A's catalogue")
    fleet.upstreams["demo"].set_revision(2)
    drifted = await _shown(a)
    assert drifted["prompts"] == honest["prompts"] and "add" in drifted["tools"], drifted
    candidate = candidate_of(a.admin.server("demo"))
    wait_for_view(b, "demo", lambda v: status_of(v) == "changed", "A's drift")

    fleet.upstreams["demo"].poison_sections(["prompts"])
    assert (await _shown(b))["prompts"] == []
    _, doc = fleet.wait_for_record(
        "demo", lambda r: r.get("drift_also") == ["prompts/forecast_brief"], "the prompt's reach")
    assert doc["record"]["live"] == candidate, doc
    reached = lambda v: any(t["tool"] == "prompts/forecast_brief" for t in v["withheld_tools"])
    wait_for_view(a, "demo", reached, "B's withheld prompt")
    upstream = fleet.upstreams["demo"]
    for member in (a, b):
        if member is b:
            a.restart()
            b.restart()
        async with mcp_client(member.url("demo")) as agent:
            logged = len(http_methods(upstream))
            with pytest.raises(McpError) as refused:
                await agent.session.get_prompt("forecast_brief", {"city": "Paris"})
            assert refused.value.error.data["error_code"] == "SCHEMA_CHANGED", member.name
            seen = http_methods(upstream)[logged:]
            assert "prompts/get" not in seen, "the server never sees it"
            assert not (await agent.session.call_tool("add", {"a": 2, "b": 3})).isError

    assert candidate_of(a.admin.server("demo")) == candidate
    assert a.admin.approve("demo", candidate).status_code == 200
    fleet.wait_for_record("demo", lambda r: r.get("status") == "verified"
                          and "drift_also" not in r, "the approval")
    for member in (a, b):
        wait_for_view(member, "demo", lambda v: (status_of(v), baseline_of(v), v["withheld_tools"])
                      == ("verified", candidate, []), "the approval")
        assert_in_step(member, "demo", fleet)


def _prompt_views(names: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    """The prompts each view was listed, as a record or an admin view holds them."""
    return {tuple(v["names"]) for v in names if v["key"].startswith("prompts/")}


@pytest.mark.timeout(90, method="signal")
async def test_a_prompt_listed_to_one_toolset_is_refused_to_the_others_on_every_instance(
        toolset_fleet: StoreFleet) -> None:
    """The server lists ``triage_issue`` only to callers of the ``issues`` toolset. What each
    kind of caller was listed through A is the fleet's record: through B, a ``repos`` caller
    that asks for the prompt is refused before the server, an ``issues`` caller is served."""
    fleet = toolset_fleet
    a = fleet.add_envoy("A")
    b = fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    repos, issues = {"x-mcp-toolsets": "repos"}, {"x-mcp-toolsets": "issues"}
    for headers, expected in ((repos, ["forecast_brief"]),
                              (issues, ["forecast_brief", "triage_issue"])):
        async with mcp_client(a.url("demo"), headers=headers) as agent:
            listed = await agent.session.list_prompts()
            assert [p.name for p in listed.prompts] == expected
    both = {("forecast_brief",), ("forecast_brief", "triage_issue")}
    fleet.wait_for_record("demo", lambda r: _prompt_views(r.get("section_names", [])) == both,
                          "each view's prompts")
    wait_for_view(b, "demo", lambda v: _prompt_views(v["section_view_names"]) == both,
                  "A's views")
    upstream = fleet.upstreams["demo"]
    async with mcp_client(b.url("demo"), headers=repos) as agent:
        logged = len(http_methods(upstream))
        with pytest.raises(McpError) as refused:
            await agent.session.get_prompt("triage_issue", {"number": "7"})
        assert refused.value.error.data["error_code"] == "PROMPT_NOT_APPROVED"
        # (The session's own notifications/initialized and event stream may arrive meanwhile.)
        seen = http_methods(upstream)[logged:]
        assert "prompts/get" not in seen, "the server never sees it"
        assert (await agent.session.get_prompt("forecast_brief", {"city": "Paris"})).messages
    async with mcp_client(b.url("demo"), headers=issues) as agent:
        assert (await agent.session.get_prompt("triage_issue", {"number": "7"})).messages
    for member in (a, b):
        assert status_of(member.admin.server("demo")) == "verified", member.name
        assert member.audit_events("schema.changed") == [], member.name
        assert_in_step(member, "demo", fleet)
