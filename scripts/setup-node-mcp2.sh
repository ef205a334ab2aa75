#!/usr/bin/env bash
# Installs the TypeScript SDK v2 (@modelcontextprotocol/server and @modelcontextprotocol/client
# 2.4.0, with the zod they need) under envoy/modern, exactly as its package-lock.json pins
# them: the end-to-end tests start the TypeScript rug-pull server (modern/ts_server.mjs) and
# drive the TypeScript client (modern/ts_client.mjs) from it. Quick when node_modules already
# matches the lock.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$repo/envoy/modern"
stamp="$dir/node_modules/.package-lock.json"

if [ -f "$stamp" ] && [ -d "$dir/node_modules/@modelcontextprotocol/server" ] \
  && [ -d "$dir/node_modules/@modelcontextprotocol/client" ] && [ "$stamp" -nt "$dir/package-lock.json" ]; then
  echo "TypeScript SDK v2: $dir/node_modules (up to date)"
  exit 0
fi
# `npm ci` installs exactly the lock (and fails if package.json and the lock disagree).
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "TypeScript SDK v2: $dir/node_modules"
