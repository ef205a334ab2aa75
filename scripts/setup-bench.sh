#!/usr/bin/env bash
# Installs what the Envoy benchmark (envoy/bench/run.py) needs besides the project venv:
# wrk (Debian package) for load, valgrind for `toolseal bench --callgrind`. Quick when both
# are there already. Needs root (apt-get), as the project's machines have.
set -euo pipefail
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "wrk: $(command -v wrk)"
echo "valgrind: $(command -v valgrind)"
