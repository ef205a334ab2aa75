//! The plugin `.wasm` stays under the size limit `scripts/build-wasm.sh` enforces, so a plain
//! `cargo test` catches a module that grew past it (the limit is read from the script: one
//! number, one place).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

/// The `limit=N` line of `scripts/build-wasm.sh`.
fn size_limit() -> u64 {
    let script =
        std::fs::read_to_string(common::workspace().join("scripts/build-wasm.sh")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("limit="))
        .expect("scripts/build-wasm.sh sets limit=BYTES");
    line.trim().parse().unwrap()
}

#[test]
fn the_plugin_wasm_is_under_the_size_limit() {
    let limit = size_limit();
    // 1,000,000 until the fleet store and screening by meaning (docs/performance.md, "Fleet
    // store: module size and start-up"), 1,070,000 until answers to no request were dropped
    // and servers closed and screened beyond their tools ("Answers to no request"), 1,110,000
    // until the rest of the surface was sealed ("Sealed sections"), 1,200,000 until sealed
    // sections were told per view ("Sections per view"), 1,212,000 until reads could be
    // limited to what was listed ("Reads limited to what was listed"), 1,222,000 until a
    // whole surface could be locked (the same section), 1,235,000 (after 1,226,000 and
    // 1,230,000) until the SIMD build ("Lists served again, and SIMD"), 1,230,000 until the
    // items of sections were recorded per view and 1,235,000 until what a list withholds under
    // tool scope joined the drift's reach ("Prompts and templates per view"), 1,240,000 until
    // policy rules could name prompts and resources ("One kind of pending list"), 1,250,000
    // while a verified list decided once needed it ("A verified list decided once"); a change
    // of the limit is a decision with its measurement, not a side effect.
    assert_eq!(
        limit, 1_245_000,
        "the limit was changed in scripts/build-wasm.sh"
    );
    let wasm = common::plugin_wasm();
    let size = std::fs::metadata(&wasm).unwrap().len();
    assert!(
        size < limit,
        "{} is {size} bytes; it must stay under {limit} bytes",
        wasm.display()
    );
}
