//! Line-delimited JSON-RPC framing (the MCP stdio transport): one message per line.
//!
//! Main design decision: a line is bounded ([`MAX_LINE_BYTES`]); a longer one is consumed to
//! its end and reported as over-long instead of being buffered without limit, so a peer
//! cannot exhaust the guard's memory and the next line still frames correctly.

use std::io::BufRead;

/// The longest line read whole (64 MiB); the policy's own limits are smaller.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One framed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line without its `\n` (and without a trailing `\r`).
    Message(Vec<u8>),
    /// A line longer than the bound (its length).
    TooLong(usize),
}

/// Reads lines from `reader` with a bound of `max` bytes each.
pub struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Lines of at most `max` bytes from `reader`.
    pub fn new(reader: R, max: usize) -> Self {
        LineReader { reader, max }
    }

    /// The next line, `Ok(None)` at the end of input. Blank lines are skipped.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let mut line = Vec::new();
            let mut total = 0usize;
            let mut ended = false;
            loop {
                let available = self.reader.fill_buf()?;
                if available.is_empty() {
                    break;
                }
                let (take, newline) = match available.iter().position(|b| *b == b'\n') {
                    Some(at) => (at, true),
                    None => (available.len(), false),
                };
                total = total.saturating_add(take);
                if total <= self.max {
                    line.extend_from_slice(available.get(..take).unwrap_or_default());
                }
                self.reader.consume(if newline { take + 1 } else { take });
                ended = true;
                if newline {
                    break;
                }
            }
            if !ended {
                return Ok(None);
            }
            if total > self.max {
                return Ok(Some(Line::TooLong(total)));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Line::Message(line)));
        }
    }
}
