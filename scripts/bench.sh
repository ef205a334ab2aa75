#!/usr/bin/env bash
# Every toolseal benchmark in one command; results in target/bench/ and on stdout.
#   1. `toolseal bench`: per-message cost natively and through the .wasm on wasmtime
#      (with instructions per message under callgrind unless BENCH_CALLGRIND=0);
#   2. `toolseal bench --sessions N`: shared-state size under N distinct sessions
#      (BENCH_SESSIONS, default 1000000);
#   3. envoy/bench/run.py: Envoy CPU per request and latency, toolseal side by side with the
#      router alone, the buffer filter, Envoy's native MCP filter + RBAC and a Wasm filter
#      that decides nothing (the floor of any proxy-wasm filter)
#      (BENCH_DURATION seconds per run, BENCH_REPEAT runs per point);
#   4. envoy/bench/plot.py: target/bench/tools-curve.svg.
# Bounded: every run has a fixed duration or iteration budget. Loopback only.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
out="$repo/target/bench"
mkdir -p "$out"

"$repo/scripts/build-wasm.sh"
# The floor of the Envoy benchmark: a Wasm filter that decides nothing (envoy/bench/floor).
cargo build --quiet -p toolseal-bench-floor --target wasm32-wasip1 --profile wasm
"$repo/scripts/setup-python.sh" >/dev/null
"$repo/scripts/setup-bench.sh" >/dev/null
cargo build --quiet --release -p toolseal
toolseal="${CARGO_TARGET_DIR:-$repo/target}/release/toolseal"
wasm="$repo/target/wasm32-wasip1/wasm/toolseal_plugin.wasm"

callgrind=(--callgrind)
[ "${BENCH_CALLGRIND:-1}" = "0" ] && callgrind=()
"$toolseal" bench --wasm "$wasm" "${callgrind[@]}" --json "$out/messages.json" | tee "$out/messages.txt"
"$toolseal" bench --sessions "${BENCH_SESSIONS:-1000000}" | tee "$out/sessions.txt"
"$repo/.venv/bin/python" "$repo/envoy/bench/run.py" \
  --duration "${BENCH_DURATION:-5}" --repeat "${BENCH_REPEAT:-3}" --json "$out/envoy.json" | tee "$out/envoy.txt"
"$repo/.venv/bin/python" "$repo/envoy/bench/plot.py" \
  --messages "$out/messages.json" --envoy "$out/envoy.json" --out "$out/tools-curve.svg"
