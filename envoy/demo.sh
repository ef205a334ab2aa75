#!/usr/bin/env bash
# The toolseal demo in a real Envoy: a real MCP server rug-pulls its tools, the gateway holds.
# Needs the .wasm built (the repository's setup script, or
# `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm`); installs the pinned
# Python environment (Envoy, MCP SDK) if it is not there yet. Exits non-zero if any step fails.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/setup-python.sh" >/dev/null
venv="${TOOLSEAL_VENV:-$repo/.venv}"
exec "$venv/bin/python" "$repo/envoy/demo.py" "$@"
