"""MCP 2026-07-28 components behind one Envoy: the SDK 2.x servers and the SDK 2.x clients.

Shared by the end-to-end tests (``tests/test_modern.py``) and the demo. The tests themselves
run in the SDK 1.x environment (``.venv``); the components of the current revision run where
they are installed: the Python SDK 2.x rug-pull server and client in ``.venv-mcp2``
(``scripts/setup-python-mcp2.sh``), the TypeScript SDK v2 server and client under
``envoy/modern/node_modules`` (``scripts/setup-node-mcp2.sh``).

Design decision: each official client is a long-lived subprocess driven one step at a time
over JSON lines (``modern/py_client.py``, ``modern/ts_client.mjs``), so the same client
instance, with its own response cache, lives across a test's admin actions, and the test sees
exactly what the SDK returned or raised. Every process is stopped by the PID recorded at
start; every wait is bounded. One Envoy serves several upstreams, each on its own route
``/<server id>/`` (the route name is toolseal's server id).
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

import envoyctl
from envoyctl import EnvoyError, EnvoyProcess, McpRoute, free_port, stop_pid
from stack import Admin, Upstream

ENVOY_DIR = Path(__file__).resolve().parent
MODERN_DIR = ENVOY_DIR / "modern"
RUGPULL_MODERN = ENVOY_DIR / "testserver" / "rugpull_modern.py"
STEP_TIMEOUT = 60.0

sys.path.insert(0, str(ENVOY_DIR / "testserver"))
from surface import REVISIONS, modern_tool_surface  # noqa: E402


def mcp2_python() -> Path:
    """The Python of the SDK 2.x venv (TOOLSEAL_VENV_MCP2 overrides ``<repo>/.venv-mcp2``)."""
    venv = Path(os.environ.get("TOOLSEAL_VENV_MCP2", envoyctl.REPO / ".venv-mcp2"))
    python = venv / "bin" / "python"
    if not python.is_file():
        raise EnvoyError(f"{python} missing: run scripts/setup-python-mcp2.sh")
    return python


def ts_sdk_dir() -> Path:
    """The TypeScript SDK v2 install (``envoy/modern``)."""
    if not (MODERN_DIR / "node_modules" / "@modelcontextprotocol" / "client").is_dir():
        raise EnvoyError(f"{MODERN_DIR}/node_modules missing: run scripts/setup-node-mcp2.sh")
    return MODERN_DIR


class ModernUpstream(Upstream):
    """The rug-pull server on an SDK that speaks 2026-07-28: ``kind`` ``python`` (MCP Python
    SDK 2.x, ``--mode json|sse``) or ``typescript`` (TypeScript SDK v2). Both serve the
    revisions of ``surface.modern_tool_surface`` and send ``list_ttl_ms`` / ``list_scope`` as
    the cache hint of every ``tools/list`` result."""

    def __init__(self, workdir: Path, kind: str, *, rev: int = 1, mode: str = "json",
                 list_ttl_ms: int = 3_600_000, list_scope: str = "public",
                 extra_args: tuple[str, ...] = ()) -> None:
        super().__init__(workdir, rev=rev, mode=mode, extra_args=extra_args)
        if kind not in ("python", "typescript"):
            raise ValueError(f"kind must be python or typescript, not {kind!r}")
        self.kind = kind
        self.list_ttl_ms = list_ttl_ms
        self.list_scope = list_scope

    def _command(self) -> tuple[list[str], dict[str, str]]:
        hint = ["--list-ttl-ms", str(self.list_ttl_ms), "--list-scope", self.list_scope]
        common = ["--port", str(self.port), "--rev", str(self.rev), "--log", str(self.log_path)]
        if self.kind == "python":
            return [str(mcp2_python()), str(RUGPULL_MODERN), *common, "--mode", self.mode,
                    *hint, *self.extra_args], dict(os.environ)
        surface = self.workdir / "modern-surface.json"
        surface.write_text(json.dumps({str(rev): modern_tool_surface(rev) for rev in REVISIONS}))
        return ["node", str(ts_sdk_dir() / "ts_server.mjs"), *common, "--surface", str(surface),
                *hint], dict(os.environ)

    def publish_list_changed(self) -> None:
        """Publish notifications/tools/list_changed on every open subscriptions/listen stream."""
        httpx.post(f"{self.base_url}/control/list-changed", json={}, timeout=5).raise_for_status()

    @property
    def list_changed_trigger(self) -> str:
        """The control URL a client driver POSTs to make the server publish list_changed."""
        return f"{self.base_url}/control/list-changed"


class ClientRaised(AssertionError):
    """The official client raised instead of returning a result; the message says what."""


class SdkClient:
    """One official MCP client in its own process: ``python`` (``mcp.Client`` 2.x) or
    ``typescript`` (``@modelcontextprotocol/client`` v2), driven step by step."""

    def __init__(self, kind: str, workdir: Path) -> None:
        if kind == "python":
            command = [str(mcp2_python()), str(MODERN_DIR / "py_client.py")]
        elif kind == "typescript":
            command = ["node", str(ts_sdk_dir() / "ts_client.mjs")]
        else:
            raise ValueError(f"kind must be python or typescript, not {kind!r}")
        self.kind = kind
        workdir.mkdir(parents=True, exist_ok=True)
        self._stderr_path = workdir / f"client-{kind}-{free_port()}.stderr"
        self._popen = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr_path.open("wb"), text=True, bufsize=1, start_new_session=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._popen.stdout is not None
        for line in self._popen.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def step(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one step and return the driver's answer (``ok``, ``result`` or ``error``)."""
        assert self._popen.stdin is not None
        self._popen.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._popen.stdin.flush()
        try:
            line = self._lines.get(timeout=STEP_TIMEOUT)
        except queue.Empty:
            raise EnvoyError(f"{self.kind} client: no answer to {op} in {STEP_TIMEOUT:.0f}s; "
                             f"stderr: {self.stderr()[-2000:]}") from None
        if line is None:
            raise EnvoyError(f"{self.kind} client exited during {op}; stderr: {self.stderr()[-2000:]}")
        return json.loads(line)

    def _result(self, op: str, **fields: Any) -> Any:
        answer = self.step(op, **fields)
        if not answer["ok"]:
            raise ClientRaised(f"the {self.kind} SDK client raised on {op} {fields}: {answer['error']}")
        return answer["result"]

    def connect(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Connect in the 2026-07-28 era (Python: the SDK's default ``auto`` probe; TypeScript:
        pinned, its default being the 2025 handshake)."""
        era = {"mode": "auto"} if self.kind == "python" else {"era": "2026-07-28"}
        return self._result("connect", url=url, headers=headers or {}, **era)

    def list(self, cache_mode: str = "use") -> dict[str, Any]:
        """tools/list as the client returns it (the TypeScript client always refreshes)."""
        return self._result("list", cache_mode=cache_mode)

    def tool_names(self, cache_mode: str = "use") -> list[str]:
        """The names the client was served."""
        return [tool["name"] for tool in self.list(cache_mode)["tools"]]

    def call(self, name: str, arguments: dict[str, Any], progress: bool = False) -> dict[str, Any]:
        """tools/call; the result the client returned (ClientRaised if it raised)."""
        return self._result("call", name=name, arguments=arguments, progress=progress)

    def surface(self) -> dict[str, Any]:
        """The instructions, prompts and resource templates the client is shown."""
        return self._result("surface")

    def get_prompt(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """prompts/get; the result the client returned (ClientRaised if it raised)."""
        return self._result("get_prompt", name=name, arguments=arguments)

    def listen_once(self, trigger: str) -> dict[str, Any]:
        """Open subscriptions/listen, POST ``trigger``, wait for tools/list_changed, close."""
        return self._result("listen_once", trigger=trigger)

    def stderr(self) -> str:
        """What the client process wrote to stderr so far."""
        return self._stderr_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        """End the process: stdin closed, then stopped by PID (bounded)."""
        try:
            if self._popen.stdin is not None:
                self._popen.stdin.close()
            self._popen.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        stop_pid(self._popen.pid, 5, self._popen)


@dataclasses.dataclass
class ModernStack:
    """Several upstreams behind one Envoy running toolseal, one route per server id."""

    envoy: EnvoyProcess
    admin: Admin
    upstreams: dict[str, Upstream]
    routes: dict[str, McpRoute]

    def url(self, server_id: str) -> str:
        """The MCP endpoint of one server through Envoy."""
        return f"{self.envoy.url}/{server_id}/mcp"

    def upstream_requests(self, server_id: str) -> int:
        """Envoy's count of requests sent to that server's cluster."""
        cluster = self.routes[server_id].cluster
        return self.envoy.stats().get(f"cluster.{cluster}.upstream_rq_total", 0)

    def stop(self) -> None:
        """Stop Envoy, then every upstream, by PID."""
        try:
            self.envoy.stop()
        finally:
            for upstream in self.upstreams.values():
                upstream.stop()


def start_modern_stack(workdir: Path, upstreams: dict[str, Upstream], *,
                       plugin_config: dict[str, Any] | None = None,
                       admin_token: str = envoyctl.DEMO_ADMIN_TOKEN,
                       pre_filters: str = "") -> ModernStack:
    """Start every upstream and one Envoy in front of them (route ``/<id>/`` → server id
    ``<id>``); on failure stop whatever started."""
    started: list[Upstream] = []
    try:
        for upstream in upstreams.values():
            upstream.start()
            started.append(upstream)
        routes = {server_id: McpRoute(server_id, upstream.port, match_prefix=f"/{server_id}/",
                                      rewrite_prefix="/")
                  for server_id, upstream in upstreams.items()}
        listen_port, admin_port, admin_api_port = free_port(), free_port(), free_port()
        config = plugin_config or envoyctl.default_plugin_config(admin_token)
        text = envoyctl.render(listen_port=listen_port, admin_port=admin_port,
                               routes=list(routes.values()), plugin_config=config,
                               pre_filters=pre_filters, admin_api_port=admin_api_port,
                               wasm_path=envoyctl.wasm_file())
        has_admin_api = envoyctl.admin_api_enabled(config)
        envoy = envoyctl.start(text, workdir / f"envoy-{listen_port}", admin_port=admin_port,
                               listen_port=listen_port,
                               admin_api_port=admin_api_port if has_admin_api else None)
    except BaseException:
        for upstream in started:
            upstream.stop()
        raise
    prefix = config.get("admin", {}).get("prefix", "/toolseal/")
    # The admin API is served on its own listener; the agents' listener answers it 404.
    base = envoy.admin_api_url if envoy.admin_api_port is not None else envoy.url
    return ModernStack(envoy, Admin(base, admin_token, prefix), upstreams, routes)
