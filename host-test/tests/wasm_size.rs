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
    assert_eq!(
        limit, 1_000_000,
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
