#!/usr/bin/env bash
# Builds every fuzz target and runs each for a bounded time (default 20 s) on its committed
# corpus; exits non-zero on the first crash, leak, timeout or oversized allocation (the
# reproducer lands in fuzz/artifacts/<target>/). Called from CI; see fuzz/README.md.
#   scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] [TARGET...]
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-20}"
shift || true
cd "$repo"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz-smoke: the nightly toolchain is missing: rustup toolchain install nightly" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz-smoke: cargo-fuzz is missing: cargo install cargo-fuzz" >&2
  exit 2
fi

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

cargo +nightly fuzz build
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  scratch="$(mktemp -d)"
  echo "fuzz-smoke: $target for ${seconds}s"
  # New inputs go to a scratch directory: the committed corpus stays as it is.
  if ! timeout --kill-after=30 "$((seconds + 120))" \
      cargo +nightly fuzz run "$target" "$scratch" "$corpus" -- \
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
