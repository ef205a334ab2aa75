"""Exact checks of what toolseal shows a client, an operator and the Envoy log."""

from __future__ import annotations

import time
from typing import Any

from mcp import types

from stack import Stack, denial

STATUS_META_KEY = "io.toolseal/status"


def assert_denied(result: types.CallToolResult, error_code: str, *, tool: str,
                  schema_status: str, required_action: str, server: str = "demo") -> dict[str, Any]:
    """A tools/call refused by the gateway: a tool error with the structured denial."""
    assert result.isError is True, result
    refusal = denial(result)
    assert refusal is not None, result
    expected = {
        "error_code": error_code, "server": server, "tool": tool,
        "schema_status": schema_status, "required_action": required_action,
        "side_effect_started": False,
    }
    assert {k: refusal.get(k) for k in expected} == expected, refusal
    assert result.content[0].type == "text" and tool in result.content[0].text, result.content
    return refusal


def list_status_meta(listed: types.ListToolsResult) -> dict[str, Any]:
    """The namespaced `_meta` entry that explains a filtered tools/list."""
    meta = listed.meta or {}
    assert STATUS_META_KEY in meta, meta
    return meta[STATUS_META_KEY]


def counter(stack: Stack, name: str) -> int:
    """A toolseal counter (``wasmcustom.toolseal_<name>``), case-insensitive; must exist."""
    counters = {k.lower(): v for k, v in stack.toolseal_counters().items()}
    assert name.lower() in counters, f"no counter {name}; have {sorted(counters)}"
    return counters[name.lower()]


def http_methods(upstream: Any) -> list[str]:
    """The JSON-RPC method of every HTTP request an upstream logged, in order."""
    return [m for e in upstream.events("http") for m in e["jsonrpc_methods"]]


class Untouched:
    """Asserts that nothing reached the upstream of ``server_id`` while the block ran: neither
    Envoy's ``upstream_rq_total`` for its route nor the upstream's own request log moved.
    ``stack``: a ``modern_stack.ModernStack`` (upstreams and routes by server id)."""

    def __init__(self, stack: Any, server_id: str) -> None:
        self.stack, self.server_id = stack, server_id

    def __enter__(self) -> "Untouched":
        self.rq = self.stack.upstream_requests(self.server_id)
        self.logged = len(self.stack.upstreams[self.server_id].events())
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            assert self.stack.upstreams[self.server_id].events()[self.logged:] == []
            assert self.stack.upstream_requests(self.server_id) == self.rq


def wait_for_audits(stack: Stack, event: str, count: int, timeout: float = 5) -> list[dict[str, Any]]:
    """All audit events of that name once at least ``count`` are in the Envoy log.

    Envoy flushes its log file every 100 ms (envoyctl), so lines arrive a little after the
    request that caused them.
    """
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        events = stack.envoy.audit_events()
        found = [e for e in events if e.get("event") == event]
        if len(found) >= count:
            return found
        seen = [e.get("event", "?") for e in events]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} {event} audit events in the Envoy log; saw {seen}")


def wait_for_audit(stack: Stack, event: str, timeout: float = 5) -> dict[str, Any]:
    """The first audit event of that name in the Envoy log, waiting for the log to flush."""
    return wait_for_audits(stack, event, 1, timeout)[0]
