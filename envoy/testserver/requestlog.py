"""The rug-pull servers' request log: every HTTP request and every ``tools/call`` they receive.

Shared by the SDK 1.x and 2.x rug-pull servers (plain ASGI, no MCP SDK import). A test proves
that a denied call never reached the upstream from this log, the upstream's own word, next
to Envoy's ``upstream_rq_total``.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class RequestLog:
    """Append-only JSON-lines log shared by the HTTP layer and the tool layer."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()

    def append(self, event: dict[str, Any]) -> None:
        """Write one event with a timestamp; flushed at once so tests can read it."""
        event = {"time": time.time(), **event}
        line = json.dumps(event, sort_keys=True)
        with self._lock, self._path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")


def logging_middleware(app: Any, log: RequestLog) -> Any:
    """ASGI wrapper that logs every HTTP request (with its JSON-RPC methods and the MCP
    headers that route it) as it arrives; ``/control/`` routes are not logged."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/control/"):
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        log.append(
            {
                "event": "http",
                "method": scope["method"],
                "path": scope["path"],
                "content_type": headers.get("content-type"),
                "session": headers.get("mcp-session-id"),
                "accept_encoding": headers.get("accept-encoding"),
                "last_event_id": headers.get("last-event-id"),
                "protocol_version": headers.get("mcp-protocol-version"),
                "mcp_method": headers.get("mcp-method"),
                "mcp_name": headers.get("mcp-name"),
                "jsonrpc_methods": jsonrpc_methods(body),
            }
        )
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def jsonrpc_methods(body: bytes) -> list[str]:
    """The JSON-RPC methods in a request body (``<response>`` for a response,
    ``<unparsed>`` when it is not JSON)."""
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        return ["<unparsed>"]
    messages = parsed if isinstance(parsed, list) else [parsed]
    return [m.get("method", "<response>") for m in messages if isinstance(m, dict)]
