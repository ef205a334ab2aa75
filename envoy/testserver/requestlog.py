"""The rug-pull servers' request log: every HTTP request and every ``tools/call`` they receive.

Shared by the SDK 1.x and 2.x rug-pull servers (plain ASGI, no MCP SDK import). A test proves
that a denied call never reached the upstream from this log, the upstream's own word, next
to Envoy's ``upstream_rq_total``. The same middleware can hold ``tools/list`` answers and send
them in batches (:class:`ListGate`, the servers' ``--list-batch``).
"""

from __future__ import annotations

import asyncio
import contextlib
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


class _Batch:
    """The answers one release of a :class:`ListGate` sends."""

    def __init__(self) -> None:
        self.count = 0
        self.event = asyncio.Event()


class ListGate:
    """Holds each finished ``tools/list`` answer until ``size`` of them are ready (or
    ``timeout`` seconds after the first of them), then sends them all at once, as a server
    that is slow to list answers a burst of agents: a gateway's workers then check those
    answers at the same moment (``tests/test_concurrency.py``). Batches follow each other."""

    def __init__(self, size: int, timeout: float = 2.0) -> None:
        self.size = size
        self.timeout = timeout
        self._batch = _Batch()

    async def wait(self) -> None:
        """Return when this answer's batch is released."""
        batch = self._batch
        batch.count += 1
        if batch.count < self.size:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(batch.event.wait(), self.timeout)
        if self._batch is batch:
            self._batch = _Batch()
        batch.event.set()


def logging_middleware(app: Any, log: RequestLog, list_gate: ListGate | None = None) -> Any:
    """ASGI wrapper that logs every HTTP request (with its JSON-RPC methods and the MCP
    headers that route it) as it arrives; ``/control/`` routes are not logged. With a
    ``list_gate``, a ``tools/list`` answer is sent whole when its batch is released."""

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

        if list_gate is None or jsonrpc_methods(body) != ["tools/list"]:
            await app(scope, replay, send)
            return
        held: list[dict[str, Any]] = []

        async def send_when_released(message: dict[str, Any]) -> None:
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                await list_gate.wait()
                for one in held:
                    await send(one)

        await app(scope, replay, send_when_released)

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
