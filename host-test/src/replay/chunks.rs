//! Deterministic, deliberately awkward body chunking: bodies reach the plugin the way a
//! network delivers them, cut mid-line, between `\r` and `\n`, and inside multi-byte UTF-8
//! characters, so that a plugin which assumes whole lines or whole events fails here.
//!
//! Main design decision: the cut points are a pure function of the body and the chunk size
//! (every `size` bytes, plus after every `\r` of a CRLF, plus after the first byte of every
//! multi-byte character), so a failing replay fails again identically.

/// The chunk size `toolseal replay` uses unless `--chunk` says otherwise.
pub const DEFAULT_CHUNK: usize = 61;

/// Splits `body` into chunks. `size == 0` delivers the body whole (one chunk, no awkward
/// cuts); an empty body yields no chunk.
pub fn split(body: &[u8], size: usize) -> Vec<&[u8]> {
    if body.is_empty() {
        return Vec::new();
    }
    if size == 0 {
        return vec![body];
    }
    let mut cuts: Vec<usize> = (size..body.len()).step_by(size).collect();
    for (i, pair) in body.windows(2).enumerate() {
        let cr_lf = pair == b"\r\n";
        let inside_char = pair.first().is_some_and(|b| *b >= 0xC0)
            && pair.get(1).is_some_and(|b| (0x80..0xC0).contains(b));
        if cr_lf || inside_char {
            cuts.push(i + 1);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        if let Some(chunk) = body.get(start..cut) {
            chunks.push(chunk);
        }
        start = cut;
    }
    if let Some(rest) = body.get(start..) {
        chunks.push(rest);
    }
    chunks
}
