"""An independent reference for the fingerprint (docs/fingerprint.md), for the small tool
surfaces the tests serve.

The tests compare the fingerprint the plugin reports inside Envoy with this one, computed
from the tools the upstream serves directly (not through Envoy). It deliberately covers only
what the rug-pull server emits (ASCII keys, strings, integers, booleans, the schema keywords
below) and refuses anything else, so it can never silently disagree with those rules.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

VIEW_FIELDS = ("name", "description", "inputSchema")
SET_KEYWORDS = ("required", "enum", "type")
SCHEMA_MAP_KEYWORDS = ("properties",)
SCHEMA_KEYWORDS = ("items", "additionalProperties")
PLAIN_KEYWORDS = (
    "title", "description", "default", "const", "format", "pattern",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
)


def jcs(value: Any) -> str:
    """RFC 8785 text for values without floats or non-ASCII keys."""
    _check(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check(value: Any) -> None:
    if isinstance(value, float):
        raise ValueError("the reference does not canonicalize floats")
    if isinstance(value, dict):
        for key, item in value.items():
            if not key.isascii():
                raise ValueError("the reference only sorts ASCII keys")
            _check(item)
    elif isinstance(value, list):
        for item in value:
            _check(item)


def normalize_schema(schema: Any) -> Any:
    """Sort the set-valued keywords at schema positions; refuse keywords it does not know."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SET_KEYWORDS and isinstance(value, list):
            unique = {jcs(v): v for v in value}
            out[key] = [unique[k] for k in sorted(unique)]
        elif key in SCHEMA_MAP_KEYWORDS:
            out[key] = {name: normalize_schema(sub) for name, sub in value.items()}
        elif key in SCHEMA_KEYWORDS:
            out[key] = normalize_schema(value)
        elif key in PLAIN_KEYWORDS or key in SET_KEYWORDS:
            out[key] = value
        else:
            raise ValueError(f"the reference does not know the schema keyword {key!r}")
    return out


def tool_digest(tool: dict[str, Any]) -> str:
    """Hex SHA-256 of the canonical tool view."""
    view = {k: tool[k] for k in VIEW_FIELDS if k in tool}
    if "inputSchema" in view:
        view["inputSchema"] = normalize_schema(view["inputSchema"])
    return hashlib.sha256(jcs(view).encode("utf-8")).hexdigest()


def server_fingerprint(tools: list[dict[str, Any]]) -> str:
    """``sha256:`` + SHA-256 of the JCS array of ``[name, digest]`` sorted by name."""
    pairs = sorted([tool["name"], tool_digest(tool)] for tool in tools)
    return "sha256:" + hashlib.sha256(jcs(pairs).encode("utf-8")).hexdigest()
