"""MCP request and response bodies for the Envoy benchmark.

Design decision: the tools are generated the way ``toolseal bench`` generates them
(host-test/src/bench/workload.rs: same names, shapes and sizes), so the per-message figures
of the wasmtime benchmark and the Envoy figures describe the same traffic. Everything is
deterministic: no randomness, no recorded files.
"""

from __future__ import annotations

import json
from typing import Any

SESSION = "bench-session-0001"
CALLED_TOOL = "create_document_0000"
VERBS = ["create", "search", "update", "delete", "list", "fetch", "summarize", "export"]
NOUNS = ["document", "issue", "ticket", "invoice", "user", "file", "event", "report"]


def tool(index: int) -> dict[str, Any]:
    """One generated tool definition (``index`` picks name, shape and size)."""
    verb = VERBS[index % len(VERBS)]
    noun = NOUNS[(index // len(VERBS)) % len(NOUNS)]
    properties: dict[str, Any] = {
        "content": {"type": "string", "description": f"Body of the {noun}, plain text or Markdown"},
        "title": {"type": "string", "description": f"Title of the {noun}", "maxLength": 200},
    }
    extra = index % 5
    if extra >= 1:
        properties["limit"] = {"type": "integer", "minimum": 1, "maximum": 500, "default": 20,
                               "description": "Maximum number of results"}
    if extra >= 2:
        properties["status"] = {"type": "string", "enum": ["open", "closed", "draft", "archived"],
                                "description": "Lifecycle state filter"}
    if extra >= 3:
        properties["tags"] = {"type": "array", "items": {"type": "string", "maxLength": 64},
                              "maxItems": 50, "description": "Labels to attach"}
    if extra >= 4:
        properties["notify"] = {"type": "boolean", "description": "Send a notification to watchers"}
    definition: dict[str, Any] = {
        "name": f"{verb}_{noun}_{index:04d}",
        "description": (
            f"{verb.capitalize()} a {noun} in the workspace. Use it when the user asks to {verb} "
            f"{noun}s; returns the {noun} id and a short summary. Tool number {index}."
        ),
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": ["title"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }
    if index % 3 == 0:
        definition["annotations"] = {"readOnlyHint": verb in ("search", "list"), "openWorldHint": False}
    return definition


def tools(count: int) -> list[dict[str, Any]]:
    """``count`` generated tools."""
    return [tool(i) for i in range(count)]


def compact(value: Any) -> str:
    """JSON without spaces, as servers send it."""
    return json.dumps(value, separators=(",", ":"))


def initialize_request(request_id: int = 1) -> str:
    """The ``initialize`` that opens a 2025-06-18 session (sent without a session id: the
    server names the session in its answer)."""
    return compact({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1.0.0"}}})


def initialize_response(request_id: int = 1) -> str:
    """The server's answer to :func:`initialize_request` (it declares the tools capability)."""
    return compact({"jsonrpc": "2.0", "id": request_id, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "bench", "version": "1.0.0"}}})


def initialized_notification() -> str:
    """The ``notifications/initialized`` a client sends once the session is open."""
    return compact({"jsonrpc": "2.0", "method": "notifications/initialized"})


def list_request(request_id: int = 3) -> str:
    """A ``tools/list`` request body."""
    return compact({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}})


def list_response(count: int, request_id: int = 3) -> str:
    """The ``tools/list`` result with ``count`` tools."""
    return compact({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools(count)}})


def call_request(content_bytes: int = 64, request_id: int = 3) -> str:
    """A ``tools/call`` of :data:`CALLED_TOOL` with a ``content`` argument of that size."""
    text = ("lorem ipsum dolor sit amet " * (content_bytes // 27 + 1))[:content_bytes]
    return compact({
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": CALLED_TOOL, "arguments": {"title": "Quarterly report", "content": text}},
    })


def call_response(request_id: int = 3) -> str:
    """The result of the call."""
    return compact({
        "jsonrpc": "2.0", "id": request_id,
        "result": {"content": [{"type": "text", "text": "Created document 4711: Quarterly report"}],
                   "isError": False},
    })


def sse(message: str) -> str:
    """One SSE event carrying ``message``."""
    return f"event: message\ndata: {message}\n\n"


# MCP 2026-07-28: no session; every request carries its revision in a header and in
# params._meta, and Mcp-Method / Mcp-Name headers mirror the body; results carry resultType,
# lists their cache hint (the SDK default: ttlMs 0, private, which toolseal passes unchanged).
MODERN_VERSION = "2026-07-28"


def _modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def modern_list_request(request_id: int = 3) -> str:
    """A 2026-07-28 ``tools/list`` request body."""
    return compact({"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
                    "params": {"_meta": _modern_meta()}})


def modern_list_response(count: int, request_id: int = 3) -> str:
    """The 2026-07-28 ``tools/list`` result with ``count`` tools and the default cache hint."""
    return compact({"jsonrpc": "2.0", "id": request_id, "result": {
        "tools": tools(count), "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}})


def modern_call_request(content_bytes: int = 64, request_id: int = 3) -> str:
    """The 2026-07-28 form of :func:`call_request`."""
    call = json.loads(call_request(content_bytes, request_id))
    call["params"]["_meta"] = _modern_meta()
    return compact(call)


def modern_call_response(request_id: int = 3) -> str:
    """The 2026-07-28 result of the call."""
    response = json.loads(call_response(request_id))
    response["result"]["resultType"] = "complete"
    return compact(response)


def request_headers(era: str, method: str) -> dict[str, str]:
    """The MCP headers a Streamable HTTP client of that era (``2025`` or ``2026``) sends."""
    if era == "2025":
        return {"Mcp-Session-Id": SESSION, "Mcp-Protocol-Version": "2025-06-18"}
    headers = {"Mcp-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = CALLED_TOOL
    return headers
