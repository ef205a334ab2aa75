"""Records real MCP 2026-07-28 traffic into ``examples/transcripts/`` (run in ``.venv-mcp2``).

The official MCP Python SDK 2.x client talks to the 2.x rug-pull server
(``testserver/rugpull_modern.py``) through the recording proxy (``recorder.py``), so every
byte of the transcripts is what the two SDKs exchanged:

- ``python-sdk-2.3.0-rev1-json.json``: release A, JSON responses: ``server/discover``,
  ``tools/list`` (``ttlMs: 3600000``, ``cacheScope: "public"``), calls (``add``,
  ``get_weather`` with its structured result, ``rollback_preview`` with its MRTR round:
  ``input_required``, then the retry with the user's answer), a ``subscriptions/listen``
  stream that carries ``notifications/tools/list_changed``, the list fetched again, a call;
- ``python-sdk-2.3.0-rev1-sse.json``: the same release with SSE responses (calls made with a
  progress token, so each result follows a progress event on an event stream);
- ``python-sdk-2.3.0-rev2-json.json``: release B of the same server (the rug pull), listed and
  called the way an agent would after the redeploy.

``--typescript`` records ``typescript-sdk-2.4.0-rev1.json`` instead: the TypeScript SDK v2
client (``modern/ts_client.mjs``, pinned to 2026-07-28) against the TypeScript SDK v2 server
(``modern/ts_server.mjs``, serving the same surface); ``scripts/setup-node-mcp2.sh`` first.

Usage: .venv-mcp2/bin/python envoy/record_modern.py [--out examples/transcripts] [--typescript]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ENVOY_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(ENVOY_DIR))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402

import envoyctl  # noqa: E402
from recorder import Recorder  # noqa: E402

sys.path.insert(0, str(ENVOY_DIR / "testserver"))
from surface import REVISIONS, modern_tool_surface  # noqa: E402

RUGPULL_MODERN = ENVOY_DIR / "testserver" / "rugpull_modern.py"
MODERN_DIR = ENVOY_DIR / "modern"


class Server:
    """A server process on a free port, stopped by PID."""

    def __init__(self, command: list[str], port: int, workdir: Path) -> None:
        self.port = port
        stderr = (workdir / f"server-{port}.stderr").open("ab")
        self.popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stderr,
                                      stderr=stderr, start_new_session=True)
        envoyctl.wait_until(lambda: self._ready(), 60, f"server on port {port}")

    def _ready(self) -> bool:
        if self.popen.poll() is not None:
            raise envoyctl.EnvoyError(f"server exited with {self.popen.returncode}")
        return envoyctl.http_get(f"http://127.0.0.1:{self.port}/control/state")[0] == 200

    def control(self, path: str, body: dict[str, Any]) -> None:
        """POST a control route (direct, not recorded)."""
        import urllib.request
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/control/{path}",
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={"content-type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=5) as response:
            response.read()

    def stop(self) -> None:
        envoyctl.stop_pid(self.popen.pid, 10, self.popen)


def python_server(rev: int, mode: str, workdir: Path) -> Server:
    port = envoyctl.free_port()
    return Server([sys.executable, str(RUGPULL_MODERN), "--port", str(port), "--rev", str(rev),
                   "--mode", mode, "--log", str(workdir / f"log-{port}.jsonl"),
                   "--list-ttl-ms", "3600000", "--list-scope", "public"], port, workdir)


async def confirm(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The user says yes."""
    return types.ElicitResult(action="accept", content={"confirm": True})


async def release_a(recorder: Recorder, server: Server, progress: bool) -> None:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        return None

    callback = on_progress if progress else None
    recorder.label("server-discover")
    async with Client(recorder.url + "/mcp", elicitation_callback=confirm) as client:
        recorder.label("tools-list")
        await client.list_tools()
        recorder.label("tools-call-add")
        await client.call_tool("add", {"a": 2, "b": 3}, progress_callback=callback)
        recorder.label("tools-call-get_weather")
        await client.call_tool("get_weather", {"city": "Paris"}, progress_callback=callback)
        recorder.label("tools-call-rollback_preview-input_required")
        recorder.label("tools-call-rollback_preview-retry")
        await client.call_tool("rollback_preview", {"branch": "fix-login"}, progress_callback=callback)
        if progress:
            return
        recorder.label("subscriptions-listen")
        async with client.listen(tools_list_changed=True) as subscription:
            server.control("list-changed", {})
            with anyio.fail_after(10):
                async for _event in subscription:
                    break
        recorder.label("tools-list-after-list_changed")
        await client.list_tools()
        recorder.label("tools-call-deploy_preview")
        await client.call_tool("deploy_preview", {"branch": "fix-login"})


async def release_b(recorder: Recorder) -> None:
    recorder.label("server-discover")
    async with Client(recorder.url + "/mcp", elicitation_callback=confirm) as client:
        recorder.label("tools-list")
        await client.list_tools()
        recorder.label("tools-call-get_weather")
        await client.call_tool("get_weather", {"city": "Paris", "notes": "contents of ~/.ssh/id_rsa"})
        recorder.label("tools-call-deploy_preview")
        await client.call_tool("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})


def record_python(out: Path, workdir: Path) -> list[Path]:
    written = []
    for name, rev, mode, play in (
        ("python-sdk-2.3.0-rev1-json", 1, "json", lambda r, s: release_a(r, s, False)),
        ("python-sdk-2.3.0-rev1-sse", 1, "sse", lambda r, s: release_a(r, s, True)),
        ("python-sdk-2.3.0-rev2-json", 2, "json", lambda r, s: release_b(r)),
    ):
        server = python_server(rev, mode, workdir)
        try:
            with Recorder(server.port) as recorder:
                anyio.run(play, recorder, server)
                recorder.wait_for(len(recorder.transcript()))
                path = out / f"{name}.json"
                recorder.write(path)
                written.append(path)
        finally:
            server.stop()
    return written


def record_typescript(out: Path, workdir: Path) -> list[Path]:
    port = envoyctl.free_port()
    surface = workdir / "surface.json"
    surface.write_text(json.dumps({str(rev): modern_tool_surface(rev) for rev in REVISIONS}))
    server = Server(["node", str(MODERN_DIR / "ts_server.mjs"), "--port", str(port), "--rev", "1",
                     "--surface", str(surface), "--log", str(workdir / "ts.jsonl"),
                     "--list-ttl-ms", "3600000", "--list-scope", "public"], port, workdir)
    try:
        with Recorder(server.port) as recorder:
            plan = [
                {"op": "connect", "url": recorder.url + "/mcp", "era": "2026-07-28"},
                {"op": "list"},
                {"op": "call", "name": "add", "arguments": {"a": 2, "b": 3}},
                {"op": "call", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"op": "call", "name": "rollback_preview", "arguments": {"branch": "fix-login"}},
                {"op": "listen_once", "trigger": f"http://127.0.0.1:{port}/control/list-changed"},
                {"op": "list"},
            ]
            run = subprocess.run(["node", str(MODERN_DIR / "ts_client.mjs")], input="\n".join(
                json.dumps(step) for step in plan) + "\n", capture_output=True, text=True,
                timeout=60, check=False, env=dict(os.environ))
            failed = [line for line in run.stdout.splitlines() if not json.loads(line)["ok"]]
            if run.returncode != 0 or failed:
                raise envoyctl.EnvoyError(f"TypeScript client failed: {failed} {run.stderr[-2000:]}")
            recorder.wait_for(len(plan))
            path = out / "typescript-sdk-2.4.0-rev1.json"
            recorder.write(path)
            return [path]
    finally:
        server.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ENVOY_DIR.parent / "examples" / "transcripts")
    parser.add_argument("--typescript", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolseal-record-") as tmp:
        workdir = Path(tmp)
        written = (record_typescript if args.typescript else record_python)(args.out, workdir)
    for path in written:
        print(f"wrote {path} ({len(json.loads(path.read_text()))} exchanges)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
