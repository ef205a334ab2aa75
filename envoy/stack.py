"""The stack under test: upstream MCP servers, Envoy with toolseal, an admin client, an MCP client.

Shared by the end-to-end tests (envoy/tests) and the demo (envoy/demo.py), so both drive the
same real processes the same way.

Design decision: every process is started in its own session and stopped by the PID recorded
at start (never by name); every wait is bounded; ports are ephemeral ports on 127.0.0.1. The
MCP client is the official Python SDK's (``streamablehttp_client`` + ``ClientSession``), so the
gateway is exercised by the same code a real agent host runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

import envoyctl
from envoyctl import EnvoyError, EnvoyProcess, McpRoute, free_port, stop_pid, wait_until

ENVOY_DIR = Path(__file__).resolve().parent
RUGPULL_SERVER = ENVOY_DIR / "testserver" / "rugpull_server.py"
NODE_DIR = ENVOY_DIR / "testserver" / "node"
EVERYTHING_RELEASES = ("2025.11.25", "2026.1.26")


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Upstream:
    """One upstream MCP server process: the rug-pull test server or a server-everything release.

    ``restart`` is a new deploy on the same port (MCP sessions are lost, as in production);
    ``set_revision`` switches the rug-pull server's tools in place (sessions survive).
    """

    def __init__(self, workdir: Path, *, rev: int = 1, mode: str = "sse",
                 everything: str | None = None, port: int | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.extra_args = extra_args
        self.rev = rev
        self.mode = mode
        self.everything = everything
        self.port = port or free_port()
        self.log_path = workdir / f"upstream-{self.port}.jsonl"
        self.pid: int | None = None
        self._popen: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """Direct URL of the server (bypasses Envoy: for control routes only)."""
        return f"http://127.0.0.1:{self.port}"

    def _command(self) -> tuple[list[str], dict[str, str]]:
        env = dict(os.environ)
        if self.everything is None:
            return [sys.executable, str(RUGPULL_SERVER), "--port", str(self.port),
                    "--rev", str(self.rev), "--log", str(self.log_path), "--mode", self.mode,
                    *self.extra_args], env
        entry = NODE_DIR / "node_modules" / f"everything-{self.everything}" / "dist" / "index.js"
        if not entry.is_file():
            raise EnvoyError(f"{entry} missing: run scripts/setup-node.sh")
        env["PORT"] = str(self.port)
        return ["node", "--require", str(NODE_DIR / "bind-loopback.cjs"), str(entry),
                "streamableHttp"], env

    def start(self, timeout: float = 60) -> None:
        """Start detached and wait until the port accepts connections."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        command, env = self._command()
        stderr = (self.workdir / f"upstream-{self.port}.stderr").open("ab")
        self._popen = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                       stdout=stderr, stderr=stderr, start_new_session=True)
        self.pid = self._popen.pid

        def ready() -> bool:
            if self._popen is not None and self._popen.poll() is not None:
                raise EnvoyError(f"upstream exited with {self._popen.returncode}: {command}")
            return _port_open(self.port)

        wait_until(ready, timeout, f"upstream MCP server on port {self.port}")

    def stop(self) -> None:
        """Stop by PID (bounded)."""
        if self.pid is not None:
            stop_pid(self.pid, 10, self._popen)
            self.pid = None

    def restart(self, rev: int | None = None, everything: str | None = None) -> None:
        """A new deploy on the same port: another revision, or another server-everything release."""
        self.stop()
        wait_until(lambda: not _port_open(self.port), 10, f"port {self.port} to close")
        if rev is not None:
            self.rev = rev
        if everything is not None:
            self.everything = everything
        self.start()

    def set_revision(self, rev: int, notify: bool = False) -> dict[str, Any]:
        """Switch tools in place (rug-pull server only); optionally announce list_changed."""
        response = httpx.post(f"{self.base_url}/control/revision",
                              json={"rev": rev, "notify": notify}, timeout=5)
        response.raise_for_status()
        self.rev = rev
        return response.json()

    def poison_sections(self, parts: list[str]) -> None:
        """Rug-pull the ``--sections`` server's instructions, prompts or resource templates
        in place (``[]``: all honest again; rug-pull server only)."""
        response = httpx.post(f"{self.base_url}/control/sections", json={"poison": parts},
                              timeout=5)
        response.raise_for_status()

    def set_result_shape(self, shape: str, resume: bool = False) -> None:
        """Change what get_weather returns (``v1`` or ``v2``) while tools/list stays the same
        (rug-pull server only); sessions survive. ``resume``: the result comes back on the
        client's resumed GET stream instead of the POST's (needs ``--resumable``)."""
        response = httpx.post(f"{self.base_url}/control/result-shape",
                              json={"shape": shape, "resume": resume}, timeout=5)
        response.raise_for_status()

    def announce_list_changed(self) -> int:
        """Send notifications/tools/list_changed to every session; returns how many."""
        response = httpx.post(f"{self.base_url}/control/list-changed", timeout=5)
        response.raise_for_status()
        return int(response.json()["notified"])

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        """The request log (rug-pull server only), optionally one kind of event."""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
        return [e for e in entries if event is None or e.get("event") == event]

    def calls(self) -> list[dict[str, Any]]:
        """Every tools/call the server received: ``{"tool", "arguments", "rev", ...}``."""
        return self.events("tools/call")


class Admin:
    """toolseal's admin API (``/toolseal/`` by default) at ``base_url``: the admin listener.

    ``headers`` go with every request (e.g. the approver's JWT for ``admin.identity``)."""

    def __init__(self, base_url: str, token: str | None, prefix: str = "/toolseal/",
                 headers: dict[str, str] | None = None) -> None:
        self.base = base_url.rstrip("/") + prefix
        self.prefix = prefix
        self.token = token
        self.headers = headers or {}

    def _headers(self, token: str | None) -> dict[str, str]:
        token = self.token if token is None else token
        return {**self.headers, **({"authorization": f"Bearer {token}"} if token else {})}

    def get(self, path: str, token: str | None = None) -> httpx.Response:
        """GET ``{prefix}{path}``."""
        return httpx.get(self.base + path, headers=self._headers(token), timeout=5)

    def post(self, path: str, body: Any = None, token: str | None = None) -> httpx.Response:
        """POST ``{prefix}{path}`` with a JSON body."""
        return httpx.post(self.base + path, json=body if body is not None else {},
                          headers=self._headers(token), timeout=5)

    def server(self, server_id: str) -> dict[str, Any]:
        """``GET servers/{id}`` as JSON (raises unless 200)."""
        response = self.get(f"servers/{server_id}")
        if response.status_code != 200:
            raise EnvoyError(f"GET servers/{server_id}: {response.status_code} {response.text}")
        return response.json()

    def approve(self, server_id: str, fingerprint: str) -> httpx.Response:
        """``POST servers/{id}/approve``."""
        return self.post(f"servers/{server_id}/approve", {"fingerprint": fingerprint})

    def quarantine(self, server_id: str, reason: str) -> httpx.Response:
        """``POST servers/{id}/quarantine``."""
        return self.post(f"servers/{server_id}/quarantine", {"reason": reason})

    def release(self, server_id: str) -> httpx.Response:
        """``POST servers/{id}/release``."""
        return self.post(f"servers/{server_id}/release")


def status_of(view: dict[str, Any]) -> str:
    """The schema_status in an admin server view."""
    return view["schema_status"]


def baseline_of(view: dict[str, Any]) -> str | None:
    """The approved (baseline) fingerprint in an admin server view."""
    return view["baseline_fingerprint"]


def live_of(view: dict[str, Any]) -> str | None:
    """The fingerprint of the last complete live tool set in an admin server view."""
    return view["live_fingerprint"]


def candidate_of(view: dict[str, Any]) -> str | None:
    """The candidate an admin reviews and approves (the live set when it is not the baseline)."""
    return view["candidate_fingerprint"]


@dataclasses.dataclass
class Stack:
    """An upstream behind an Envoy running toolseal (or plain Envoy, ``with_plugin=False``);
    ``extras`` are more upstreams behind the same Envoy, each on its route ``/<server id>/``.

    ``admin`` talks to toolseal's admin API on its own listener; ``admin_on_data_listener``
    sends the same requests to the agents' listener, where they must be refused."""

    upstream: Upstream
    envoy: EnvoyProcess
    admin: Admin
    route: McpRoute
    extras: dict[str, Upstream] = dataclasses.field(default_factory=dict)

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint through Envoy."""
        return f"{self.envoy.url}{self.route.match_prefix}"

    @property
    def admin_on_data_listener(self) -> Admin:
        """The admin client, pointed at the agents' listener (what a token thief would do)."""
        return Admin(self.envoy.url, self.admin.token, self.admin.prefix, self.admin.headers)

    def upstream_requests(self) -> int:
        """Envoy's count of requests sent to the upstream cluster."""
        return self.envoy.stats().get(f"cluster.{self.route.cluster}.upstream_rq_total", 0)

    def toolseal_counters(self) -> dict[str, int]:
        """toolseal's own counters (``wasmcustom.toolseal_*``), by short name."""
        prefix = "wasmcustom.toolseal_"
        return {k[len(prefix):]: v for k, v in self.envoy.stats().items() if k.startswith(prefix)}

    def extra_url(self, server_id: str) -> str:
        """The MCP endpoint of an extra upstream through Envoy."""
        return f"{self.envoy.url}/{server_id}/mcp"

    def extra_requests(self, server_id: str) -> int:
        """Envoy's count of requests sent to an extra upstream's cluster."""
        return self.envoy.stats().get(f"cluster.{McpRoute(server_id, 0).cluster}.upstream_rq_total", 0)

    def stop(self) -> None:
        """Stop Envoy and the upstreams, by PID."""
        try:
            self.envoy.stop()
        finally:
            for upstream in [self.upstream, *self.extras.values()]:
                upstream.stop()


def start_stack(workdir: Path, *, server_id: str = "demo", rev: int = 1, mode: str = "sse",
                everything: str | None = None, plugin_config: dict[str, Any] | None = None,
                admin_token: str = envoyctl.DEMO_ADMIN_TOKEN, with_plugin: bool = True,
                pre_filters: str = "", admin_pre_filters: str = "",
                upstream_args: tuple[str, ...] = (),
                extras: dict[str, Upstream] | None = None) -> Stack:
    """Start an upstream (and the ``extras``, each routed at ``/<server id>/``) and an Envoy in
    front of them (MCP listener, and toolseal's admin API listener when the config turns it
    on); on failure stop whatever started."""
    upstream = Upstream(workdir, rev=rev, mode=mode, everything=everything, extra_args=upstream_args)
    started = [upstream]
    try:
        upstream.start()
        for extra in (extras or {}).values():
            started.append(extra)
            extra.start()
        route = McpRoute(server_id, upstream.port)
        routes = [route] + [McpRoute(extra_id, extra.port, match_prefix=f"/{extra_id}/",
                                     rewrite_prefix="/")
                            for extra_id, extra in (extras or {}).items()]
        listen_port, admin_port, admin_api_port = free_port(), free_port(), free_port()
        config = plugin_config or envoyctl.default_plugin_config(admin_token)
        text = envoyctl.render(listen_port=listen_port, admin_port=admin_port, routes=routes,
                               plugin_config=config, with_plugin=with_plugin,
                               pre_filters=pre_filters, admin_pre_filters=admin_pre_filters,
                               admin_api_port=admin_api_port,
                               wasm_path=envoyctl.wasm_file() if with_plugin else "unused")
        has_admin_api = with_plugin and envoyctl.admin_api_enabled(config)
        envoy = envoyctl.start(text, workdir / f"envoy-{listen_port}",
                               admin_port=admin_port, listen_port=listen_port,
                               admin_api_port=admin_api_port if has_admin_api else None)
    except BaseException:
        for process in started:
            process.stop()
        raise
    prefix = config.get("admin", {}).get("prefix", "/toolseal/")
    # Without an admin listener the client still has an address (the data listener), so
    # tests can show that the admin API is not there.
    base = envoy.admin_api_url if envoy.admin_api_port is not None else envoy.url
    return Stack(upstream, envoy, Admin(base, admin_token, prefix), route,
                 dict(extras or {}))


@dataclasses.dataclass
class McpClient:
    """An initialized SDK session plus what the test needs to see around it."""

    session: ClientSession
    session_id: Callable[[], str | None]
    notifications: list[Any]
    initialized: types.InitializeResult | None = None

    async def list_tools(self) -> types.ListToolsResult:
        """tools/list through the gateway."""
        return await self.session.list_tools()

    async def tool_names(self) -> list[str]:
        """Names of the tools the gateway served, in order."""
        return [tool.name for tool in (await self.list_tools()).tools]

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """tools/call through the gateway."""
        return await self.session.call_tool(name, arguments)


@contextlib.asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[McpClient]:
    """Connect the official SDK client through Envoy and run the initialize handshake."""
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(message.root)

    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, get_session_id),
    ):
        async with ClientSession(read, write, message_handler=on_message) as session:
            initialized = await session.initialize()
            yield McpClient(session, get_session_id, notifications, initialized)


def denial(result: types.CallToolResult) -> dict[str, Any] | None:
    """The structured denial of a refused call (``structuredContent`` with ``error_code``,
    ``required_action``, ``side_effect_started``), or None if it was not one."""
    if not result.isError or not isinstance(result.structuredContent, dict):
        return None
    return result.structuredContent if "error_code" in result.structuredContent else None
