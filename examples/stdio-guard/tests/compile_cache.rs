//! The compile cache only ever saves time: an entry is written on first use, found on the
//! next, and an entry that does not load is compiled again and replaced.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use toolseal_stdio::compile_cache::{entry_name, load};
use toolseal_stdio::policy::COMPONENT_WASM;

#[test]
fn writes_then_reuses_and_replaces_a_broken_entry() {
    let dir = std::env::temp_dir().join(format!("toolseal-stdio-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let engine = wasmtime::Engine::default();
    let entry = dir.join(entry_name(&engine, COMPONENT_WASM));
    assert!(
        entry
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("guard-")
    );

    load(&engine, COMPONENT_WASM, Some(&dir)).unwrap();
    let first = std::fs::read(&entry).unwrap();
    assert!(
        first.starts_with(b"\x7fELF"),
        "a precompiled component is an ELF image"
    );

    let reused = load(&engine, COMPONENT_WASM, Some(&dir)).unwrap();
    assert_eq!(reused.serialize().unwrap().len(), first.len());
    assert_eq!(
        std::fs::read(&entry).unwrap(),
        first,
        "a good entry is not rewritten"
    );

    std::fs::write(&entry, b"not a compiled component").unwrap();
    load(&engine, COMPONENT_WASM, Some(&dir)).unwrap();
    assert_eq!(
        std::fs::read(&entry).unwrap(),
        first,
        "a broken entry is replaced by a good one"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
