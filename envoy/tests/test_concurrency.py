"""Two Envoy workers over one shared store: an honest server is never closed, a rug pull is.

Envoy runs one toolseal VM per worker (``--concurrency 2``) over one shared data store, so each
worker is another writer of a server's record (docs/state.md, "Concurrency"). The agents here
speak raw JSON-RPC over HTTP, each on its own connection: Envoy balances connections, not
requests, across its workers, and every run checks from Envoy's per-worker listener stats
(``listener.<address>.worker_<n>.downstream_cx_total``) that both workers served agents.

- **Fresh starts, first lists at once.** Several fresh starts of Envoy (a fresh shared store
  each) in front of two upstreams whose tool lists never change, one per era: 2025 sessions
  (``initialize``, ``Mcp-Session-Id``, SSE answers) on the Python SDK 1.x rug-pull server and
  2026-07-28 stateless requests (``_meta`` envelope, ``Mcp-Method``, JSON answers) on the SDK
  2.x one. In each start, for each server, 16 agents send their first ``tools/list`` at the
  same moment (encoded first, then written on every connection in one burst), and the server
  sends its 16 answers together (``--list-batch``, as a slow server answers a burst), so both
  workers check a first list at once. Every server is baselined exactly once, no
  ``schema.changed`` is audited, the admin API says ``verified``, and every agent is served
  the whole list. The servers list 300 more tools (``--bulk-tools``, a ~130 KB list, as large
  servers do): the longer a list takes to check, the wider the window in which the core before
  the fix closed the server (with a three-tool list, or answers not sent together, it hardly
  ever did on a busy 2-core host; docs/state.md has the numbers).
- **Steady load, rug pull mid-run.** Agents (a quarter of them at least on each worker) loop
  ``tools/list`` and two calls; halfway through, the upstream switches its tools in place
  (rev 2 of ``surface.py``). Nothing drifts before the switch; every list ever served is the
  whole approved set or empty (never a rug-pull tool); once any agent has been served the
  emptied list, every request any agent sends afterwards, on either worker, is refused or
  emptied; the server ends ``changed`` with one ``schema.changed``; the upstream executed
  exactly the calls the agents saw allowed (its own request log, argument for argument) and
  Envoy forwarded exactly the requests toolseal did not answer itself (``upstream_rq_total``).
"""

from __future__ import annotations

import collections
import dataclasses
import http.client
import itertools
import json
import os
import re
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import envoyctl
from envoyctl import EnvoyProcess, McpRoute, free_port
from fingerprint_ref import server_fingerprint
from modern_stack import ModernUpstream
from stack import Admin, Upstream, baseline_of, candidate_of, status_of
from surface import bulk_tools, modern_tool_surface, tool_surface
from toolseal_checks import STATUS_META_KEY

WORKERS = 2
FIRST_LIST_AGENTS = 16
# Fresh starts of Envoy; TOOLSEAL_RACE_STARTS runs more (e.g. to measure a pre-fix build).
FRESH_STARTS = int(os.environ.get("TOOLSEAL_RACE_STARTS", "8"))
BULK_TOOLS, BULK_BYTES = 300, 300
STEADY_AGENTS = 8
STEADY_ROUNDS = 16  # per agent: tools/list, then add, then get_weather
REQUEST_TIMEOUT = 30.0
# An Envoy log line: "[time][thread id][level][logger] ... toolseal.audit {json}".
AUDIT_LINE_RE = re.compile(r"^\[[^\]]*\]\[(\d+)\].*toolseal\.audit (\{.*\})\s*$")


@dataclasses.dataclass(frozen=True)
class Era:
    """How agents of one protocol era talk, and the rug-pull server that serves them."""

    name: str
    protocol_version: str
    stateless: bool

    def surface(self, rev: int, bulk: bool = False) -> list[dict[str, Any]]:
        """What this era's server lists at ``rev`` (with the bulk tools when started so)."""
        tools = modern_tool_surface(rev) if self.stateless else tool_surface(rev)
        return tools + (bulk_tools(BULK_TOOLS, BULK_BYTES) if bulk else [])

    def upstream(self, workdir: Path, bulk: bool = False) -> Upstream:
        """This era's rug-pull server at rev 1 (honest). ``bulk``: with the bulk tools, and
        its ``tools/list`` answers sent in batches of ``FIRST_LIST_AGENTS``."""
        extra: tuple[str, ...] = ()
        if bulk:
            extra = ("--bulk-tools", str(BULK_TOOLS), "--bulk-bytes", str(BULK_BYTES),
                     "--list-batch", str(FIRST_LIST_AGENTS))
        if self.stateless:
            return ModernUpstream(workdir, "python", mode="json", extra_args=extra)
        return Upstream(workdir, rev=1, mode="sse", extra_args=extra)


ERA_2025 = Era("2025-sessions", "2025-11-25", stateless=False)
ERA_2026 = Era("2026-stateless", "2026-07-28", stateless=True)
ERAS = [ERA_2025, ERA_2026]


class Agent:
    """One MCP client on its own TCP connection (so Envoy may give it to either worker),
    speaking raw JSON-RPC over HTTP/1.1 the way the official SDKs of its era do."""

    def __init__(self, url: str, era: Era) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.address = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.path = parsed.path
        self.era = era
        self.sock = socket.create_connection(self.address, timeout=REQUEST_TIMEOUT)
        self.session: str | None = None
        self.ids = itertools.count(1)
        self.requests = 0

    def _headers(self, method: str, name: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        if self.era.stateless:
            headers["mcp-protocol-version"] = self.era.protocol_version
            headers["mcp-method"] = method
            if name is not None:
                headers["mcp-name"] = name
        elif self.session is not None:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = self.era.protocol_version
        return headers

    def _body(self, method: str, params: dict[str, Any] | None, notify: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if self.era.stateless:
            body["params"] = {**(params or {}), "_meta": {
                "io.modelcontextprotocol/protocolVersion": self.era.protocol_version,
                "io.modelcontextprotocol/clientInfo": {"name": "race-agent", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}
        elif params is not None:
            body["params"] = params
        if not notify:
            body["id"] = next(self.ids)
        return body

    def encode(self, method: str, params: dict[str, Any] | None = None,
               name: str | None = None, notify: bool = False) -> bytes:
        """The bytes of one JSON-RPC request (or notification) as an HTTP/1.1 POST."""
        body = json.dumps(self._body(method, params, notify)).encode()
        headers = {"host": f"{self.address[0]}:{self.address[1]}", **self._headers(method, name),
                   "content-length": str(len(body))}
        lines = [f"POST {self.path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
        head = "".join(line + "\r\n" for line in lines)
        return head.encode() + b"\r\n" + body

    def send(self, request: bytes) -> None:
        """Write one encoded request on this agent's connection."""
        self.requests += 1
        self.sock.sendall(request)

    def receive(self) -> tuple[int, dict[str, str], bytes]:
        """The next response on this connection: status, headers (lowercase), body."""
        response = http.client.HTTPResponse(self.sock, method="POST")
        response.begin()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def result(self, method: str) -> dict[str, Any]:
        """The ``result`` of the response to a request sent before (raises on an HTTP or a
        JSON-RPC error)."""
        status, headers, body = self.receive()
        assert status == 200, (method, status, body[:500])
        message = response_message(headers, body)
        assert "result" in message, (method, message)
        if self.session is None and not self.era.stateless:
            self.session = headers.get("mcp-session-id")
        return message["result"]

    def rpc(self, method: str, params: dict[str, Any] | None = None,
            name: str | None = None) -> dict[str, Any]:
        """Send a request and return its ``result``."""
        self.send(self.encode(method, params, name))
        return self.result(method)

    def connect(self) -> None:
        """What an SDK sends before its first list: the 2025 handshake (a session), or the
        2026-07-28 ``server/discover`` (no session)."""
        if self.era.stateless:
            self.rpc("server/discover")
            return
        self.rpc("initialize", {"protocolVersion": self.era.protocol_version, "capabilities": {},
                                "clientInfo": {"name": "race-agent", "version": "1"}})
        assert self.session, "the 2025 server gave no Mcp-Session-Id"
        self.send(self.encode("notifications/initialized", notify=True))
        assert self.receive()[0] == 202

    def list_tools(self) -> dict[str, Any]:
        """The ``tools/list`` result."""
        return self.rpc("tools/list", {})

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result."""
        return self.rpc("tools/call", {"name": tool, "arguments": arguments}, name=tool)

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()


def response_message(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The JSON-RPC response in a JSON or an SSE body (the event that carries an ``id``)."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        for event in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(line[5:].lstrip(" ") for line in event.splitlines()
                             if line.startswith("data:"))
            if data:
                message = json.loads(data)
                if "id" in message:
                    return message
        raise AssertionError(f"no JSON-RPC response in the SSE body: {body[:500]!r}")
    return json.loads(body)


def first_lists_together(agents: list[Agent]) -> list[dict[str, Any]]:
    """Every agent's ``tools/list``, written on all connections in one burst (the requests
    are encoded first, so the burst takes a fraction of a millisecond), then read back."""
    requests = [agent.encode("tools/list", {}) for agent in agents]
    for agent, request in zip(agents, requests):
        agent.send(request)
    return in_parallel(agents, lambda agent: agent.result("tools/list"))


def in_parallel(agents: list[Agent], action: Callable[[Agent], Any]) -> list[Any]:
    """``action(agent)`` for every agent, each in its own thread."""
    with ThreadPoolExecutor(max_workers=len(agents)) as pool:
        return list(pool.map(action, agents, timeout=120))


def audit_lines(envoy: EnvoyProcess) -> list[tuple[str, dict[str, Any]]]:
    """``(Envoy thread id, event)`` for each toolseal audit line of the Envoy log."""
    found = []
    for line in envoy.log_text().splitlines():
        match = AUDIT_LINE_RE.match(line)
        if match:
            found.append((match.group(1), json.loads(match.group(2))))
    return found


def audit_ring(admin: Admin) -> list[dict[str, Any]]:
    """The audit ring from the admin API: read from the shared store, so it holds every
    event at once (the Envoy log file is flushed every 100 ms)."""
    response = admin.get("audit")
    assert response.status_code == 200, response.text
    return response.json()["events"]


def schema_events(events: list[dict[str, Any]], server: str) -> list[dict[str, Any]]:
    """One server's ``schema.*`` transitions."""
    return [e for e in events if e["event"].startswith("schema.") and e.get("server") == server]


def connections_per_worker(envoy: EnvoyProcess) -> list[int]:
    """Connections each worker has accepted on the agents' listener."""
    stats = envoy.stats()
    prefix = f"listener.127.0.0.1_{envoy.listen_port}.worker_"
    return [stats.get(f"{prefix}{n}.downstream_cx_total", 0) for n in range(WORKERS)]


def connect_located(envoy: EnvoyProcess, url: str, era: Era) -> tuple[Agent, int]:
    """A connected agent, and the worker that accepted its connection: the one whose count
    of accepted connections went up meanwhile (one agent at a time)."""
    before = connections_per_worker(envoy)
    agent = Agent(url, era)
    agent.connect()  # answered, so accepted by now
    raised = [n for n, (now, was) in enumerate(zip(connections_per_worker(envoy), before))
              if now != was]
    assert len(raised) == 1, (before, raised)
    return agent, raised[0]


_fingerprints: dict[str, str] = {}


def fingerprint_of(tools: list[dict[str, Any]]) -> str:
    """:func:`server_fingerprint`, once per distinct list (agents mostly get the same one)."""
    key = json.dumps(tools, sort_keys=True)
    if key not in _fingerprints:
        _fingerprints[key] = server_fingerprint(tools)
    return _fingerprints[key]


def serves_whole(result: dict[str, Any], surface: list[dict[str, Any]]) -> bool:
    """The list holds exactly the declared tools, in order and by fingerprint, with no
    status from toolseal."""
    tools = result.get("tools", [])
    return ([t["name"] for t in tools] == [t["name"] for t in surface]
            and fingerprint_of(tools) == fingerprint_of(surface)
            and STATUS_META_KEY not in (result.get("_meta") or {}))


def emptied_status(result: dict[str, Any]) -> str | None:
    """The status toolseal gives for a list it emptied, None if the list is not one."""
    if result.get("tools") != []:
        return None
    return (result.get("_meta") or {}).get(STATUS_META_KEY, {}).get("schema_status")


def refusal_code(result: dict[str, Any]) -> str | None:
    """The ``error_code`` of a call toolseal refused, None if the call was not refused."""
    structured = result.get("structuredContent")
    if result.get("isError") and isinstance(structured, dict):
        return structured.get("error_code")
    return None


@pytest.fixture
def processes() -> Iterator[list[Any]]:
    """Upstreams and Envoys a test starts; each stopped by PID after the test (Envoys first)."""
    started: list[Any] = []
    yield started
    for process in reversed(started):
        process.stop()


def start_envoy(workdir: Path, upstreams: dict[str, Upstream],
                processes: list[Any]) -> tuple[EnvoyProcess, Admin]:
    """A fresh Envoy (so a fresh shared store) with ``WORKERS`` workers, on the shipped chain
    and the default config (discovery posture, admin API on its listener). Each upstream is
    routed at ``/<server id>/``."""
    listen_port, admin_port, admin_api_port = free_port(), free_port(), free_port()
    routes = [McpRoute(server, upstream.port, match_prefix=f"/{server}/", rewrite_prefix="/")
              for server, upstream in upstreams.items()]
    text = envoyctl.render(listen_port=listen_port, admin_port=admin_port,
                           admin_api_port=admin_api_port, routes=routes,
                           plugin_config=envoyctl.default_plugin_config(),
                           wasm_path=envoyctl.wasm_file())
    envoy = envoyctl.start(text, workdir, admin_port=admin_port, listen_port=listen_port,
                           admin_api_port=admin_api_port, concurrency=WORKERS)
    processes.append(envoy)
    return envoy, Admin(envoy.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN)


@dataclasses.dataclass
class FirstContact:
    """What one server showed after its first lists raced in one fresh start."""

    start: int
    server: str
    connections: list[int]  # this round's agents per worker
    served_whole: int
    transitions: list[str] = dataclasses.field(default_factory=list)  # event@thread
    status: str = ""
    baseline: str | None = None

    def closed(self) -> bool:
        """The honest server ended anything but verified, or a drift was audited."""
        return self.status != "verified" or any(t.startswith("schema.changed")
                                                for t in self.transitions)

    def __str__(self) -> str:
        return (f"start {self.start} {self.server}: agents per worker {self.connections}, "
                f"{self.served_whole}/{FIRST_LIST_AGENTS} served the whole list, status "
                f"{self.status}, transitions [{', '.join(self.transitions)}]")


def first_lists_at_once(start: int, envoy: EnvoyProcess, server: str, era: Era) -> FirstContact:
    """16 agents connect to ``server``, then send their first ``tools/list`` together."""
    before = connections_per_worker(envoy)
    agents = [Agent(f"{envoy.url}/{server}/mcp", era) for _ in range(FIRST_LIST_AGENTS)]
    try:
        in_parallel(agents, Agent.connect)
        listed = first_lists_together(agents)
    finally:
        for agent in agents:
            agent.close()
    connections = [after - was for after, was in zip(connections_per_worker(envoy), before)]
    whole = sum(serves_whole(result, era.surface(1, bulk=True)) for result in listed)
    return FirstContact(start, server, connections, whole)


def one_fresh_start(index: int, workdir: Path, upstreams: dict[str, tuple[Era, Upstream]],
                    processes: list[Any]) -> list[FirstContact]:
    """Start Envoy, race the first lists of each server in turn (the order alternating
    between starts, so each era meets a cold VM), read back what happened, stop Envoy."""
    envoy, admin = start_envoy(workdir, {s: up for s, (_, up) in upstreams.items()}, processes)
    order = list(upstreams) if index % 2 == 0 else list(reversed(upstreams))
    contacts = [first_lists_at_once(index, envoy, server, upstreams[server][0])
                for server in order]
    ring = audit_ring(admin)
    for contact in contacts:
        view = admin.server(contact.server)
        contact.status, contact.baseline = status_of(view), baseline_of(view)
    envoy.stop()  # its log is flushed whole on exit
    processes.remove(envoy)
    lines = audit_lines(envoy)
    for contact in contacts:
        contact.transitions = [f"{e['event']}@{thread}" for thread, e in lines
                               if e["event"].startswith("schema.")
                               and e.get("server") == contact.server]
        ring_events = [e["event"] for e in schema_events(ring, contact.server)]
        assert ring_events == [t.split("@")[0] for t in contact.transitions], (ring_events, contact)
    return contacts


def test_fresh_starts_with_concurrent_first_lists_never_close_an_honest_server(
    wasm: Any, tmp_path: Path, processes: list[Any]
) -> None:
    upstreams: dict[str, tuple[Era, Upstream]] = {}
    for era in ERAS:
        upstream = era.upstream(tmp_path / f"upstream-{era.name}", bulk=True)
        processes.append(upstream)
        upstream.start()
        upstreams[era.name] = (era, upstream)
    contacts = [contact for i in range(FRESH_STARTS)
                for contact in one_fresh_start(i, tmp_path / f"envoy{i}", upstreams, processes)]
    report = "\n".join(map(str, contacts))
    closed = collections.Counter(c.server for c in contacts if c.closed())
    print(f"\nfresh starts: {FRESH_STARTS}; servers closed: "
          + ", ".join(f"{era.name} {closed[era.name]} of {FRESH_STARTS}" for era in ERAS)
          + f"\n{report}")
    assert not closed, f"honest servers closed: {dict(closed)}\n{report}"
    for contact in contacts:
        era = upstreams[contact.server][0]
        fingerprint = fingerprint_of(era.surface(1, bulk=True))
        # Both workers served this round's agents: the first lists raced in two VMs.
        assert sum(contact.connections) == FIRST_LIST_AGENTS, report
        assert min(contact.connections) > 0, report
        assert contact.served_whole == FIRST_LIST_AGENTS, report
        assert [t.split("@")[0] for t in contact.transitions] == ["schema.baselined"], report
        assert contact.baseline == fingerprint, report


@dataclasses.dataclass
class Op:
    """One request of the steady run, as its agent saw it."""

    agent: int
    kind: str  # "list" or the tool called
    sent: float
    received: float
    outcome: str  # list: "whole" or "emptied:<status>"; call: "allowed" or "refused:<code>"
    arguments: dict[str, Any] | None = None


@pytest.mark.parametrize("era", ERAS, ids=[era.name for era in ERAS])
def test_steady_load_with_a_rug_pull_mid_run(
    wasm: Any, tmp_path: Path, processes: list[Any], era: Era
) -> None:
    server = "demo"
    upstream = era.upstream(tmp_path / "upstream")
    processes.append(upstream)
    upstream.start()
    envoy, admin = start_envoy(tmp_path / "envoy", {server: upstream}, processes)
    rev1, rev2 = era.surface(1), era.surface(2)
    fp1, fp2 = fingerprint_of(rev1), fingerprint_of(rev2)
    agents: list[Agent] = []
    worker_of: list[int] = []  # per agent, the worker its connection went to
    ops: list[Op] = []
    rounds_done = threading.Semaphore(0)

    def timed(index: int, kind: str, run: Callable[[], dict[str, Any]],
              arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        sent = time.monotonic()
        result = run()
        received = time.monotonic()
        if kind == "list":
            outcome = ("whole" if serves_whole(result, rev1)
                       else f"emptied:{emptied_status(result)}" if emptied_status(result)
                       else f"other:{json.dumps(result)[:300]}")
        else:
            code = refusal_code(result)
            outcome = f"refused:{code}" if code else "error" if result.get("isError") else "allowed"
        ops.append(Op(index, kind, sent, received, outcome, arguments))
        return result

    def loop(agent: Agent) -> None:
        index = agents.index(agent)
        for n in range(STEADY_ROUNDS):
            timed(index, "list", agent.list_tools)
            add = {"a": index, "b": n}
            result = timed(index, "add", lambda: agent.call("add", add), add)
            if refusal_code(result) is None:
                assert result["content"][0]["text"] == str(index + n), result
            weather = {"city": f"city-{index}-{n}"}
            timed(index, "get_weather", lambda: agent.call("get_weather", weather), weather)
            rounds_done.release()

    try:
        # Connections land on a worker at random: connect until each worker has a quarter of
        # the agents (8 agents all on one worker would happen once in 128 runs).
        while len(agents) < STEADY_AGENTS or min(map(worker_of.count, range(WORKERS))) < (
                STEADY_AGENTS // 4):
            assert len(agents) < 4 * STEADY_AGENTS, f"agents per worker: {worker_of}"
            agent, worker = connect_located(envoy, f"{envoy.url}/{server}/mcp", era)
            agents.append(agent)
            worker_of.append(worker)
        with ThreadPoolExecutor(max_workers=len(agents)) as pool:
            running = [pool.submit(loop, agent) for agent in agents]
            for _ in range(len(agents) * STEADY_ROUNDS // 2):
                assert rounds_done.acquire(timeout=60), "the agents stopped making progress"
            switch_ms = int(time.time() * 1000)
            switched = time.monotonic()
            upstream.set_revision(2)  # in place: sessions and connections survive
            switch_done = time.monotonic()
            for future in running:
                future.result(timeout=120)
    finally:
        for agent in agents:
            agent.close()

    sent_requests = sum(agent.requests for agent in agents)
    connections = connections_per_worker(envoy)
    forwarded = envoy.stats().get(f"cluster.upstream_{server}.upstream_rq_total", 0)
    view = admin.server(server)
    envoy.stop()  # its log is flushed whole on exit (the audit ring keeps only the last 256
    processes.remove(envoy)  # events, and every refused call is one)
    transitions = schema_events([e for _, e in audit_lines(envoy)], server)
    emptied = [op.received for op in ops if op.outcome == "emptied:changed"]
    told = min(emptied) if emptied else float("inf")  # the first agent told of the drift
    after = [op for op in ops if op.sent > told]
    summary = (f"{era.name}: agents per worker {connections}; "
               + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(
                   f"{op.kind}:{op.outcome}" for op in ops).items()))
               + f"; sent after the first agent was told: {len(after)}, from agents on workers "
               + str(sorted(collections.Counter(worker_of[op.agent] for op in after).items())))
    print("\n" + summary)

    assert connections == [worker_of.count(n) for n in range(WORKERS)], (connections, worker_of)
    assert min(connections) > 0, summary
    # Before the switch: nothing drifted, everything was served.
    before = [op for op in ops if op.received < switched]
    assert {worker_of[op.agent] for op in before} == set(range(WORKERS)), summary
    assert all(op.outcome in ("whole", "allowed") for op in before), summary
    # Said compactly, so that a failure shows every transition whole (pytest cuts long reprs).
    told_apart = [(e["event"], e.get("time_ms"), str(e.get("live"))[:19], str(e.get("reason"))[:120])
                  for e in transitions]
    assert [e["event"] for e in transitions] == ["schema.baselined", "schema.changed"], \
        "\n".join(map(str, told_apart))
    assert transitions[1]["time_ms"] >= switch_ms, (transitions, switch_ms)
    # No list ever served a tool of the rug pull: each is the approved set or emptied.
    lists = [op for op in ops if op.kind == "list"]
    assert all(op.outcome in ("whole", "emptied:changed") for op in lists), summary
    # Every list sent once the upstream had switched was emptied, whichever worker it met.
    assert all(op.outcome == "emptied:changed" for op in lists if op.sent > switch_done), summary
    # Once one agent was told, every request any agent sent afterwards was refused or emptied.
    assert {worker_of[op.agent] for op in after} == set(range(WORKERS)), summary
    assert all(op.outcome == ("emptied:changed" if op.kind == "list" else "refused:SCHEMA_CHANGED")
               for op in after), summary
    assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", fp1, fp2)
    # The upstream executed exactly the calls the agents saw allowed, argument for argument.
    allowed = sorted(json.dumps([op.kind, op.arguments], sort_keys=True)
                     for op in ops if op.outcome == "allowed")
    executed = sorted(json.dumps([c["tool"], c["arguments"]], sort_keys=True)
                      for c in upstream.calls())
    assert executed == allowed, (len(executed), len(allowed))
    # Envoy forwarded every request but the calls toolseal refused, and nothing else.
    refused = sum(op.outcome.startswith("refused:") for op in ops)
    upstream_http = [e for e in upstream.events("http") if e["path"] == "/mcp"]
    assert forwarded == len(upstream_http) == sent_requests - refused, (
        forwarded, len(upstream_http), sent_requests, refused)
