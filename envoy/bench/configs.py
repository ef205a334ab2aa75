"""Envoy configurations compared by the benchmark, and the canned upstream.

Design decision: the four front configurations differ only in their HTTP filter chain, and
all but the native peer come from the same renderer as the shipped ``envoy.yaml``
(``envoyctl.render``), so (d) is toolseal exactly as shipped:

- ``router``: router only (the limit);
- ``buffer``: the buffer filter, then the router;
- ``mcp_rbac``: Envoy's native ``envoy.filters.http.mcp`` (pass-through) and an RBAC tool
  allowlist over its dynamic metadata (docs/performance.md);
- ``toolseal``: toolseal (wasm, V8) -> buffer -> router, as shipped;
- ``wasm_empty`` and ``wasm_read``: the floor (``envoy/bench/floor``), a Wasm filter that
  decides nothing, in toolseal's place in the same chain (same VM settings, buffer, router):
  ``empty`` continues every callback at once, ``read`` reads the headers and whole bodies as
  any MCP-inspecting filter must. Their cost is what any proxy-wasm filter pays in this Envoy;
  toolseal's own work is the difference to them;
- ``toolseal_nofs``: toolseal as shipped but with ``telemetry.filter_state`` off (no
  filter-state writes: the opt-out for operators whose access log does not read them);
- ``toolseal@LABEL``: toolseal as shipped with another ``.wasm`` (``run.py --variant``), to
  compare two builds in the same run.

The upstream is another Envoy answering every path with a canned body (``direct_response``),
so the upstream costs next to nothing and is never the bottleneck.
"""

from __future__ import annotations

import json
from pathlib import Path

import envoyctl
from envoyctl import McpRoute

CONFIGS = ("router", "buffer", "mcp_rbac", "wasm_empty", "wasm_read", "toolseal", "toolseal_nofs")
FLOORS = {"wasm_empty": "empty", "wasm_read": "read"}
SERVER_ID = "bench"
# Tool-set sizes served on their own routes besides the 100-tool server.
SIZED_LISTS = (10, 1000)


def server_prefixes() -> dict[str, str]:
    """toolseal's server id -> the path prefix of its route, one per tool-set size; the last
    route catches the rest (/list/, /call/: the 100-tool server)."""
    prefixes = {f"{SERVER_ID}{n}": f"/list{n}/" for n in SIZED_LISTS}
    prefixes[SERVER_ID] = "/"
    return prefixes


def _without_buffer(text: str) -> str:
    """The rendered config with the buffer filter removed (its block is 4 lines)."""
    lines = text.splitlines(keepends=True)
    out, skip = [], 0
    for line in lines:
        if skip:
            skip -= 1
            continue
        if line.strip() == "- name: envoy.filters.http.buffer":
            skip = 3
            continue
        out.append(line)
    rendered = "".join(out)
    if "envoy.filters.http.buffer" in rendered:
        raise ValueError("the buffer filter block changed shape; update _without_buffer")
    return rendered


def _sourced(path: list[str], exact: str) -> dict:
    return {
        "sourced_metadata": {
            "metadata_source": "DYNAMIC",
            "metadata_matcher": {
                "filter": "envoy.filters.http.mcp",
                "path": [{"key": key} for key in path],
                "value": {"string_match": {"exact": exact}},
            },
        }
    }


def native_peer_filters(allowed_tools: list[str]) -> str:
    """YAML (JSON flow style) for the native MCP filter and an RBAC tool allowlist: any
    method other than ``tools/call`` passes; a call passes only for a listed tool."""
    is_call = _sourced(["method"], "tools/call")
    allowlist = {"or_rules": {"rules": [_sourced(["params", "name"], name) for name in allowed_tools]}}
    mcp = {
        "name": "envoy.filters.http.mcp",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.mcp.v3.Mcp",
            "traffic_mode": "PASS_THROUGH",
        },
    }
    rbac = {
        "name": "envoy.filters.http.rbac",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
            "rules": {
                "action": "ALLOW",
                "policies": {
                    "mcp-tool-allowlist": {
                        "permissions": [
                            {"not_rule": is_call},
                            {"and_rules": {"rules": [is_call, allowlist]}},
                        ],
                        "principals": [{"any": True}],
                    }
                },
            },
        },
    }
    return "".join(f"          - {json.dumps(f)}\n" for f in (mcp, rbac))


def front(name: str, *, listen_port: int, admin_port: int, upstream_port: int,
          wasm: Path, allowed_tools: list[str], floor_wasm: Path | None = None) -> str:
    """The front Envoy's config for configuration ``name``; ``wasm`` is toolseal's module
    (for ``toolseal`` and ``toolseal@LABEL``), ``floor_wasm`` the floor's."""
    # One server id per tool-set size (a server serves one set).
    routes = [McpRoute(server, upstream_port, match_prefix=prefix)
              for server, prefix in server_prefixes().items()]
    # toolseal's admin API listener is idle in a benchmark; port 0 lets the system pick one.
    common = dict(listen_port=listen_port, admin_port=admin_port, routes=routes, wasm_path=wasm,
                  admin_api_port=0)
    if name == "toolseal" or name.startswith("toolseal@"):
        return envoyctl.render(**common)
    if name == "toolseal_nofs":
        plugin_config = {**envoyctl.default_plugin_config(), "telemetry": {"filter_state": False}}
        return envoyctl.render(**common, plugin_config=plugin_config)
    if name in FLOORS:
        if floor_wasm is None:
            raise ValueError(f"{name} needs the floor's .wasm")
        return envoyctl.render(**{**common, "wasm_path": floor_wasm}, plugin_config=FLOORS[name])
    if name == "buffer":
        return envoyctl.render(**common, with_plugin=False)
    if name == "router":
        return _without_buffer(envoyctl.render(**common, with_plugin=False))
    if name == "mcp_rbac":
        return _without_buffer(envoyctl.render(
            **common, with_plugin=False, pre_filters=native_peer_filters(allowed_tools)))
    raise ValueError(f"unknown configuration {name!r}; known: {', '.join(CONFIGS)}")


def upstream(*, listen_port: int, admin_port: int,
             bodies: dict[str, tuple[str, Path, bool]], accepted: list[str]) -> str:
    """An Envoy that answers ``POST <path>`` with a canned body: ``bodies`` maps a path to
    (content type, body file, whether the answer carries the 2025 session header); each path
    in ``accepted`` (notifications) is answered 202 with no body."""
    routes = [{"match": {"path": path}, "direct_response": {"status": 202}} for path in accepted]
    for path, (content_type, body_file, session) in bodies.items():
        headers = [{"header": {"key": "content-type", "value": content_type}}]
        if session:
            headers.append({"header": {"key": "mcp-session-id", "value": "bench-session-0001"}})
        routes.append({
            "match": {"path": path},
            "direct_response": {"status": 200, "body": {"filename": str(body_file)}},
            "response_headers_to_add": headers,
        })
    routes.append({"match": {"prefix": "/"}, "direct_response": {"status": 404}})
    hcm = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "upstream",
        "route_config": {
            "name": "canned",
            # Room for a 1000-tool list.
            "max_direct_response_body_size_bytes": 4 * 1024 * 1024,
            "virtual_hosts": [{"name": "canned", "domains": ["*"], "routes": routes}],
        },
        "http_filters": [{
            "name": "envoy.filters.http.router",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
        }],
    }
    config = {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
        "static_resources": {"listeners": [{
            "name": "canned",
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": listen_port}},
            "filter_chains": [{"filters": [{
                "name": "envoy.filters.network.http_connection_manager", "typed_config": hcm,
            }]}],
        }]},
    }
    return json.dumps(config, indent=1)
