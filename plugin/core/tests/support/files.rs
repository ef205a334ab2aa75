//! The files under `tests/data` the tests read: oracles, golden files, recorded transcripts.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// `tests/data/{name}`, wherever the tests run from.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The recorded transcripts (copies of real sessions, one JSON file each).
pub fn transcripts_dir() -> PathBuf {
    data("transcripts")
}

/// The exchanges of one transcript file as JSON, whichever of its two shapes it has.
pub fn exchanges(path: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    match doc {
        Value::Array(items) => items,
        Value::Object(obj) => obj
            .get("exchanges")
            .or(obj.get("entries"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap(),
        _ => panic!("bad transcript {}", path.display()),
    }
}

/// Compares `lines` with `tests/data/golden/{name}.jsonl`, or writes them there under
/// `BLESS=1`; a difference names each line that differs.
pub fn golden(name: &str, lines: &[String]) {
    let path = data(&format!("golden/{name}.jsonl"));
    let text = lines.join("\n") + "\n";
    if std::env::var_os("BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != text {
        let mut diff = String::new();
        for (i, (a, b)) in expected.lines().zip(text.lines()).enumerate() {
            if a != b {
                diff.push_str(&format!("line {}:\n- {a}\n+ {b}\n", i + 1));
            }
        }
        panic!(
            "golden {name} differs ({} expected lines, {} actual); rerun with BLESS=1 after review\n{diff}",
            expected.lines().count(),
            text.lines().count()
        );
    }
}
