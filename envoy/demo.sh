#!/usr/bin/env bash
# The toolseal demo in a real Envoy: a real MCP server rug-pulls its tools, the gateway holds.
# Needs the .wasm built (the repository's setup script, or
# `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm`); installs the pinned
# Python environments (Envoy and the MCP SDK 1.x; the MCP SDK 2.x for the 2026-07-28 agent) and
# etcd (Debian, for the fleet acts) if they are not there yet. Exits non-zero if any step fails.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/setup-python.sh" >/dev/null
"$repo/scripts/setup-python-mcp2.sh" >/dev/null
"$repo/scripts/setup-etcd.sh" >/dev/null
venv="${TOOLSEAL_VENV:-$repo/.venv}"
exec "$venv/bin/python" "$repo/envoy/demo.py" "$@"
