#!/usr/bin/env bash
# Starts Envoy with toolseal (envoy/envoy.yaml defaults, or the ports given) detached, waits
# until it is ready, and records its PID; `envoy/run.sh stop` stops that PID.
#   envoy/run.sh start [--listen-port N --admin-port N --upstream-port N --no-plugin]
#   envoy/run.sh stop
#   envoy/run.sh validate [CONFIG]      (envoy --mode validate; default envoy/envoy.yaml)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TOOLSEAL_VENV:-$repo/.venv}"
exec "$venv/bin/python" "$repo/envoy/envoyctl.py" "$@"
