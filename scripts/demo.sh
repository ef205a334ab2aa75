#!/usr/bin/env bash
# README's first command: on a fresh machine, builds the plugin, installs Envoy, real MCP
# servers and etcd, and plays the rug-pull story through a real Envoy with toolseal, step by
# step, then through two Envoys sharing their memory in one etcd.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
echo "== building the toolseal plugin (.wasm)"
"$repo/scripts/build-wasm.sh"
echo "== installing Envoy and the MCP Python SDKs 1.x and 2.x (pinned), and etcd (Debian)"
"$repo/scripts/setup-python.sh" >/dev/null
"$repo/scripts/setup-python-mcp2.sh" >/dev/null
"$repo/scripts/setup-etcd.sh" >/dev/null
exec "$repo/envoy/demo.sh" "$@"
