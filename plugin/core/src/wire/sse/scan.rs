//! The one pass over an event stream's bytes: line ends, event ends, field spans, and
//! whether an event is plain ASCII.
//!
//! Main design decision: every byte is looked at once, where it arrives (in the chunk, or in
//! the bytes held from earlier chunks), and what the pass learns is kept as offsets relative
//! to the event's first byte. Those offsets stay true whether the event is later read in
//! place from the chunk or from the parser's buffer, so the fields are never searched again
//! (and an ASCII event is not read again for the UTF-8 check).

use std::ops::Range;

/// The UTF-8 byte order mark that may open a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
const LF: u8 = b'\n';
const CR: u8 = b'\r';
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A byte range inside one event, relative to the event's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
}

/// One event the scan completed; positions index the [`Stream`] it was scanned in.
#[derive(Debug, Clone)]
pub(super) struct Completed {
    /// The event's bytes in the stream.
    pub(super) bytes: Range<usize>,
    /// Its `data` values: indices into [`Scanner::data_spans`].
    pub(super) data: Range<usize>,
    /// The last `event` value.
    pub(super) event_type: Option<Span>,
    /// The last `id` value without NUL.
    pub(super) id: Option<Span>,
    /// The event opens with the stream's BOM.
    pub(super) stream_bom: bool,
    /// Every byte of the event is ASCII (so it is UTF-8 without further check).
    pub(super) ascii: bool,
}

/// The bytes one push scans: those held from earlier chunks (already scanned: the start of
/// the unfinished event) followed by the new chunk. Positions count from the held bytes' start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stream<'a> {
    pub(super) held: &'a [u8],
    pub(super) chunk: &'a [u8],
}

impl Stream<'_> {
    /// The byte at stream position `at`.
    fn get(&self, at: usize) -> Option<u8> {
        match at.checked_sub(self.held.len()) {
            Some(in_chunk) => self.chunk.get(in_chunk).copied(),
            None => self.held.get(at).copied(),
        }
    }

    /// Whether `range` (stream positions, possibly across held bytes and chunk) holds `byte`.
    fn contains(&self, range: Range<usize>, byte: u8) -> bool {
        let held = self.held.len();
        let in_held = range.start.min(held)..range.end.min(held);
        let in_chunk = range.start.max(held) - held..range.end.max(held) - held;
        let found = |bytes: &[u8], r: Range<usize>| bytes.get(r).is_some_and(|b| b.contains(&byte));
        found(self.held, in_held) || found(self.chunk, in_chunk)
    }
}

/// The fields whose values the engine reads.
#[derive(Debug, Clone, Copy)]
enum Field {
    Data,
    Event,
    Id,
}

/// The scan's state between chunks.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    /// The line being scanned has no byte yet.
    line_empty: bool,
    /// The last scanned byte was a CR ending a line (`Some(true)` if that line was blank):
    /// a following LF belongs to the same line ending.
    pending_cr: Option<bool>,
    /// How many leading stream bytes matched the BOM so far.
    bom_matched: usize,
    /// The BOM question is settled (matched in full, or the stream started otherwise).
    bom_done: bool,
    /// The next event completed is the first of a stream that opened with a BOM.
    strip_bom: bool,
    /// Where the current line starts, relative to the unfinished event's first byte.
    line_start: usize,
    /// The `data` values of completed events not yet handed out, then the unfinished one's.
    pub(super) data_spans: Vec<Span>,
    /// Where the unfinished event's values start in `data_spans`.
    current_data: usize,
    /// The OR of the unfinished event's bytes (perhaps of a few after it too): its high bits
    /// tell whether the event may hold a byte that is not ASCII.
    seen: u64,
    event_type: Option<Span>,
    id: Option<Span>,
}

impl Scanner {
    /// The state at the start of a stream.
    pub(super) fn new() -> Self {
        Scanner {
            line_empty: true,
            pending_cr: None,
            bom_matched: 0,
            bom_done: false,
            strip_bom: false,
            line_start: 0,
            data_spans: Vec::new(),
            current_data: 0,
            seen: 0,
            event_type: None,
            id: None,
        }
    }

    /// Scans the chunk of `stream` (its held bytes were scanned before) and appends the events
    /// it completes to `done`. At `end_of_stream`, a blank line ended by a final CR completes
    /// its event. Returns where the unfinished event starts (the stream's end if none).
    pub(super) fn scan(
        &mut self,
        stream: Stream<'_>,
        end_of_stream: bool,
        done: &mut Vec<Completed>,
    ) -> usize {
        let base = stream.held.len();
        let mut event_start = 0;
        let mut pos = base;
        while let Some(&byte) = stream.chunk.get(pos - base) {
            // Fast path: a run of line content (no CR pending, BOM settled) only makes the
            // line non-empty, so skip to the next CR or LF in one search.
            if self.pending_cr.is_none() && self.bom_done && byte != LF && byte != CR {
                let rest = stream.chunk.get(pos - base..).unwrap_or_default();
                pos += search(rest, &mut self.seen).unwrap_or(rest.len());
                self.line_empty = false;
                continue;
            }
            pos += 1;
            if let Some(blank) = self.pending_cr.take() {
                if byte == LF {
                    if blank {
                        event_start = self.complete(event_start..pos, done);
                    } else {
                        self.line_start += 1;
                    }
                    continue;
                }
                if blank {
                    event_start = self.complete(event_start..pos - 1, done);
                }
            }
            self.seen |= u64::from(byte);
            if self.skip_bom_byte(byte) {
                if self.bom_done {
                    self.line_start = pos - event_start;
                }
                continue;
            }
            match byte {
                LF if self.line_empty => event_start = self.complete(event_start..pos, done),
                LF | CR => {
                    if !self.line_empty {
                        self.line_end(stream, event_start, pos - 1);
                    }
                    if byte == CR {
                        self.pending_cr = Some(self.line_empty);
                    }
                    self.line_start = pos - event_start;
                    self.line_empty = true;
                }
                _ => self.line_empty = false,
            }
        }
        if end_of_stream && self.pending_cr == Some(true) {
            self.pending_cr = None;
            event_start = self.complete(event_start..pos, done);
        }
        event_start
    }

    /// Forgets the values of the events handed out (call once `done` has been used).
    pub(super) fn forget_completed(&mut self) {
        self.data_spans
            .drain(..self.current_data.min(self.data_spans.len()));
        self.current_data = 0;
        // A chunk of many small events must not keep its peak allocation for the stream.
        self.data_spans.shrink_to(16);
    }

    /// Records the event at `bytes`; returns where the next one starts.
    fn complete(&mut self, bytes: Range<usize>, done: &mut Vec<Completed>) -> usize {
        let next = bytes.end;
        done.push(Completed {
            bytes,
            data: self.current_data..self.data_spans.len(),
            event_type: self.event_type.take(),
            id: self.id.take(),
            stream_bom: std::mem::take(&mut self.strip_bom),
            ascii: std::mem::take(&mut self.seen) & HIGHS == 0,
        });
        self.current_data = self.data_spans.len();
        self.line_start = 0;
        self.line_empty = true;
        next
    }

    /// A non-blank line of the unfinished event (starting at `event_start`) ends at `end`:
    /// records its value if it is a field the engine reads.
    fn line_end(&mut self, stream: Stream<'_>, event_start: usize, end: usize) {
        let start = event_start + self.line_start;
        let Some((field, value_start)) = field_at(stream, start, end) else {
            return;
        };
        let span = Span {
            start: value_start - event_start,
            end: end - event_start,
        };
        match field {
            Field::Data => self.data_spans.push(span),
            Field::Event => self.event_type = Some(span),
            // An id holding NUL is ignored: an earlier id stands.
            Field::Id if !stream.contains(value_start..end, 0) => self.id = Some(span),
            Field::Id => {}
        }
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
}

/// The field the line `start..end` sets, and where its value starts; `None` for a comment or
/// a field the engine does not read. The field name is everything before the first colon
/// (the whole line without one); one space after the colon is not part of the value.
fn field_at(stream: Stream<'_>, start: usize, end: usize) -> Option<(Field, usize)> {
    let field = match stream.get(start)? {
        b'd' => (Field::Data, &b"data"[..]),
        b'e' => (Field::Event, &b"event"[..]),
        b'i' => (Field::Id, &b"id"[..]),
        _ => return None,
    };
    let (field, name) = field;
    let after = start + name.len();
    if after > end
        || !(start..after)
            .zip(name)
            .all(|(at, &b)| stream.get(at) == Some(b))
    {
        return None;
    }
    if after == end {
        return Some((field, end));
    }
    if stream.get(after) != Some(b':') {
        return None;
    }
    let value = after + 1;
    match value < end && stream.get(value) == Some(b' ') {
        true => Some((field, value + 1)),
        false => Some((field, value)),
    }
}

/// The offset of the first CR or LF in `bytes`. Events carrying a tool list are one long
/// `data:` line, so this search is the parser's inner loop.
pub fn find_line_break(bytes: &[u8]) -> Option<usize> {
    search(bytes, &mut 0)
}

/// [`find_line_break`], also ORing into `seen` every byte it looked at (and a few after the
/// break, which only makes a non-ASCII byte seem likelier): the same pass settles most of
/// the UTF-8 check. It tests sixteen bytes per step with a cheap filter (SWAR:
/// `(x - 14) & !x` keeps a lane's high bit when some byte is below 14; CR is 13 and LF 10,
/// and text rarely holds other control bytes) and looks at the bytes one by one only in a
/// block that passes it (a borrow only starts at a byte below 14, so none is missed).
fn search(bytes: &[u8], seen: &mut u64) -> Option<usize> {
    let below = |w: u64| w.wrapping_sub(ONES * 14) & !w;
    let (blocks, rest) = bytes.as_chunks::<16>();
    let mut offset = 0;
    for block in blocks {
        let both = u128::from_le_bytes(*block);
        let (low, high) = (both as u64, (both >> 64) as u64);
        *seen |= low | high;
        if (below(low) | below(high)) & HIGHS != 0
            && let Some(at) = block.iter().position(|&b| b == LF || b == CR)
        {
            return Some(offset + at);
        }
        offset += 16;
    }
    *seen |= rest.iter().fold(0, |all, &b| all | u64::from(b));
    rest.iter()
        .position(|&b| b == LF || b == CR)
        .map(|p| offset + p)
}
