"""The official MCP conformance suite through toolseal: a transparent gateway loses no check.

The suite (npm ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12, on Node 24; installed by
``scripts/setup-conformance.sh``) runs its server scenarios against the real servers the other
end-to-end tests start: ``@modelcontextprotocol/server-everything`` 2026.1.26 (the TypeScript
SDK 1.x reference server) with the handshake-era scenarios (``--spec-version 2025-11-25``),
and the rug-pull servers on the MCP Python SDK 2.3.0 and on the TypeScript SDK v2 with the
scenarios MCP 2026-07-28 requires (``--requirements 2026-07-28``). Each runs directly, then
through a fresh Envoy with the shipped chain and the built ``.wasm`` in the discovery posture:
one Envoy per era, and one Envoy with all three servers. The checks are compared one by one:
every check that passes directly passes through toolseal, except those listed in
``EXCEPTIONS``, each with the rule of the MCP revision that makes toolseal's answer the right
one; an exception that no longer happens fails the test too, so the list stays exact. None of
these servers lists different tools to different callers, so no run meets a false drift. A
third run seals every server's whole surface (``seal``: tool fields, instructions, prompts,
templates, and ``"resources": "seal"``): no server is closed by its own answers, and the one
check lost is the read of a resource nobody listed, refused before the server
(``SEALED_EXCEPTIONS``).

The suite's reference tools (``test_simple_text``, ...) are not on these servers, so many checks
fail directly as well; what matters here is that the gateway changes no verdict.

A second finding of the suite, at this tier: an ``application/json`` answer holding several
newline-separated messages on a stream that stays open is refused when the second message
starts, and the client is not left waiting for the stream to end.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest

import envoyctl
from conformance_suite import Check, Comparison, SuiteError, main, node_binary, run_suite, suite_entry
from modern_stack import ModernStack, ModernUpstream, start_modern_stack
from stack import Upstream
from toolseal_checks import wait_for_audit

HANDSHAKE, STATELESS = "2025-11-25", "2026-07-28"
EVERYTHING = "2026.1.26"
NDJSON_SERVER = Path(__file__).resolve().parents[1] / "testserver" / "ndjson_server.py"
NDJSON_HOLD_SECONDS = 30.0

# server id -> (the era of scenarios it runs, how to make a fresh one in a directory)
SERVERS: dict[str, tuple[str, Callable[[Path], Upstream]]] = {
    "everything": (HANDSHAKE, lambda d: Upstream(d, everything=EVERYTHING)),
    "python": (STATELESS, lambda d: ModernUpstream(d, "python")),
    "typescript": (STATELESS, lambda d: ModernUpstream(d, "typescript")),
}

# (server, era, scenario, check id, occurrence) -> why toolseal's answer is the right one.
EXCEPTIONS: dict[tuple[str, str, str, str, int], str] = {
    ("python", STATELESS, "input-required-result-validate-input",
     "sep-2322-validate-input-responses", 0): (
        "The probe calls a tool the server never listed (test_input_required_result_elicitation) "
        "with inputResponses that are not an object. Directly, the Python SDK validates the "
        "params first and answers -32602; through toolseal the call is refused before the "
        "server sees it, because toolseal authorizes every tools/call against the approved "
        "tool set and a tool outside it is never forwarded (TOOL_NOT_APPROVED, a tool error "
        "with resultType \"complete\", valid under 2026-07-28's CallToolResult). MCP 2026-07-28 "
        "makes validating inputResponses a SHOULD of the server that runs the tool (the suite "
        "grades it WARNING, not FAILURE); a refused call never runs, so there is nothing to "
        "validate, and the TypeScript SDK server answers the same probe with a tool error too."
    ),
}

# The same, in the run whose servers seal their resources (``"resources": "seal"``) only.
SEALED_EXCEPTIONS: dict[tuple[str, str, str, str, int], str] = {
    ("python", STATELESS, "sep-2164-resource-not-found", "sep-2164-error-code", 0): (
        "The probe reads a URI the server never listed (test://nonexistent-resource-for-"
        "conformance-testing). Directly, the server answers -32602 (SEP-2164: resource not "
        "found). With its resources sealed, toolseal forwards a read only for an approved "
        "resource or a URI an approved template names, so the read is refused before the "
        "server sees it, with toolseal's refusal of a use: -32003 (the server range every "
        "toolseal refusal of a prompt or resource uses) and the denial's fields in `data` "
        "(`error_code` RESOURCE_NOT_APPROVED, `required_action` refresh_resources, and `uri`, "
        "which SEP-2164 asks for). The suite grades the code a WARNING (a SHOULD)."
    ),
}


@pytest.fixture(scope="module")
def suite() -> None:
    """The suite and its Node, or skip (fail under TOOLSEAL_REQUIRE_PLUGIN=1, as in CI)."""
    try:
        node_binary(), suite_entry()
    except SuiteError as err:
        if os.environ.get("TOOLSEAL_REQUIRE_PLUGIN") == "1":
            pytest.fail(str(err))
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def direct(suite: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[Any, Check]]:
    """Each server's checks, run directly against a fresh server (once for the module)."""
    work = tmp_path_factory.mktemp("direct")
    results = {}
    for server_id, (era, make) in SERVERS.items():
        upstream = make(work / server_id)
        upstream.start()
        try:
            results[server_id] = run_suite(f"{upstream.base_url}/mcp", era, work / server_id / "run")
        finally:
            upstream.stop()
    return results


@pytest.fixture
def gateways(wasm: Path, tmp_path: Path) -> Iterator[Callable[..., ModernStack]]:
    """Factory: fresh servers (by id) behind one fresh Envoy with toolseal; all stopped after."""
    started: list[ModernStack] = []

    def make(*server_ids: str, plugin_config: dict[str, Any] | None = None) -> ModernStack:
        upstreams = {i: SERVERS[i][1](tmp_path / f"up{len(started)}-{i}") for i in server_ids}
        stack = start_modern_stack(tmp_path / f"stack{len(started)}", upstreams,
                                   plugin_config=plugin_config)
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        stack.stop()


def compare_through(stack: ModernStack, direct: dict[str, dict[Any, Check]], where: str,
                    workdir: Path, capsys: pytest.CaptureFixture[str],
                    exceptions: dict[tuple[str, str, str, str, int], str] = EXCEPTIONS) -> list[str]:
    """Run each server's era through ``stack``; print the numbers; the unexplained changes
    (those ``exceptions`` does not explain)."""
    problems = []
    for server_id in stack.upstreams:
        era = SERVERS[server_id][0]
        through = run_suite(stack.url(server_id), era, workdir / f"{where}-{server_id}")
        comparison = Comparison(server_id, era, direct[server_id], through)
        with capsys.disabled():
            print(f"\nconformance, {where}: {comparison.summary()}")
        lost = {(server_id, era, *check.key) for check in comparison.lost()}
        expected = {key for key in exceptions if key[:2] == (server_id, era)}
        unexplained = [check for check in comparison.lost()
                       if (server_id, era, *check.key) not in exceptions]
        if unexplained:
            problems.append(f"{server_id} ({era}) {where}: passed directly, not through toolseal:\n"
                            + comparison.explain(unexplained))
        for gone in sorted(expected - lost):
            problems.append(f"{server_id} ({era}) {where}: exception {gone[2]}/{gone[3]} no longer "
                            "happens: remove it from EXCEPTIONS")
    return problems


def test_each_era_through_its_own_envoy_loses_no_check(
        direct: dict[str, dict[Any, Check]], gateways: Callable[..., ModernStack],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problems = []
    for era in (HANDSHAKE, STATELESS):
        stack = gateways(*[i for i, (e, _) in SERVERS.items() if e == era])
        problems += compare_through(stack, direct, f"one Envoy for {era}", tmp_path, capsys)
        stack.stop()
    assert not problems, "\n".join(problems)


def test_both_eras_behind_one_envoy_lose_no_check(
        direct: dict[str, dict[Any, Check]], gateways: Callable[..., ModernStack],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = gateways(*SERVERS)
    problems = compare_through(stack, direct, "one Envoy for both eras", tmp_path, capsys)
    assert not problems, "\n".join(problems)
    # Every server was baselined from its first list and none drifted.
    for server_id in SERVERS:
        assert stack.admin.server(server_id)["schema_status"] == "verified", server_id


def test_every_section_sealed_loses_no_check_and_closes_no_server(
        direct: dict[str, dict[Any, Check]], gateways: Callable[..., ModernStack],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same suite with each server sealing its whole surface (``seal``, and ``"resources":
    "seal"``): the suite's prompt, resource, resource-template and instructions scenarios pass
    as they do directly (but the read of a resource nobody listed, refused before the server:
    ``SEALED_EXCEPTIONS``), and no server is closed by its own honest answers."""
    sealed = ["tool-fields", "instructions", "prompts", "resource-templates"]
    config = envoyctl.default_plugin_config()
    config["servers"] = {server_id: {"seal": sealed, "resources": "seal"} for server_id in SERVERS}
    stack = gateways(*SERVERS, plugin_config=config)
    problems = compare_through(stack, direct, "one Envoy, every section sealed", tmp_path, capsys,
                               {**EXCEPTIONS, **SEALED_EXCEPTIONS})
    assert not problems, "\n".join(problems)
    for server_id in SERVERS:
        assert stack.admin.server(server_id)["schema_status"] == "verified", server_id
    events = stack.envoy.audit_events()
    sealed_everything = {e["reason"].split("'s ")[1].split(" ")[0] for e in events
                         if e.get("event") == "section.sealed" and e.get("server") == "everything"}
    # The suite lists prompts and tools and initializes many sessions (it never lists templates).
    assert {"instructions", "prompts", "tool-fields"} <= sealed_everything, sealed_everything
    assert not [e for e in events if e.get("event") in ("schema.changed", "schema.pending")]


def test_the_operator_command_runs_the_suite_directly_and_through_toolseal(
        suite: None, wasm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What ``scripts/conformance.sh URL --era 2025-11-25`` runs, in process."""
    upstream = SERVERS["everything"][1](tmp_path / "up")
    upstream.start()
    try:
        status = main([f"{upstream.base_url}/mcp", "--era", HANDSHAKE, "--keep", str(tmp_path / "k")])
    finally:
        upstream.stop()
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert f"{upstream.base_url}/mcp ({HANDSHAKE}): checks passed direct " in printed, printed
    direct_count = int(printed.split("checks passed direct ")[1].split(" ")[0])
    assert direct_count > 0 and f"/ through {direct_count} / gained 0" in printed, printed
    assert (tmp_path / "k" / HANDSHAKE / "through").is_dir()


class NdjsonUpstream(Upstream):
    """``testserver/ndjson_server.py``: newline-separated JSON on a stream held open."""

    def _command(self) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, str(NDJSON_SERVER), "--port", str(self.port),
                "--hold", str(NDJSON_HOLD_SECONDS)], dict(os.environ)


def post_2026(url: str, body: dict[str, Any], timeout: float) -> tuple[float, str, bytes]:
    """POST a 2026-07-28 request; (seconds until the answer ended, how it ended, body bytes)."""
    body["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": STATELESS}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": STATELESS, "mcp-method": body["method"]}
    start, received, ended = time.monotonic(), b"", "complete"
    try:
        with httpx.stream("POST", url, json=body, headers=headers,
                          timeout=httpx.Timeout(timeout)) as response:
            for piece in response.iter_raw():
                received += piece
    except httpx.TimeoutException:
        ended = "timeout"
    except httpx.TransportError as err:
        ended = f"reset ({type(err).__name__})"
    return time.monotonic() - start, ended, received


def test_a_subscriptions_listen_answered_as_newline_separated_json_does_not_leave_the_client_waiting(
        wasm: Path, tmp_path: Path) -> None:
    upstream = NdjsonUpstream(tmp_path / "ndjson")
    stack = start_modern_stack(tmp_path / "stack", {"ndjson": upstream})
    try:
        listen = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                  "params": {"notifications": {"toolsListChanged": True}}}
        # Directly, the client has its answer but waits on the body for as long as the stream
        # is held open.
        waited, ended, _ = post_2026(f"{upstream.base_url}/mcp", dict(listen, params={}), 2)
        assert ended == "timeout", (waited, ended)
        # Through toolseal the stream is reset as soon as the second message starts.
        seconds, ended, received = post_2026(stack.url("ndjson"), listen, NDJSON_HOLD_SECONDS)
        assert seconds < 5, (seconds, ended)
        assert ended.startswith("reset"), (ended, received)
        assert b"list_changed" not in received, received
        withheld = wait_for_audit(stack, "response.withheld")
        assert "more than one JSON value" in withheld["reason"], withheld
        # A tool list answered that way never reaches the client either.
        seconds, ended, received = post_2026(
            stack.url("ndjson"), {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            NDJSON_HOLD_SECONDS)
        assert seconds < 5 and ended.startswith("reset"), (seconds, ended)
        assert b"echo" not in received, received
        filtered = wait_for_audit(stack, "list.filtered")
        assert "more than one JSON value" in filtered["reason"], filtered
    finally:
        stack.stop()
