#!/usr/bin/env bash
# Builds the .wasm that Envoy loads (and that `toolseal replay` runs on wasmtime):
# target/wasm32-wasip1/wasm/toolseal_plugin.wasm. Prints its path and size.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
"$repo/scripts/setup-rust.sh"
cargo build --quiet -p toolseal-plugin --target wasm32-wasip1 --profile wasm
wasm="$repo/target/wasm32-wasip1/wasm/toolseal_plugin.wasm"
echo "$wasm ($(wc -c <"$wasm") bytes)"
