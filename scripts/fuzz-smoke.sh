#!/usr/bin/env bash
# Builds every fuzz target and runs each for a bounded time (default 20 s) on its committed
# corpus; exits non-zero on the first crash, leak, timeout or oversized allocation (the
# reproducer lands in fuzz/artifacts/<target>/). Called from CI; see fuzz/README.md.
#   scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] [TARGET...]
#   scripts/fuzz-smoke.sh --build-only      (install cargo-fuzz and build the targets; run none)
# Installs cargo-fuzz (pinned) when it is missing. cargo-fuzz passes nightly-only compiler
# flags (AddressSanitizer, sancov): the nightly toolchain is used when the machine has one,
# otherwise the repository's pinned toolchain (rust-toolchain.toml) with RUSTC_BOOTSTRAP=1,
# which accepts the same flags (1.95.0 builds and runs every target that way). Never skips:
# a machine that can do neither fails here.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
seconds="${1:-20}"
shift || true
cd "$repo"

cargo_fuzz_version="0.13.2"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --quiet --locked cargo-fuzz --version "$cargo_fuzz_version"
fi
if cargo +nightly --version >/dev/null 2>&1; then
  fuzz=(cargo +nightly fuzz)
  echo "fuzz-smoke: $(cargo +nightly --version)"
else
  fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
  echo "fuzz-smoke: no nightly toolchain; $(cargo --version) with RUSTC_BOOTSTRAP=1"
fi

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <("${fuzz[@]}" list)
fi

"${fuzz[@]}" build
if [ "$build_only" = 1 ]; then
  echo "fuzz-smoke: ${#targets[@]} targets built"
  exit 0
fi
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  scratch="$(mktemp -d)"
  echo "fuzz-smoke: $target for ${seconds}s"
  # New inputs go to a scratch directory: the committed corpus stays as it is.
  if ! timeout --kill-after=30 "$((seconds + 120))" \
      "${fuzz[@]}" run "$target" "$scratch" "$corpus" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -max_len=65536 -print_final_stats=1 2>"$scratch.log"; then
    tail -n 40 "$scratch.log" >&2
    echo "fuzz-smoke: $target FAILED (reproducer in fuzz/artifacts/$target/)" >&2
    rm -rf "$scratch" "$scratch.log"
    exit 1
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)|cov: " "$scratch.log" | tail -n 3 || true
  rm -rf "$scratch" "$scratch.log"
done
echo "fuzz-smoke: ${#targets[@]} targets, no crash"
