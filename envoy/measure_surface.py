"""Measures which parts of a real MCP server's surface vary for one release (run in ``.venv``).

Before toolseal seals the whole surface a server shows an agent (the ``instructions`` and the
rest of the ``initialize`` answer, every tool field, ``prompts/list``,
``resources/templates/list``, ``resources/list``), it has to know what an honest server changes
on its own: a field that differs between two callers, two sessions, a restart or two replicas
of one release must become a view or screened data, never drift. This script measures that
on the real servers the repository pins:

- ``@modelcontextprotocol/server-everything`` over Streamable HTTP, every release
  ``envoy/testserver/node/package.json`` pins (``scripts/setup-node.sh``); clients:
  the MCP Python SDK 1.x (this venv) without callbacks (``capabilities: {}``) and with
  ``list_roots_callback``, ``sampling_callback`` and ``elicitation_callback`` (``roots``,
  ``sampling``, ``elicitation``), and the MCP Python SDK 2.x client (``.venv-mcp2``, run as a
  child process of this script) in ``mode="auto"`` with and without the same callbacks. The 2.x
  client is also tried pinned to ``2026-07-28``, to see whether the server speaks that
  revision at all;
- ``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-memory`` over
  stdio (``scripts/setup-stdio-servers.sh``), with the SDK 1.x stdio client, both capability
  sets.

Plan for each HTTP release: two server processes started at the same time (a replica pair);
for each client, session 1 and session 2 on the first process and one session on the second;
the first process is stopped and started again on the same port (a restart) and each client
opens one more session. For each stdio server and capability set: two processes at the same
time, then a third after they exit. Every session initializes (the 2.x client in auto mode
first probes ``server/discover``) and lists every section twice, following ``nextCursor``;
on server-everything releases that have the ``gzip-file-as-resource`` tool, one more
experiment calls it (with a ``data:`` URL, no network) and lists resources before and after,
in that session and in a second session open on the same process.

What is compared: the answers as the server sent them, parsed (HTTP answers are taken from the
bytes the recording proxy ``recorder.py`` saw, stdio answers from the JSON-RPC lines), each
field compared as canonical JSON (sorted keys). Items are keyed by ``name`` (tools, prompts),
``uriTemplate`` (templates) and ``uri`` (resources); besides every field of every item, the
table has pseudo-fields ``(item set)`` (items present in one answer only), ``(order)`` (the
same items in another order: toolseal's fingerprint ignores order, but it is reported),
``(pages)`` (page count and cursors) and ``(result)`` (result members other than the list and
``nextCursor``). The ``initialize`` section has one item, the result, and its top-level members
(``protocolVersion``, ``capabilities``, ``serverInfo``, ``instructions``) as fields. Axes:

- ``list``: the first and second listing of one session;
- ``session``: session 1 and session 2 of one client on one process;
- ``capabilities``: the same SDK without and with callbacks (first sessions, same process);
- ``client``: SDK 1.x and SDK 2.x with the same capabilities;
- ``restart``: session 1 before and the first session after the restart;
- ``replica``: session 1 on the first process and the session on the second;
- ``call``: a listing before and after a tool call that registers a session resource;
- ``initialized``: a raw client (httpx, no SDK) that lists every section after the
  ``initialize`` answer but before it sends ``notifications/initialized``, then again after
  it (with the standalone GET stream open, so a ``list_changed`` notification is seen).

Session 1 of each SDK 1.x client is also compared with ``--sessions`` - 1 further sessions on
the same process (default 6 sessions in all).

``--record DIR`` also writes, through ``recorder.py``, the first session of each client on the
first process, for the releases in ``--record-versions``:
``everything-<version>-surface-no-capabilities.json`` and
``everything-<version>-surface-capabilities.json`` (SDK 1.x), and
``everything-<version>-surface-sdk2-auto.json`` (SDK 2.x, no callbacks: its
``server/discover`` probe, refused, then ``initialize``): each lists every section twice and
ends with DELETE.

Usage:
    scripts/setup-python.sh && scripts/setup-python-mcp2.sh && scripts/setup-node.sh \\
        && scripts/setup-stdio-servers.sh
    .venv/bin/python envoy/measure_surface.py [--versions 2026.8.31,2025.11.25,2026.1.26]
        [--no-stdio] [--no-sdk2] [--sessions 6] [--record examples/transcripts]
        [--record-versions 2026.8.31,2025.11.25] [--json /tmp/surface-measurements.json]

Only loopback is used; every process the script starts is stopped by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENVOY_DIR = Path(__file__).resolve().parent
REPO = ENVOY_DIR.parent
sys.path.insert(0, str(ENVOY_DIR))

HTTP_NODE_DIR = ENVOY_DIR / "testserver" / "node"
STDIO_NODE_DIR = REPO / "examples" / "stdio-guard" / "tests" / "node"
BIND_LOOPBACK = HTTP_NODE_DIR / "bind-loopback.cjs"
SDK2_PYTHON = REPO / ".venv-mcp2" / "bin" / "python"

# (method, result member holding the items, item key)
SECTIONS = [
    ("tools/list", "tools", "name"),
    ("prompts/list", "prompts", "name"),
    ("resources/templates/list", "resourceTemplates", "uriTemplate"),
    ("resources/list", "resources", "uri"),
]
SECTION_OF = {method: (member, key) for method, member, key in SECTIONS}
ROOT_URI = "file:///tmp/toolseal-surface"
GZIP_DATA = "data:text/plain;base64,dG9vbHNlYWwgc3VyZmFjZSBtZWFzdXJlbWVudAo="
ROUNDS = 2

SDK1_CONFIGS = {"sdk1-nocaps": False, "sdk1-caps": True}
SDK2_CONFIGS = {"sdk2-auto-nocaps": False, "sdk2-auto-caps": True}
RECORD_NAMES = {"sdk1-nocaps": "no-capabilities", "sdk1-caps": "capabilities", "sdk2-auto-nocaps": "sdk2-auto"}


# --------------------------------------------------------------------------------------------
# Client drivers. SDK imports live inside the functions: the 2.x driver runs in .venv-mcp2.
# --------------------------------------------------------------------------------------------

async def list_everything(list_fns: dict[str, Any], rounds: int) -> dict[str, str]:
    """Every section ``rounds`` times, following ``nextCursor``; returns errors by method."""
    errors: dict[str, str] = {}
    for _ in range(rounds):
        for method, fn in list_fns.items():
            cursor = None
            for _page in range(1000):
                try:
                    result = await fn(cursor)
                except Exception as err:  # a section the server does not have
                    errors[method] = f"{type(err).__name__}: {err}"
                    break
                cursor = result.next_cursor if hasattr(result, "next_cursor") else result.nextCursor
                if not cursor:
                    break
    return errors


def sdk1_callbacks(capabilities: bool, events: dict[str, Any]) -> dict[str, Any]:
    import anyio
    from mcp import types

    events.setdefault("roots_answered", anyio.Event())
    events.setdefault("notifications", [])

    async def list_roots(context: Any) -> types.ListRootsResult:
        events["roots_answered"].set()
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="toolseal-surface")])

    async def sampling(context: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="toolseal-measure",
                                         content=types.TextContent(type="text", text="ok"))

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def logging(params: Any) -> None:
        events["notifications"].append("notifications/message")

    callbacks: dict[str, Any] = {"logging_callback": logging}
    if capabilities:
        callbacks.update(list_roots_callback=list_roots, sampling_callback=sampling,
                         elicitation_callback=elicitation)
    return callbacks


def sdk1_list_fns(session: Any) -> dict[str, Any]:
    return {
        "tools/list": session.list_tools,
        "prompts/list": session.list_prompts,
        "resources/templates/list": session.list_resource_templates,
        "resources/list": session.list_resources,
    }


async def sdk1_wait_roots(events: dict[str, Any], capabilities: bool) -> None:
    import anyio
    if capabilities:
        # server-everything asks roots/list after notifications/initialized (2026.x: 350 ms
        # later); let that round end so every listing sees the settled session.
        with anyio.move_on_after(5):
            await events["roots_answered"].wait()
        await anyio.sleep(0.3)


async def sdk1_http_session(url: str, capabilities: bool, rounds: int) -> dict[str, Any]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    events: dict[str, Any] = {}
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _sid),
        ClientSession(read, write, **sdk1_callbacks(capabilities, events)) as session,
    ):
        await session.initialize()
        await sdk1_wait_roots(events, capabilities)
        errors = await list_everything(sdk1_list_fns(session), rounds)
    return {"errors": errors}


async def sdk1_call_experiment(url: str) -> None:
    """Session A and B open on one process; A lists resources, calls gzip-file-as-resource
    (a data: URL), lists again; B lists before and after A's call."""
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read_a, write_a, _a),
        ClientSession(read_a, write_a) as a,
        streamable_http_client(url, http_client=http) as (read_b, write_b, _b),
        ClientSession(read_b, write_b) as b,
    ):
        await a.initialize()
        await b.initialize()
        await a.list_resources()
        await b.list_resources()
        await a.call_tool("gzip-file-as-resource", {"name": "measure.txt.gz", "data": GZIP_DATA})
        await a.list_resources()
        await b.list_resources()


async def early_list_experiment(url: str) -> None:
    """A raw client (httpx, no SDK) that lists every section after the ``initialize`` answer
    but before it sends ``notifications/initialized``, then sends it and lists again, with
    the standalone GET stream open (so a ``list_changed`` notification would be seen)."""
    import anyio
    import httpx

    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "toolseal-measure-raw", "version": "0"}}})
        session = dict(headers, **{"mcp-session-id": answer.headers["mcp-session-id"],
                                   "mcp-protocol-version": "2025-11-25"})
        next_id = 2

        async def list_all() -> None:
            nonlocal next_id
            for method, _member, _key in SECTIONS:
                await http.post(url, headers=session, json={"jsonrpc": "2.0", "id": next_id, "method": method})
                next_id += 1

        async def get_stream() -> None:
            async with http.stream("GET", url, headers={k: v for k, v in session.items()
                                                        if k != "content-type"}) as stream:
                async for _line in stream.aiter_lines():
                    pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(get_stream)
            await anyio.sleep(0.3)
            await list_all()
            await http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            await anyio.sleep(0.5)
            await list_all()
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
        await http.delete(url, headers=session)


class Tap:
    """Copies the JSON-RPC messages of an SDK 1.x stream pair into ``log`` (stdio)."""

    def __init__(self) -> None:
        self.requests: dict[Any, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []
        self.notifications: list[str] = []

    def wrap(self, tg: Any, read: Any, write: Any) -> tuple[Any, Any]:
        import anyio
        from mcp import types
        from mcp.shared.message import SessionMessage

        read_send, read_recv = anyio.create_memory_object_stream[Any](100)
        write_send, write_recv = anyio.create_memory_object_stream[Any](100)

        async def inbound() -> None:
            async with read_send:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        root = item.message.root
                        if isinstance(root, (types.JSONRPCResponse, types.JSONRPCError)):
                            request = self.requests.pop(root.id, None)
                            if request is not None:
                                entry = dict(request)
                                if isinstance(root, types.JSONRPCResponse):
                                    entry["result"] = root.result
                                else:
                                    entry["error"] = root.error.model_dump(mode="json", exclude_none=True)
                                self.log.append(entry)
                        elif isinstance(root, types.JSONRPCNotification):
                            self.notifications.append(root.method)
                    await read_send.send(item)

        async def outbound() -> None:
            async with write_recv:
                async for item in write_recv:
                    root = item.message.root
                    if isinstance(root, types.JSONRPCRequest):
                        self.requests[root.id] = {"method": root.method, "params": root.params or {}}
                    await write.send(item)

        tg.start_soon(inbound)
        tg.start_soon(outbound)
        return read_recv, write_send


async def sdk1_stdio_session(command: list[str], env: dict[str, str], capabilities: bool,
                             rounds: int, errlog: Any) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    events: dict[str, Any] = {}
    tap = Tap()
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with anyio.create_task_group() as tg:
            tapped_read, tapped_write = tap.wrap(tg, read, write)
            async with ClientSession(tapped_read, tapped_write,
                                     **sdk1_callbacks(capabilities, events)) as session:
                await session.initialize()
                await sdk1_wait_roots(events, capabilities)
                errors = await list_everything(sdk1_list_fns(session), rounds)
            await tapped_write.aclose()
            tg.cancel_scope.cancel()
    return {"errors": errors, "log": tap.log,
            "notifications": tap.notifications + events.get("notifications", [])}


async def sdk2_http_session(url: str, capabilities: bool, mode: str, rounds: int) -> dict[str, Any]:
    import anyio
    import mcp_types as types
    from mcp import Client

    async def list_roots(context: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="toolseal-surface")])

    async def sampling(context: Any, params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="toolseal-measure",
                                         content=types.TextContent(type="text", text="ok"))

    async def elicitation(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="decline")

    callbacks: dict[str, Any] = {}
    if capabilities:
        callbacks = dict(list_roots_callback=list_roots, sampling_callback=sampling,
                         elicitation_callback=elicitation)
    async with Client(url, mode=mode, cache=None, **callbacks) as client:
        version = client.protocol_version
        if capabilities:
            await anyio.sleep(1.0)  # the server's roots round (see sdk1_wait_roots)

        def lister(fn: Any) -> Any:
            return lambda cursor: fn(cursor=cursor)

        errors = await list_everything({
            "tools/list": lister(client.list_tools),
            "prompts/list": lister(client.list_prompts),
            "resources/templates/list": lister(client.list_resource_templates),
            "resources/list": lister(client.list_resources),
        }, rounds)
    return {"protocol_version": version, "errors": errors}


def run_sdk2(url: str, capabilities: bool, mode: str, rounds: int) -> dict[str, Any]:
    """The 2.x client as a child process in .venv-mcp2 (its SDK cannot share this venv)."""
    run = subprocess.run([str(SDK2_PYTHON), __file__, "--sdk2-session", url, "--mode", mode,
                          "--rounds", str(rounds)] + (["--caps"] if capabilities else []),
                         capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"ok": False, "error": (run.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------

class HttpServer:
    """server-everything (streamableHttp) on a loopback port, stopped by PID."""

    def __init__(self, version: str, port: int, workdir: Path) -> None:
        import envoyctl
        self.version, self.port = version, port
        package = HTTP_NODE_DIR / "node_modules" / f"everything-{version}"
        log = (workdir / f"everything-{version}-{port}.log").open("ab")
        self.popen = subprocess.Popen(
            ["node", "--require", str(BIND_LOOPBACK), str(package / "dist" / "index.js"),
             "streamableHttp"], env=dict(os.environ, PORT=str(port)), stdin=subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True)
        self.envoyctl = envoyctl

    def wait_ready(self) -> None:
        import socket

        def ready() -> bool:
            if self.popen.poll() is not None:
                raise RuntimeError(f"server-everything {self.version} exited with {self.popen.returncode}")
            with socket.socket() as sock:
                sock.settimeout(0.2)
                return sock.connect_ex(("127.0.0.1", self.port)) == 0
        self.envoyctl.wait_until(ready, 60, f"server-everything on port {self.port}")

    def stop(self) -> None:
        self.envoyctl.stop_pid(self.popen.pid, 10, self.popen)


def installed_version(package_dir: Path) -> str:
    return json.loads((package_dir / "package.json").read_text())["version"]


# --------------------------------------------------------------------------------------------
# From recorded exchanges to a session log: [{method, params, result | error, http_status}]
# --------------------------------------------------------------------------------------------

def exchanges_log(exchanges: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    log, notifications = [], []
    for exchange in exchanges:
        for message in exchange.get("messages", []):
            if isinstance(message, dict) and "method" in message and "id" not in message:
                notifications.append(message["method"])
        if exchange["http_method"] != "POST" or not exchange.get("request_body"):
            continue
        request = json.loads(exchange["request_body"])
        if not isinstance(request, dict) or "method" not in request or "id" not in request:
            continue
        session = next((v for k, v in exchange["request_headers"] + exchange["response_headers"]
                        if k.lower() == "mcp-session-id"), None)
        entry: dict[str, Any] = {"method": request["method"], "params": request.get("params") or {},
                                 "http_status": exchange["status"], "session": session}
        for message in exchange.get("messages", []):
            if isinstance(message, dict) and message.get("id") in (request["id"], None) \
                    and ("result" in message or "error" in message):
                if "result" in message:
                    entry["result"] = message["result"]
                else:
                    entry["error"] = message["error"]
                break
        else:
            entry["error"] = {"code": None, "message": f"HTTP {exchange['status']}: "
                              f"{(exchange.get('response_body_raw') or '')[:120]}"}
        log.append(entry)
    return log, notifications


def snapshots(log: list[dict[str, Any]]) -> dict[str, Any]:
    """``initialize`` (the result or error), ``probe`` (server/discover, if any) and, per
    list method, one listing per round: {items, pages, extra, error}."""
    out: dict[str, Any] = {"initialize": None, "probe": None, "rounds": {m: [] for m, _, _ in SECTIONS}}
    for entry in log:
        method = entry["method"]
        if method == "initialize":
            out["initialize"] = entry
        elif method == "server/discover":
            out["probe"] = entry
        elif method in SECTION_OF:
            member, _key = SECTION_OF[method]
            rounds = out["rounds"][method]
            cursor = (entry.get("params") or {}).get("cursor")
            if cursor is None or not rounds:
                rounds.append({"items": [], "pages": [], "extra": {}, "error": None})
            listing = rounds[-1]
            if "error" in entry:
                listing["error"] = {"code": entry["error"].get("code"),
                                    "message": entry["error"].get("message")}
                continue
            result = entry["result"]
            listing["items"].extend(result.get(member) or [])
            listing["pages"].append({"cursor": cursor, "nextCursor": result.get("nextCursor"),
                                     "count": len(result.get(member) or [])})
            for name, value in result.items():
                if name not in (member, "nextCursor"):
                    listing["extra"].setdefault(name, value)
    return out


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------

def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else canon(value)
    text = text.replace("\n", "\\n")
    return json.dumps(text[:limit] + ("…" if len(text) > limit else ""), ensure_ascii=False)


def describe(a: Any, b: Any, path: str = "", depth: int = 0) -> list[str]:
    """Where two JSON values differ, as ``path: a → b`` lines (a few)."""
    missing = object()
    if a is missing or b is missing:
        return [f"{path or 'value'}: {'absent' if a is missing else short(a)} → "
                f"{'absent' if b is missing else short(b)}"]
    if canon(a) == canon(b):
        return []
    if isinstance(a, str) and isinstance(b, str):
        start = 0
        while start < min(len(a), len(b)) and a[start] == b[start]:
            start += 1
        end = 0
        while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
            end += 1
        lo = max(0, start - 25)
        return [f"{path or 'text'}: …{short(a[lo:len(a) - end + 10], 80)} → "
                f"…{short(b[lo:len(b) - end + 10], 80)}"]
    if isinstance(a, dict) and isinstance(b, dict) and depth < 6:
        lines: list[str] = []
        for key in sorted(set(a) | set(b)):
            lines += describe(a.get(key, missing), b.get(key, missing),
                              f"{path}.{key}" if path else key, depth + 1)
        return lines[:4]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and depth < 6:
        lines = []
        for i, (x, y) in enumerate(zip(a, b)):
            lines += describe(x, y, f"{path}[{i}]", depth + 1)
        return lines[:4]
    return [f"{path or 'value'}: {short(a)} → {short(b)}"]


def item_key(item: Any, key: str) -> str:
    return item.get(key) if isinstance(item, dict) and isinstance(item.get(key), str) else canon(item)


def diff_listing(a: dict[str, Any], b: dict[str, Any], key: str) -> list[tuple[str, str]]:
    """(field, what differs) between two listings of one section."""
    out: list[tuple[str, str]] = []
    if (a["error"] is None) != (b["error"] is None) or (a["error"] and a["error"]["code"] != b["error"]["code"]):
        out.append(("(error)", f"{short(a['error'])} → {short(b['error'])}"))
        return out
    if a["error"]:
        return out
    items_a = {item_key(i, key): i for i in a["items"]}
    items_b = {item_key(i, key): i for i in b["items"]}
    only_a = [k for k in items_a if k not in items_b]
    only_b = [k for k in items_b if k not in items_a]
    if only_a or only_b:
        out.append(("(item set)", f"{len(items_a)} → {len(items_b)} items; only in first: "
                    f"{only_a[:6] or 'none'}; only in second: {only_b[:6] or 'none'}"))
    common_a = [k for k in items_a if k in items_b]
    common_b = [k for k in items_b if k in items_a]
    if common_a != common_b:
        moved = next(i for i, (x, y) in enumerate(zip(common_a, common_b)) if x != y)
        out.append(("(order)", f"same items, other order from position {moved}: "
                    f"{common_a[moved:moved + 3]} → {common_b[moved:moved + 3]}"))
    # page count and cursors; page sizes only when the totals agree (else: the item set)
    same_total = len(a["items"]) == len(b["items"])
    pages_a = [(p["cursor"], p["nextCursor"]) + ((p["count"],) if same_total else ()) for p in a["pages"]]
    pages_b = [(p["cursor"], p["nextCursor"]) + ((p["count"],) if same_total else ()) for p in b["pages"]]
    if pages_a != pages_b:
        out.append(("(pages)", f"{len(pages_a)} pages {short(pages_a)} → {len(pages_b)} pages {short(pages_b)}"))
    for line in describe(a["extra"], b["extra"]):
        out.append(("(result)", line))
    for name in common_a:
        x, y = items_a[name], items_b[name]
        for field in sorted(set(x) | set(y)):
            if canon(x.get(field)) != canon(y.get(field)) or (field in x) != (field in y):
                detail = describe(x.get(field, "<absent>"), y.get(field, "<absent>"), field)
                out.append((field, f"{name}: " + "; ".join(detail[:2])))
    return out


def diff_initialize(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[tuple[str, str]]:
    ra = (a or {}).get("result") or {}
    rb = (b or {}).get("result") or {}
    out = []
    for field in sorted(set(ra) | set(rb)):
        if canon(ra.get(field)) != canon(rb.get(field)) or (field in ra) != (field in rb):
            out.append((field, "; ".join(describe(ra.get(field, "<absent>"), rb.get(field, "<absent>"), field)[:3])))
    return out


class Findings:
    """(server, version, section, field) -> {axis: [details]}, plus the fields seen."""

    def __init__(self) -> None:
        self.fields: dict[tuple[str, str, str], set[str]] = {}
        self.diffs: dict[tuple[str, str, str, str], dict[str, list[str]]] = {}
        self.compared: dict[tuple[str, str], set[str]] = {}
        self.notes: list[str] = []

    def see(self, server: str, version: str, snap: dict[str, Any]) -> None:
        init = (snap["initialize"] or {}).get("result") or {}
        self.fields.setdefault((server, version, "initialize"), set()).update(init)
        for method, member, _key in SECTIONS:
            fields = self.fields.setdefault((server, version, method), set())
            for listing in snap["rounds"][method]:
                if listing["error"]:
                    fields.add("(error)")
                    continue
                fields.update({"(item set)", "(order)", "(pages)"})
                fields.update("(result)" for _ in listing["extra"])
                for item in listing["items"]:
                    fields.update(item if isinstance(item, dict) else [])

    def add(self, server: str, version: str, axis: str, label: str,
            a: dict[str, Any], b: dict[str, Any], sections: bool = True, init: bool = True,
            round_a: int = 0, round_b: int = 0) -> None:
        self.compared.setdefault((server, version), set()).add(axis)
        if init:
            for field, detail in diff_initialize(a["initialize"], b["initialize"]):
                self._record(server, version, "initialize", field, axis, f"{label}: {detail}")
        if not sections:
            return
        for method, _member, key in SECTIONS:
            ra, rb = a["rounds"][method], b["rounds"][method]
            if len(ra) <= round_a or len(rb) <= round_b:
                continue
            for field, detail in diff_listing(ra[round_a], rb[round_b], key):
                self._record(server, version, method, field, axis, f"{label}: {detail}")

    def _record(self, server: str, version: str, section: str, field: str, axis: str, detail: str) -> None:
        self.fields.setdefault((server, version, section), set()).add(field)
        details = self.diffs.setdefault((server, version, section, field), {}).setdefault(axis, [])
        if detail not in details:
            details.append(detail)

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for (server, version, section), fields in sorted(self.fields.items()):
            for field in sorted(fields, key=lambda f: (not f.startswith("("), f)):
                axes = self.diffs.get((server, version, section, field), {})
                rows.append({"server": server, "version": version, "section": section, "field": field,
                             "varies_by": sorted(axes) or ["nothing"],
                             "what": {axis: details[:3] for axis, details in sorted(axes.items())},
                             "compared": sorted(self.compared.get((server, version), ()))})
        return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| server | version | section | field | varies by | what varies (first example per axis) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        what = " / ".join(f"{axis}: {details[0]}" + (f" (+{len(details) - 1} more)" if len(details) > 1 else "")
                          for axis, details in row["what"].items())
        print(f"| {row['server']} | {row['version']} | {row['section']} | `{row['field']}` | "
              f"{', '.join(row['varies_by'])} | {what.replace('|', '/')} |")


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------

def record_session(port: int, run: Any) -> tuple[list[dict[str, Any]], Any]:
    """Runs ``run(url)`` through a fresh recorder; returns the exchanges and run's value."""
    from recorder import Recorder
    with Recorder(port) as recorder:
        value = run(f"{recorder.url}/mcp")
        deadline = time.monotonic() + 10
        while len(recorder.transcript()) < recorder._next_seq and time.monotonic() < deadline:
            time.sleep(0.01)
        return recorder.transcript(), value


def label_exchanges(exchanges: list[dict[str, Any]]) -> None:
    """``tools-list-1``, ``resources-list-2-page3``, … (the listing round), ``get-stream``,
    ``delete-session``, ``response-roots-list``."""
    rounds: dict[str, int] = {}
    pages: dict[str, int] = {}
    for exchange in exchanges:
        method, body = exchange["http_method"], exchange["request_body"] or ""
        if method == "GET":
            exchange["label"] = "get-stream"
            continue
        if method == "DELETE":
            exchange["label"] = "delete-session"
            continue
        message = json.loads(body) if body else {}
        if isinstance(message, dict) and "method" not in message and "result" in message:
            exchange["label"] = "response-" + ("roots-list" if "roots" in message["result"] else "result")
            continue
        name = message.get("method") if isinstance(message, dict) else None
        if name in SECTION_OF:
            if (message.get("params") or {}).get("cursor") is None:
                rounds[name] = rounds.get(name, 0) + 1
                pages[name] = 1
            else:
                pages[name] += 1
            base = f"{name.replace('/', '-')}-{rounds[name]}"
            exchange["label"] = base if pages[name] == 1 else f"{base}-page{pages[name]}"


def measure_http(version: str, findings: Findings, workdir: Path, sdk2: bool,
                 record_dir: Path | None, raw: dict[str, Any], sessions: int) -> None:
    import anyio
    import envoyctl

    server = "server-everything (HTTP)"
    configs: dict[str, tuple[str, bool]] = {name: ("sdk1", caps) for name, caps in SDK1_CONFIGS.items()}
    if sdk2:
        configs.update({name: ("sdk2", caps) for name, caps in SDK2_CONFIGS.items()})

    def session(port: int, config: str) -> dict[str, Any]:
        sdk, caps = configs[config]
        if sdk == "sdk1":
            exchanges, status = record_session(port, lambda url: anyio.run(sdk1_http_session, url, caps, ROUNDS))
        else:
            exchanges, status = record_session(port, lambda url: run_sdk2(url, caps, "auto", ROUNDS))
        log, notifications = exchanges_log(exchanges)
        snap = snapshots(log)
        snap["status"], snap["notifications"], snap["exchanges"] = status, notifications, exchanges
        findings.see(server, version, snap)
        return snap

    ports = (envoyctl.free_port(), envoyctl.free_port())
    p1, p2 = HttpServer(version, ports[0], workdir), HttpServer(version, ports[1], workdir)
    runs: dict[str, dict[str, Any]] = {}
    try:
        p1.wait_ready()
        p2.wait_ready()
        for config in configs:
            runs[f"{config}/p1/s1"] = session(p1.port, config)
            runs[f"{config}/p1/s2"] = session(p1.port, config)
            runs[f"{config}/p2/s1"] = session(p2.port, config)
        if sdk2:
            exchanges, status = record_session(p1.port, lambda url: run_sdk2(url, False, "2026-07-28", 1))
            log, _ = exchanges_log(exchanges)
            raw[f"{version}/sdk2-pinned-2026-07-28"] = {"status": status, "log": log}
            first = log[0] if log else {}
            findings.notes.append(
                f"server-everything {version}: SDK 2.x client pinned to 2026-07-28: "
                f"connect {'ok' if status.get('ok') else 'failed'} ({status.get('error') or status.get('protocol_version')}), "
                f"list errors {short(status.get('errors'), 200)}; "
                f"first request {first.get('method')} → HTTP {first.get('http_status')} "
                f"{short(first.get('error') or first.get('result'), 120)}")
            probe = runs["sdk2-auto-nocaps/p1/s1"]["probe"] or {}
            findings.notes.append(
                f"server-everything {version}: SDK 2.x client in auto mode: server/discover probe → HTTP "
                f"{probe.get('http_status')} {short(probe.get('error') or probe.get('result'), 120)}; "
                f"then initialize, negotiated {runs['sdk2-auto-nocaps/p1/s1']['status'].get('protocol_version')}")
        has_gzip = any(t.get("name") == "gzip-file-as-resource"
                       for t in (runs["sdk1-nocaps/p1/s1"]["rounds"]["tools/list"] or [{"items": []}])[0]["items"])
        if has_gzip:
            exchanges, _ = record_session(p1.port, lambda url: anyio.run(sdk1_call_experiment, url))
            log, _ = exchanges_log(exchanges)
            by_session: dict[str, list[dict[str, Any]]] = {}
            for entry in log:
                by_session.setdefault(entry["session"] or "?", []).append(entry)
            a_log, b_log = list(by_session.values())[:2]
            a, b = snapshots(a_log), snapshots(b_log)
            raw[f"{version}/call-experiment"] = {"a": a_log, "b": b_log}
            findings.add(server, version, "call", "session A, before → after its own gzip-file-as-resource call",
                         a, a, init=False, round_a=0, round_b=1)
            findings.add(server, version, "call", "session B (open beside A), before → after A's call",
                         b, b, init=False, round_a=0, round_b=1)
            after = session(p1.port, "sdk1-nocaps")
            findings.add(server, version, "call", "a session opened after A's call vs one before",
                         runs["sdk1-nocaps/p1/s1"], after, init=False)
        exchanges, _ = record_session(p1.port, lambda url: anyio.run(early_list_experiment, url))
        log, notifications = exchanges_log(exchanges)
        early = snapshots(log)
        raw[f"{version}/early-list"] = {"log": log, "notifications": notifications}
        findings.add(server, version, "initialized", "a raw client's list before → after it sends "
                     "notifications/initialized", early, early, init=False, round_a=0, round_b=1)
        findings.notes.append(f"server-everything {version}: lists before notifications/initialized: "
                              f"{len(early['rounds']['tools/list'][0]['items'])} tools "
                              f"{short(early['rounds']['tools/list'][0]['error'], 100) if early['rounds']['tools/list'][0]['error'] else ''}"
                              f", after: {len(early['rounds']['tools/list'][1]['items'])}; notifications on the "
                              f"GET stream: {sorted(set(notifications)) or 'none'}")
        for extra in range(3, sessions + 1):
            for config in SDK1_CONFIGS:
                runs[f"{config}/p1/s{extra}"] = session(p1.port, config)
        # restart: the first process stopped, started again on the same port
        p1.stop()
        p1 = HttpServer(version, ports[0], workdir)
        p1.wait_ready()
        for config in configs:
            runs[f"{config}/p1r/s1"] = session(p1.port, config)
    finally:
        p1.stop()
        p2.stop()

    for config in configs:
        for name in (f"{config}/p1/s1", f"{config}/p2/s1", f"{config}/p1r/s1"):
            findings.add(server, version, "list", f"{config} {name.split('/', 1)[1]} 1st → 2nd list",
                         runs[name], runs[name], init=False, round_a=0, round_b=1)
        for other in sorted(n for n in runs if n.startswith(f"{config}/p1/s") and not n.endswith("/s1")):
            findings.add(server, version, "session", f"{config} session 1 → {other.rsplit('/s', 1)[1]}",
                         runs[f"{config}/p1/s1"], runs[other])
            findings.add(server, version, "list", f"{config} {other.split('/', 1)[1]} 1st → 2nd list",
                         runs[other], runs[other], init=False, round_a=0, round_b=1)
        findings.add(server, version, "restart", f"{config} before → after restart", runs[f"{config}/p1/s1"],
                     runs[f"{config}/p1r/s1"])
        findings.add(server, version, "replica", f"{config} process 1 → process 2", runs[f"{config}/p1/s1"],
                     runs[f"{config}/p2/s1"])
    pairs = [("capabilities", "sdk1-nocaps", "sdk1-caps")]
    if sdk2:
        pairs += [("capabilities", "sdk2-auto-nocaps", "sdk2-auto-caps"),
                  ("client", "sdk1-nocaps", "sdk2-auto-nocaps"), ("client", "sdk1-caps", "sdk2-auto-caps")]
    for axis, x, y in pairs:
        for where in ("p1/s1", "p1r/s1"):
            findings.add(server, version, axis, f"{x} → {y} ({where})", runs[f"{x}/{where}"], runs[f"{y}/{where}"])

    for name, snap in runs.items():
        raw[f"{version}/{name}"] = {"status": snap["status"], "notifications": snap["notifications"],
                                    "initialize": snap["initialize"], "probe": snap["probe"],
                                    "rounds": snap["rounds"]}
        counts = {m.split("/")[0] if m != "resources/templates/list" else "templates":
                  [len(r["items"]) if not r["error"] else "error" for r in snap["rounds"][m]] for m, _, _ in SECTIONS}
        notes = sorted(set(snap["notifications"]))
        print(f"  {version} {name}: {counts} notifications: {notes or 'none'}", file=sys.stderr)

    if record_dir is not None:
        for config, caps_name in RECORD_NAMES.items():
            if config not in configs:
                continue
            exchanges = runs[f"{config}/p1/s1"]["exchanges"]
            label_exchanges(exchanges)
            path = record_dir / f"everything-{version}-surface-{caps_name}.json"
            path.write_text(json.dumps(exchanges, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {path} ({len(exchanges)} exchanges: "
                  + ", ".join(f"{e['seq']}:{e['label']}({e['status']})" for e in exchanges) + ")", file=sys.stderr)


STDIO_SERVERS = {
    "server-filesystem (stdio)": "@modelcontextprotocol/server-filesystem",
    "server-memory (stdio)": "@modelcontextprotocol/server-memory",
}


def measure_stdio(name: str, package: str, findings: Findings, workdir: Path, raw: dict[str, Any]) -> None:
    import anyio

    package_dir = STDIO_NODE_DIR / "node_modules" / package
    version = installed_version(package_dir)
    data = workdir / f"data-{package.rsplit('/', 1)[1]}"
    data.mkdir(exist_ok=True)
    (data / "notes.txt").write_text("surface measurement\n")
    env = dict(os.environ, MEMORY_FILE_PATH=str(data / "memory.jsonl"))
    command = ["node", str(package_dir / "dist" / "index.js")]
    if "filesystem" in package:
        command.append(str(data))
    errlog = (workdir / f"{package.rsplit('/', 1)[1]}.stderr").open("a")

    async def pair(caps: bool) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = [{}, {}]

        async def one(i: int) -> None:
            results[i] = await sdk1_stdio_session(command, env, caps, ROUNDS, errlog)
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, 0)
            tg.start_soon(one, 1)
        return results

    runs: dict[str, dict[str, Any]] = {}
    for config, caps in SDK1_CONFIGS.items():
        first, second = anyio.run(pair, caps)
        third = anyio.run(sdk1_stdio_session, command, env, caps, ROUNDS, errlog)
        for label, result in (("process1", first), ("process2", second), ("restart", third)):
            snap = snapshots(result["log"])
            snap["notifications"] = result["notifications"]
            runs[f"{config}/{label}"] = snap
            findings.see(name, version, snap)
            raw[f"{name}/{config}/{label}"] = {"initialize": snap["initialize"], "rounds": snap["rounds"],
                                               "errors": result["errors"], "notifications": result["notifications"]}
    for config in SDK1_CONFIGS:
        for label in ("process1", "process2", "restart"):
            findings.add(name, version, "list", f"{config} {label} 1st → 2nd list", runs[f"{config}/{label}"],
                         runs[f"{config}/{label}"], init=False, round_a=0, round_b=1)
        findings.add(name, version, "replica", f"{config} process 1 → process 2 (same time)",
                     runs[f"{config}/process1"], runs[f"{config}/process2"])
        findings.add(name, version, "restart", f"{config} process 1 → a process started after it exited",
                     runs[f"{config}/process1"], runs[f"{config}/restart"])
    for label in ("process1", "restart"):
        findings.add(name, version, "capabilities", f"sdk1-nocaps → sdk1-caps ({label})",
                     runs[f"sdk1-nocaps/{label}"], runs[f"sdk1-caps/{label}"])
    for config in SDK1_CONFIGS:
        snap = runs[f"{config}/process1"]
        counts = {m: [len(r["items"]) if not r["error"] else "error" for r in snap["rounds"][m]] for m, _, _ in SECTIONS}
        print(f"  {name} {version} {config}: {counts} notifications: {sorted(set(snap['notifications'])) or 'none'}",
              file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2026.8.31,2025.11.25,2026.1.26",
                        help="server-everything releases under envoy/testserver/node (comma-separated)")
    parser.add_argument("--no-stdio", action="store_true", help="skip the filesystem and memory servers")
    parser.add_argument("--no-sdk2", action="store_true", help="skip the MCP Python SDK 2.x client")
    parser.add_argument("--record", type=Path, help="write the surface recordings into this directory")
    parser.add_argument("--record-versions", default="2026.8.31,2025.11.25")
    parser.add_argument("--json", type=Path, help="write every answer and the findings here")
    parser.add_argument("--sessions", type=int, default=6,
                        help="SDK 1.x sessions per client on the first process (compared with the first)")
    # internal: the 2.x client, run by this script in .venv-mcp2
    parser.add_argument("--sdk2-session", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--caps", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.sdk2_session:
        import anyio
        try:
            status = anyio.run(sdk2_http_session, args.sdk2_session, args.caps, args.mode, args.rounds)
            status["ok"] = True
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            while isinstance(err, BaseExceptionGroup) and err.exceptions:
                err = err.exceptions[0]
            status = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        print(json.dumps(status))
        return 0

    sdk2 = not args.no_sdk2
    if sdk2 and not SDK2_PYTHON.exists():
        print(f"{SDK2_PYTHON} missing (scripts/setup-python-mcp2.sh): skipping the 2.x client", file=sys.stderr)
        sdk2 = False
    findings = Findings()
    raw: dict[str, Any] = {}
    record_versions = set(args.record_versions.split(",")) if args.record else set()
    with tempfile.TemporaryDirectory(prefix="toolseal-surface-") as tmp:
        workdir = Path(tmp)
        for version in [v for v in args.versions.split(",") if v]:
            package_dir = HTTP_NODE_DIR / "node_modules" / f"everything-{version}"
            if not package_dir.is_dir():
                print(f"{package_dir} missing (scripts/setup-node.sh): skipped", file=sys.stderr)
                continue
            if installed_version(package_dir) != version:
                raise SystemExit(f"{package_dir} holds {installed_version(package_dir)}, not {version}")
            print(f"server-everything {version}:", file=sys.stderr)
            measure_http(version, findings, workdir, sdk2,
                         args.record if version in record_versions else None, raw, args.sessions)
        if not args.no_stdio:
            for name, package in STDIO_SERVERS.items():
                if not (STDIO_NODE_DIR / "node_modules" / package).is_dir():
                    print(f"{package} not installed (scripts/setup-stdio-servers.sh): skipped", file=sys.stderr)
                    continue
                print(f"{name}:", file=sys.stderr)
                measure_stdio(name, package, findings, workdir, raw)
    rows = findings.rows()
    print_table(rows)
    print()
    for (server, version), axes in sorted(findings.compared.items()):
        print(f"compared for {server} {version}: {', '.join(sorted(axes))}")
    for note in findings.notes:
        print(f"note: {note}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "notes": findings.notes, "answers": raw},
                                        indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
