//! The strict parser, the canonical text and the fingerprint together on mutated real
//! documents: whatever the parser accepts canonicalizes stably and digests without a panic.
//! (The parser's own cases are unit tests in `src/wire/json.rs`.)

use toolseal_core::wire::json::parse_strict;

#[test]
fn mutated_documents_never_panic_and_canonical_text_is_stable() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fastmcp-4.2.3-json.tools.json");
    let original = std::fs::read(path).unwrap();
    let fields = toolseal_core::policy::fingerprint::FingerprintFields::default();
    let tokens: &[&[u8]] = &[
        b"{", b"}", b"[", b"]", b",", b":", b"\"", b"\\u", b"\xff", b"1e9", b"-0", b" ",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..5_000 {
        let mut doc = original.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % doc.len() as u64) as usize;
            let token = tokens[(next() % tokens.len() as u64) as usize];
            match next() % 3 {
                0 => drop(doc.splice(at..at, token.iter().copied())),
                1 => drop(doc.remove(at)),
                _ => doc[at] = token[0],
            }
        }
        match parse_strict(&doc, 64) {
            Ok(value) => {
                accepted += 1;
                let text = toolseal_core::wire::canonical::to_canonical_string(&value);
                let again = parse_strict(text.as_bytes(), 64).unwrap();
                assert_eq!(
                    toolseal_core::wire::canonical::to_canonical_string(&again),
                    text
                );
                let _ = toolseal_core::policy::fingerprint::digest_tools(&value["tools"], &fields);
            }
            Err(_) => refused += 1,
        }
    }
    // Both outcomes are exercised (the exact split depends only on the fixed seed).
    assert!(
        accepted > 100 && refused > 100,
        "{accepted} accepted, {refused} refused"
    );
}
