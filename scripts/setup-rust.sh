#!/usr/bin/env bash
# The Rust side of a fresh machine. rust-toolchain.toml names the toolchain, the wasm targets
# the plugin and the component are built for, and rustfmt/clippy; rustup installs what is
# missing on the first `cargo` run. Asking here makes that happen up front, with rustup's own
# message if the machine cannot fetch them. Idempotent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rustup -q target add wasm32-wasip1 wasm32-unknown-unknown
rustup -q component add rustfmt clippy
