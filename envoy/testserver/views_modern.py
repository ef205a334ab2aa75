"""An MCP server on the Python SDK 2.x that lists more tools to MCP 2026-07-28 callers.

Real servers list different tools to different kinds of caller on purpose (the MCP reference
conformance server lists its multi round-trip tools only to 2026-07-28 callers). This one is
built on the official SDK's ``MCPServer`` (``stateless_http=True``, JSON responses, 127.0.0.1)
and decides every ``tools/list`` from the protocol version the SDK tells it the request speaks
(``ServerRequestContext.protocol_version``): a 2025 client (SDK 1.x, or 2.x in legacy mode)
is listed ``SHARED_TOOLS``; a 2026-07-28 client ``SHARED_TOOLS + MODERN_TOOLS``. Every tool is
registered for every caller, as on such a server: what a caller may call is the gateway's
business. Run it from ``.venv-mcp2`` (``scripts/setup-python-mcp2.sh``).

Every HTTP request, every ``tools/list`` (the version seen and the names listed) and every
``tools/call`` (name, raw arguments, version seen) goes to the JSON-lines request log
(``requestlog.py``): a test proves a refused call never arrived from the server's own word.

Usage: python views_modern.py --port PORT --log FILE
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ListToolsResult, Tool

from requestlog import RequestLog, logging_middleware

SERVER_NAME = "views-modern"
MODERN_REVISION = "2026-07-28"

SHARED_TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "description": "Echoes back the message.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]}},
    {"name": "add", "description": "Adds two integers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                     "required": ["a", "b"]}},
]
MODERN_TOOLS: list[dict[str, Any]] = [
    {"name": "release_notes", "description": "The release notes of a version.",
     "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}},
                     "required": ["version"]}},
    {"name": "tag_release", "description": "Tags a release of the main branch.",
     "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}},
                     "required": ["version"]}},
]


def tools_for(revision: str) -> list[dict[str, Any]]:
    """The definitions listed to a caller speaking ``revision``."""
    return SHARED_TOOLS + (MODERN_TOOLS if revision == MODERN_REVISION else [])


class ViewsServer(MCPServer):
    """MCPServer whose ``tools/list`` depends on the request's protocol version."""

    def __init__(self, log: RequestLog, **settings: Any) -> None:
        super().__init__(name=SERVER_NAME, version="1.0.0", **settings)
        self.request_log = log
        for spec in SHARED_TOOLS + MODERN_TOOLS:
            self.add_tool(getattr(self, f"_tool_{spec['name']}"), name=spec["name"],
                          description=spec["description"], structured_output=False)

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:  # type: ignore[override]
        """The tools of the request's protocol version, as ``tools_for`` defines them."""
        specs = tools_for(ctx.protocol_version)
        self.request_log.append({"event": "tools/list", "protocol_version": ctx.protocol_version,
                                 "names": [spec["name"] for spec in specs]})
        return ListToolsResult(tools=[
            Tool(name=spec["name"], description=spec["description"], input_schema=spec["inputSchema"])
            for spec in specs
        ])

    async def call_tool(self, name: str, arguments: dict[str, Any],  # type: ignore[override]
                        context: Context | None = None) -> Any:
        """Log the call exactly as received, then run it."""
        version = context.request_context.protocol_version if context is not None else None
        self.request_log.append({"event": "tools/call", "tool": name, "arguments": arguments,
                                 "protocol_version": version})
        return await super().call_tool(name, arguments, context)

    async def _tool_echo(self, message: str) -> str:
        return message

    async def _tool_add(self, a: int, b: int) -> str:
        return str(a + b)

    async def _tool_release_notes(self, version: str) -> str:
        return f"release {version}: fixes"

    async def _tool_tag_release(self, version: str) -> str:
        return f"tagged {version}"


def main(argv: list[str]) -> int:
    """Run the server until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True, help="JSON-lines request log")
    args = parser.parse_args(argv)
    log = RequestLog(args.log)
    server = ViewsServer(log, log_level="WARNING")
    app = server.streamable_http_app(stateless_http=True, json_response=True, host="127.0.0.1")
    config = uvicorn.Config(logging_middleware(app, log), host="127.0.0.1", port=args.port,
                            log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
