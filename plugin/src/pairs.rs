//! The proxy-wasm pair format: how the host serializes a header map, and how Envoy serializes
//! a list or map property. A count, then a key length and a value length per pair (all
//! little-endian `u32`), then each key and each value followed by a NUL byte.
//!
//! Main design decision: the buffer is read in place: [`spans`] returns byte ranges into it,
//! so request headers are kept as the one buffer the host wrote (two allocations per request
//! instead of two per header) and looked up without copying. A buffer that does not follow
//! the format exactly (a length past its end, a missing NUL, bytes left over) is refused as a
//! whole, never read in part.

use std::ops::Range;

/// Most pairs a buffer may announce (Envoy caps a request at 100 headers by default; list
/// properties are short).
pub const MAX_PAIRS: usize = 4096;

/// The byte ranges of each (key, value) in `bytes`, in order; `None` when `bytes` is not a
/// well-formed pair buffer. An empty buffer is an empty map.
pub fn spans(bytes: &[u8]) -> Option<Vec<(Range<usize>, Range<usize>)>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let word = |at: usize| -> Option<usize> {
        let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(b)).ok()
    };
    let count = word(0)?;
    if count > MAX_PAIRS {
        return None;
    }
    let mut offset = 4usize.checked_add(count.checked_mul(8)?)?;
    let mut take = |len: usize| -> Option<Range<usize>> {
        let end = offset.checked_add(len)?;
        if bytes.get(end) != Some(&0) {
            return None;
        }
        let range = offset..end;
        offset = end.checked_add(1)?;
        Some(range)
    };
    let mut pairs = Vec::with_capacity(count);
    for i in 0..count {
        let at = 4usize.checked_add(i.checked_mul(8)?)?;
        let (key_len, value_len) = (word(at)?, word(at.checked_add(4)?)?);
        pairs.push((take(key_len)?, take(value_len)?));
    }
    (offset == bytes.len()).then_some(pairs)
}

/// `pairs` in the pair format (what `proxy_send_local_response` takes as its headers). A
/// length that does not fit the format's `u32` is written as `u32::MAX`, which the host
/// refuses as a whole (never read in part).
pub fn serialize(pairs: &[(&str, &str)]) -> Vec<u8> {
    let word = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let text: usize = pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut bytes = Vec::with_capacity(4 + 8 * pairs.len() + text);
    bytes.extend_from_slice(&word(pairs.len()));
    for (key, value) in pairs {
        bytes.extend_from_slice(&word(key.len()));
        bytes.extend_from_slice(&word(value.len()));
    }
    for (key, value) in pairs {
        for part in [key, value] {
            bytes.extend_from_slice(part.as_bytes());
            bytes.push(0);
        }
    }
    bytes
}

/// A header map read in place: the text part of the host's pair buffer (every key and value,
/// each followed by a NUL) checked as UTF-8 once, and the spans of its entries. Names are
/// lower case and every name and value is valid UTF-8: a buffer where that does not hold is
/// rewritten once (names lowered, invalid bytes replaced by U+FFFD); a malformed buffer is an
/// empty map.
#[derive(Debug, Default, Clone)]
pub struct Headers {
    text: String,
    spans: Vec<(Range<usize>, Range<usize>)>,
}

impl Headers {
    /// The headers serialized in `bytes` (the pair format).
    pub fn from_serialized(mut bytes: Vec<u8>) -> Self {
        let Some(spans) = spans(&bytes) else {
            return Headers::default();
        };
        // The parts start right after the length table (the first span, when there is one).
        let start = spans.first().map_or(bytes.len(), |(k, _)| k.start);
        let shift = |r: &Range<usize>| r.start.saturating_sub(start)..r.end.saturating_sub(start);
        let spans: Vec<_> = spans.iter().map(|(k, v)| (shift(k), shift(v))).collect();
        bytes.drain(..start);
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => return Self::normalized(e.as_bytes(), &spans),
        };
        let lower = |k: &Range<usize>| {
            text.get(k.clone())
                .is_some_and(|k| !k.bytes().any(|b| b.is_ascii_uppercase()))
        };
        if !spans.iter().all(|(k, _)| lower(k)) {
            return Self::normalized(text.as_bytes(), &spans);
        }
        Headers { text, spans }
    }

    /// The map of `parts` (the text part of a pair buffer) and its `spans`, names lowered and
    /// invalid UTF-8 replaced.
    fn normalized(parts: &[u8], spans: &[(Range<usize>, Range<usize>)]) -> Self {
        let lossy = |range: &Range<usize>| {
            String::from_utf8_lossy(parts.get(range.clone()).unwrap_or_default()).into_owned()
        };
        let mut text = String::new();
        let mut push = |part: &str| {
            let range = text.len()..text.len() + part.len();
            text.push_str(part);
            text.push('\0');
            range
        };
        let spans = spans
            .iter()
            .map(|(k, v)| (push(&lossy(k).to_ascii_lowercase()), push(&lossy(v))))
            .collect();
        Headers { text, spans }
    }

    /// Whether one of `names` (lower case, at most four) occurs more than once.
    pub fn repeats_any(&self, names: &[&str]) -> bool {
        let mut seen = [false; 4];
        for (k, _) in &self.spans {
            let key = self.text.get(k.clone());
            for (name, seen) in names.iter().zip(seen.iter_mut()) {
                if key == Some(name) {
                    if *seen {
                        return true;
                    }
                    *seen = true;
                }
            }
        }
        false
    }

    /// The first value of `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&str> {
        let (_, value) = self
            .spans
            .iter()
            .find(|(k, _)| self.text.get(k.clone()) == Some(name))?;
        self.text.get(value.clone())
    }
}
