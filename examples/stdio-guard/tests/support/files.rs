//! The recordings shipped in `examples/transcripts/` and the core's golden decision files.

use std::path::PathBuf;
use toolseal_core::transcript::{HttpExchange, parse_transcript};

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `plugin/core/tests/data/{name}`.
pub fn core_data(name: &str) -> PathBuf {
    workspace().join("plugin/core/tests/data").join(name)
}

/// A recording shipped in `examples/transcripts/` (the core's test copies are the same bytes).
pub fn transcript(name: &str) -> Vec<HttpExchange> {
    let path = workspace().join(format!("examples/transcripts/{name}.json"));
    parse_transcript(&std::fs::read(path).unwrap()).unwrap()
}

/// The lines of the core's golden decision file `name`.
pub fn golden(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(core_data(&format!("golden/{name}.jsonl"))).unwrap();
    text.lines().map(str::to_string).collect()
}
