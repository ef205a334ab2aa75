#!/usr/bin/env bash
# The official MCP conformance suite against your MCP server, directly and then through a
# fresh Envoy running toolseal (the shipped filter chain, discovery posture, the built .wasm),
# compared check by check. Prints, per era, "checks passed direct / through / gained" and
# every check that passed directly but not through toolseal; exits 1 if there is one.
#
# Usage: scripts/conformance.sh URL [--era 2025-11-25|2026-07-28] [--keep DIR]
#   URL: the server's MCP endpoint on this machine, e.g. http://127.0.0.1:3000/mcp
#   --era: the suite's scenarios of that revision only (repeatable; default both)
#   --keep: keep the suite's checks.json files in DIR
# Installs what it needs first (Envoy, the suite and Node 24, the plugin .wasm).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup-python.sh >/dev/null
scripts/setup-conformance.sh >/dev/null
scripts/build-wasm.sh >/dev/null
exec .venv/bin/python envoy/conformance_suite.py "$@"
