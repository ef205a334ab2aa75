//! Line framing of the stdio transport: exact lines, CRLF, blank lines, and the bound.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::io::BufReader;
use toolseal_stdio::line_reader::{Line, LineReader};

fn lines(input: &[u8], max: usize, buffer: usize) -> Vec<Line> {
    let mut reader = LineReader::new(BufReader::with_capacity(buffer, input), max);
    let mut out = Vec::new();
    while let Some(line) = reader.next_line().unwrap() {
        out.push(line);
    }
    out
}

#[test]
fn frames_lines_at_every_buffer_size() {
    let input = b"{\"a\":1}\r\n\n  \n{\"b\":2}\n0123456789ABC\nlast";
    for buffer in 1..=input.len() + 1 {
        assert_eq!(
            lines(input, 10, buffer),
            vec![
                Line::Message(b"{\"a\":1}".to_vec()),
                Line::Message(b"{\"b\":2}".to_vec()),
                Line::TooLong(13),
                Line::Message(b"last".to_vec()),
            ],
            "buffer {buffer}"
        );
    }
}
