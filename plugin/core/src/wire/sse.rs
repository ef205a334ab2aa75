//! Incremental Server-Sent Events parsing for streamed MCP responses.
//!
//! Main design decision: each byte is scanned once, where it arrives, for line ends and event
//! boundaries (a blank line), noting where the values of the fields the engine reads lie; a
//! complete event is then read in place from the chunk that holds it, its data borrowed from
//! its one `data:` line. Only the bytes of an unfinished event are copied, to wait for the
//! next chunk. Every event keeps its exact bytes ([`EventRef::raw`]), so an event the engine
//! does not change is forwarded byte for byte (a chunk of such events, as the chunk itself:
//! see [`SseParser::rewrite`]), and the result never depends on where the body was cut into
//! chunks (inside a UTF-8 character, between `\r` and `\n`, inside a leading BOM).
//!
//! Framing follows the WHATWG `text/event-stream` rules: lines end with CRLF, LF or CR; a
//! leading UTF-8 BOM is skipped; `:` starts a comment; a field without a colon has an empty
//! value; one space after the colon is dropped; several `data:` lines join with `\n`; an `id`
//! holding NUL is ignored; unknown fields are ignored. Two deliberate differences, both fail
//! closed: an event that is not valid UTF-8 is an error (browsers substitute U+FFFD), and an
//! event larger than the configured cap is an error. An event without any `data` line
//! (keep-alive comments, a lone `retry:`) is still returned, with `data: None`, so that it can
//! be forwarded unchanged.

mod event;
mod scan;

pub use event::{EventRef, SseEvent};
pub use scan::find_line_break;

use scan::{Completed, Scanner, Stream};
use std::borrow::Cow;
use std::fmt;

/// Why an event stream could not be parsed. The stream cannot be resynchronized after an
/// error: the parser keeps returning it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// One event grew past the configured cap (`limit` bytes) before its blank line.
    EventTooLarge {
        /// The cap that was exceeded, in bytes.
        limit: usize,
    },
    /// A completed event is not valid UTF-8.
    InvalidUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => write!(
                f,
                "a server-sent event is larger than {limit} bytes; raise \
                 limits.max_response_bytes if the server legitimately sends such events"
            ),
            SseError::InvalidUtf8 => write!(
                f,
                "a server-sent event is not valid UTF-8; the upstream server's event stream \
                 is corrupt or not text/event-stream"
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// How the events of one push relate to its chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The events are the chunk, byte for byte: nothing was held from earlier chunks and
    /// nothing of this one is held back.
    Exact,
    /// Bytes held from earlier chunks open the first event, or bytes of this chunk are held
    /// back (an unfinished event, or a blank line's CR waiting for a possible LF).
    Shifted,
}

/// An incremental `text/event-stream` parser: feed chunks as they arrive, get the events
/// they complete.
#[derive(Debug, Clone)]
pub struct SseParser {
    max_event_bytes: usize,
    /// The bytes of the unfinished event (held from earlier chunks).
    buf: Vec<u8>,
    scanner: Scanner,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser that refuses any single event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            buf: Vec::new(),
            scanner: Scanner::new(),
            failed: None,
        }
    }

    /// Feeds the next chunk of the body and returns every event it completed, in order. A
    /// partial event is held until a later chunk completes it.
    ///
    /// An event whose blank line ends with a CR that is the last byte seen so far is held
    /// until the next byte shows whether an LF follows (so `raw` never depends on the
    /// chunking); at end of stream call [`SseParser::close`] to release it.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.feed(chunk, false, |events, _| {
            events.iter().map(EventRef::to_event).collect()
        })
    }

    /// End of stream: returns the event held back because its last byte was a CR (see
    /// [`SseParser::push`]), if any. Call it before [`SseParser::finish`].
    pub fn close(&mut self) -> Result<Vec<SseEvent>, SseError> {
        self.feed(&[], true, |events, _| {
            events.iter().map(EventRef::to_event).collect()
        })
    }

    /// In place: feeds the next chunk and hands `f` every event it completed, in order,
    /// borrowed from the chunk (or from the held bytes, for an event begun in an earlier
    /// chunk). `end`: the stream ends with this chunk, as if [`SseParser::close`] followed.
    ///
    /// The events are read before any is handed out: on an error `f` is never called, as
    /// [`SseParser::push`] returns no event then. Returns whether the events are exactly the
    /// chunk's bytes ([`Coverage::Exact`]) or not.
    pub fn push_with(
        &mut self,
        chunk: &[u8],
        end: bool,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Result<Coverage, SseError> {
        self.feed(chunk, end, |events, coverage| {
            events.into_iter().for_each(&mut f);
            coverage
        })
    }

    /// In place: feeds the next chunk (`end` as for [`SseParser::push_with`]) and asks
    /// `replace` for each event it completed whether other bytes stand in for it. Returns
    /// `None` when the bytes to forward are the chunk itself (coverage [`Coverage::Exact`]
    /// and no event replaced), else the bytes to forward in place of the chunk: the events'
    /// bytes or their replacements, in order (empty when nothing is complete yet).
    pub fn rewrite(
        &mut self,
        chunk: &[u8],
        end: bool,
        mut replace: impl FnMut(&EventRef<'_>) -> Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>, SseError> {
        self.feed(chunk, end, |events, coverage| {
            let mut forward = match coverage {
                Coverage::Exact => None,
                Coverage::Shifted => {
                    Some(Vec::with_capacity(events.iter().map(|e| e.raw.len()).sum()))
                }
            };
            for (index, event) in events.iter().enumerate() {
                match (replace(event), forward.as_mut()) {
                    (Some(new), Some(bytes)) => bytes.extend_from_slice(&new),
                    (None, Some(bytes)) => bytes.extend_from_slice(event.raw),
                    (None, None) => {}
                    (Some(new), None) => {
                        // The first change in a chunk forwarded so far as it is.
                        let before = events.get(..index).unwrap_or_default();
                        let mut bytes: Vec<u8> =
                            before.iter().flat_map(|e| e.raw).copied().collect();
                        bytes.extend_from_slice(&new);
                        forward = Some(bytes);
                    }
                }
            }
            forward
        })
    }

    /// End of stream: returns the raw bytes of an unterminated event (no blank line at the
    /// end), or `None` when the stream ended cleanly. The parser is reset. (After an error,
    /// the bytes are those held when it occurred, not a reading of the stream.)
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let leftover = std::mem::take(&mut self.buf);
        *self = SseParser::new(self.max_event_bytes);
        if leftover.is_empty() {
            None
        } else {
            Some(leftover)
        }
    }

    /// The one parsing path: scans `chunk`, reads the events it completed (every check
    /// passes before `use_events` sees any), then keeps the unfinished event's bytes.
    fn feed<R>(
        &mut self,
        chunk: &[u8],
        end: bool,
        use_events: impl FnOnce(Vec<EventRef<'_>>, Coverage) -> R,
    ) -> Result<R, SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let base = self.buf.len();
        let mut completed = Vec::new();
        let stream = Stream {
            held: &self.buf,
            chunk,
        };
        let unfinished = self.scanner.scan(stream, end, &mut completed);
        // An event begun in the held bytes is completed there, so that it is one slice.
        if let Some(first) = completed.first()
            && first.bytes.start < base
            && let Some(rest) = first.bytes.end.checked_sub(base)
        {
            self.buf
                .extend_from_slice(chunk.get(..rest).unwrap_or_default());
        }
        let result = self.use_completed(chunk, base, &completed, unfinished, use_events);
        match result {
            Ok(value) => {
                if !completed.is_empty() {
                    // The unfinished event starts in the chunk: only its bytes are kept.
                    self.buf.clear();
                    self.buf.extend_from_slice(
                        chunk
                            .get(unfinished.saturating_sub(base)..)
                            .unwrap_or_default(),
                    );
                } else {
                    self.buf.extend_from_slice(chunk);
                }
                self.scanner.forget_completed();
                Ok(value)
            }
            Err(err) => {
                self.failed = Some(err.clone());
                Err(err)
            }
        }
    }

    /// Reads the `completed` events (from `buf` when begun before the chunk, which starts at
    /// stream position `base`) and hands them to `use_events`; refuses an event over the cap
    /// or not UTF-8, and an unfinished event (from `unfinished` on) already over the cap.
    fn use_completed<R>(
        &self,
        chunk: &[u8],
        base: usize,
        completed: &[Completed],
        unfinished: usize,
        use_events: impl FnOnce(Vec<EventRef<'_>>, Coverage) -> R,
    ) -> Result<R, SseError> {
        let limit = self.max_event_bytes;
        let mut events = Vec::with_capacity(completed.len());
        for event in completed {
            if event.bytes.len() > limit {
                return Err(SseError::EventTooLarge { limit });
            }
            let raw = match event.bytes.start.checked_sub(base) {
                Some(start) => chunk.get(start..event.bytes.end - base),
                None => self.buf.get(event.bytes.clone()),
            };
            events.push(self.read_event(raw.unwrap_or_default(), event)?);
        }
        let total = base + chunk.len();
        if total.saturating_sub(unfinished) > limit {
            return Err(SseError::EventTooLarge { limit });
        }
        let coverage = match base == 0 && unfinished >= total {
            true => Coverage::Exact,
            false => Coverage::Shifted,
        };
        Ok(use_events(events, coverage))
    }

    /// The fields of one complete event, read at the spans the scan noted.
    fn read_event<'a>(&self, raw: &'a [u8], event: &Completed) -> Result<EventRef<'a>, SseError> {
        if !event.ascii && std::str::from_utf8(raw).is_err() {
            return Err(SseError::InvalidUtf8);
        }
        let bytes = |span: scan::Span| raw.get(span.start..span.end).unwrap_or_default();
        // Short values: checked again as they become `&str` (never fails: the event is UTF-8).
        let text = |span: scan::Span| std::str::from_utf8(bytes(span)).ok();
        let spans = self
            .scanner
            .data_spans
            .get(event.data.clone())
            .unwrap_or_default();
        let data = match spans {
            [] => None,
            [one] => Some(Cow::Borrowed(bytes(*one))),
            several => {
                let mut joined = Vec::with_capacity(raw.len());
                for (index, span) in several.iter().enumerate() {
                    if index > 0 {
                        joined.push(b'\n');
                    }
                    joined.extend_from_slice(bytes(*span));
                }
                Some(Cow::Owned(joined))
            }
        };
        Ok(EventRef {
            raw,
            data,
            event_type: event.event_type.and_then(text),
            id: event.id.and_then(text),
            stream_bom: event.stream_bom,
        })
    }
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
