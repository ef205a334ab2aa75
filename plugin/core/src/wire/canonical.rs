//! RFC 8785 (JCS) canonical serialization.
//!
//! Main design decision: one iterative writer (an explicit stack on the heap, no recursion,
//! so no input depth can overflow the wasm stack) that streams canonical bytes into any
//! [`CanonicalSink`]: a `Vec<u8>` for the canonical text, or a SHA-256 hasher directly so
//! that fingerprinting never builds an intermediate string. A [`Layout`] tells the writer
//! which arrays are sets (sorted and deduplicated by their canonical text); plain JCS is
//! [`Plain`], and the fingerprint supplies the JSON Schema layout (docs/fingerprint.md).
//!
//! Numbers follow ECMAScript `Number::toString`: integers held as `u64`/`i64` are printed as
//! the `f64` they denote (`2^53 + 1` → `9007199254740992`), as a JavaScript JCS
//! implementation would see them. Object keys are sorted by UTF-16 code units.

use serde_json::{Map, Number, Value};
use sha2::Digest;
use std::cmp::Ordering;

/// Where canonical bytes go.
pub trait CanonicalSink {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

impl CanonicalSink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl CanonicalSink for sha2::Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// Says, position by position, which arrays are sets. A position is that of a value: the
/// writer asks the position of each member/element of a container from the container's own.
pub trait Layout: Copy {
    /// Position of the value under `key` in an object at this position.
    fn member(self, key: &str) -> Self;
    /// Position of the elements of an array at this position.
    fn element(self) -> Self;
    /// Whether an array at this position is a set: its elements are written in the order of
    /// their canonical text (UTF-16 code units), duplicates dropped, and not walked further.
    fn is_set(self) -> bool;
}

/// Plain RFC 8785: no array is a set.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Layout for Plain {
    fn member(self, _key: &str) -> Self {
        Plain
    }
    fn element(self) -> Self {
        Plain
    }
    fn is_set(self) -> bool {
        false
    }
}

/// Appends the JCS form of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    write_value(value, Plain, out);
}

/// Returns the JCS form of `value` as a string.
pub fn to_canonical_string(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // The writer only emits valid UTF-8 (JSON punctuation and whole `str`s).
    String::from_utf8(out).unwrap_or_default()
}

/// Streams the canonical form of `value` at position `layout` into `sink`.
pub fn write_value<L: Layout, S: CanonicalSink>(value: &Value, layout: L, sink: &mut S) {
    let mut stack = Vec::new();
    open(value, layout, &mut stack, sink);
    drain(&mut stack, sink);
}

/// Streams an object made of `members` (not necessarily sorted) at position `layout`:
/// lets a caller write a view of an object (some of its fields) without building it.
pub fn write_members<'a, L: Layout, S: CanonicalSink>(
    mut members: Vec<(&'a str, &'a Value)>,
    layout: L,
    sink: &mut S,
) {
    crate::wire::order::sort_by(&mut members, |a, b| cmp_utf16(a.0, b.0));
    sink.put(b"{");
    let mut stack = vec![Frame::Object {
        members: Members::Sorted(members.into_iter()),
        layout,
        first: true,
    }];
    drain(&mut stack, sink);
}

/// Streams the JCS string literal of `s` (quotes included) into `sink`.
pub fn write_string<S: CanonicalSink>(s: &str, sink: &mut S) {
    sink.put(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(at) = next_escape(bytes, start) {
        let Some(&b) = bytes.get(at) else { break };
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                hex_digit(b >> 4),
                hex_digit(b & 0xf),
            ],
        };
        sink.put(bytes.get(start..at).unwrap_or_default());
        sink.put(escape);
        start = at + 1;
    }
    sink.put(bytes.get(start..).unwrap_or_default());
    sink.put(b"\"");
}

/// Index of the first byte at or after `from` that JCS escapes (`"`, `\`, or a control
/// character below U+0020). Scans eight bytes at a time: strings (descriptions) are most of
/// a tool list's bytes.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let needs_escape = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut offset = from;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // A byte below 0x20, or equal to '"' or '\\': the classic "has zero byte" test
        // applied to w, w ^ '"'*ONES and w ^ '\\'*ONES (exact for "is there any").
        let has_less = w.wrapping_sub(ONES * 0x20) & !w;
        let quote = w ^ (ONES * u64::from(b'"'));
        let slash = w ^ (ONES * u64::from(b'\\'));
        let has_quote = quote.wrapping_sub(ONES) & !quote;
        let has_slash = slash.wrapping_sub(ONES) & !slash;
        if (has_less | has_quote | has_slash) & HIGHS != 0 {
            return chunk.iter().position(needs_escape).map(|p| offset + p);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(needs_escape)
        .map(|p| offset + p)
}

/// The lowercase hex digit of the low four bits of `nibble`.
pub fn hex_digit(nibble: u8) -> u8 {
    let n = nibble & 0xf;
    if n < 10 { b'0' + n } else { b'a' + n - 10 }
}

/// Compares two strings by UTF-16 code units (JCS key order).
///
/// Equivalent to `a.encode_utf16().cmp(b.encode_utf16())`, computed on the UTF-8 bytes:
/// UTF-8 byte order is code point order, which differs from UTF-16 order only between a
/// character in U+E000..U+FFFF and a supplementary one (≥ U+10000, a surrogate pair in
/// UTF-16, so it sorts first there).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    cmp_utf16_bytes(a.as_bytes(), b.as_bytes())
}

/// [`cmp_utf16`] on the bytes of two valid UTF-8 texts (such as canonical JSON text).
pub fn cmp_utf16_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let Some((&x, &y)) = a.iter().zip(b).find(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    // The texts agree up to here, so x and y sit at the same offset in their characters.
    // Both are lead bytes when the characters have different lengths; 0xEE/0xEF lead
    // U+E000..U+FFFF, 0xF0..=0xF4 lead supplementary characters.
    let bmp_high = |c: u8| (0xEE..=0xEF).contains(&c);
    let supplementary = |c: u8| c >= 0xF0;
    if bmp_high(x) && supplementary(y) {
        Ordering::Greater
    } else if supplementary(x) && bmp_high(y) {
        Ordering::Less
    } else {
        x.cmp(&y)
    }
}

/// Streams the ECMAScript `Number::toString` form of `n` into `sink`.
pub fn write_number<S: CanonicalSink>(n: &Number, sink: &mut S) {
    sink.put(number_text(n).as_bytes());
}

/// The ECMAScript `Number::toString` form of `n` (formatted once, whatever the sink: the
/// module keeps one copy of the formatting).
fn number_text(n: &Number) -> StackText {
    // Integers up to 2^53 are exactly representable: print their digits directly.
    const EXACT: u64 = 1 << 53;
    let mut buf = StackText::default();
    let exact = if let Some(u) = n.as_u64().filter(|u| *u <= EXACT) {
        std::fmt::Write::write_fmt(&mut buf, format_args!("{u}"))
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= EXACT) {
        std::fmt::Write::write_fmt(&mut buf, format_args!("{i}"))
    } else {
        Err(std::fmt::Error)
    };
    match (exact, n.as_f64()) {
        (Ok(()), _) => buf,
        (Err(_), Some(f)) => f64_text(f),
        (Err(_), None) => StackText::default(),
    }
}

/// Streams the ECMAScript `Number::toString` form of a finite `f64` (ECMA-262 §6.1.6.1.20).
pub fn write_f64<S: CanonicalSink>(v: f64, sink: &mut S) {
    sink.put(f64_text(v).as_bytes());
}

/// The text [`write_f64`] streams (at most 25 bytes: a sign, 17 digits, a point and five
/// zeros, or an exponent of three digits).
fn f64_text(v: f64) -> StackText {
    let mut out = StackText::default();
    if v == 0.0 || !v.is_finite() {
        // -0 prints as 0; serde_json values are never NaN or infinite.
        out.put(b"0");
        return out;
    }
    if v < 0.0 {
        out.put(b"-");
    }
    let mut buf = StackText::default();
    // Rust's `{:e}` prints the shortest digits that round-trip, as ECMAScript requires.
    if std::fmt::Write::write_fmt(&mut buf, format_args!("{:e}", v.abs())).is_err() {
        return out;
    }
    let text = buf.as_bytes();
    let (mantissa, exponent) = match text.iter().position(|&c| c == b'e') {
        Some(e) => (text.get(..e).unwrap_or_default(), text.get(e + 1..)),
        None => (text, None),
    };
    let exp: i32 = exponent
        .and_then(|e| std::str::from_utf8(e).ok())
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let mut digits = [0u8; 24];
    let mut k = 0;
    for &c in mantissa.iter().filter(|c| c.is_ascii_digit()) {
        if let Some(slot) = digits.get_mut(k) {
            *slot = c;
            k += 1;
        }
    }
    place_digits(digits.get(..k).unwrap_or_default(), exp + 1, &mut out);
    out
}

/// Writes digits `s` (k of them) for the value `0.s × 10^n` in ECMAScript notation.
fn place_digits(s: &[u8], n: i32, sink: &mut StackText) {
    let k = i32::try_from(s.len()).unwrap_or(i32::MAX);
    let split = |at: i32| s.split_at(usize::try_from(at).unwrap_or(0).min(s.len()));
    if k <= n && n <= 21 {
        sink.put(s);
        for _ in 0..n - k {
            sink.put(b"0");
        }
    } else if 0 < n && n <= 21 {
        let (int, frac) = split(n);
        sink.put(int);
        sink.put(b".");
        sink.put(frac);
    } else if -6 < n && n <= 0 {
        sink.put(b"0.");
        for _ in 0..-n {
            sink.put(b"0");
        }
        sink.put(s);
    } else {
        let (first, rest) = split(1);
        sink.put(first);
        if !rest.is_empty() {
            sink.put(b".");
            sink.put(rest);
        }
        sink.put(if n > 0 { b"e+" } else { b"e-" });
        sink.put((n - 1).unsigned_abs().to_string().as_bytes());
    }
}

/// A fixed buffer for formatting one number without allocating.
#[derive(Default)]
struct StackText {
    buf: [u8; 32],
    len: usize,
}

impl StackText {
    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

impl CanonicalSink for StackText {
    /// Appends `bytes`; a number's text always fits (see [`f64_text`]).
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(slot) = self.buf.get_mut(self.len..end) {
            slot.copy_from_slice(bytes);
            self.len = end;
        }
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let slot = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// An open container on the writer's stack.
enum Frame<'a, L> {
    Object {
        members: Members<'a>,
        layout: L,
        first: bool,
    },
    Array {
        elements: std::slice::Iter<'a, Value>,
        layout: L,
        first: bool,
    },
}

/// The members of an open object, in UTF-16 key order.
enum Members<'a> {
    /// The map already iterates in UTF-16 order (the usual case: a `BTreeMap` without
    /// supplementary-vs-U+E000 conflicts).
    Map(serde_json::map::Iter<'a>),
    /// Sorted copy of the member references.
    Sorted(std::vec::IntoIter<(&'a str, &'a Value)>),
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Members::Map(it) => it.next().map(|(k, v)| (k.as_str(), v)),
            Members::Sorted(it) => it.next(),
        }
    }
}

/// Members of `map` in UTF-16 key order, sorting only when the map's own order differs.
fn ordered(map: &Map<String, Value>) -> Members<'_> {
    let mut keys = map.keys();
    let mut sorted = true;
    if let Some(mut prev) = keys.next() {
        for key in keys {
            if cmp_utf16(prev, key) != Ordering::Less {
                sorted = false;
                break;
            }
            prev = key;
        }
    }
    if sorted {
        return Members::Map(map.iter());
    }
    let mut members: Vec<_> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
    crate::wire::order::sort_by(&mut members, |a, b| cmp_utf16(a.0, b.0));
    Members::Sorted(members.into_iter())
}

/// Writes a scalar or a set in full, or opens a container and pushes its frame.
fn open<'a, L: Layout, S: CanonicalSink>(
    value: &'a Value,
    layout: L,
    stack: &mut Vec<Frame<'a, L>>,
    sink: &mut S,
) {
    match value {
        Value::Null => sink.put(b"null"),
        Value::Bool(true) => sink.put(b"true"),
        Value::Bool(false) => sink.put(b"false"),
        Value::Number(n) => write_number(n, sink),
        Value::String(s) => write_string(s, sink),
        Value::Array(items) if layout.is_set() => write_set(items, sink),
        Value::Array(items) => {
            sink.put(b"[");
            stack.push(Frame::Array {
                elements: items.iter(),
                layout: layout.element(),
                first: true,
            });
        }
        Value::Object(map) => {
            sink.put(b"{");
            stack.push(Frame::Object {
                members: ordered(map),
                layout,
                first: true,
            });
        }
    }
}

/// Runs the writer until every open container is closed.
fn drain<L: Layout, S: CanonicalSink>(stack: &mut Vec<Frame<'_, L>>, sink: &mut S) {
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Frame::Object {
                members,
                layout,
                first,
            } => members.next().map(|(key, value)| {
                if !std::mem::replace(first, false) {
                    sink.put(b",");
                }
                write_string(key, sink);
                sink.put(b":");
                (value, layout.member(key))
            }),
            Frame::Array {
                elements,
                layout,
                first,
            } => elements.next().map(|value| {
                if !std::mem::replace(first, false) {
                    sink.put(b",");
                }
                (value, *layout)
            }),
        };
        match next {
            Some((value, layout)) => open(value, layout, stack, sink),
            None => {
                if let Some(Frame::Object { .. }) = stack.pop() {
                    sink.put(b"}");
                } else {
                    sink.put(b"]");
                }
            }
        }
    }
}

/// Writes `items` as a set: canonical texts sorted by UTF-16 code units, duplicates dropped.
fn write_set<S: CanonicalSink>(items: &[Value], sink: &mut S) {
    let mut texts: Vec<Vec<u8>> = items
        .iter()
        .map(|item| {
            let mut text = Vec::new();
            write_canonical(item, &mut text);
            text
        })
        .collect();
    crate::wire::order::sort_by(&mut texts, |a, b| cmp_utf16_bytes(a, b));
    texts.dedup();
    sink.put(b"[");
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            sink.put(b",");
        }
        sink.put(text);
    }
    sink.put(b"]");
}
