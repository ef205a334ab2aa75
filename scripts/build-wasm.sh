#!/usr/bin/env bash
# Builds the .wasm that Envoy loads (and that `toolseal replay` runs on wasmtime):
# target/wasm32-wasip1/wasm/toolseal_plugin.wasm. Prints its path and size, and fails when
# the module reaches the size limit (host-test's `wasm_size` test reads the limit from here and holds it too).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# The project's size budget for the plugin module (bytes, exclusive). 1,000,000 until the fleet
# store (etcd's JSON API, the replica view, callouts: ~89 KB) and screening by meaning (~29 KB)
# came in together: Envoy's start-up CPU grows with the bytes (docs/performance.md, "Fleet
# store: module size and start-up", measured in the same run as the module before them).
# 1,070,000 until answers to no waiting request were dropped and every unanswered request kept
# for a resumed stream (+15.7 KB), a closed server's prompts, resources and instructions
# closed with it (+6.7 KB) and listed resources screened (+16.8 KB): docs/performance.md,
# "Answers to no request".
# 1,110,000 until the tools' other fields, instructions, prompts and resource templates were
# sealed like tools (+93.0 KB: the classified section diff a reviewer reads 24.6 KB, the data
# path of a section's list and a prompt's use 22.2 KB, the catalogue as a surface set 17.4 KB):
# docs/performance.md, "Sealed sections".
# 1,200,000 until sealed sections were told per view and the instructions became a set of
# approved texts (+11.6 KB, less 1.9 KB from one number formatter for every sink):
# docs/performance.md, "Sections per view".
# 1,212,000 until reads could be limited to what a server listed or an approved template
# names (+8.7 KB: the RFC 6570 matcher 2.6 KB, the URIs kept per server 2.9 KB, the check and
# the recording in the data path): docs/performance.md, "Reads limited to what was listed".
# 1,222,000 until a whole surface could be locked in the configuration (+4.6 KB: a lock's
# surface checked when the configuration loads, and stored as the catalogue):
# docs/performance.md, "Reads limited to what was listed".
# 1,226,000, 1,230,000 and 1,235,000 as sealed resources, sealed sections over pages, a sealed
# section before any tool list and tool scope per item came in: docs/performance.md, "Sealed
# resources, and sealed sections over pages".
# Lowered to 1,230,000 when the module was built with SIMD (1,234,395 -> 1,223,793 bytes):
# docs/performance.md, "Lists served again, and SIMD".
# 1,235,000 again when the items of sections were recorded per view (1,223,538 -> 1,232,824
# bytes), then 1,240,000 when what a list checked against the catalogue alone withholds
# under tool scope joined the drift's reach (-> 1,237,801): docs/performance.md, "Prompts and
# templates per view".
# 1,245,000 when policy rules could name prompts and resources, refusing their uses and
# leaving them out of the lists of the callers they refuse (1,236,415 -> 1,242,951 bytes):
# docs/performance.md, "One kind of pending list".
# 1,250,000 when a remembered tool list that verified without changing its server's record
# was known to verify again (1,244,396 -> 1,248,155 bytes, for 12% fewer guest instructions
# per verified list), and back to 1,245,000 the same day, when the remembered lists were kept
# per view in a plain vector instead of a map (-> 1,239,492): docs/performance.md, "A
# verified list decided once".
limit=1245000
"$repo/scripts/setup-rust.sh"
cargo build --quiet -p toolseal-plugin --target wasm32-wasip1 --profile wasm
wasm="$repo/target/wasm32-wasip1/wasm/toolseal_plugin.wasm"
size=$(wc -c <"$wasm")
echo "$wasm ($size bytes)"
if [ "$size" -ge "$limit" ]; then
  echo "build-wasm: the plugin is $size bytes; it must stay under $limit bytes (shrink it by at least $((size - limit + 1)) bytes rather than raising the limit)" >&2
  exit 1
fi
