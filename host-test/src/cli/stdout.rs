//! Writing results to stdout without panicking when the reader goes away
//! (`toolseal replay … | head` closes the pipe early; that is not an error).

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout; a closed pipe ends the output silently.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

/// Writes each line of `lines` followed by a newline.
pub fn print_lines<S: AsRef<str>>(lines: &[S]) -> Result<()> {
    let mut text = String::new();
    for line in lines {
        text.push_str(line.as_ref());
        text.push('\n');
    }
    print(&text)
}
