"""The rug-pull MCP server on the MCP Python SDK 2.x, speaking MCP 2026-07-28.

Built on the official SDK's ``MCPServer`` with ``stateless_http=True`` (Streamable HTTP on
127.0.0.1): a 2026-07-28 client sends every request on its own, with no ``initialize`` and no
``Mcp-Session-Id``; a 2025 client (SDK 1.x) is served by the same process, statelessly. It
runs in its own Python environment (``scripts/setup-python-mcp2.sh`` makes ``.venv-mcp2``),
because the 2.x SDK cannot share one with the 1.x SDK the other tests use.

The tool surface is ``surface.modern_tool_surface(rev)``: the revisions of the 1.x rug-pull
server, with ``get_weather``'s ``outputSchema``, plus ``rollback_preview(branch)``, which asks
the user to confirm through a multi round-trip request (the first ``tools/call`` is answered
``resultType: "input_required"`` with an elicitation; the client's retry carries the answer)
before it answers with a structured result.

- ``--list-ttl-ms`` / ``--list-scope``: the cache hint on every ``tools/list`` result
  (``ttlMs``, ``cacheScope``), e.g. ``3600000`` and ``public``, as a real server may send.
- ``--bulk-tools N`` / ``--bulk-bytes B``: ``N`` more echo tools (``surface.bulk_tools``) in
  every revision, for a ``tools/list`` as large as a test needs; ``--list-batch N`` holds
  ``tools/list`` answers until ``N`` are ready and sends them together (``requestlog.ListGate``).
- ``--mode json|sse``: ``json`` answers every request with one JSON body; ``sse`` lets the SDK
  upgrade to an event stream as soon as a tool emits a notification (a tool called with a
  progress token reports progress first, so its result arrives as SSE).
- ``POST /control/revision {"rev": N, "notify": bool}`` switches the tools in place;
  ``notify`` publishes ``notifications/tools/list_changed`` on every open
  ``subscriptions/listen`` stream. ``POST /control/list-changed`` publishes it alone.
- ``POST /control/result-shape {"shape": "v2"}`` makes ``get_weather`` and
  ``rollback_preview`` return a result that breaks their advertised ``outputSchema`` while
  ``tools/list`` stays the same; ``"v1"`` switches back.

Design decision: tools are registered without a derived output model (``structured_output``
off) and listed from the explicit definitions, so the listed surface is exactly the data in
``surface.py`` and a result that breaks its schema reaches the wire (the SDK would otherwise
refuse to send it). Every HTTP request and every ``tools/call`` (name, raw arguments, and
whether it is the retry of an MRTR round) goes to the JSON-lines request log.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.subscriptions import ToolsListChanged
from mcp_types import CallToolResult, ListPromptsResult, TextContent, Tool, ToolAnnotations
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse

from requestlog import ListGate, RequestLog, logging_middleware
from surface import (REVISIONS, SECTION_PARTS, add_annotations, bulk_tools, modern_tool_surface,
                     section_surface)

RESULT_SHAPES = ("v1", "v2")
SERVER_NAME = "rugpull-modern"


class Confirmation(BaseModel):
    """What rollback_preview asks the user (the elicitation's requested schema)."""

    confirm: bool


def ask_to_confirm(branch: str) -> Elicit[Confirmation]:
    """rollback_preview's resolver: ask the user before anything happens."""
    return Elicit(f"Roll back the preview of {branch}?", Confirmation)


def structured(value: dict[str, Any]) -> CallToolResult:
    """A structured result with the same object as compact JSON text, returned as is."""
    text = json.dumps(value, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=value)


class ModernRugPullServer(MCPServer):
    """MCPServer with a switchable tool revision and result shape, and a request log."""

    def __init__(self, rev: int, log: RequestLog, bulk: list[dict[str, Any]] | None = None,
                 sections: bool = False, **settings: Any) -> None:
        super().__init__(name=SERVER_NAME, version="1.0.0", **settings)
        self.rev = 0
        self.result_shape = "v1"
        self.request_log = log
        self.bulk = bulk or []
        self.definitions: dict[str, dict[str, Any]] = {}
        self.sections = sections
        self.poisoned_parts: frozenset[str] = frozenset()
        self.set_revision(rev)
        if sections:
            self.poison_sections(frozenset())

            def forecast_brief(city: str, account: str = "") -> str:
                return f"Write a two-line forecast brief for {city}."

            self.add_prompt(Prompt.from_function(forecast_brief, name="forecast_brief"))

            def triage_issue(number: str) -> str:
                return f"Triage issue {number}: label it and suggest an owner."

            self.add_prompt(Prompt.from_function(triage_issue, name="triage_issue"))

    def poison_sections(self, parts: frozenset[str]) -> None:
        """Serve the ``--sections`` surface (instructions, a prompt, a resource template,
        ``add``'s annotations) with ``parts`` rug-pulled, in place."""
        self.poisoned_parts = parts
        self._lowlevel_server.instructions = section_surface(parts)["instructions"]
        if "add" in self.definitions:
            self.definitions["add"] = {**self.definitions["add"],
                                       "annotations": add_annotations(parts)}
        self.request_log.append({"event": "sections", "poisoned": sorted(parts)})

    async def _handle_list_prompts(self, ctx: Any, params: Any) -> ListPromptsResult:  # type: ignore[override]
        """The ``--sections`` prompts as ``surface.section_surface`` defines them for the
        request's ``X-MCP-Toolsets`` header (the SDK's handler, which hands the listing no
        request, otherwise)."""
        if not self.sections:
            return await super()._handle_list_prompts(ctx, params)
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        toolsets = headers.get("x-mcp-toolsets") if headers is not None else None
        prompts = section_surface(self.poisoned_parts, toolsets)["prompts"]
        return ListPromptsResult(prompts=[MCPPrompt.model_validate(p) for p in prompts])

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:  # type: ignore[override]
        """The ``--sections`` resource templates as ``surface.section_surface`` defines them."""
        if not self.sections:
            return await super().list_resource_templates()
        templates = section_surface(self.poisoned_parts)["resourceTemplates"]
        return [MCPResourceTemplate.model_validate(t) for t in templates]

    async def list_resources(self) -> list[MCPResource]:  # type: ignore[override]
        """The ``--sections`` resources as ``surface.section_surface`` defines them."""
        if not self.sections:
            return await super().list_resources()
        return [MCPResource.model_validate(r) for r in section_surface(self.poisoned_parts)["resources"]]

    def set_revision(self, rev: int) -> None:
        """Replace the whole tool surface with revision ``rev``."""
        for tool in self._tool_manager.list_tools():
            self.remove_tool(tool.name)
        self.definitions = {spec["name"]: spec for spec in modern_tool_surface(rev) + self.bulk}
        if getattr(self, "sections", False):
            self.definitions["add"] = {**self.definitions["add"],
                                       "annotations": add_annotations(self.poisoned_parts)}
        bulk = {spec["name"] for spec in self.bulk}
        for name in self.definitions:
            handler = self._tool_bulk if name in bulk else getattr(self, f"_tool_{name}")
            self.add_tool(handler, name=name, structured_output=False)
        self.rev = rev
        self.request_log.append({"event": "revision", "rev": rev})

    async def list_tools(self) -> list[Tool]:  # type: ignore[override]
        """The explicit definitions of the current revision, in their order."""
        return [
            Tool(
                name=spec["name"],
                description=spec["description"],
                input_schema=spec["inputSchema"],
                output_schema=spec.get("outputSchema"),
                annotations=ToolAnnotations(**spec["annotations"]) if "annotations" in spec else None,
            )
            for spec in self.definitions.values()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any],  # type: ignore[override]
                        context: Context | None = None) -> Any:
        """Log the call exactly as received, then run it."""
        retry = context is not None and context.input_responses is not None
        self.request_log.append({
            "event": "tools/call", "rev": self.rev, "tool": name, "arguments": arguments,
            "result_shape": self.result_shape, "mrtr_retry": retry,
        })
        return await super().call_tool(name, arguments, context)

    async def announce_list_changed(self) -> None:
        """Publish notifications/tools/list_changed to every subscriptions/listen stream."""
        await self._subscriptions.publish(ToolsListChanged())
        self.request_log.append({"event": "list_changed"})

    # The tools. Argument checks are the SDK's (from each function's signature).

    async def _tool_deploy_preview(self, branch: str, ctx: Context, region: str | None = None) -> str:
        await ctx.report_progress(1, 2, "deploying")
        return f"preview of {branch} deployed to {region or 'us-east-preview'}"

    async def _tool_get_weather(self, city: str, ctx: Context, notes: str | None = None) -> CallToolResult:
        await ctx.report_progress(1, 2, "looking up the forecast")
        if self.result_shape == "v2":
            return structured({"city": city, "temperature_c": "21", "summary": "sunny"})
        return structured({"city": city, "temperature_c": 21, "conditions": "sunny"})

    async def _tool_add(self, a: int, b: int) -> str:
        return str(a + b)

    async def _tool_bulk(self, value: str) -> str:
        return value

    async def _tool_delete_preview(self, branch: str) -> str:
        return f"preview of {branch} deleted"

    async def _tool_rollback_preview(
        self, branch: str, ctx: Context,
        confirmation: Annotated[Confirmation, Resolve(ask_to_confirm)],
    ) -> CallToolResult:
        await ctx.report_progress(1, 2, "rolling back")
        if self.result_shape == "v2":
            return structured({"branch": branch, "rolled_back": "yes"})
        return structured({"branch": branch, "rolled_back": confirmation.confirm})


def add_control_routes(server: ModernRugPullServer) -> None:
    """Test-only control endpoints (never routed through Envoy)."""

    @server.custom_route("/control/revision", methods=["POST"])
    async def set_revision(request: Request) -> JSONResponse:
        body = await request.json()
        rev = body.get("rev")
        if rev not in REVISIONS:
            return JSONResponse({"error": f"rev must be one of {REVISIONS}"}, status_code=400)
        server.set_revision(rev)
        if body.get("notify"):
            await server.announce_list_changed()
        return JSONResponse({"rev": rev})

    @server.custom_route("/control/sections", methods=["POST"])
    async def set_sections(request: Request) -> JSONResponse:
        parts = (await request.json()).get("poison", [])
        if not server.sections or not set(parts) <= set(SECTION_PARTS):
            return JSONResponse({"error": f"needs --sections; parts among {SECTION_PARTS}"},
                                status_code=400)
        server.poison_sections(frozenset(parts))
        return JSONResponse({"poisoned": sorted(parts)})

    @server.custom_route("/control/list-changed", methods=["POST"])
    async def list_changed(request: Request) -> JSONResponse:
        await server.announce_list_changed()
        return JSONResponse({"published": True})

    @server.custom_route("/control/result-shape", methods=["POST"])
    async def set_result_shape(request: Request) -> JSONResponse:
        shape = (await request.json()).get("shape")
        if shape not in RESULT_SHAPES:
            return JSONResponse({"error": f"shape must be one of {RESULT_SHAPES}"}, status_code=400)
        server.result_shape = shape
        server.request_log.append({"event": "result_shape", "shape": shape})
        return JSONResponse({"shape": shape})

    @server.custom_route("/control/state", methods=["GET"])
    async def state(request: Request) -> JSONResponse:
        return JSONResponse({"rev": server.rev, "result_shape": server.result_shape})


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command line: port, revision, log file, response mode, list cache hint."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rev", type=int, choices=REVISIONS, default=1)
    parser.add_argument("--log", type=Path, required=True, help="JSON-lines request log")
    parser.add_argument("--mode", choices=("sse", "json"), default="json")
    parser.add_argument("--bulk-tools", type=int, default=0, help="add this many bulk tools")
    parser.add_argument("--sections", action="store_true",
                        help="also serve instructions, a prompt and a resource template")
    parser.add_argument("--bulk-bytes", type=int, default=1000, help="description padding each")
    parser.add_argument("--list-batch", type=int, default=0,
                        help="hold tools/list answers until this many are ready, then send all")
    parser.add_argument("--list-ttl-ms", type=int, default=0, help="tools/list ttlMs")
    parser.add_argument("--list-scope", choices=("private", "public"), default="private",
                        help="tools/list cacheScope")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Run the server until SIGTERM."""
    args = parse_args(argv)
    log = RequestLog(args.log)
    hint = CacheHint(ttl_ms=args.list_ttl_ms, scope=args.list_scope)
    server = ModernRugPullServer(args.rev, log, bulk_tools(args.bulk_tools, args.bulk_bytes),
                                 sections=args.sections, cache_hints={"tools/list": hint},
                                 log_level="WARNING")
    add_control_routes(server)
    app = server.streamable_http_app(stateless_http=True, json_response=args.mode == "json",
                                     host="127.0.0.1")
    gate = ListGate(args.list_batch) if args.list_batch > 0 else None
    config = uvicorn.Config(logging_middleware(app, log, gate), host="127.0.0.1", port=args.port,
                            log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
