"""The MCP Python SDK 2.x client (``mcp.Client``), driven step by step (run in ``.venv-mcp2``).

The end-to-end tests run in the SDK 1.x environment; this process holds one SDK 2.x client
and reads one JSON step per stdin line, printing one JSON line per step, so a test can see
exactly what the official client made of each answer (a result, or the exception it raised):

    {"op": "connect", "url": URL, "mode": "auto" | "legacy" | "2026-07-28", "headers": {...}}
    {"op": "list", "cache_mode": "use" | "refresh"}     -> the ListToolsResult
    {"op": "call", "name": N, "arguments": {...}, "progress": bool}  -> the CallToolResult
    {"op": "surface"}   -> {"instructions", "prompts", "resourceTemplates"} as the client has them
    {"op": "get_prompt", "name": N, "arguments": {...}}  -> the GetPromptResult
    {"op": "listen_once", "trigger": URL}   -> opens subscriptions/listen, POSTs the trigger
         URL (a test server's control route), waits for tools/list_changed, closes the stream
    {"op": "close"}

Output: ``{"step": i, "op": OP, "ok": true, "result": ...}`` (results dumped by alias, as on
the wire) or ``{"ok": false, "error": {"name", "code", "message"}}``. Elicitations are
accepted with ``{"confirm": true}``; progress notifications are counted in
``result["_progress"]`` when the call asked for them.

Design decision: a thin shell over the SDK's public client API (``Client``, ``list_tools``,
``call_tool``, ``listen``) with its defaults (response cache on, ``mode="auto"`` probing
``server/discover``), so the tests observe what an agent built on this SDK observes.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The user confirms."""
    return types.ElicitResult(action="accept", content={"confirm": True})


def dump(value: Any) -> Any:
    """A result model as JSON (wire names)."""
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


class Driver:
    """One SDK client at a time, entered on ``connect`` and left on ``close``."""

    def __init__(self) -> None:
        self.stack: AsyncExitStack | None = None
        self.client: Client | None = None

    async def connect(self, step: dict[str, Any]) -> dict[str, Any]:
        await self.close()
        self.stack = AsyncExitStack()
        http = await self.stack.enter_async_context(httpx2.AsyncClient(
            headers=step.get("headers") or {}, timeout=httpx2.Timeout(30, read=120)))
        transport = streamable_http_client(step["url"], http_client=http)
        client = Client(transport, mode=step.get("mode", "auto"), elicitation_callback=accept)
        self.client = await self.stack.enter_async_context(client)
        return {"protocol_version": self.client.protocol_version}

    async def close(self) -> dict[str, Any]:
        if self.stack is not None:
            stack, self.stack, self.client = self.stack, None, None
            await stack.aclose()
        return {}

    def _client(self) -> Client:
        if self.client is None:
            raise RuntimeError("not connected: send a connect step first")
        return self.client

    async def list(self, step: dict[str, Any]) -> Any:
        return dump(await self._client().list_tools(cache_mode=step.get("cache_mode", "use")))

    async def call(self, step: dict[str, Any]) -> Any:
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        result = dump(await self._client().call_tool(
            step["name"], step.get("arguments") or {},
            progress_callback=on_progress if step.get("progress") else None))
        if step.get("progress"):
            result["_progress"] = len(progress)
        return result

    async def surface(self, step: dict[str, Any]) -> Any:
        client = self._client()
        prompts = dump(await client.list_prompts())
        templates = dump(await client.list_resource_templates())
        return {"instructions": client.instructions, "prompts": prompts["prompts"],
                "resourceTemplates": templates["resourceTemplates"],
                "_meta": {"prompts": prompts.get("_meta"), "templates": templates.get("_meta")}}

    async def get_prompt(self, step: dict[str, Any]) -> Any:
        return dump(await self._client().get_prompt(step["name"], step.get("arguments") or {}))

    async def listen_once(self, step: dict[str, Any]) -> Any:
        async with self._client().listen(tools_list_changed=True) as subscription:
            await anyio.to_thread.run_sync(_post, step["trigger"])
            with anyio.fail_after(10):
                async for event in subscription:
                    return {"event": type(event).__name__}
        raise RuntimeError("the listen stream ended without an event")

    async def run(self, step: dict[str, Any]) -> Any:
        op = step.get("op")
        if op == "connect":
            return await self.connect(step)
        if op == "close":
            return await self.close()
        if op in ("list", "call", "listen_once", "surface", "get_prompt"):
            return await getattr(self, op)(step)
        raise ValueError(f"unknown op {op!r}")


def _post(url: str) -> None:
    request = urllib.request.Request(url, data=b"{}", method="POST",
                                     headers={"content-type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=5) as response:
        response.read()


async def main() -> int:
    driver = Driver()
    index = 0
    try:
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            if not line.strip():
                continue
            step = json.loads(line)
            try:
                out = {"step": index, "op": step.get("op"), "ok": True, "result": await driver.run(step)}
            except Exception as error:  # the point: report what the SDK raised, exactly
                out = {"step": index, "op": step.get("op"), "ok": False, "error": {
                    "name": type(error).__name__, "code": getattr(error, "code", None),
                    "message": str(error)}}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
            index += 1
    finally:
        await driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
