"""A fleet under test: several real Envoys running toolseal, sharing one etcd as fleet memory.

Shared by the end-to-end tests (``tests/test_fleet_store.py``), the demo and the fleet
measurements (``bench/fleet_store.py``). One etcd (``etcdctl``), the upstream MCP servers,
and Envoys of two workers each whose plugin config carries the same ``store`` block: the
same etcd, the same prefix. Each Envoy can be stopped and started again on the same ports
(a rolling restart), and each can route a server id to its own upstream (replicas that see
different deploys of one server).

Design decision: everything is started in its own session and stopped by the PID recorded at
start, in reverse order, even when a step failed; every wait is bounded. An agent that a load
balancer moves between Envoys is the official SDK client over an httpx transport that sends
each request to the Envoy a test names (:class:`Balancer`): the client keeps its session and
its URL, only the instance behind it changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import envoyctl
import etcdctl
from envoyctl import EnvoyError, EnvoyProcess, McpRoute, free_port
from stack import Admin, McpClient, Upstream

STORE_CLUSTER = "toolseal_store"


def fleet_plugin_config(prefix: str, *, sync_ms: int = 200, timeout_ms: int = 1000,
                        **extra: Any) -> dict[str, Any]:
    """Discovery posture, the admin API, every call audited, and the fleet store."""
    config = envoyctl.default_plugin_config()
    config["audit"] = {"call_allowed": True}
    config["store"] = envoyctl.store_config(prefix, STORE_CLUSTER, timeout_ms, sync_ms)
    config.update(extra)
    return config


@dataclasses.dataclass
class FleetEnvoy:
    """One Envoy of the fleet. Its ports stay the same across :meth:`restart`; each run has
    its own work directory (and log), so ``audit_events`` is what this run logged."""

    name: str
    workdir: Path
    routes: list[McpRoute]
    config_text: str
    listen_port: int
    admin_port: int
    admin_api_port: int
    process: EnvoyProcess | None = None
    runs: int = 0

    @property
    def envoy(self) -> EnvoyProcess:
        """The running process (EnvoyError when stopped)."""
        if self.process is None:
            raise EnvoyError(f"Envoy {self.name} is not running")
        return self.process

    @property
    def base_url(self) -> str:
        """The agents' listener."""
        return f"http://127.0.0.1:{self.listen_port}"

    def url(self, server_id: str) -> str:
        """The MCP endpoint of one server through this Envoy."""
        return f"{self.base_url}/{server_id}/mcp"

    @property
    def admin(self) -> Admin:
        """toolseal's admin API on this Envoy's admin listener."""
        return Admin(f"http://127.0.0.1:{self.admin_api_port}", envoyctl.DEMO_ADMIN_TOKEN)

    def start(self) -> float:
        """Start this Envoy (same ports as before); seconds to /ready."""
        self.runs += 1
        self.process = envoyctl.start(
            self.config_text, self.workdir / f"{self.name}-run{self.runs}",
            admin_port=self.admin_port, listen_port=self.listen_port,
            admin_api_port=self.admin_api_port, concurrency=2)
        return self.process.startup_seconds

    def stop(self) -> None:
        """Stop by PID (bounded)."""
        if self.process is not None:
            try:
                self.process.stop()
            finally:
                self.process = None

    def restart(self) -> float:
        """A rollout: stop, then start a new process with the same config and ports."""
        self.stop()
        return self.start()

    def upstream_requests(self, server_id: str) -> int:
        """Envoy's count of requests sent to that server's cluster (this run)."""
        return self.envoy.stats().get(f"cluster.{McpRoute(server_id, 0).cluster}.upstream_rq_total", 0)

    def counters(self) -> dict[str, int]:
        """toolseal's counters (``wasmcustom.toolseal_*``) of this run, by short name."""
        prefix = "wasmcustom.toolseal_"
        return {k[len(prefix):]: v for k, v in self.envoy.stats().items() if k.startswith(prefix)}

    def audit_events(self, event: str | None = None) -> list[dict[str, Any]]:
        """This run's audit events (Envoy log), optionally one kind."""
        return [e for e in self.envoy.audit_events() if event is None or e.get("event") == event]

    def wait_for_audits(self, event: str, count: int = 1, timeout: float = 5) -> list[dict[str, Any]]:
        """This run's events of one kind once at least ``count`` are logged (the log is
        flushed every 100 ms)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.audit_events(event)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                seen = [e.get("event") for e in self.audit_events()]
                raise AssertionError(f"Envoy {self.name}: fewer than {count} {event} audit "
                                     f"events; saw {seen}")
            time.sleep(0.05)

    def log_text(self) -> str:
        """Everything this run logged."""
        return self.envoy.log_text()


class StoreFleet:
    """One etcd, the upstreams, and the Envoys added with :meth:`add_envoy`."""

    def __init__(self, workdir: Path, upstreams: dict[str, Upstream], *, prefix: str,
                 sync_ms: int = 200, timeout_ms: int = 1000,
                 plugin_config: dict[str, Any] | None = None, tls: bool = False) -> None:
        self.workdir = workdir
        # mTLS between the Envoys and etcd: etcd requires a client certificate, the store
        # cluster presents one (its transport socket).
        self.pki = etcdctl.make_pki(workdir / "pki") if tls else None
        self.upstreams = upstreams
        self.prefix = prefix
        self.sync_ms = sync_ms
        self.config = plugin_config or fleet_plugin_config(prefix, sync_ms=sync_ms,
                                                           timeout_ms=timeout_ms)
        self.etcd: etcdctl.EtcdProcess | None = None
        self.envoys: dict[str, FleetEnvoy] = {}

    @property
    def store(self) -> etcdctl.EtcdClient:
        """The etcd client (the fleet's memory as etcd holds it)."""
        if self.etcd is None:
            raise EnvoyError("etcd was not started")
        return self.etcd.client()

    def start(self) -> None:
        """etcd, then every upstream (stops what started if one fails)."""
        try:
            self.etcd = etcdctl.start(self.workdir / "etcd", pki=self.pki)
            for upstream in self.upstreams.values():
                upstream.start()
        except BaseException:
            self.stop()
            raise

    def add_envoy(self, name: str, upstream_ports: dict[str, int] | None = None) -> FleetEnvoy:
        """A new (not yet started) Envoy routing ``/<id>/`` to each upstream, or to the port
        ``upstream_ports`` names for that id (this replica sees another deploy)."""
        if self.etcd is None:
            raise EnvoyError("start the fleet (etcd) before adding Envoys")
        ports = {sid: up.port for sid, up in self.upstreams.items()} | (upstream_ports or {})
        routes = [McpRoute(sid, port, match_prefix=f"/{sid}/", rewrite_prefix="/")
                  for sid, port in ports.items()]
        listen_port, admin_port, admin_api_port = free_port(), free_port(), free_port()
        tls = None
        if self.pki is not None:
            tls = (str(self.pki.ca), str(self.pki.cert("client")), str(self.pki.key("client")))
        text = envoyctl.render(listen_port=listen_port, admin_port=admin_port, routes=routes,
                               plugin_config=self.config, admin_api_port=admin_api_port,
                               wasm_path=envoyctl.wasm_file(),
                               store=envoyctl.StoreCluster(self.etcd.client_port, STORE_CLUSTER, tls))
        member = FleetEnvoy(name, self.workdir, routes, text, listen_port, admin_port,
                            admin_api_port)
        self.envoys[name] = member
        return member

    def start_envoys(self, *members: FleetEnvoy) -> list[float]:
        """Start Envoys side by side (each compiles the module in its own process); seconds
        each took to /ready. Raises the first failure after all attempts ended."""
        results: list[Any] = [None] * len(members)

        def run(i: int, member: FleetEnvoy) -> None:
            try:
                results[i] = member.start()
            except BaseException as err:  # reported below, after every thread ended
                results[i] = err

        threads = [threading.Thread(target=run, args=(i, m)) for i, m in enumerate(members)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    def stop(self) -> None:
        """Every Envoy, every upstream, then etcd: by PID, whatever failed before."""
        errors: list[BaseException] = []
        for step in ([m.stop for m in self.envoys.values()]
                     + [u.stop for u in self.upstreams.values()]
                     + ([self.etcd.stop] if self.etcd is not None else [])):
            try:
                step()
            except BaseException as err:  # keep stopping the rest
                errors.append(err)
        if errors:
            raise errors[0]

    # What etcd holds.

    def server_key(self, server_id: str) -> str:
        """The key of a server's fleet record."""
        return f"{self.prefix}servers/{server_id}"

    def record(self, server_id: str) -> tuple[etcdctl.KeyValue, dict[str, Any]] | None:
        """A server's fleet record as etcd holds it: the key and the parsed document
        (``{"format": 1, "record": {...}}``), or None."""
        kv = self.store.get(self.server_key(server_id))
        return None if kv is None else (kv, kv.json())

    def wait_for_record(self, server_id: str, check: Any, what: str,
                        timeout: float = 5) -> tuple[etcdctl.KeyValue, dict[str, Any]]:
        """Poll etcd until the server's record satisfies ``check(record)``; returns it."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.record(server_id)
            if last is not None and check(last[1]["record"]):
                return last
            time.sleep(0.05)
        raise AssertionError(f"etcd: {self.server_key(server_id)} never showed {what}; last: "
                             f"{last[1] if last else None}")

    def keys(self) -> list[etcdctl.KeyValue]:
        """Every key under the fleet's prefix."""
        return self.store.range_prefix(self.prefix)


class NotForwarded:
    """Asserts that nothing reached the upstream of ``server_id`` while the block ran: no
    Envoy of the fleet moved that cluster's ``upstream_rq_total``, and the upstream's own
    request log has no new line."""

    def __init__(self, fleet: StoreFleet, server_id: str, upstream: Upstream | None = None) -> None:
        self.fleet, self.server_id = fleet, server_id
        self.upstream = upstream or fleet.upstreams[server_id]

    def _requests(self) -> dict[str, int]:
        return {name: m.upstream_requests(self.server_id)
                for name, m in self.fleet.envoys.items() if m.process is not None}

    def __enter__(self) -> "NotForwarded":
        self.rq = self._requests()
        self.logged = len(self.upstream.events())
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            assert self.upstream.events()[self.logged:] == [], "the upstream received a request"
            assert self._requests() == self.rq, "an Envoy sent a request upstream"


class Balancer(httpx.AsyncBaseTransport):
    """A load balancer in front of the fleet, as seen by one client: every request goes to
    the listener port of the Envoy named by ``target`` (the test moves it)."""

    def __init__(self, members: dict[str, FleetEnvoy], target: str) -> None:
        self.members = members
        self.target = target
        self.sent: list[tuple[str, str]] = []  # (Envoy name, HTTP method) per request
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request to the current target's listener, same path."""
        request.url = request.url.copy_with(port=self.members[self.target].listen_port)
        self.sent.append((self.target, request.method))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def balanced_client(fleet: StoreFleet, server_id: str, target: str,
                          ) -> AsyncIterator[tuple[McpClient, Balancer]]:
    """The SDK 1.x client (2025-11-25 handshake, ``Mcp-Session-Id``) behind a
    :class:`Balancer` that starts on ``target``; returns once ``notifications/initialized``
    reached the upstream (it is posted in the background)."""
    balancer = Balancer(fleet.envoys, target)
    upstream = fleet.upstreams[server_id]
    before = _initialized_count(upstream)
    url = fleet.envoys[target].url(server_id)
    async with (
        httpx.AsyncClient(transport=balancer, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, get_session_id),
    ):
        async with ClientSession(read, write) as session:
            await session.initialize()
            deadline = time.monotonic() + 10
            while _initialized_count(upstream) == before:
                if time.monotonic() > deadline:
                    raise EnvoyError("notifications/initialized never reached the upstream")
                await _sleep(0.02)
            yield McpClient(session, get_session_id, []), balancer


def _initialized_count(upstream: Upstream) -> int:
    return sum(m == "notifications/initialized"
               for e in upstream.events("http") for m in e["jsonrpc_methods"])


async def _sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


@contextlib.contextmanager
def running_fleet(workdir: Path, upstreams: dict[str, Upstream], **kwargs: Any) -> Iterator[StoreFleet]:
    """Start etcd and the upstreams; everything (Envoys added later included) is stopped on
    exit."""
    fleet = StoreFleet(workdir, upstreams, **kwargs)
    fleet.start()
    try:
        yield fleet
    finally:
        fleet.stop()
