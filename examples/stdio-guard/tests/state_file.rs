//! The state file: exact round trip, strict refusal of anything it did not write, atomic
//! replacement, and a second process's write seen on the next refresh.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use toolseal_core::state::store::{Expect, MemoryStore, StateStore};
use toolseal_stdio::state_file::{StateFile, StateFileError, decode, encode};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolseal-stdio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn store(entries: &[(&str, &[u8])]) -> MemoryStore {
    let mut store = MemoryStore::new();
    for (k, v) in entries {
        store.set(k, v, Expect::Any).unwrap();
    }
    store
}

fn pairs(store: &MemoryStore) -> Vec<(String, Vec<u8>)> {
    store
        .entries()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

#[test]
fn encode_then_decode_keeps_every_key_and_byte() {
    let original = store(&[
        ("ts/v1/servers", b"[\"a\"]"),
        ("ts/v1/srv/a", b"{\"status\":\"verified\"}"),
        ("bin", &[0, 255, 10]),
    ]);
    let text = encode(&original);
    assert_eq!(
        text,
        "{\"entries\":{\"bin\":{\"hex\":\"00ff0a\"},\"ts/v1/servers\":\"[\\\"a\\\"]\",\"ts/v1/srv/a\":\"{\\\"status\\\":\\\"verified\\\"}\"},\"toolseal_stdio_state\":1}\n"
    );
    assert_eq!(pairs(&decode(text.as_bytes()).unwrap()), pairs(&original));
}

#[test]
fn anything_it_did_not_write_is_refused_with_the_reason() {
    let cases: [(&str, &str); 8] = [
        ("", "not JSON"),
        ("[]", "not a JSON object"),
        (
            "{\"entries\":{}}",
            "no \"toolseal_stdio_state\" format number",
        ),
        (
            "{\"toolseal_stdio_state\":2,\"entries\":{}}",
            "format 2, this build reads format 1",
        ),
        ("{\"toolseal_stdio_state\":1}", "no \"entries\" object"),
        (
            "{\"toolseal_stdio_state\":1,\"entries\":{},\"x\":1}",
            "unknown field \"x\"",
        ),
        (
            "{\"toolseal_stdio_state\":1,\"entries\":{\"k\":1}}",
            "entry \"k\": a value is a string or {\"hex\": \"...\"}",
        ),
        (
            "{\"toolseal_stdio_state\":1,\"entries\":{\"k\":{\"hex\":\"abc\"}}}",
            "entry \"k\": \"hex\" must be an even-length hex string",
        ),
    ];
    for (text, reason) in cases {
        let error = decode(text.as_bytes()).err().unwrap();
        assert!(error.starts_with(reason), "{text:?}: {error}");
    }
    let duplicate = decode(b"{\"toolseal_stdio_state\":1,\"entries\":{\"k\":\"a\",\"k\":\"b\"}}")
        .err()
        .unwrap();
    assert!(duplicate.starts_with("not JSON"), "{duplicate}");
}

#[test]
fn a_corrupt_file_is_refused_and_left_untouched() {
    let dir = temp_dir("corrupt");
    let path = dir.join("state.json");
    std::fs::write(&path, "{\"toolseal_stdio_state\":1,").unwrap();
    let error = StateFile::open(&path).err().unwrap();
    assert!(matches!(error, StateFileError::Corrupt { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "the state file {} is unreadable (not JSON",
            path.display()
        )),
        "{message}"
    );
    assert!(message.ends_with("so it is not reset: restore it from a backup, or move it away to start over with no baseline"), "{message}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"toolseal_stdio_state\":1,"
    );
}

#[test]
fn saves_atomically_and_sees_another_process_write_on_refresh() {
    let dir = temp_dir("refresh");
    let path = dir.join("state.json");
    let (mut first, mut first_store) = StateFile::open(&path).unwrap();
    assert!(first_store.is_empty());
    assert!(!path.exists(), "opening does not create the file");
    first_store.set("k", b"one", Expect::Any).unwrap();
    first.lock().unwrap().save(&first_store).unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        ["state.json", "state.json.lock"],
        "no temporary file is left behind"
    );

    let (mut second, mut second_store) = StateFile::open(&path).unwrap();
    assert_eq!(second_store.get("k").unwrap().unwrap().0, b"one");
    second_store.set("k", b"two", Expect::Any).unwrap();
    second.lock().unwrap().save(&second_store).unwrap();

    first.lock().unwrap().refresh(&mut first_store).unwrap();
    assert_eq!(first_store.get("k").unwrap().unwrap().0, b"two");
    // Unchanged on disk: the refresh keeps what is in memory.
    first_store
        .set("only-in-memory", b"x", Expect::Any)
        .unwrap();
    first.lock().unwrap().refresh(&mut first_store).unwrap();
    assert_eq!(first_store.get("only-in-memory").unwrap().unwrap().0, b"x");
    std::fs::remove_dir_all(&dir).unwrap();
}
