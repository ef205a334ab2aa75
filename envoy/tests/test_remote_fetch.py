"""toolseal loaded by a real Envoy from a URL, pinned by sha256 (``vm_config.code.remote``).

Plain Envoy without a control plane that pulls images: Envoy fetches the module itself through
a cluster (``envoy/envoy-remote.yaml.tmpl``) from a small HTTP server on 127.0.0.1 (Python's
``http.server``, started and stopped by PID, its access log on file), and checks the sha256
before it loads a byte. With the right digest the rug-pull story plays as with a local file.
With a wrong one (or another module behind the URL, or no origin at all) Envoy does not refuse
its configuration: it starts, reports ready and binds both listeners, but no plugin loads and
the FAIL_CLOSED filter answers every request itself with a 503; the upstream MCP server's
own request log proves that not one request reached it. And the image scripts/oci-image.sh
builds serves plain Envoy too: pushed to a real registry, its wasm layer's blob URL is a URL
Envoy fetches and checks against the layer digest.

The module is the ``wasm`` fixture's snapshot (``TOOLSEAL_WASM``, default the repo's build
output); ``TOOLSEAL_ADMIN_WASM`` names another module for the admin listener's filter (the
admin module), which then gets its own URL and digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
import yaml

import envoyctl
from envoyctl import EnvoyError, McpRoute, free_port, stop_pid, wait_until
from fingerprint_ref import server_fingerprint
from rugpull_server import tool_surface as surface
from stack import Admin, Stack, Upstream, baseline_of, candidate_of, mcp_client, status_of
from test_oci import registry, tools  # noqa: F401  (fixtures: a real registry, skopeo)
from toolseal_checks import assert_denied, counter, list_status_meta, wait_for_audit

TEMPLATE = envoyctl.ENVOY_DIR / "envoy-remote.yaml.tmpl"
FP1 = server_fingerprint(surface(1))
FP2 = server_fingerprint(surface(2))
REV1_TOOLS = ["deploy_preview", "get_weather", "add"]
NUM_RETRIES = 1
# Both filters (data and admin listener) fetch once and retry NUM_RETRIES times.
FETCHES_PER_FILTER = 1 + NUM_RETRIES
GET_LINE = re.compile(r'"GET (/[^ ]*) HTTP/1\.[01]" (\d{3})')


def _template_block(name: str) -> str:
    """The lines between ``# BEGIN name`` and ``# END name`` of the remote-code template."""
    lines, inside = [], False
    for line in TEMPLATE.read_text().splitlines(keepends=True):
        if line.strip() == f"# BEGIN {name}":
            inside = True
        elif line.strip() == f"# END {name}":
            inside = False
        elif inside:
            lines.append(line)
    assert lines, f"{TEMPLATE} has no block {name!r}"
    return "".join(lines)


class Origin:
    """``python -m http.server`` on 127.0.0.1 serving one directory; its access log on file."""

    def __init__(self, directory: Path, workdir: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.log_path = workdir / f"origin-{self.port}.log"
        self._popen: subprocess.Popen | None = None

    def start(self) -> "Origin":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self._popen = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
             "--directory", str(self.directory), str(self.port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)

        def listening() -> bool:
            if self._popen is not None and self._popen.poll() is not None:
                raise EnvoyError(f"the module origin exited with {self._popen.returncode}")
            with socket.socket() as sock:
                sock.settimeout(0.2)
                return sock.connect_ex(("127.0.0.1", self.port)) == 0

        wait_until(listening, 15, f"the module origin on port {self.port}")
        return self

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def gets(self) -> list[tuple[str, int]]:
        """(path, status) of every GET the origin answered, in order."""
        if not self.log_path.exists():
            return []
        return [(m.group(1), int(m.group(2)))
                for m in GET_LINE.finditer(self.log_path.read_text(errors="replace"))]

    def stop(self) -> None:
        if self._popen is not None:
            stop_pid(self._popen.pid, 10, self._popen)
            self._popen = None


def _modules(wasm: Path) -> tuple[Path, Path]:
    """(data module, admin module): the admin one is TOOLSEAL_ADMIN_WASM, or the same."""
    admin = os.environ.get("TOOLSEAL_ADMIN_WASM")
    return wasm, Path(admin) if admin else wasm


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def render_remote(*, listen_port: int, admin_port: int, admin_api_port: int, routes: list[McpRoute],
                  plugin_config: dict[str, Any], origin_port: int, wasm_url: str, wasm_sha256: str,
                  admin_wasm_url: str, admin_wasm_sha256: str) -> str:
    """The shipped Envoy config with both toolseal filters loading their code from URLs."""
    data_config, admin_config = envoyctl.split_plugin_config(plugin_config)
    values = {
        "wasm_url": wasm_url, "wasm_sha256": wasm_sha256,
        "admin_wasm_url": admin_wasm_url, "admin_wasm_sha256": admin_wasm_sha256,
        "num_retries": NUM_RETRIES, "origin_port": origin_port,
        # A JSON string literal is a valid YAML double-quoted scalar (as envoyctl.render does).
        "plugin_config": json.dumps(json.dumps(data_config, sort_keys=True)),
        "admin_plugin_config": json.dumps(json.dumps(admin_config, sort_keys=True)),
    }
    block = {name: string.Template(_template_block(name)).substitute(values)
             for name in ("toolseal", "toolseal-admin", "wasm origin cluster")}
    text = envoyctl.render(listen_port=listen_port, admin_port=admin_port,
                           admin_api_port=admin_api_port, routes=routes,
                           plugin_config=plugin_config,
                           filters=(block["toolseal"], block["toolseal-admin"]))
    # envoy.yaml.tmpl ends with the cluster list: the origin's cluster goes last in it.
    text += block["wasm origin cluster"]
    parsed = yaml.safe_load(text)
    assert "toolseal_wasm_origin" in [c["name"] for c in parsed["static_resources"]["clusters"]]
    for listener in parsed["static_resources"]["listeners"]:
        [hcm] = listener["filter_chains"][0]["filters"]
        [wasm_filter] = [f for f in hcm["typed_config"]["http_filters"] if f["name"] == "envoy.filters.http.wasm"]
        code = wasm_filter["typed_config"]["config"]["vm_config"]["code"]
        assert set(code) == {"remote"}, code
    return text


@pytest.fixture
def remote_stacks(tmp_path: Path) -> Iterator[Callable[..., tuple[Stack, Origin]]]:
    """Factory: an origin serving ``serve`` (name -> file), the rug-pull server at rev 1, and an
    Envoy whose toolseal filters fetch ``modules`` (data, admin) pinned to ``digests``. All
    stopped by PID afterwards, in reverse order."""
    started: list[Any] = []

    def make(*, serve: dict[str, Path], modules: tuple[str, str], digests: tuple[str, str],
             origin_up: bool = True, elsewhere: tuple[int, tuple[str, str]] | None = None
             ) -> tuple[Stack, Origin]:
        """``elsewhere``: (port, (data url, admin url)) of another origin on 127.0.0.1 (a
        registry); the local one is then not started."""
        workdir = tmp_path / f"remote{len(started)}"
        served = workdir / "origin-root"
        served.mkdir(parents=True)
        for name, source in serve.items():
            shutil.copyfile(source, served / name)
        origin = Origin(served, workdir)
        if origin_up and elsewhere is None:
            started.append(origin)
            origin.start()
        upstream = Upstream(workdir)
        started.append(upstream)
        upstream.start()
        route = McpRoute("demo", upstream.port)
        config = envoyctl.default_plugin_config()
        listen_port, admin_port, admin_api_port = free_port(), free_port(), free_port()
        origin_port, urls = elsewhere or (origin.port, (origin.url(modules[0]), origin.url(modules[1])))
        text = render_remote(
            listen_port=listen_port, admin_port=admin_port, admin_api_port=admin_api_port,
            routes=[route], plugin_config=config, origin_port=origin_port,
            wasm_url=urls[0], wasm_sha256=digests[0],
            admin_wasm_url=urls[1], admin_wasm_sha256=digests[1])
        envoy = envoyctl.start(text, workdir / "envoy", admin_port=admin_port,
                               listen_port=listen_port, admin_api_port=admin_api_port)
        started.append(envoy)
        stack = Stack(upstream, envoy, Admin(envoy.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN), route)
        return stack, origin

    yield make
    for process in reversed(started):
        process.stop()


def _serve_and_pin(wasm: Path) -> dict[str, Any]:
    data, admin = _modules(wasm)
    serve = {data.name: data, admin.name: admin}
    return {"serve": serve, "modules": (data.name, admin.name),
            "digests": (_sha256(data), _sha256(admin))}


@pytest.mark.anyio
async def test_module_fetched_by_sha256_runs_the_rug_pull_story(
        wasm: Path, remote_stacks: Callable[..., tuple[Stack, Origin]]) -> None:
    setup = _serve_and_pin(wasm)
    stack, origin = remote_stacks(**setup)
    # Envoy fetched every module it was given from the origin, and loaded what it fetched.
    assert {path for path, status in origin.gets() if status == 200} == {
        f"/{name}" for name in setup["modules"]}
    stats = stack.envoy.stats()
    assert stats["wasm.remote_load_fetch_successes"] >= 1, stats
    assert stats.get("wasm.remote_load_fetch_failures", 0) == 0
    assert stats["wasm.envoy.wasm.runtime.v8.active"] >= 1

    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("verified", FP1)

    stack.upstream.restart(rev=2)
    async with mcp_client(stack.mcp_url) as client:
        listed = await client.list_tools()
        assert listed.tools == []
        assert list_status_meta(listed)["schema_status"] == "changed"
        before = stack.upstream_requests()
        result = await client.call("get_weather", {"city": "Paris", "notes": "id_rsa contents"})
        assert_denied(result, "SCHEMA_CHANGED", tool="get_weather", schema_status="changed",
                      required_action="admin_review")
        assert stack.upstream_requests() == before
    assert stack.upstream.calls() == []
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", FP1, FP2)
    changed = wait_for_audit(stack, "schema.changed")
    assert (changed["baseline"], changed["live"]) == (FP1, FP2)
    assert counter(stack, "calls_denied_schema_changed") == 1


def _requests_seen(upstream: Upstream) -> list[dict[str, Any]]:
    """Every entry of the MCP server's own log but the revision it announces at start: each
    HTTP request it received (``http``) and each tool it ran (``tools/call``)."""
    return [e for e in upstream.events() if e.get("event") != "revision"]


def _tampered(wasm: Path, directory: Path) -> Path:
    """The module plus a custom section: another valid module under the same name."""
    directory.mkdir(parents=True, exist_ok=True)
    name, payload = b"toolseal-test", b"not the reviewed module"
    section = bytes([len(name)]) + name + payload
    tampered = directory / wasm.name
    tampered.write_bytes(wasm.read_bytes() + bytes([0, len(section)]) + section)
    return tampered


@pytest.mark.parametrize("case", ["wrong-sha256", "other-module-at-the-url", "origin-down"])
def test_a_module_that_does_not_match_its_sha256_loads_nothing_and_serves_nothing(
        wasm: Path, remote_stacks: Callable[..., tuple[Stack, Origin]], tmp_path: Path,
        case: str) -> None:
    setup = _serve_and_pin(wasm)
    if case == "wrong-sha256":
        setup["digests"] = (hashlib.sha256(b"some other module").hexdigest(),) * 2
    elif case == "other-module-at-the-url":
        tampered = _tampered(wasm, tmp_path / "tampered")
        setup["serve"] = {name: tampered for name in setup["serve"]}
    # Envoy starts and says it is ready: the configuration is not refused.
    stack, origin = remote_stacks(**setup, origin_up=case != "origin-down")
    assert envoyctl.http_get(f"{stack.envoy.admin_url}/ready")[0] == 200
    stats = stack.envoy.stats()
    assert stats.get("wasm.remote_load_fetch_successes", 0) == 0, stats
    assert stats["wasm.remote_load_fetch_failures"] >= 1, stats
    assert stats.get("wasm.envoy.wasm.runtime.v8.active", 0) == 0, "a VM was created"
    if case != "origin-down":
        # It did fetch the bytes (HTTP 200), each filter once plus its retries, and refused them.
        assert sorted(origin.gets()) == sorted(
            (f"/{name}", 200) for name in setup["modules"] for _ in range(FETCHES_PER_FILTER))
    log = stack.envoy.log_text()
    assert "Retry limit exceeded for fetching data from remote data source" in log
    assert "Plugin toolseal failed to load" in log and "Plugin toolseal-admin failed to load" in log
    assert "Plugin configured to fail closed failed to load" in log

    # Both listeners are bound and answer every request themselves: 503, nothing else.
    session_headers = {"accept": "application/json, text/event-stream",
                       "content-type": "application/json"}
    requests = [
        ("POST", stack.mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"}}}),
        ("POST", stack.mcp_url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ("POST", stack.mcp_url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get_weather", "arguments": {"city": "Paris", "notes": "id_rsa contents"}}}),
        ("GET", stack.mcp_url, None),
        ("GET", f"{stack.envoy.admin_api_url}/toolseal/servers", None),
    ]
    for method, url, body in requests:
        headers = dict(session_headers)
        if "/toolseal/" in url:
            headers["authorization"] = f"Bearer {envoyctl.DEMO_ADMIN_TOKEN}"
        response = httpx.request(method, url, json=body, headers=headers, timeout=5)
        assert (response.status_code, response.content) == (503, b""), (method, url, response.text)

    # Nothing reached the MCP server: its own log has no request at all, Envoy sent none.
    time.sleep(0.3)
    assert _requests_seen(stack.upstream) == []
    assert stack.upstream_requests() == 0
    # Envoy gave up on the module: no later fetch, and the listener stays closed.
    seen = origin.gets()
    time.sleep(1.5)
    assert origin.gets() == seen
    assert httpx.post(stack.mcp_url, json=requests[1][2], headers=session_headers,
                      timeout=5).status_code == 503
    assert _requests_seen(stack.upstream) == []


@pytest.mark.anyio
async def test_plain_envoy_fetches_the_module_from_the_registry_that_holds_its_image(
        wasm: Path, remote_stacks: Callable[..., tuple[Stack, Origin]], tmp_path: Path,
        tools: dict[str, str], registry: str) -> None:
    """One pushed image serves both kinds of consumer: the artifact variant's wasm layer is the
    module itself, so plain Envoy can fetch it from the registry's blob URL with the layer
    digest as its sha256. Here an anonymous plain-HTTP registry serves the blob itself; a
    registry whose blob GET needs a bearer token, or answers with a redirect to its storage,
    is not tried."""
    out = tmp_path / "oci"
    result = subprocess.run([str(envoyctl.REPO / "scripts" / "oci-image.sh"), str(wasm),
                             "--out", str(out)], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    [image] = json.loads((out / "images.json").read_text())["images"]
    push = subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                           f"oci-archive:{image['archive']}", f"docker://{registry}/toolseal:latest"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert push.returncode == 0, push.stderr
    layer = image["layer"]
    blob_url = f"http://{registry}/v2/toolseal/blobs/{layer}"
    port = int(registry.rsplit(":", 1)[1])
    stack, _ = remote_stacks(serve={}, modules=(wasm.name, wasm.name),
                             digests=(layer.split(":", 1)[1],) * 2,
                             elsewhere=(port, (blob_url, blob_url)))
    stats = stack.envoy.stats()
    assert stats["wasm.remote_load_fetch_successes"] >= 1, stats
    assert stats.get("wasm.remote_load_fetch_failures", 0) == 0
    async with mcp_client(stack.mcp_url) as client:
        assert await client.tool_names() == REV1_TOOLS
    assert status_of(stack.admin.server("demo")) == "verified"
