#!/usr/bin/env bash
# Where the plugin module's bytes go: builds the module with its name section kept (profile
# `wasm-names`: the `wasm` profile unstripped, the same code) and prints its sections, its
# code by crate and by toolseal module, the generic functions instantiated more than once and
# the largest functions (scripts/wasm_size_report.py; Python 3, nothing to install).
#
# The build uses its own target directory (target/size-report) and v0 symbol mangling, whose
# names carry the generic arguments (`sort::<(&str, &str), …>`), so it never invalidates the
# main build. Not run by CI.
#
# Usage: scripts/wasm-size-report.sh [--top N] [--markdown] [--retained REGEX]   (options go to the report;
#        --retained: the code only each matching function keeps, read with wasm2wat from wabt)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
"$repo/scripts/setup-rust.sh"
export CARGO_TARGET_DIR="$repo/target/size-report"
RUSTFLAGS="-Csymbol-mangling-version=v0 -Ctarget-feature=+simd128" \
  cargo build --quiet -p toolseal-plugin --target wasm32-wasip1 --profile wasm-names
exec python3 "$repo/scripts/wasm_size_report.py" \
  "$CARGO_TARGET_DIR/wasm32-wasip1/wasm-names/toolseal_plugin.wasm" "$@"
