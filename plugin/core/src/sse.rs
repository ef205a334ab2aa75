//! Incremental Server-Sent Events parsing for streamed MCP responses.
//!
//! Main design decision: while bytes arrive, the parser only looks for event boundaries (a
//! blank line) and keeps every event's exact bytes in [`SseEvent::raw`]; fields are read once
//! the event is complete. An event the engine does not change is therefore forwarded byte for
//! byte, and the result never depends on where the body was cut into chunks (inside a UTF-8
//! character, between `\r` and `\n`, inside a leading BOM).
//!
//! Framing follows the WHATWG `text/event-stream` rules: lines end with CRLF, LF or CR; a
//! leading UTF-8 BOM is skipped; `:` starts a comment; a field without a colon has an empty
//! value; one space after the colon is dropped; several `data:` lines join with `\n`; an `id`
//! holding NUL is ignored; unknown fields are ignored. Two deliberate differences, both fail
//! closed: an event that is not valid UTF-8 is an error (browsers substitute U+FFFD), and an
//! event larger than the configured cap is an error. An event without any `data` line
//! (keep-alive comments, a lone `retry:`) is still returned, with `data: None`, so that it can
//! be forwarded unchanged.

use std::fmt;

/// The UTF-8 byte order mark that may open a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
const LF: u8 = b'\n';
const CR: u8 = b'\r';

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

/// One complete event of a `text/event-stream` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The exact bytes of the event, including its terminating blank line (and the stream's
    /// BOM for the first event), so that an unchanged event is forwarded byte-identical.
    pub raw: Vec<u8>,
    /// The `data` lines joined with `\n`; `None` when the event has no `data` field
    /// (a keep-alive comment, for example). A priming event `data:` gives `Some("")`.
    pub data: Option<String>,
    /// The last `event:` value; `None` when absent (SSE clients then use `message`).
    pub event_type: Option<String>,
    /// The last `id:` value (without NUL); `None` when absent. `id:` alone gives `Some("")`.
    pub id: Option<String>,
    /// `raw` opens with the stream's BOM (first event only); a BOM later in a stream is
    /// line content, which [`SseEvent::with_data`] must keep as such.
    stream_bom: bool,
}

impl SseEvent {
    /// Re-encodes the event with its data replaced by `data`.
    ///
    /// Every other line (`id`, `event`, `retry`, comments, unknown fields) is kept in place
    /// with its own line ending; the new `data:` lines take the position of the first old
    /// `data` line (or go just before the blank line when there was none) and end like the
    /// line they stand in for; a CR line end that would meet the blank line's LF is written
    /// as CRLF (the same to a client), so the event always ends. Data holding line breaks (CRLF, LF or CR) becomes several
    /// `data:` lines, so a client reads it back with `\n` separators. A leading BOM in `raw`
    /// is kept: as the stream's BOM on the first event, as line content on a later one.
    pub fn with_data(&self, data: &str) -> Vec<u8> {
        let text = String::from_utf8_lossy(&self.raw);
        let (bom, body) = match text.strip_prefix('\u{FEFF}') {
            Some(body) if self.stream_bom => ("\u{FEFF}", body),
            _ => ("", &*text),
        };
        let eol = match split_line(body).1 {
            "" => "\n",
            term => term,
        };
        let mut out = Vec::with_capacity(self.raw.len() + data.len());
        out.extend_from_slice(bom.as_bytes());
        let mut data_written = false;
        let mut rest = body;
        loop {
            let (line, term, next) = split_line(rest);
            let term = if term.is_empty() { eol } else { term };
            if line.is_empty() {
                if !data_written {
                    write_data_lines(&mut out, data, term);
                }
                // Lines are dropped and inserted here: a CR-ended line now right before an
                // LF blank line would read as one CRLF and the event would never end. Make
                // that CR a CRLF (the same line end to a client).
                if term.starts_with('\n') && out.ends_with(b"\r") {
                    out.push(b'\n');
                }
                out.extend_from_slice(term.as_bytes());
                return out;
            }
            if field_name(line) == Some("data") {
                if !data_written {
                    write_data_lines(&mut out, data, term);
                    data_written = true;
                }
            } else {
                out.extend_from_slice(line.as_bytes());
                out.extend_from_slice(term.as_bytes());
            }
            rest = next;
        }
    }
}

/// Splits `data` at line breaks and writes one `data: ` line per piece.
fn write_data_lines(out: &mut Vec<u8>, data: &str, eol: &str) {
    let mut rest = data;
    loop {
        let (piece, term, next) = split_line(rest);
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(piece.as_bytes());
        out.extend_from_slice(eol.as_bytes());
        if term.is_empty() {
            return;
        }
        rest = next;
    }
}

/// Splits off the first line of `s`: `(line, terminator, rest)`. The terminator is `\r\n`,
/// `\r`, `\n`, or empty when `s` has no line break.
fn split_line(s: &str) -> (&str, &str, &str) {
    // A byte search: CR and LF are ASCII, so their offsets are char boundaries, and `find`
    // with a char set decodes every character (the parser's main cost on a large event).
    let Some(pos) = find_line_break(s.as_bytes()) else {
        return (s, "", "");
    };
    let Some((line, after)) = s.split_at_checked(pos) else {
        return (s, "", "");
    };
    let term_len = if after.starts_with("\r\n") { 2 } else { 1 };
    match after.split_at_checked(term_len) {
        Some((term, rest)) => (line, term, rest),
        None => (line, after, ""),
    }
}

/// The offset of the first CR or LF in `bytes`. Events carrying a tool list are one long
/// `data:` line, so this search is the parser's inner loop: it tests eight bytes per step
/// (SWAR: a byte equal to the target makes its lane's high bit survive `(x - 1) & !x`; the
/// lowest flagged lane is always exact, higher ones may be borrow artefacts and are ignored).
pub fn find_line_break(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in words.by_ref() {
        let mut lanes = [0u8; 8];
        lanes.copy_from_slice(word);
        let w = u64::from_le_bytes(lanes);
        let lf = w ^ (ONES * u64::from(LF));
        let cr = w ^ (ONES * u64::from(CR));
        let hits = (lf.wrapping_sub(ONES) & !lf | cr.wrapping_sub(ONES) & !cr) & HIGHS;
        if hits != 0 {
            return Some(offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == LF || b == CR)
        .map(|p| offset + p)
}

/// The field name of a non-blank line; `None` for a comment.
fn field_name(line: &str) -> Option<&str> {
    if line.starts_with(':') {
        return None;
    }
    Some(line.split_once(':').map_or(line, |(name, _)| name))
}

/// Reads the fields of one complete event (`text` without the stream BOM).
fn read_fields(text: &str) -> (Option<String>, Option<String>, Option<String>) {
    let mut data: Option<String> = None;
    let mut event_type = None;
    let mut id = None;
    let mut rest = text;
    loop {
        let (line, _, next) = split_line(rest);
        if line.is_empty() {
            return (data, event_type, id);
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "" => {} // a comment line
            "data" => match data.as_mut() {
                Some(joined) => {
                    joined.push('\n');
                    joined.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" => event_type = Some(value.to_owned()),
            "id" if !value.contains('\0') => id = Some(value.to_owned()),
            _ => {} // retry and unknown fields are kept in `raw` only
        }
        rest = next;
    }
}

/// An incremental `text/event-stream` parser: feed chunks as they arrive, get the events
/// they complete.
#[derive(Debug, Clone)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes of the events not yet returned (a partial event, at most).
    buf: Vec<u8>,
    /// How many bytes of `buf` the boundary scan has already looked at.
    scanned: usize,
    /// The line being scanned has no byte yet.
    line_empty: bool,
    /// The last scanned byte was a CR ending a line (`Some(true)` if that line was blank):
    /// a following LF belongs to the same line ending.
    pending_cr: Option<bool>,
    /// How many leading stream bytes matched the BOM so far.
    bom_matched: usize,
    /// The BOM question is settled (matched in full, or the stream started otherwise).
    bom_done: bool,
    /// The next event returned is the first of a stream that opened with a BOM.
    strip_bom: bool,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser that refuses any single event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            buf: Vec::new(),
            scanned: 0,
            line_empty: true,
            pending_cr: None,
            bom_matched: 0,
            bom_done: false,
            strip_bom: false,
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
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        self.buf.extend_from_slice(chunk);
        let ends = self.scan();
        self.take_events(&ends)
    }

    /// End of stream: returns the event held back because its last byte was a CR (see
    /// [`SseParser::push`]), if any. Call it before [`SseParser::finish`].
    pub fn close(&mut self) -> Result<Vec<SseEvent>, SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.pending_cr != Some(true) {
            return Ok(Vec::new());
        }
        self.pending_cr = None;
        let end = self.buf.len();
        self.take_events(&[end])
    }

    /// End of stream: returns the raw bytes of an unterminated event (no blank line at the
    /// end), or `None` when the stream ended cleanly. The parser is reset.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let leftover = std::mem::take(&mut self.buf);
        *self = SseParser::new(self.max_event_bytes);
        if leftover.is_empty() {
            None
        } else {
            Some(leftover)
        }
    }

    /// Scans the new bytes of `buf` and returns the end offsets of the events they complete.
    fn scan(&mut self) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut pos = self.scanned;
        while let Some(&byte) = self.buf.get(pos) {
            // Fast path: a run of line content (no CR pending, BOM settled) only makes the
            // line non-empty, so skip to the next CR or LF in one search.
            if self.pending_cr.is_none() && self.bom_done && byte != LF && byte != CR {
                let rest = self.buf.get(pos..).unwrap_or_default();
                pos += find_line_break(rest).unwrap_or(rest.len());
                self.line_empty = false;
                continue;
            }
            pos += 1;
            if let Some(blank) = self.pending_cr.take() {
                if byte == LF {
                    if blank {
                        ends.push(pos);
                    }
                    continue;
                }
                if blank {
                    ends.push(pos - 1);
                }
            }
            if self.skip_bom_byte(byte) {
                continue;
            }
            match byte {
                LF if self.line_empty => ends.push(pos),
                LF => self.line_empty = true,
                CR => {
                    self.pending_cr = Some(self.line_empty);
                    self.line_empty = true;
                }
                _ => self.line_empty = false,
            }
        }
        self.scanned = pos;
        ends
    }

    /// Whether `byte` is part of the BOM that opens the stream.
    fn skip_bom_byte(&mut self, byte: u8) -> bool {
        if self.bom_done {
            return false;
        }
        if BOM.get(self.bom_matched) == Some(&byte) {
            self.bom_matched += 1;
            if self.bom_matched == BOM.len() {
                self.bom_done = true;
                self.strip_bom = true;
            }
            return true;
        }
        // Not a BOM after all: the bytes taken so far were ordinary line content.
        self.bom_done = true;
        if self.bom_matched > 0 {
            self.line_empty = false;
        }
        false
    }

    /// Cuts the events ending at `ends` out of `buf` and reads their fields.
    fn take_events(&mut self, ends: &[usize]) -> Result<Vec<SseEvent>, SseError> {
        let result = self.read_events(ends);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    fn read_events(&mut self, ends: &[usize]) -> Result<Vec<SseEvent>, SseError> {
        let limit = self.max_event_bytes;
        let mut events = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in ends {
            let raw = self.buf.get(start..end).unwrap_or_default();
            if raw.len() > limit {
                return Err(SseError::EventTooLarge { limit });
            }
            events.push(self.read_event(raw.to_vec())?);
            start = end;
        }
        let start = start.min(self.buf.len());
        self.buf.drain(..start);
        self.scanned = self.scanned.saturating_sub(start);
        if self.buf.len() > limit {
            return Err(SseError::EventTooLarge { limit });
        }
        Ok(events)
    }

    fn read_event(&mut self, raw: Vec<u8>) -> Result<SseEvent, SseError> {
        let text = std::str::from_utf8(&raw).map_err(|_| SseError::InvalidUtf8)?;
        let stream_bom = std::mem::take(&mut self.strip_bom);
        let body = match stream_bom {
            true => text.strip_prefix('\u{FEFF}').unwrap_or(text),
            false => text,
        };
        let (data, event_type, id) = read_fields(body);
        Ok(SseEvent {
            raw,
            data,
            event_type,
            id,
            stream_bom,
        })
    }
}
