#!/usr/bin/env bash
# Creates (or reuses) the second Python venv of the end-to-end tests: the official MCP Python
# SDK 2.x, which speaks MCP 2026-07-28 (no initialize, no session; server/discover, MRTR,
# subscriptions/listen, cache hints). The 2.x SDK renamed the 1.x APIs and pins other
# packages, so it cannot live in .venv (scripts/setup-python.sh) beside the 1.x SDK: the tests
# run in .venv and start the 2.x rug-pull server and the 2.x client from this one.
#
# envoy/requirements-mcp2.txt pins every package (direct and transitive).
#
# Usage: scripts/setup-python-mcp2.sh   (TOOLSEAL_VENV_MCP2 overrides <repo>/.venv-mcp2)
# Prints the venv path on its last line.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TOOLSEAL_VENV_MCP2:-$repo/.venv-mcp2}"
python="${PYTHON:-python3}"
requirements="$repo/envoy/requirements-mcp2.txt"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi

# Skip pip entirely when every pin is already installed at its exact version.
if ! "$venv/bin/python" - "$requirements" <<'PY'
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
PY
then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
fi

echo "venv (MCP SDK 2.x): $venv"
