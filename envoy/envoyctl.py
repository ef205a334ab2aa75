"""Render, validate, start and stop the Envoy that runs toolseal.

One place knows how Envoy is configured and launched, for the demo, the end-to-end tests and
operators (``python envoy/envoyctl.py render|validate|start|stop``).

Design decision: Envoy is started in its own session (``setsid``), detached from the caller,
and is only ever stopped by the PID this module recorded: an Envoy started with a plain ``&``
from a script dies with the script, and stopping by name would hit other Envoys on the machine.
Every wait is bounded. Hot restart is disabled so that several Envoys can run side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

ENVOY_DIR = Path(__file__).resolve().parent
REPO = ENVOY_DIR.parent
TEMPLATE = ENVOY_DIR / "envoy.yaml.tmpl"
SHIPPED_CONFIG = ENVOY_DIR / "envoy.yaml"
# Relative to the repository root: the shipped envoy.yaml is run from there.
DEFAULT_WASM = "target/wasm32-wasip1/wasm/toolseal_plugin.wasm"
# Documented demo token for the shipped config: replace token_sha256 in production.
DEMO_ADMIN_TOKEN = "toolseal-demo-admin-token"
# toolseal's admin API listener (not Envoy's admin, 9901): loopback only by default.
DEFAULT_ADMIN_API_PORT = 10001
ADMIN_API_ADDRESS = "127.0.0.1"
# The plugin refuses admin bodies over 64 KiB itself; the admin listener's buffer filter holds
# at most that much.
ADMIN_MAX_REQUEST_BYTES = 64 * 1024
MIB = 1024 * 1024
# Envoy reads an upstream connection until its buffer holds per_connection_buffer_limit_bytes,
# and hands what it read to the filter chain as one chunk; a chunk is added to a body the
# plugin is holding *before* the plugin sees it, and a held body over the stream's buffer limit
# resets the stream (the client sees a cut-off body, not toolseal's fail-closed answer). So the
# upstream side reads in chunks of at most 1 MiB (Envoy's default) ...
UPSTREAM_READ_LIMIT = 1 * MIB
# ... and the stream's buffer limit leaves room for a held response of up to
# limits.max_response_bytes (8 MiB) plus one such chunk plus SSE framing: a body that crosses
# 8 MiB always reaches the plugin, which answers with its fail-closed error and drops the rest.
BUFFER_LIMIT = 10 * MIB
# The buffer filter's max_request_bytes also becomes the stream's buffer limit for the
# *response* (Envoy logs "setting buffer limit to N"; a JSON response over it is reset with
# response_payload_too_large), so it is the same 10 MiB, not the 1 MiB request limit: toolseal
# itself refuses request bodies over limits.max_request_bytes (1 MiB) with 413.
MAX_REQUEST_BYTES = BUFFER_LIMIT
AUDIT_RE = re.compile(r"toolseal\.audit (\{.*\})\s*$")


class EnvoyError(RuntimeError):
    """Envoy could not be configured, started or stopped; the message says what to fix."""


@dataclasses.dataclass(frozen=True)
class McpRoute:
    """One upstream MCP server behind Envoy: the route name is toolseal's server id."""

    server_id: str
    upstream_port: int
    match_prefix: str = "/mcp"
    rewrite_prefix: str | None = None

    @property
    def cluster(self) -> str:
        """The Envoy cluster name (stats: ``cluster.<cluster>.upstream_rq_total``)."""
        return f"upstream_{self.server_id}"


@dataclasses.dataclass(frozen=True)
class StoreCluster:
    """The Envoy cluster toolseal reaches its fleet store (etcd) through: the config's
    ``store.etcd.cluster`` names it (:func:`store_config`)."""

    port: int
    name: str = "toolseal_store"
    # PEM paths for mTLS to etcd: the CA that signed etcd's certificate, and the client
    # certificate and key Envoy presents (None: plain HTTP).
    tls: tuple[str, str, str] | None = None

    def transport_socket_yaml(self) -> str:
        """The cluster's TLS transport socket (empty without ``tls``)."""
        if self.tls is None:
            return ""
        ca, cert, key = self.tls
        return "\n".join([
            "    transport_socket:",
            "      name: envoy.transport_sockets.tls",
            "      typed_config:",
            '        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
            "        common_tls_context:",
            f'          validation_context: {{ trusted_ca: {{ filename: "{ca}" }} }}',
            "          tls_certificates:",
            f'          - certificate_chain: {{ filename: "{cert}" }}',
            f'            private_key: {{ filename: "{key}" }}',
        ]) + "\n"


def store_config(prefix: str, cluster: str = "toolseal_store", timeout_ms: int = 1000,
                 sync_ms: int = 1000) -> dict[str, Any]:
    """The plugin config's ``store`` block: etcd through the Envoy cluster ``cluster``, every
    key under ``prefix`` (one prefix per fleet; it must end with ``/``)."""
    return {"etcd": {"cluster": cluster, "prefix": prefix, "timeout_ms": timeout_ms,
                     "sync_ms": sync_ms}}


def token_sha256(token: str) -> str:
    """Lowercase hex SHA-256 of an admin token, as ``admin.token_sha256`` wants it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def default_plugin_config(admin_token: str = DEMO_ADMIN_TOKEN) -> dict[str, Any]:
    """Discovery posture, server id from the route name, admin API on (on its own listener)."""
    return {
        "posture": "discovery",
        "server_id": {"from": "route"},
        "admin": {"prefix": "/toolseal/", "token_sha256": token_sha256(admin_token)},
    }


def split_plugin_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (data listener, admin listener) configs of one plugin config document.

    Both plugin instances share one state, and each applies its config's pins, locks and
    quarantines to it, so they must agree on everything but ``admin``: the admin listener's
    config is the whole document, the data listener's is the same without ``admin`` (the
    admin API is then off there and its prefix answers 404)."""
    return {k: v for k, v in config.items() if k != "admin"}, config


def admin_api_enabled(config: dict[str, Any] | str) -> bool:
    """Whether the config turns the admin API on (an ``admin`` block with token hashes)."""
    return isinstance(config, dict) and bool(config.get("admin", {}).get("token_sha256"))


def _routes_yaml(routes: list[McpRoute]) -> str:
    lines = []
    for route in routes:
        lines += [
            f"              - name: {route.server_id}",
            f'                match: {{ prefix: "{route.match_prefix}" }}',
            "                route:",
            f"                  cluster: {route.cluster}",
            "                  # No route timeout: SSE responses and GET streams are long-lived.",
            "                  timeout: 0s",
        ]
        if route.rewrite_prefix is not None:
            lines.append(f'                  prefix_rewrite: "{route.rewrite_prefix}"')
    return "\n".join(lines)


def _clusters_yaml(routes: list[McpRoute]) -> str:
    lines = []
    for route in routes:
        lines += [
            f"  - name: {route.cluster}",
            "    type: STATIC",
            "    connect_timeout: 2s",
            "    # Envoy reads at most this much of a response at a time (see the listener).",
            f"    per_connection_buffer_limit_bytes: {UPSTREAM_READ_LIMIT}",
            "    load_assignment:",
            f"      cluster_name: {route.cluster}",
            "      endpoints:",
            "      - lb_endpoints:",
            "        - endpoint:",
            "            address:",
            f"              socket_address: {{ address: 127.0.0.1, port_value: {route.upstream_port} }}",
        ]
    return "\n".join(lines)


def _replace_block(text: str, name: str, replacement: str = "") -> str:
    """``text`` with the lines from ``# BEGIN name`` to ``# END name`` replaced."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() == f"# BEGIN {name}":
            skipping = True
            out.append(replacement)
        elif line.strip() == f"# END {name}":
            skipping = False
        elif not skipping:
            out.append(line)
    return "".join(out)


def _json_text(config: dict[str, Any] | str) -> str:
    return config if isinstance(config, str) else json.dumps(config, sort_keys=True)


def _block(yaml: str) -> str:
    return yaml.rstrip("\n") + "\n" if yaml else ""


def render(
    *,
    listen_port: int = 10000,
    admin_port: int = 9901,
    routes: list[McpRoute] | None = None,
    plugin_config: dict[str, Any] | str | None = None,
    wasm_path: str | os.PathLike[str] = DEFAULT_WASM,
    with_plugin: bool = True,
    pre_filters: str = "",
    access_log_path: str = "/dev/stdout",
    admin_api_port: int = DEFAULT_ADMIN_API_PORT,
    admin_api_address: str = ADMIN_API_ADDRESS,
    admin_pre_filters: str = "",
    filters: tuple[str, str | None] | None = None,
    store: StoreCluster | None = None,
) -> str:
    """The Envoy config text.

    ``plugin_config`` is one document (:func:`split_plugin_config` gives each listener its
    part), or a raw string (to test bad configs) used as is on the data listener.
    ``pre_filters`` / ``admin_pre_filters`` are YAML for HTTP filters that run before toolseal
    on the data / admin listener (e.g. ``jwt_authn``); ``filters`` replaces the two inline
    toolseal filters (data, admin) with other YAML (ECDS: ``envoy/ecds/fleet.py``);
    ``access_log_path`` is where the JSON access log with toolseal's decisions goes. The admin
    listener is rendered when the config turns the admin API on, or ``filters`` names its
    toolseal filter. ``store`` adds the cluster the config's ``store.etcd.cluster`` names
    (both listeners' plugin instances get the config's ``store`` block: it is not ``admin``)."""
    routes = routes if routes is not None else [McpRoute("demo", 8000)]
    config = plugin_config if plugin_config is not None else default_plugin_config()
    data_config, admin_config = (
        split_plugin_config(config) if isinstance(config, dict) else (config, config))
    admin_prefix = "/toolseal/"
    if isinstance(config, dict):
        admin_prefix = config.get("admin", {}).get("prefix", admin_prefix)
    text = string.Template(TEMPLATE.read_text()).substitute(
        listen_port=listen_port,
        admin_port=admin_port,
        buffer_limit=BUFFER_LIMIT,
        max_request_bytes=MAX_REQUEST_BYTES,
        admin_prefix=admin_prefix,
        routes=_routes_yaml(routes),
        clusters=_clusters_yaml(routes),
        wasm_path=str(wasm_path),
        # A JSON string literal is a valid YAML double-quoted scalar.
        plugin_config=json.dumps(_json_text(data_config)),
        admin_plugin_config=json.dumps(_json_text(admin_config)),
        pre_filters=_block(pre_filters),
        admin_pre_filters=_block(admin_pre_filters),
        access_log_path=access_log_path,
        admin_api_address=admin_api_address,
        admin_api_port=admin_api_port,
        admin_max_request_bytes=ADMIN_MAX_REQUEST_BYTES,
        store_cluster=store.name if store else "toolseal_store",
        store_port=store.port if store else 0,
        store_transport_socket=store.transport_socket_yaml() if store else "",
    )
    if store is None:
        text = _replace_block(text, "store cluster")
    if not with_plugin:
        return _replace_block(_replace_block(text, "toolseal"), "admin listener")
    if filters is not None:
        text = _replace_block(text, "toolseal", _block(filters[0]))
        if filters[1] is None:
            return _replace_block(text, "admin listener")
        return _replace_block(text, "toolseal-admin", _block(filters[1]))
    if not admin_api_enabled(config):
        return _replace_block(text, "admin listener")
    return text


def envoy_binary() -> Path:
    """The Envoy from the project venv (``envoy/envoy-path.sh``), or ENVOY_BIN."""
    result = subprocess.run(
        [str(ENVOY_DIR / "envoy-path.sh")], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise EnvoyError(result.stderr.strip() or "envoy binary not found")
    return Path(result.stdout.strip())


def wasm_file() -> Path:
    """The built plugin; TOOLSEAL_WASM overrides the default build output."""
    path = Path(os.environ.get("TOOLSEAL_WASM", REPO / DEFAULT_WASM))
    if not path.is_file():
        raise EnvoyError(
            f"{path} does not exist: build it with `cargo build -p toolseal-plugin "
            "--target wasm32-wasip1 --profile wasm`"
        )
    return path


def validate(config_path: Path, cwd: Path = REPO, timeout: float = 60) -> subprocess.CompletedProcess:
    """``envoy --mode validate``: loads the .wasm and runs the plugin's on_configure."""
    return subprocess.run(
        [str(envoy_binary()), "--mode", "validate", "-c", str(config_path),
         "--disable-hot-restart", "--log-level", "info"],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False,
    )


# Listening ports are drawn below the kernel's ephemeral range (32768-60999 on Linux): a
# port the kernel hands out with bind(0) is also what it hands to the next outgoing
# connection (a client, Envoy's upstream connections), which can take it between this check
# and the listener's bind ("Address already in use"). Ports here are never given to
# outgoing connections.
_LISTEN_PORTS = (20000, 32000)
_port_rng = random.Random()
_handed_out: set[int] = set()


def _port_slice() -> tuple[int, int]:
    """This test worker's own part of ``_LISTEN_PORTS``. pytest-xdist workers run side by
    side, each drawing ports that stay free until the process it starts binds them; two
    workers drawing from the same range can both pick one port in that window (a CI run lost
    an Envoy that way: "exited with 1" at start-up). Each worker draws from its own slice, so
    only one process draws a given port; outside pytest-xdist the whole range is used."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit()):
        return _LISTEN_PORTS
    index, workers = int(worker[2:]), max(int(count), 1)
    width = (_LISTEN_PORTS[1] - _LISTEN_PORTS[0]) // workers
    low = _LISTEN_PORTS[0] + min(index, workers - 1) * width
    return low, low + width


def free_port() -> int:
    """A TCP port on 127.0.0.1, outside the ephemeral range, in this worker's slice, that was
    free a moment ago and that this process never handed out before (three ports drawn for
    one Envoy are three ports, not one twice)."""
    low, high = _port_slice()
    for _ in range(200):
        port = _port_rng.randrange(low, high)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise EnvoyError(f"no free port in {low}-{high} after 200 tries")


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    """GET without proxies; returns (status, body), status 0 if nothing answered."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return 0, ""


def wait_until(check: Any, timeout: float, what: str, interval: float = 0.02) -> float:
    """Poll ``check()`` until true; returns seconds waited, raises EnvoyError on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    raise EnvoyError(f"timed out after {timeout:.0f}s waiting for {what}")


@dataclasses.dataclass
class EnvoyProcess:
    """A running Envoy started by :func:`start`; stop it with :meth:`stop`."""

    pid: int
    admin_port: int
    listen_port: int
    log_path: Path
    config_path: Path
    startup_seconds: float
    popen: subprocess.Popen | None = None
    admin_api_port: int | None = None

    @property
    def admin_url(self) -> str:
        """Envoy's own admin interface (stats, ready), not toolseal's."""
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def url(self) -> str:
        """The MCP listener."""
        return f"http://127.0.0.1:{self.listen_port}"

    @property
    def admin_api_url(self) -> str:
        """The listener that serves toolseal's admin API."""
        if self.admin_api_port is None:
            raise EnvoyError("this Envoy was started without a toolseal admin API listener")
        return f"http://127.0.0.1:{self.admin_api_port}"

    def stats(self) -> dict[str, int]:
        """Counter and gauge values from ``/stats`` (text form)."""
        status, body = http_get(f"{self.admin_url}/stats")
        if status != 200:
            raise EnvoyError(f"Envoy admin /stats answered {status}")
        values = {}
        for line in body.splitlines():
            name, _, value = line.partition(": ")
            if value.strip().lstrip("-").isdigit():
                values[name] = int(value)
        return values

    def log_text(self) -> str:
        """Everything Envoy logged so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def audit_events(self) -> list[dict[str, Any]]:
        """toolseal audit events from the Envoy log, oldest first."""
        events = []
        for line in self.log_text().splitlines():
            match = AUDIT_RE.search(line)
            if match:
                events.append(json.loads(match.group(1)))
        return events

    def stop(self, timeout: float = 10) -> None:
        """SIGTERM by PID, then SIGKILL if it did not exit in time."""
        stop_pid(self.pid, timeout, self.popen)


def stop_pid(pid: int, timeout: float = 10, popen: subprocess.Popen | None = None) -> None:
    """Stop one process (and its process group, which it leads) by PID, bounded."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if popen is not None:
                if popen.poll() is not None:
                    return
            elif not _alive(pid):
                return
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


def _tail(workdir: Path, lines: int = 20) -> str:
    """The last lines Envoy wrote (its log and its stderr), for an error that names the cause
    instead of a path on a machine that is gone when the report is read."""
    said = []
    for name in ("envoy.log", "envoy.stderr"):
        try:
            text = (workdir / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        said.extend(f"{name}: {line}" for line in text.splitlines()[-lines:])
    return "\n".join(said) or "(nothing)"


def start(
    config_text: str,
    workdir: Path,
    *,
    admin_port: int,
    listen_port: int,
    admin_api_port: int | None = None,
    concurrency: int = 2,
    ready_timeout: float = 60,
) -> EnvoyProcess:
    """Write the config, start Envoy detached, wait for admin ``/ready``; bounded.
    ``admin_api_port`` is the toolseal admin API listener the config has, if any."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "envoy.yaml"
    config_path.write_text(config_text)
    log_path = workdir / "envoy.log"
    command = [
        str(envoy_binary()), "-c", str(config_path), "--concurrency", str(concurrency),
        "--disable-hot-restart", "--log-path", str(log_path), "--file-flush-interval-msec", "100",
        "--log-level", "warning", "--component-log-level", "wasm:info",
    ]
    began = time.monotonic()
    popen = subprocess.Popen(
        command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=(workdir / "envoy.stderr").open("wb"), start_new_session=True,
    )
    (workdir / "envoy.pid").write_text(f"{popen.pid}\n")
    process = EnvoyProcess(popen.pid, admin_port, listen_port, log_path, config_path, 0.0, popen,
                           admin_api_port)

    def ready() -> bool:
        if popen.poll() is not None:
            raise EnvoyError(f"Envoy exited with {popen.returncode}; see {log_path}; "
                             f"it said:\n{_tail(workdir)}")
        return http_get(f"http://127.0.0.1:{admin_port}/ready", timeout=0.5)[0] == 200

    try:
        wait_until(ready, ready_timeout, f"Envoy /ready on port {admin_port}")
    except EnvoyError:
        process.stop()
        raise
    process.startup_seconds = time.monotonic() - began
    return process


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Render, validate, start, stop toolseal's Envoy.")
    sub = parser.add_subparsers(dest="command", required=True)
    rend = sub.add_parser("render", help="print the config (defaults = envoy/envoy.yaml)")
    start_p = sub.add_parser("start", help="start envoy/envoy.yaml detached, wait until ready")
    for p in (rend, start_p):
        p.add_argument("--listen-port", type=int, default=10000)
        p.add_argument("--admin-port", type=int, default=9901, help="Envoy's own admin")
        p.add_argument("--admin-api-port", type=int, default=DEFAULT_ADMIN_API_PORT,
                       help="toolseal's admin API listener (loopback)")
        p.add_argument("--upstream-port", type=int, default=8000)
        p.add_argument("--server-id", default="demo")
        p.add_argument("--no-plugin", action="store_true", help="Envoy without toolseal")
        p.add_argument("--etcd-port", type=int, default=None,
                       help="keep runtime state in the etcd on 127.0.0.1:PORT (docs/fleet.md)")
        p.add_argument("--store-prefix", default="/toolseal/",
                       help="the fleet's key prefix in etcd (with --etcd-port)")
    start_p.add_argument("--workdir", type=Path, default=REPO / "target" / "envoy-run")
    val = sub.add_parser("validate", help="envoy --mode validate (default: envoy/envoy.yaml)")
    val.add_argument("config", type=Path, nargs="?", default=SHIPPED_CONFIG)
    stop = sub.add_parser("stop", help="stop the Envoy whose PID file is in --workdir")
    stop.add_argument("--workdir", type=Path, default=REPO / "target" / "envoy-run")
    args = parser.parse_args(argv)
    try:
        return _run_cli(args)
    except EnvoyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _run_cli(args: argparse.Namespace) -> int:
    if args.command == "validate":
        result = validate(args.config.resolve())
        sys.stdout.write(result.stdout[-4000:] + result.stderr[-4000:])
        return result.returncode
    if args.command == "stop":
        pid_file = args.workdir / "envoy.pid"
        if not pid_file.is_file():
            raise EnvoyError(f"no PID file {pid_file}: nothing started there")
        stop_pid(int(pid_file.read_text().strip()))
        pid_file.unlink()
        print("stopped")
        return 0
    store, config = None, default_plugin_config()
    if args.etcd_port is not None:
        store = StoreCluster(args.etcd_port)
        config["store"] = store_config(args.store_prefix, store.name)
    text = render(
        listen_port=args.listen_port, admin_port=args.admin_port,
        admin_api_port=args.admin_api_port, plugin_config=config, store=store,
        routes=[McpRoute(args.server_id, args.upstream_port)], with_plugin=not args.no_plugin,
    )
    if args.command == "render":
        sys.stdout.write(text)
        return 0
    if not args.no_plugin:
        wasm_file()
    envoy = start(text, args.workdir, admin_port=args.admin_port, listen_port=args.listen_port,
                  admin_api_port=None if args.no_plugin else args.admin_api_port)
    admin_api = "" if args.no_plugin else f"; toolseal admin API {envoy.admin_api_url}/toolseal/"
    print(f"envoy pid {envoy.pid} ready in {envoy.startup_seconds:.3f}s; log {envoy.log_path}"
          f"{admin_api}")
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
