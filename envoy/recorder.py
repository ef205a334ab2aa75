"""A recording HTTP/1.1 proxy: real MCP traffic, byte for byte, in toolseal's transcript format.

The recorder sits between a real MCP client and a real MCP server on loopback and writes
every exchange as the transcript format ``toolseal replay`` reads (``examples/transcripts/``):
``http_method``, ``path``, ``request_headers`` (``[[name, value], …]`` in the order and
spelling the client sent), ``request_body``, ``status``, ``response_headers`` (as the server
sent them, ``Transfer-Encoding: chunked`` included) and ``response_body_raw`` (the de-chunked
body, SSE framing intact), plus fields the replay ignores: ``seq``, ``label``, ``t_ms``,
``reason``, ``http_version``, ``response_content_type``, ``response_kind``, ``messages`` (the
JSON-RPC messages of the body) and ``sse_events`` (one entry per event, with its raw lines).

Design decision: standard library only (asyncio streams), so it runs in either Python
environment, and a pass-through, not a re-encoder: the bytes the client receives are the bytes
the server sent, forwarded as they arrive (an SSE stream reaches the client event by event);
the recorder only keeps a copy. An exchange is numbered when its request starts and written
when its response ends or the client hangs up (a ``subscriptions/listen`` stream ends that
way), so ``seq`` is the order in which the client sent its requests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

HEAD_LIMIT = 64 * 1024


class RecorderError(RuntimeError):
    """The recorder could not start, or saw HTTP it cannot forward faithfully."""


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    """One HTTP head (start line + headers, through the blank line); None at a clean EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as err:
        if err.partial.strip():
            raise RecorderError("connection closed inside an HTTP head") from err
        return None
    if len(head) > HEAD_LIMIT:
        raise RecorderError("HTTP head over 64 KiB")
    return head


def _parse_head(head: bytes) -> tuple[str, list[list[str]]]:
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers.append([name, value.strip()])
    return lines[0], headers


def _header(headers: list[list[str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


async def _forward_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        headers: list[list[str]], until_eof: bool, body: bytearray) -> bool:
    """Copy one message body from ``reader`` to ``writer`` as it arrives, keeping the
    de-chunked bytes in ``body``; returns whether it ended normally (False: a side hung up)."""
    try:
        if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                chunk = await reader.readexactly(size + 2) if size else b""
                trailer = b"" if size else await reader.readuntil(b"\r\n")
                writer.write(size_line + chunk + trailer)
                await writer.drain()
                if not size:
                    return True
                body += chunk[:-2]
        length = _header(headers, "content-length")
        if length is not None:
            body += await reader.readexactly(int(length))
            writer.write(body)
            await writer.drain()
            return True
        if until_eof:
            while data := await reader.read(65536):
                body += data
                writer.write(data)
                await writer.drain()
        return True
    except (asyncio.IncompleteReadError, ConnectionError):
        return False


def _sse_events(text: str) -> list[dict[str, Any]]:
    """The events of an SSE body (for readers of the transcript; the replay parses the raw)."""
    events: list[dict[str, Any]] = []
    lines: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line:
            lines.append(line)
            continue
        if lines:
            fields: dict[str, Any] = {"id": None, "event": "message", "data": None, "retry": None}
            data = []
            for raw in lines:
                if raw.startswith(":"):
                    continue
                name, _, value = raw.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data":
                    data.append(value)
                elif name in ("id", "event", "retry"):
                    fields[name] = value
            fields["data"] = "\n".join(data) if data else None
            fields["lines"] = lines
            events.append(fields)
            lines = []
    return events


def _messages(content_type: str, body: str, events: list[dict[str, Any]]) -> list[Any]:
    texts = [e["data"] for e in events if e["data"]] if content_type == "text/event-stream" else [body]
    messages = []
    for text in texts:
        try:
            messages.append(json.loads(text))
        except ValueError:
            continue
    return messages


def _default_label(http_method: str, body: bytes) -> str:
    """``tools-call-NAME``, ``tools-list``, … from the JSON-RPC request; else the HTTP method."""
    try:
        message = json.loads(body)
    except ValueError:
        return http_method.lower()
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return http_method.lower()
    label = message["method"].replace("/", "-")
    name = (message.get("params") or {}).get("name") if isinstance(message.get("params"), dict) else None
    return f"{label}-{name}" if isinstance(name, str) else label


class Recorder:
    """The proxy on 127.0.0.1:``port`` in front of 127.0.0.1:``upstream_port``, on its own
    thread and event loop; ``label(name)`` names the next exchange (else it is named after its
    JSON-RPC method); ``transcript()`` is the
    recording so far, in ``seq`` order."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self._exchanges: list[dict[str, Any]] = []
        self._next_seq = 0
        self._labels: list[str] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> "Recorder":
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port = future.result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    @property
    def url(self) -> str:
        """The recorder's base URL (the client connects here)."""
        return f"http://127.0.0.1:{self.port}"

    def label(self, name: str) -> None:
        """The label of the next request the client sends."""
        with self._lock:
            self._labels.append(name)

    def transcript(self) -> list[dict[str, Any]]:
        """Every finished exchange, in the order the requests were sent."""
        with self._lock:
            return sorted(self._exchanges, key=lambda e: e["seq"])

    def wait_for(self, count: int, timeout: float = 10) -> None:
        """Until ``count`` exchanges are finished (bounded)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._exchanges) >= count:
                    return
            time.sleep(0.01)
        raise RecorderError(f"fewer than {count} exchanges after {timeout:.0f}s")

    def write(self, path: Path) -> None:
        """The transcript as a JSON file (one exchange per array element)."""
        path.write_text(json.dumps(self.transcript(), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _now_ms(self) -> float:
        return round((time.monotonic() - self._started) * 1000, 1)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream_r, upstream_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            while await self._exchange(client_r, client_w, upstream_r, upstream_w):
                pass
        except (RecorderError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (upstream_w, client_w):
                writer.close()

    async def _exchange(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                        upstream_r: asyncio.StreamReader, upstream_w: asyncio.StreamWriter) -> bool:
        head = await _read_head(client_r)
        if head is None:
            return False
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            label = self._labels.pop(0) if self._labels else None
        started = self._now_ms()
        request_line, request_headers = _parse_head(head)
        method, path, _ = request_line.split(" ", 2)
        upstream_w.write(head)
        request_body = bytearray()
        await _forward_body(client_r, upstream_w, request_headers, False, request_body)
        label = label or _default_label(method, bytes(request_body))

        response_head = await _read_head(upstream_r)
        if response_head is None:
            raise RecorderError(f"the server closed the connection without answering {method} {path}")
        status_line, response_headers = _parse_head(response_head)
        http_version, status, reason = (status_line.split(" ", 2) + [""])[:3]
        client_w.write(response_head)
        await client_w.drain()
        response_body = bytearray()
        complete = True
        if method != "HEAD" and status not in ("204", "304"):
            complete = await self._forward_response(client_r, client_w, upstream_r,
                                                    response_headers, response_body)

        content_type = (_header(response_headers, "content-type") or "").split(";")[0].strip()
        text = bytes(response_body).decode("utf-8")
        events = _sse_events(text) if content_type == "text/event-stream" else []
        exchange: dict[str, Any] = {
            "seq": seq, "label": label, "t_ms": started, "direction": "client->server",
            "http_method": method, "path": path, "request_headers": request_headers,
            "request_body": bytes(request_body).decode("utf-8"),
            "status": int(status), "reason": reason, "http_version": http_version,
            "response_headers": response_headers, "response_content_type": content_type or None,
            "response_kind": "sse" if events or content_type == "text/event-stream"
            else "json" if text else "empty",
            "t_end_ms": self._now_ms(), "response_body_raw": text,
        }
        if content_type == "text/event-stream":
            exchange["sse_events"] = events
        exchange["messages"] = _messages(content_type, text, events)
        if not complete:
            exchange["response_ended_by"] = "client hung up (stream still open)"
        with self._lock:
            self._exchanges.append(exchange)
        return complete

    @staticmethod
    async def _forward_response(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                                upstream_r: asyncio.StreamReader, headers: list[list[str]],
                                body: bytearray) -> bool:
        """Forward the response body while watching the client: a client that hangs up ends
        the exchange (an open event stream ends that way). False if it did not end normally."""
        forward = asyncio.ensure_future(_forward_body(upstream_r, client_w, headers, True, body))
        hang_up = asyncio.ensure_future(client_r.read(1))
        done, _ = await asyncio.wait({forward, hang_up}, return_when=asyncio.FIRST_COMPLETED)
        if forward in done:
            hang_up.cancel()
            # The cancelled read must be gone before the next request head is read.
            await asyncio.gather(hang_up, return_exceptions=True)
            return forward.result()
        forward.cancel()
        await asyncio.gather(forward, return_exceptions=True)
        if hang_up.result():
            raise RecorderError("the client sent a request before the response ended (pipelining)")
        return False
