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

    /// Stops watching (a chunk could not be read, so the offsets no longer line up): the
    /// body is then decided when it ends, as without the scan.
    pub fn abandon(&mut self) {
        self.phase = Phase::Abandoned;
    }

    /// Feeds the next bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) -> Extent {
        self.fed = self.fed.saturating_add(bytes.len());
        let mut rest = bytes;
        while self.watching() {
            // Inside the value, only quotes, escapes and brackets move the scan: the bytes
            // between them are skipped in one tight loop (most of a tool list is text).
            if self.phase == Phase::Inside && !self.escaped {
                let skip = match self.in_string {
                    true => rest.iter().position(|&b| b == b'"' || b == b'\\'),
                    false => rest
                        .iter()
                        .position(|&b| matches!(b, b'"' | b'{' | b'}' | b'[' | b']')),
                };
                rest = rest.get(skip.unwrap_or(rest.len())..).unwrap_or_default();
            }
            let Some((&byte, tail)) = rest.split_first() else {
                break;
            };
            self.step(byte);
            rest = tail;
        }
        match self.phase {
            Phase::Trailing => Extent::Trailing,
            _ => Extent::Undecided,
        }
    }

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
            Phase::Inside => self.inside(byte),
            Phase::Bare if bare(byte) => Phase::Bare,
            Phase::Bare if space => Phase::After,
            Phase::After if space => Phase::After,
            Phase::Bare | Phase::After => Phase::Trailing,
            done @ (Phase::Trailing | Phase::Abandoned) => done,
        };
    }

    fn inside(&mut self, byte: u8) -> Phase {
        if self.in_string {
            match (self.escaped, byte) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return match (self.in_string, self.depth) {
                (false, 0) => Phase::After,
                _ => Phase::Inside,
            };
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth = self.depth.saturating_add(1),
            b'}' | b']' => match self.depth.checked_sub(1) {
                Some(0) => {
                    self.depth = 0;
                    return Phase::After;
                }
                Some(depth) => self.depth = depth,
                None => return Phase::Abandoned,
            },
            _ => {}
        }
        Phase::Inside
    }
}

/// A byte of a bare top-level value: a number or `true`/`false`/`null`.
fn bare(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

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
