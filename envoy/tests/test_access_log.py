"""toolseal's decisions where operators already look: Envoy's access log and Prometheus stats.

The shipped config (envoy/envoy.yaml.tmpl) writes one JSON access-log line per request with
the fields the plugin puts in the stream's filter state (``wasm.toolseal.*``). These tests run
the real Envoy with that config, drive it with the SDK client, and read the log file.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import envoyctl
from envoyctl import EnvoyProcess, McpRoute
from stack import Upstream, mcp_client
from toolseal_checks import assert_denied

pytestmark = pytest.mark.anyio

TOOL_METHODS = ("tools/list", "tools/call")
DECISION_FIELDS = ("mcp_method", "tool", "server", "schema_status", "decision", "error_code",
                   "response_code")


@dataclasses.dataclass
class Logged:
    """An upstream behind an Envoy whose access log goes to a file."""

    upstream: Upstream
    envoy: EnvoyProcess
    access_log: Path

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint through Envoy."""
        return f"{self.envoy.url}/mcp"

    def lines(self) -> list[dict[str, Any]]:
        """Every access-log line so far."""
        if not self.access_log.exists():
            return []
        return [json.loads(line) for line in self.access_log.read_text().splitlines() if line]

    def decisions(self, count: int, timeout: float = 5) -> list[tuple[Any, ...]]:
        """The decision fields of the tools/list and tools/call lines in the order the requests
        started, once ``count`` are there (Envoy flushes the file every 100 ms). Lines are
        written when a stream ends, so a list's SSE stream can be logged after a later call
        that was answered locally. Other MCP requests carry a ``pass`` record."""
        deadline = time.monotonic() + timeout
        while True:
            tools = [line for line in self.lines() if line["mcp_method"] in TOOL_METHODS]
            found = [tuple(line[k] for k in DECISION_FIELDS)
                     for line in sorted(tools, key=lambda line: line["start_time"])]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


@pytest.fixture
def logged(wasm: Path, tmp_path: Path) -> Iterator[Logged]:
    """The rug-pull server (rev 1) behind Envoy + toolseal; policy denies ``add`` (so no
    caller is listed it: its lists are rewritten)."""
    yield from _logged(wasm, tmp_path, {})


@pytest.fixture
def unlogged(wasm: Path, tmp_path: Path) -> Iterator[Logged]:
    """``logged`` with the filter-state records turned off (``telemetry.filter_state``)."""
    yield from _logged(wasm, tmp_path, {"telemetry": {"filter_state": False}})


def _logged(wasm: Path, tmp_path: Path, extra: dict[str, Any]) -> Iterator[Logged]:
    upstream = Upstream(tmp_path, rev=1)
    upstream.start()
    envoy = None
    try:
        config = {**envoyctl.default_plugin_config(),
                  "policy": {"rules": [{"action": "deny", "tool": "add"}]}, **extra}
        listen_port, admin_port = envoyctl.free_port(), envoyctl.free_port()
        access_log = tmp_path / "access.log"
        text = envoyctl.render(listen_port=listen_port, admin_port=admin_port,
                               routes=[McpRoute("demo", upstream.port)], plugin_config=config,
                               wasm_path=wasm, access_log_path=str(access_log),
                               admin_api_port=envoyctl.free_port())
        envoy = envoyctl.start(text, tmp_path / "envoy", admin_port=admin_port,
                               listen_port=listen_port)
        yield Logged(upstream, envoy, access_log)
    finally:
        if envoy is not None:
            envoy.stop()
        upstream.stop()


async def test_denied_call_is_in_the_access_log_with_its_error_code(logged: Logged) -> None:
    async with mcp_client(logged.mcp_url) as client:
        assert await client.tool_names() == ["deploy_preview", "get_weather"]
        refused = await client.call("add", {"a": 1, "b": 2})
        assert_denied(refused, "POLICY_DENIED", tool="add", schema_status="verified",
                      required_action="none")
        allowed = await client.call("deploy_preview", {"branch": "fix-login"})
        assert allowed.isError is False
        session = client.session_id()
    assert logged.decisions(3) == [
        ("tools/list", "", "demo", "verified", "rewrite", "", 200),
        ("tools/call", "add", "demo", "verified", "deny", "POLICY_DENIED", 200),
        ("tools/call", "deploy_preview", "demo", "verified", "allow", "", 200),
    ]
    assert [c["tool"] for c in logged.upstream.calls()] == ["deploy_preview"]
    denied = [line for line in logged.lines() if line["decision"] == "deny"]
    assert [(line["method"], line["path"], line["route"], line["mcp_session"]) for line in denied] == [
        ("POST", "/mcp", "demo", session)]
    # Every other MCP message is recorded as passed (initialize, notifications/initialized);
    # a request that carries no MCP message (the GET stream) has no decision at all.
    others = [line for line in logged.lines() if line["mcp_method"] not in TOOL_METHODS]
    assert {(line["mcp_method"], line["decision"], line["error_code"]) for line in others} >= {
        ("initialize", "pass", ""), ("notifications/initialized", "pass", "")}
    assert all(line["decision"] in ("pass", None) for line in others)


async def test_drift_shows_as_a_rewritten_list_and_refused_calls(logged: Logged) -> None:
    async with mcp_client(logged.mcp_url) as client:
        await client.list_tools()
    logged.upstream.restart(rev=2)
    async with mcp_client(logged.mcp_url) as client:
        assert (await client.list_tools()).tools == []
        await client.call("get_weather", {"city": "Paris", "notes": "id_rsa"})
    assert logged.decisions(3) == [
        ("tools/list", "", "demo", "verified", "rewrite", "", 200),
        ("tools/list", "", "demo", "changed", "rewrite", "", 200),
        ("tools/call", "get_weather", "demo", "changed", "deny", "SCHEMA_CHANGED", 200),
    ]


def _prometheus(envoy: EnvoyProcess) -> dict[str, int]:
    status, body = envoyctl.http_get(f"{envoy.admin_url}/stats/prometheus")
    assert status == 200
    values = {}
    for line in body.splitlines():
        match = re.fullmatch(r"([a-z0-9_]+)\{\} (\d+)", line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


async def test_counters_have_the_documented_prometheus_names(logged: Logged) -> None:
    async with mcp_client(logged.mcp_url) as client:
        await client.list_tools()
        await client.call("add", {"a": 1, "b": 2})
        await client.call("deploy_preview", {"branch": "fix-login"})
    toolseal = {k: v for k, v in _prometheus(logged.envoy).items() if k.startswith("toolseal_")}
    assert toolseal == {
        "toolseal_lists_verified": 1,
        "toolseal_lists_changed": 0,
        "toolseal_lists_filtered": 0,
        "toolseal_lists_scoped": 1,
        "toolseal_calls_allowed": 1,
        "toolseal_calls_denied": 1,
        "toolseal_calls_denied_policy_denied": 1,
        "toolseal_requests_rejected": 0,
        "toolseal_result_mismatches": 0,
        "toolseal_admin_refused": 0,
        # Fleet store round trips, conflicts and failures: none without `store`.
        "toolseal_store_round_trips": 0,
        "toolseal_store_conflicts": 0,
        "toolseal_store_failures": 0,
        # Answers to no waiting request, dropped: none from an honest server and SDK.
        "toolseal_responses_dropped": 0,
        "toolseal_uses_denied": 0,
        "toolseal_resources_withheld": 0,
    }
    # The same counters in Envoy's /stats text form carry the wasmcustom. prefix.
    assert logged.envoy.stats()["wasmcustom.toolseal_calls_denied_policy_denied"] == 1


async def test_a_batch_logs_its_most_severe_decision(logged: Logged) -> None:
    # MCP 2025-03-26 batches: the denied call comes first, the allowed one after it; the line
    # keeps the denial (the plugin reads back what it recorded for the stream).
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "deploy_preview", "arguments": {"branch": "fix-login"}}},
    ]
    async with mcp_client(logged.mcp_url) as client:
        await client.list_tools()
    response = httpx.post(logged.mcp_url, json=batch, timeout=5, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26"})
    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()] == [1, 2]
    assert logged.decisions(2)[1:] == [
        ("tools/call", "add", "demo", "verified", "deny", "POLICY_DENIED", 200)]
    assert logged.upstream.calls() == []


async def test_filter_state_off_leaves_the_fields_out_and_decides_the_same(unlogged: Logged) -> None:
    async with mcp_client(unlogged.mcp_url) as client:
        await client.list_tools()
        refused = await client.call("add", {"a": 1, "b": 2})
        assert_denied(refused, "POLICY_DENIED", tool="add", schema_status="verified",
                      required_action="none")
        allowed = await client.call("deploy_preview", {"branch": "fix-login"})
        assert allowed.isError is False
    assert [c["tool"] for c in unlogged.upstream.calls()] == ["deploy_preview"]
    # Every request is still logged, with no toolseal field: none was written.
    deadline = time.monotonic() + 5
    while len(posts := [line for line in unlogged.lines() if line["method"] == "POST"]) < 5:
        assert time.monotonic() < deadline, unlogged.lines()
        time.sleep(0.05)
    assert {tuple(line[k] for k in DECISION_FIELDS[:-1]) for line in posts} == {(None,) * 6}
    stats = unlogged.envoy.stats()
    assert (stats["wasmcustom.toolseal_calls_allowed"], stats["wasmcustom.toolseal_calls_denied"],
            stats["wasmcustom.toolseal_lists_verified"]) == (1, 1, 1)
