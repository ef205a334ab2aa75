"""Records what one server-everything release shows two different clients (run in ``.venv``).

``@modelcontextprotocol/server-everything`` registers some of its tools only when the client
declares the capability they need, so one release answers ``tools/list`` differently per
client. This records two real MCP 2025-11-25 sessions (Streamable HTTP) against release
2026.8.31, between the official MCP Python SDK 1.x client (``streamable_http_client`` +
``ClientSession``, as pinned in ``envoy/requirements.txt``) and the server, through the
recording proxy (``recorder.py``):

- ``everything-2026.8.31-no-capabilities.json``: a ``ClientSession`` without callbacks, so
  ``initialize`` declares ``capabilities: {}``;
- ``everything-2026.8.31-capabilities.json``: a ``ClientSession`` with
  ``list_roots_callback``, ``sampling_callback`` and ``elicitation_callback``, so it declares
  ``roots`` (``listChanged: true``), ``sampling`` and ``elicitation`` (the SDK declares both
  elicitation modes, ``form`` and ``url``); the server asks for ``roots/list`` on the GET
  stream and the client answers with a POST.

Each session: ``initialize``, the GET stream the SDK opens, ``notifications/initialized``,
(the roots round), ``tools/list``, one ``tools/call`` of ``echo``, ``DELETE``. The script then
checks that every exchange of a session carries the server's session id, and that the tools
both clients see have byte-identical definitions in the two lists.

The server is started from ``--prefix`` (installed there with ``npm install --prefix`` when
missing; the repo's ``scripts/setup-node.sh`` pins other releases) on a free loopback port,
behind ``testserver/node/bind-loopback.cjs``, and stopped by PID.

Usage: .venv/bin/python envoy/record_everything_views.py [--out examples/transcripts]
           [--prefix /tmp/everything]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENVOY_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(ENVOY_DIR))

import anyio  # noqa: E402
import httpx  # noqa: E402
from mcp import ClientSession, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import envoyctl  # noqa: E402
from recorder import Recorder  # noqa: E402

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
BIND_LOOPBACK = ENVOY_DIR / "testserver" / "node" / "bind-loopback.cjs"
ECHO_MESSAGE = "hello from toolseal recorder"
ROOTS = [types.Root(uri="file:///tmp/toolseal-demo", name="toolseal-demo")]


def install(prefix: Path) -> Path:
    """The package directory of ``PACKAGE@VERSION`` under ``prefix`` (installed if missing)."""
    package_dir = prefix / "node_modules" / PACKAGE
    manifest = package_dir / "package.json"
    if not manifest.is_file() or json.loads(manifest.read_text())["version"] != VERSION:
        subprocess.run(["npm", "install", "--prefix", str(prefix), f"{PACKAGE}@{VERSION}",
                        "--no-audit", "--no-fund", "--loglevel=error"], check=True, timeout=600)
    version = json.loads(manifest.read_text())["version"]
    if version != VERSION:
        raise SystemExit(f"{package_dir} holds {version}, not {VERSION}")
    return package_dir


class Server:
    """server-everything (streamableHttp) on a free loopback port, stopped by PID."""

    def __init__(self, package_dir: Path, workdir: Path) -> None:
        self.port = envoyctl.free_port()
        env = dict(os.environ, PORT=str(self.port))
        log = (workdir / f"everything-{self.port}.log").open("ab")
        self.popen = subprocess.Popen(
            ["node", "--require", str(BIND_LOOPBACK), str(package_dir / "dist" / "index.js"),
             "streamableHttp"], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
        envoyctl.wait_until(self._ready, 60, f"server-everything on port {self.port}")

    def _ready(self) -> bool:
        if self.popen.poll() is not None:
            raise envoyctl.EnvoyError(f"server-everything exited with {self.popen.returncode}")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        envoyctl.stop_pid(self.popen.pid, 10, self.popen)


async def session(url: str, capabilities: bool) -> None:
    """One SDK session: initialize (+ GET stream), [roots round], tools/list, echo, DELETE."""
    roots_answered = anyio.Event()
    roots_logged = anyio.Event()

    async def list_roots(context: Any) -> types.ListRootsResult:
        roots_answered.set()
        return types.ListRootsResult(roots=ROOTS)

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="toolseal-recorder",
                                         content=types.TextContent(type="text", text="ok"))

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def logging(params: types.LoggingMessageNotificationParams) -> None:
        if "Roots updated" in str(params.data):
            roots_logged.set()

    callbacks: dict[str, Any] = {"logging_callback": logging}
    if capabilities:
        callbacks.update(list_roots_callback=list_roots, sampling_callback=sampling,
                         elicitation_callback=elicitation)
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _session_id),
        ClientSession(read, write, **callbacks) as client,
    ):
        await client.initialize()
        if capabilities:
            # The server asks for roots/list 350 ms after notifications/initialized, on the
            # GET stream, then logs what it got there: let that round finish first.
            with anyio.fail_after(10):
                await roots_answered.wait()
            with anyio.move_on_after(3):
                await roots_logged.wait()
        await client.list_tools()
        await client.call_tool("echo", {"message": ECHO_MESSAGE})


def label(exchange: dict[str, Any]) -> str:
    method, body = exchange["http_method"], exchange["request_body"] or ""
    if method == "GET":
        return "get-stream"
    if method == "DELETE":
        return "delete-session"
    message = json.loads(body) if body else {}
    if "method" not in message and "result" in message:
        return "response-" + ("roots-list" if "roots" in message["result"] else "result")
    return exchange["label"]


def record(package_dir: Path, workdir: Path, capabilities: bool, path: Path) -> list[dict[str, Any]]:
    server = Server(package_dir, workdir)
    try:
        with Recorder(server.port) as recorder:
            anyio.run(session, f"{recorder.url}/mcp", capabilities)
            # Every request the recorder saw start, finished (the GET stream ends at DELETE).
            deadline = time.monotonic() + 10
            while len(recorder.transcript()) < recorder._next_seq and time.monotonic() < deadline:
                time.sleep(0.01)
            exchanges = recorder.transcript()
            if len(exchanges) < recorder._next_seq:
                raise SystemExit(f"{path.name}: an exchange did not finish")
    finally:
        server.stop()
    for exchange in exchanges:
        exchange["label"] = label(exchange)
    path.write_text(json.dumps(exchanges, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return exchanges


def header(headers: list[list[str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def listed_tools(exchanges: list[dict[str, Any]]) -> dict[str, str]:
    """name -> the tool's definition as the bytes of the ``tools/list`` answer spell it."""
    request = next(e for e in exchanges if '"method":"tools/list"' in (e["request_body"] or ""))
    list_id = json.loads(request["request_body"])["id"]
    for event in request["sse_events"]:
        message = json.loads(event["data"]) if event["data"] else {}
        if message.get("id") == list_id and "result" in message:
            tools = {}
            for tool in message["result"]["tools"]:
                text = json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
                if text not in event["data"]:  # the re-encoding must be the bytes received
                    raise SystemExit(f"tool {tool['name']}: re-encoding differs from the bytes")
                tools[tool["name"]] = text
            return tools
    raise SystemExit("no tools/list answer")


def check(path: Path, exchanges: list[dict[str, Any]]) -> dict[str, str]:
    session_id = header(exchanges[0]["response_headers"], "mcp-session-id")
    for exchange in exchanges[1:]:
        sent = header(exchange["request_headers"], "mcp-session-id")
        back = header(exchange["response_headers"], "mcp-session-id")
        if sent != session_id or back not in (None, session_id):
            raise SystemExit(f"{path.name} seq {exchange['seq']}: session {sent}/{back}, not {session_id}")
    tools = listed_tools(exchanges)
    init = json.loads(exchanges[0]["request_body"])["params"]
    print(f"{path}: {len(exchanges)} exchanges, session {session_id}")
    print(f"  initialize: protocolVersion {init['protocolVersion']}, "
          f"capabilities {json.dumps(init['capabilities'], separators=(',', ':'))}")
    print("  exchanges: " + ", ".join(f"{e['seq']}:{e['label']}({e['status']})" for e in exchanges))
    print(f"  {len(tools)} tools: {', '.join(tools)}")
    return tools


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ENVOY_DIR.parent / "examples" / "transcripts")
    parser.add_argument("--prefix", type=Path, default=Path(tempfile.gettempdir()) / "everything")
    args = parser.parse_args(argv)
    package_dir = install(args.prefix)
    views = {}
    with tempfile.TemporaryDirectory(prefix="toolseal-record-") as tmp:
        for name, capabilities in (("no-capabilities", False), ("capabilities", True)):
            path = args.out / f"everything-{VERSION}-{name}.json"
            views[name] = check(path, record(package_dir, Path(tmp), capabilities, path))
    plain, full = views["no-capabilities"], views["capabilities"]
    shared = [name for name in plain if name in full]
    same = [name for name in shared if plain[name] == full[name]]
    print(f"shared tools: {len(shared)}; byte-identical definitions: {len(same)}/{len(shared)}")
    print(f"only without capabilities: {sorted(set(plain) - set(full)) or 'none'}")
    print(f"only with capabilities: {sorted(set(full) - set(plain))}")
    return 0 if len(same) == len(shared) == len(plain) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
