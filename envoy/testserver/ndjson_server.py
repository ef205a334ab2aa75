"""A misbehaving MCP server: every POST is answered ``application/json`` with newline-separated
JSON-RPC messages on a stream it keeps open.

The transport allows one JSON object per ``application/json`` body (or an event stream), so a
gateway that must read the answer can never accept this one; the test that starts this server
shows that toolseal refuses it as soon as the second message starts instead of holding the
client until the stream ends. The answer to request ``id`` is written first (a tool list for
``tools/list``, an empty ``complete`` result otherwise), then, after ``--gap`` seconds,
``notifications/tools/list_changed``; the stream then stays open for ``--hold`` seconds
before it ends. Loopback only; stdlib only, so it runs in any of the project's venvs.
"""

from __future__ import annotations

import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [{"name": "echo", "description": "Echoes its input.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The first message: the result for the request's id."""
    result: dict[str, Any] = {"resultType": "complete"}
    if request.get("method") == "tools/list":
        result["tools"] = TOOLS
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


def handler(gap: float, hold: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
            pass

        def chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            length = int(self.headers.get("content-length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                self.chunk(json.dumps(answer(request)).encode() + b"\n")
                time.sleep(gap)
                self.chunk(json.dumps(NOTIFICATION).encode() + b"\n")
                deadline = time.monotonic() + hold
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                pass  # the client (or the gateway) went away

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between the two messages")
    parser.add_argument("--hold", type=float, default=30.0, help="seconds the stream stays open after")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.gap, args.hold))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
