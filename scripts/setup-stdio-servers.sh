#!/usr/bin/env bash
# Installs the real stdio MCP servers that the toolseal-stdio tests put the guard in front of:
#   - npm (examples/stdio-guard/tests/node, exactly as package-lock.json pins them):
#     @modelcontextprotocol/server-memory, @modelcontextprotocol/server-filesystem, and two
#     releases of @modelcontextprotocol/server-everything side by side (drift across a restart);
#   - PyPI (into the project venv that scripts/setup-python.sh creates):
#     mcp-server-time, pinned in examples/stdio-guard/tests/requirements.txt.
# Quick when everything is already installed.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node_dir="$repo/examples/stdio-guard/tests/node"
requirements="$repo/examples/stdio-guard/tests/requirements.txt"
venv="${TOOLSEAL_VENV:-$repo/.venv}"

stamp="$node_dir/node_modules/.package-lock.json"
if [ -f "$stamp" ] && [ "$stamp" -nt "$node_dir/package-lock.json" ]; then
  echo "stdio servers (npm): $node_dir/node_modules (up to date)"
else
  # `npm ci` installs exactly the lock (and fails if package.json and the lock disagree).
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "stdio servers (npm): $node_dir/node_modules"
fi

"$repo/scripts/setup-python.sh" >/dev/null
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
echo "stdio servers (PyPI): $venv/bin/mcp-server-time"
