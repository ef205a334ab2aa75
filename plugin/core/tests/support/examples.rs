//! The recordings in `examples/transcripts`, the ones the README and `toolseal replay` use.

use std::path::PathBuf;
use toolseal_core::transcript::{HttpExchange, parse_transcript};

/// The exchanges of `examples/transcripts/{name}.json`.
pub fn transcript(name: &str) -> Vec<HttpExchange> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/transcripts")
        .join(format!("{name}.json"));
    parse_transcript(&std::fs::read(path).unwrap()).unwrap()
}
