"""Result contracts (``servers.ID.results``, docs/config.md) against a real server whose result shape changes.

The rug-pull server's ``/control/result-shape`` is a deploy that leaves ``tools/list`` exactly
as it was (same tools, same ``outputSchema``, so the fingerprint cannot move) but makes
``get_weather`` return ``{"city", "temperature_c": "21", "summary"}`` instead of the advertised
``{"city", "temperature_c": 21, "conditions"}``. Through a real Envoy with toolseal, driven
by the official MCP SDK client, in both response modes (JSON and SSE), this proves:

- baseline: the approved shape passes unchanged, no ``result.mismatch`` is audited;
- ``results: "observe"``: the changed result reaches the client untouched, a
  ``result.mismatch`` event names server, session, tool and the exact violations, the server
  stays ``verified`` at the same fingerprint (nothing on the tool surface changed);
- ``results: "enforce"``: the client gets the ``RESULT_CONTRACT_CHANGED`` tool error
  (``side_effect_started: true``) and never the changed data, although the upstream
  did run the call; other tools, and get_weather once the shape is back, keep working.

A server that closes the POST event stream and delivers the result on the client's resumed
GET stream (``Last-Event-ID``; SEP-1699 SSE polling, which the SDK client follows on its own)
is held to the same contract: the POST exchange leaves its unanswered checked calls in the
shared store and the GET of the same session picks them up (plugin/core/src/resume.rs).

The SDK client validates ``structuredContent`` against the ``outputSchema`` it listed and
raises on a mismatch, so the changed result is read both ways: raw (``send_request`` with the
plain result type, no client validation) to see exactly what toolseal forwarded, and through
``call_tool`` to pin down what an agent built on the SDK experiences.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from mcp import types

import envoyctl
from fingerprint_ref import server_fingerprint
from rugpull_server import tool_surface as surface
from stack import McpClient, Stack, baseline_of, candidate_of, live_of, mcp_client, status_of
from toolseal_checks import counter, wait_for_audits

pytestmark = pytest.mark.anyio

FP1 = server_fingerprint(surface(1))
WEATHER_V1 = {"city": "Paris", "temperature_c": 21, "conditions": "sunny"}
WEATHER_V2 = {"city": "Paris", "temperature_c": "21", "summary": "sunny"}
# FastMCP's text content for a structured result: the same object, pretty-printed.
WEATHER_V2_TEXT = '{\n  "city": "Paris",\n  "temperature_c": "21",\n  "summary": "sunny"\n}'
# What toolseal's validator reports for WEATHER_V2 against the Weather outputSchema
# ("{instance path}: {message}", joined by "; "; the root's instance path is empty).
PROBLEM = (": required property 'conditions' is missing; "
           "/temperature_c: expected integer, got string")
REFUSAL_TEXT = (
    f"get_weather was refused: its result does not match the approved output schema ({PROBLEM})."
    " An administrator must review the server before it can be used. The tool did run."
)
# The tool error that replaces WEATHER_V2 in enforce mode: the call did run.
ENFORCED_DENIAL = {
    "error_code": "RESULT_CONTRACT_CHANGED", "server": "demo", "tool": "get_weather",
    "schema_status": "verified", "required_action": "admin_review",
    "side_effect_started": True, "current_fingerprint": FP1,
}
MODES = ["json", "sse"]


def _config(results: str) -> dict[str, Any]:
    """Discovery posture, result checks in ``results`` mode, every allowed call audited (so
    a later event proves the log holds everything an earlier response caused)."""
    config = envoyctl.default_plugin_config()
    config["servers"] = {"demo": {"results": results}}
    config["audit"] = {"call_allowed": True}
    return config


async def _raw_call(client: McpClient, name: str,
                    arguments: dict[str, Any]) -> types.CallToolResult:
    """tools/call without the SDK's client-side outputSchema validation: what arrived."""
    request = types.ClientRequest(types.CallToolRequest(
        params=types.CallToolRequestParams(name=name, arguments=arguments)))
    return await client.session.send_request(request, types.CallToolResult)


def _assert_sealed_at_fp1(stack: Stack) -> None:
    """The tool surface never moved: verified, baseline and live set both FP1, no candidate."""
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view), live_of(view), candidate_of(view)) == (
        "verified", FP1, FP1, None)


async def _audited_mismatches(stack: Stack, client: McpClient,
                              allowed_calls: int) -> list[dict[str, Any]]:
    """Every ``result.mismatch`` event of the results ``client`` has received so far, after
    ``allowed_calls`` allowed calls.

    A result is checked before its response leaves Envoy, so the ``call.allowed`` of one more
    call, sent now, is logged after all of them: once it is in the (periodically flushed) log,
    so are they. That sentinel call (``add``) must itself succeed."""
    added = await client.call("add", {"a": 1, "b": 2})
    if (added.isError, [c.text for c in added.content]) != (False, ["3"]):
        pytest.fail(f"the sentinel call failed: {added}")
    wait_for_audits(stack, "call.allowed", allowed_calls + 1)
    return [e for e in stack.envoy.audit_events() if e.get("event") == "result.mismatch"]


def _expected_mismatch(session: str | None) -> dict[str, Any]:
    """The exact audit event for WEATHER_V2 (minus ``time_ms``)."""
    return {
        "event": "result.mismatch", "server": "demo", "session": session, "tool": "get_weather",
        "status_before": "verified", "status_after": "verified", "baseline": FP1, "live": FP1,
        "problem": PROBLEM, "reason": PROBLEM,
    }


def _without_time(event: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(event.get("time_ms"), int) and event["time_ms"] > 0, event
    return {k: v for k, v in event.items() if k != "time_ms"}


def _weather_calls(stack: Stack) -> list[tuple[str, dict[str, Any], str]]:
    """The tools/call the upstream ran: tool, arguments, result shape it answered in."""
    return [(c["tool"], c["arguments"], c["result_shape"]) for c in stack.upstream.calls()]


@pytest.mark.parametrize("results", ["observe", "enforce"])
@pytest.mark.parametrize("mode", MODES)
async def test_the_approved_result_shape_passes_unchanged(
    wasm: Any, stacks: Callable[..., Stack], mode: str, results: str
) -> None:
    stack = stacks(mode=mode, plugin_config=_config(results))
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        weather_tool = next(t for t in listed.tools if t.name == "get_weather")
        assert weather_tool.outputSchema is not None
        assert weather_tool.outputSchema["required"] == ["city", "temperature_c", "conditions"]
        validated = await client.call("get_weather", {"city": "Paris"})
        raw = await _raw_call(client, "get_weather", {"city": "Paris"})
        assert await _audited_mismatches(stack, client, 2) == []
    for result in (validated, raw):
        assert (result.isError, result.structuredContent) == (False, WEATHER_V1)
        assert [c.text for c in result.content] == [
            '{\n  "city": "Paris",\n  "temperature_c": 21,\n  "conditions": "sunny"\n}']
    assert counter(stack, "result_mismatches") == 0
    assert counter(stack, "calls_allowed") == 3
    _assert_sealed_at_fp1(stack)


@pytest.mark.parametrize("mode", MODES)
async def test_observe_audits_the_changed_shape_and_passes_it(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode, plugin_config=_config("observe"))
    async with mcp_client(stack.mcp_url) as client:
        before = (await client.list_tools()).model_dump()
        assert (await client.call("get_weather", {"city": "Paris"})).structuredContent == WEATHER_V1

        stack.upstream.set_result_shape("v2")
        raw = await _raw_call(client, "get_weather", {"city": "Paris"})
        assert (raw.isError, raw.structuredContent) == (False, WEATHER_V2)
        assert [(c.type, c.text) for c in raw.content] == [("text", WEATHER_V2_TEXT)]

        # The SDK client checks the result against the outputSchema it listed and raises:
        # in observe mode an SDK-based agent sees the break as an exception, not as data.
        with pytest.raises(RuntimeError, match=(
                "^Invalid structured content returned by tool get_weather: "
                "'conditions' is a required property")):
            await client.call("get_weather", {"city": "Paris"})

        assert (await client.list_tools()).model_dump() == before  # the surface is the same
        events = await _audited_mismatches(stack, client, 3)
        session = client.session_id()

    assert _weather_calls(stack) == [("get_weather", {"city": "Paris"}, "v1")] + [
        ("get_weather", {"city": "Paris"}, "v2")] * 2 + [("add", {"a": 1, "b": 2}, "v2")]
    assert [_without_time(e) for e in events] == [_expected_mismatch(session)] * 2
    assert counter(stack, "result_mismatches") == 2
    assert (counter(stack, "calls_allowed"), counter(stack, "calls_denied")) == (4, 0)
    assert counter(stack, "lists_changed") == 0
    _assert_sealed_at_fp1(stack)


@pytest.mark.parametrize("mode", MODES)
async def test_enforce_replaces_the_changed_shape_with_result_contract_changed(
    wasm: Any, stacks: Callable[..., Stack], mode: str
) -> None:
    stack = stacks(mode=mode, plugin_config=_config("enforce"))
    async with mcp_client(stack.mcp_url) as client:
        before = (await client.list_tools()).model_dump()
        stack.upstream.set_result_shape("v2")
        http_calls_before = len([e for e in stack.upstream.events("http")
                                 if e["jsonrpc_methods"] == ["tools/call"]])

        # A tool error is not validated by the SDK client, so call_tool returns it as is.
        result = await client.call("get_weather", {"city": "Paris"})
        assert result.isError is True
        assert result.structuredContent == ENFORCED_DENIAL
        assert [(c.type, c.text) for c in result.content] == [("text", REFUSAL_TEXT)]
        assert "summary" not in result.model_dump_json(), "the changed data reached the client"

        # The upstream did run it: results are checked on the way back.
        http_calls = [e for e in stack.upstream.events("http")
                      if e["jsonrpc_methods"] == ["tools/call"]]
        assert len(http_calls) == http_calls_before + 1
        assert _weather_calls(stack) == [("get_weather", {"city": "Paris"}, "v2")]

        added = await client.call("add", {"a": 1, "b": 2})
        assert (added.isError, [c.text for c in added.content]) == (False, ["3"])
        stack.upstream.set_result_shape("v1")
        back = await client.call("get_weather", {"city": "Paris"})
        assert (back.isError, back.structuredContent) == (False, WEATHER_V1)
        assert (await client.list_tools()).model_dump() == before
        events = await _audited_mismatches(stack, client, 3)
        session = client.session_id()

    assert _weather_calls(stack) == [("get_weather", {"city": "Paris"}, "v2"),
                                     ("add", {"a": 1, "b": 2}, "v2"),
                                     ("get_weather", {"city": "Paris"}, "v1"),
                                     ("add", {"a": 1, "b": 2}, "v1")]
    assert [_without_time(e) for e in events] == [_expected_mismatch(session)]
    assert counter(stack, "result_mismatches") == 1
    assert (counter(stack, "calls_allowed"), counter(stack, "calls_denied")) == (4, 0)
    _assert_sealed_at_fp1(stack)


async def test_enforce_holds_for_a_result_delivered_on_a_resumed_stream(
    wasm: Any, stacks: Callable[..., Stack]
) -> None:
    stack = stacks(mode="sse", plugin_config=_config("enforce"), upstream_args=("--resumable",))
    async with mcp_client(stack.mcp_url) as client:
        await client.list_tools()
        stack.upstream.set_result_shape("v2", resume=True)
        raw = await _raw_call(client, "get_weather", {"city": "Paris"})
        events = await _audited_mismatches(stack, client, 1)
        session = client.session_id()
    resumed = [e for e in stack.upstream.events("http")
               if e["method"] == "GET" and e["last_event_id"] is not None]
    if _weather_calls(stack)[0] != ("get_weather", {"city": "Paris"}, "v2") or len(resumed) != 1:
        # Not the path under test: the server must have answered on a resumed stream.
        pytest.fail(f"the result did not come back on a resumed stream: {stack.upstream.events()}")
    assert (raw.isError, raw.structuredContent) == (True, ENFORCED_DENIAL)
    assert [_without_time(e) for e in events] == [_expected_mismatch(session)]
