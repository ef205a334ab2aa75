#!/usr/bin/env bash
# The Rust side of a fresh machine: the wasm targets the plugin and the component are built
# for, and rustfmt/clippy for the checks. Idempotent.
set -euo pipefail
rustup target add wasm32-wasip1 wasm32-unknown-unknown >/dev/null
rustup component add rustfmt clippy >/dev/null
