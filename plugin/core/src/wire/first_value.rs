//! Whether a JSON body holds more than one value, told from its bytes as they arrive.
//!
//! Main design decision: a scanner with a few bytes of state, fed each chunk once, that only
//! answers "a non-whitespace byte follows the first complete value". An HTTP body that MCP
//! sends as `application/json` is one JSON-RPC message; a body that goes on after its first
//! value (newline-separated messages) can never become one, so it can be refused the moment
//! that byte arrives instead of when the stream ends, which a stream that keeps sending may
//! never do. The scanner validates nothing else: whatever it does not recognise ends its
//! watch, and the strict parser decides on the whole body as before.

/// What the bytes fed so far show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// Nothing yet beyond the first value (it may still be open, or followed only by
    /// whitespace), or the scanner stopped watching: the body is decided when it ends.
    Undecided,
    /// A non-whitespace byte follows the first complete value: the body is not one JSON text.
    Trailing,
}

/// Where the scan stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    /// Only whitespace so far.
    #[default]
    Before,
    /// Inside a top-level object, array or string.
    Inside,
    /// Inside a top-level number or literal (`true`, `false`, `null`).
    Bare,
    /// The first value is complete; only whitespace since.
    After,
    /// A byte followed the first value.
    Trailing,
    /// A byte no JSON text starts or closes with where it stands: left to the parser.
    Abandoned,
}

/// The scan of one body, fed chunk by chunk ([`FirstValue::feed`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FirstValue {
    /// How many bytes were fed: the offset of the next chunk in the body.
    fed: usize,
    /// Open objects and arrays (saturating: the parser bounds the depth).
    depth: usize,
    in_string: bool,
    escaped: bool,
    phase: Phase,
}

impl FirstValue {
    /// How many bytes of the body were fed so far.
    pub fn fed(&self) -> usize {
        self.fed
    }

    /// Whether more bytes can still change the answer (the scan neither found trailing
    /// bytes nor stopped watching).
    pub fn watching(&self) -> bool {
        !matches!(self.phase, Phase::Trailing | Phase::Abandoned)
    }

    /// Passes over the next `len` bytes of the body without reading them, when they are known
    /// to be one complete JSON value standing where a member's value stands inside the first
    /// value (the scan is inside an object or array, between strings). A complete value
    /// leaves the scan where it found it, so only the offset moves. Returns whether it could
    /// (not at such a place: nothing changes, and the bytes must be fed).
    pub fn skip_value(&mut self, len: usize) -> bool {
        if !self.between_values() {
            return false;
        }
        self.fed = self.fed.saturating_add(len);
        true
    }

    /// Whether the scan stands inside the first value, between strings, where a member's or
    /// an element's value may start.
    pub fn between_values(&self) -> bool {
        self.phase == Phase::Inside && !self.in_string && !self.escaped && self.depth > 0
    }

    /// Stops watching (a chunk could not be read, so the offsets no longer line up): the
    /// body is then decided when it ends, as without the scan.
    pub fn abandon(&mut self) {
        self.phase = Phase::Abandoned;
    }

    /// Feeds the next bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) -> Extent {
        self.fed = self.fed.saturating_add(bytes.len());
        let mut at = 0;
        while self.watching() {
            let Some(&byte) = bytes.get(at) else {
                break;
            };
            at = match self.phase {
                Phase::Inside => self.inside(bytes, at),
                _ => {
                    self.step(byte);
                    at.saturating_add(1)
                }
            };
        }
        match self.phase {
            Phase::Trailing => Extent::Trailing,
            _ => Extent::Undecided,
        }
    }

    /// One byte outside the first value (before it, after it, or in a bare one).
    fn step(&mut self, byte: u8) {
        let space = matches!(byte, b' ' | b'\t' | b'\n' | b'\r');
        self.phase = match self.phase {
            Phase::Before if space => Phase::Before,
            Phase::Before => match byte {
                b'{' | b'[' => {
                    self.depth = 1;
                    Phase::Inside
                }
                b'"' => {
                    self.in_string = true;
                    Phase::Inside
                }
                _ if bare(byte) => Phase::Bare,
                _ => Phase::Abandoned,
            },
            Phase::Bare if bare(byte) => Phase::Bare,
            Phase::Bare if space => Phase::After,
            Phase::After if space => Phase::After,
            Phase::Bare | Phase::After => Phase::Trailing,
            other @ (Phase::Inside | Phase::Trailing | Phase::Abandoned) => other,
        };
    }

    /// The bytes of `bytes` from `at` inside the first value, up to its end (then the phase
    /// is `After`) or the end of the chunk; returns where it stopped. The scan's state lives in
    /// locals for the run, and the text of a string is skipped a word at a time: most of a
    /// tool list is text, and a byte-by-byte scan of it cost a 100-tool list arriving in
    /// chunks more guest instructions than the list's whole decision (docs/performance.md).
    fn inside(&mut self, bytes: &[u8], at: usize) -> usize {
        let (mut depth, mut in_string, mut escaped) = (self.depth, self.in_string, self.escaped);
        let mut rest = bytes.get(at..).unwrap_or_default();
        'scan: loop {
            if escaped {
                let Some((_, tail)) = rest.split_first() else {
                    break;
                };
                (rest, escaped) = (tail, false);
            }
            if in_string {
                // The string's text up to its next quote or backslash.
                let Some((stop, tail)) = string_stop(rest) else {
                    rest = &[];
                    break;
                };
                rest = tail;
                if stop == b'\\' {
                    escaped = true;
                    continue;
                }
                in_string = false;
                if depth == 0 {
                    self.phase = Phase::After;
                    break;
                }
            }
            // Between strings: byte by byte (a few punctuation bytes, numbers and literals).
            while let Some((&byte, tail)) = rest.split_first() {
                rest = tail;
                match byte {
                    b'"' => {
                        in_string = true;
                        continue 'scan;
                    }
                    b'{' | b'[' => depth = depth.saturating_add(1),
                    b'}' | b']' => match depth.checked_sub(1) {
                        Some(0) => {
                            depth = 0;
                            self.phase = Phase::After;
                            break 'scan;
                        }
                        Some(less) => depth = less,
                        None => {
                            self.phase = Phase::Abandoned;
                            break 'scan;
                        }
                    },
                    _ => {}
                }
            }
            break;
        }
        (self.depth, self.in_string, self.escaped) = (depth, in_string, escaped);
        bytes.len() - rest.len()
    }
}

/// Every byte of a word set to `0x01`.
const ONES: u64 = u64::from_le_bytes([0x01; 8]);
/// Every byte of a word set to `0x80`.
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
/// Every byte of a word a quote.
const QUOTES: u64 = u64::from_le_bytes([b'"'; 8]);
/// Every byte of a word a backslash.
const BACKSLASHES: u64 = u64::from_le_bytes([b'\\'; 8]);

/// A word whose lowest set bit is the high bit of the first zero byte of `word` (zero when it
/// has none): bits above it may be set falsely, the lowest one never is.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The first quote or backslash of `bytes` and the bytes after it (`None`: there is none),
/// found eight bytes at a time.
fn string_stop(mut bytes: &[u8]) -> Option<(u8, &[u8])> {
    while let Some((word, tail)) = bytes.split_first_chunk::<8>() {
        let word = u64::from_le_bytes(*word);
        let hits = zero_bytes(word ^ QUOTES) | zero_bytes(word ^ BACKSLASHES);
        if hits != 0 {
            let within = (hits.trailing_zeros() / 8) as usize;
            let (stop, after) = bytes.get(within..)?.split_first()?;
            return Some((*stop, after));
        }
        bytes = tail;
    }
    let position = bytes.iter().position(|&b| b == b'"' || b == b'\\')?;
    let (stop, after) = bytes.get(position..)?.split_first()?;
    Some((*stop, after))
}

/// A byte of a bare top-level value: a number or `true`/`false`/`null`.
fn bare(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The scan as first written, byte by byte through the whole value: the word-at-a-time
    /// scan must answer as it does for every body, however it is cut. Bytes outside the value
    /// go through the scan's own `step`, which the word scan did not change.
    fn byte_by_byte(scan: &mut FirstValue, bytes: &[u8]) {
        scan.fed += bytes.len();
        for &byte in bytes {
            match scan.phase {
                Phase::Trailing | Phase::Abandoned => return,
                Phase::Inside => scan.phase = inside_byte(scan, byte),
                _ => scan.step(byte),
            }
        }
    }

    /// One byte inside the value, as the scan first read it.
    fn inside_byte(scan: &mut FirstValue, byte: u8) -> Phase {
        if scan.in_string {
            match (scan.escaped, byte) {
                (true, _) => scan.escaped = false,
                (false, b'\\') => scan.escaped = true,
                (false, b'"') => scan.in_string = false,
                _ => {}
            }
            return match (scan.in_string, scan.depth) {
                (false, 0) => Phase::After,
                _ => Phase::Inside,
            };
        }
        match byte {
            b'"' => scan.in_string = true,
            b'{' | b'[' => scan.depth += 1,
            b'}' | b']' => match scan.depth.checked_sub(1) {
                Some(0) => {
                    scan.depth = 0;
                    return Phase::After;
                }
                Some(depth) => scan.depth = depth,
                None => return Phase::Abandoned,
            },
            _ => {}
        }
        Phase::Inside
    }

    /// Feeds `body` cut at `cuts` to both scans and compares them after every chunk.
    fn same_as_byte_by_byte(body: &[u8], cuts: &[usize]) {
        let (mut fast, mut slow) = (FirstValue::default(), FirstValue::default());
        let mut start = 0;
        for &end in cuts.iter().chain([body.len()].iter()) {
            let chunk = &body[start..end.max(start)];
            start = end.max(start);
            fast.feed(chunk);
            byte_by_byte(&mut slow, chunk);
            assert_eq!(fast.phase, slow.phase, "{body:?} cut at {cuts:?}");
            if fast.watching() {
                assert_eq!(fast, slow, "{body:?} cut at {cuts:?}");
            }
        }
        assert_eq!(fast.fed(), body.len());
    }

    #[test]
    fn the_word_scan_answers_as_the_byte_scan_for_every_body_and_cut() {
        // Bodies from a small alphabet with every byte that moves the scan, generated by a
        // fixed linear congruential sequence: strings longer and shorter than a word, escapes
        // at word edges, values that end, go on or never start.
        let alphabet = b"{}[]\"\\ a1,:\n";
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        for _ in 0..4000 {
            let len = next() % 48;
            let mut body: Vec<u8> = (0..len)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect();
            if next() % 2 == 0 {
                body.insert(0, b'{');
            }
            for cut in 0..=body.len() {
                same_as_byte_by_byte(&body, &[cut]);
            }
            let (a, b) = (next() % (body.len() + 1), next() % (body.len() + 1));
            same_as_byte_by_byte(&body, &[a.min(b), a.max(b)]);
        }
        let list = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a_tool","description":"Say \"hi\" to C:\\path\\ [x] {y}, then stop.","inputSchema":{"type":"object"}}]}}"#;
        for cut in 0..=list.len() {
            same_as_byte_by_byte(list, &[cut]);
            let mut trailing = list.to_vec();
            trailing.extend_from_slice(b" \n{\"jsonrpc\"");
            same_as_byte_by_byte(&trailing, &[cut]);
        }
    }

    fn scan(chunks: &[&[u8]]) -> Extent {
        let mut value = FirstValue::default();
        let mut extent = Extent::Undecided;
        for chunk in chunks {
            extent = value.feed(chunk);
        }
        extent
    }

    #[test]
    fn one_value_is_undecided_however_it_is_cut() {
        let body: &[u8] = br#" {"a": "x}\"]{", "b": [1, {"c": null}]} "#;
        for cut in 0..=body.len() {
            let (head, tail) = body.split_at(cut);
            assert_eq!(
                scan(&[head, tail, b"\r\n"]),
                Extent::Undecided,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_byte_after_the_first_value_is_trailing_however_it_is_cut() {
        let body: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\"";
        let first_end = body.iter().position(|&b| b == b'\n').unwrap_or(0);
        for cut in 0..=body.len() {
            let (head, tail) = body.split_at(cut);
            let mut value = FirstValue::default();
            let at_head = value.feed(head);
            // Trailing exactly once the second value's first byte was fed.
            let expected = match cut > first_end + 1 {
                true => Extent::Trailing,
                false => Extent::Undecided,
            };
            assert_eq!(at_head, expected, "cut at {cut}");
            assert_eq!(value.feed(tail), Extent::Trailing, "cut at {cut}");
            assert_eq!(value.fed(), body.len());
        }
    }

    #[test]
    fn a_value_is_passed_over_only_where_a_value_may_stand() {
        let body: &[u8] = br#"{"result":{"a":["}"]},"x":1}"#;
        let (head, rest) = body.split_at(10);
        let value_len = br#"{"a":["}"]}"#.len();
        let mut skipped = FirstValue::default();
        skipped.feed(head);
        assert!(skipped.between_values());
        assert!(skipped.skip_value(value_len));
        skipped.feed(&rest[value_len..]);
        let mut read = FirstValue::default();
        read.feed(body);
        assert_eq!(skipped, read);
        // Not inside a value, inside a string, after an escape, or after the value: no skip.
        for prefix in [&b""[..], b" ", br#"{"res"#, br#"{"a"#, b"{} "] {
            let mut scan = FirstValue::default();
            scan.feed(prefix);
            let before = scan;
            assert!(!scan.skip_value(4), "{prefix:?}");
            assert_eq!(scan, before);
        }
    }

    #[test]
    fn top_level_strings_and_bare_values_end_too() {
        assert_eq!(scan(&[b"\"a\\\"b\"", b" \"c\""]), Extent::Trailing);
        assert_eq!(scan(&[b"\"a\\\"b\" "]), Extent::Undecided);
        assert_eq!(scan(&[b"12", b"3 4"]), Extent::Trailing);
        assert_eq!(scan(&[b"true\n"]), Extent::Undecided);
        assert_eq!(scan(&[b"null{}"]), Extent::Trailing);
        assert_eq!(scan(&[b"{}]}"]), Extent::Trailing);
    }

    #[test]
    fn what_no_json_text_holds_is_left_to_the_parser() {
        for body in [&b"}{}"[..], b"\xef\xbb\xbf{} {}", b",{}"] {
            let mut value = FirstValue::default();
            assert_eq!(value.feed(body), Extent::Undecided, "{body:?}");
            assert!(!value.watching());
        }
        let mut value = FirstValue::default();
        value.feed(b"{");
        value.abandon();
        assert_eq!(value.feed(b"} {}"), Extent::Undecided);
    }
}
