#!/usr/bin/env bash
# Installs two published releases of the MCP reference server
# (@modelcontextprotocol/server-everything 2025.11.25 and 2026.1.26) side by side under
# envoy/testserver/node, exactly as package-lock.json pins them, for the real-server drift
# test behind Envoy. Quick when node_modules already matches the lock.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$repo/envoy/testserver/node"
stamp="$dir/node_modules/.package-lock.json"

if [ -f "$stamp" ] && [ -d "$dir/node_modules/everything-2025.11.25" ] \
  && [ -d "$dir/node_modules/everything-2026.1.26" ] && [ "$stamp" -nt "$dir/package-lock.json" ]; then
  echo "node servers: $dir/node_modules (up to date)"
  exit 0
fi
# `npm ci` installs exactly the lock (and fails if package.json and the lock disagree).
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "node servers: $dir/node_modules"
