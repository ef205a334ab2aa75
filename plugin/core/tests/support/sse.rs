//! The SSE test files' way to parse: feed chunks to the owned parser and end the stream.

use toolseal_core::wire::sse::{SseError, SseEvent, SseParser};

/// An event cap no test body reaches.
pub const BIG: usize = 1 << 20;

/// Feeds `chunks`, then ends the stream: (events, leftover of an unterminated event).
pub fn parse_chunks(
    chunks: &[&[u8]],
    max: usize,
) -> Result<(Vec<SseEvent>, Option<Vec<u8>>), SseError> {
    let mut parser = SseParser::new(max);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.push(chunk)?);
    }
    events.extend(parser.close()?);
    Ok((events, parser.finish()))
}

/// The events of a whole body fed in one chunk.
pub fn parse_whole(body: &[u8]) -> (Vec<SseEvent>, Option<Vec<u8>>) {
    parse_chunks(&[body], BIG).unwrap()
}
