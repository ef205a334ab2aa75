//! One complete event: borrowed from the bytes it was read in ([`EventRef`]) or owned
//! ([`SseEvent`]), and its re-encoding with new data.
//!
//! Main design decision: the borrowed form is what the parser produces; the owned form is a
//! copy of it for callers that keep events past the chunk. Both re-encode through the same
//! function, which keeps every line it does not replace byte for byte.

use std::borrow::Cow;

/// One complete event, borrowed from the chunk it arrived in (or from the parser's buffer
/// when it began in an earlier chunk). See [`crate::wire::sse::SseParser::push_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The exact bytes of the event, including its terminating blank line (and the stream's
    /// BOM for the first event).
    pub raw: &'a [u8],
    /// The `data` lines joined with `\n`: borrowed from `raw` when there is one `data` line,
    /// joined anew only when there are several. `None` when the event has no `data` field; a
    /// priming event `data:` gives `Some(b"")`. Always UTF-8 (the parser refuses an event
    /// that is not); bytes, so that the parser need not prove it to the type system with a
    /// second, slower check of the whole event.
    pub data: Option<Cow<'a, [u8]>>,
    /// The last `event:` value; `None` when absent (SSE clients then use `message`).
    pub event_type: Option<&'a str>,
    /// The last `id:` value (without NUL); `None` when absent. `id:` alone gives `Some("")`.
    pub id: Option<&'a str>,
    /// `raw` opens with the stream's BOM (first event only).
    pub(super) stream_bom: bool,
}

impl EventRef<'_> {
    /// An owned copy, to keep past the chunk.
    pub fn to_event(&self) -> SseEvent {
        SseEvent {
            raw: self.raw.to_vec(),
            data: self.data.as_deref().map(|d| utf8_lossy(d).into_owned()),
            event_type: self.event_type.map(str::to_owned),
            id: self.id.map(str::to_owned),
            stream_bom: self.stream_bom,
        }
    }

    /// Re-encodes the event with its data replaced by `data`; see [`SseEvent::with_data`].
    pub fn with_data(&self, data: &str) -> Vec<u8> {
        with_data(self.raw, self.stream_bom, data)
    }
}

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
        with_data(&self.raw, self.stream_bom, data)
    }
}

/// [`SseEvent::with_data`] on the bytes of an event.
fn with_data(raw: &[u8], stream_bom: bool, data: &str) -> Vec<u8> {
    let text = utf8_lossy(raw);
    let (bom, body) = match text.strip_prefix('\u{FEFF}') {
        Some(body) if stream_bom => ("\u{FEFF}", body),
        _ => ("", &*text),
    };
    let eol = match split_line(body).1 {
        "" => "\n",
        term => term,
    };
    let mut out = Vec::with_capacity(raw.len() + data.len());
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

/// `bytes` as text, invalid sequences replaced: borrowed after one validation pass when they
/// are valid UTF-8, as an event of a JSON server always is (the lossy decoder alone walks a
/// large event several times slower).
fn utf8_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
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
    // with a char set decodes every character.
    let Some(pos) = super::find_line_break(s.as_bytes()) else {
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

/// The field name of a non-blank line; `None` for a comment.
fn field_name(line: &str) -> Option<&str> {
    if line.starts_with(':') {
        return None;
    }
    Some(line.split_once(':').map_or(line, |(name, _)| name))
}
