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

/// Serializes `pairs` in the pair format (the inverse of [`spans`]).
pub fn serialize<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> Vec<u8> {
    let le = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let mut out = le(pairs.len()).to_vec();
    for (k, v) in pairs {
        out.extend_from_slice(&le(k.as_ref().len()));
        out.extend_from_slice(&le(v.as_ref().len()));
    }
    for (k, v) in pairs {
        for part in [k.as_ref(), v.as_ref()] {
            out.extend_from_slice(part);
            out.push(0);
        }
    }
    out
}

/// A header map read in place: the host's pair buffer and the spans of its entries. Names are
/// lower case and every name and value is valid UTF-8: a buffer where that does not hold is
/// rewritten once (names lowered, invalid bytes replaced by U+FFFD), so lookups never see raw
/// bytes; a malformed buffer is an empty map.
#[derive(Debug, Default, Clone)]
pub struct Headers {
    bytes: Vec<u8>,
    spans: Vec<(Range<usize>, Range<usize>)>,
}

impl Headers {
    /// The headers serialized in `bytes` (the pair format).
    pub fn from_serialized(bytes: Vec<u8>) -> Self {
        let Some(spans) = spans(&bytes) else {
            return Headers::default();
        };
        let text = |range: &Range<usize>| std::str::from_utf8(bytes.get(range.clone())?).ok();
        let clean = spans.iter().all(|(k, v)| {
            text(k).is_some_and(|k| !k.bytes().any(|b| b.is_ascii_uppercase())) && text(v).is_some()
        });
        if clean {
            return Headers { bytes, spans };
        }
        let lossy = |range: &Range<usize>| {
            String::from_utf8_lossy(bytes.get(range.clone()).unwrap_or_default()).into_owned()
        };
        let normalized: Vec<(String, String)> = spans
            .iter()
            .map(|(k, v)| (lossy(k).to_ascii_lowercase(), lossy(v)))
            .collect();
        let bytes = serialize(&normalized);
        match self::spans(&bytes) {
            Some(spans) => Headers { bytes, spans },
            None => Headers::default(),
        }
    }

    /// The first value of `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&str> {
        let (_, value) = self
            .spans
            .iter()
            .find(|(k, _)| self.bytes.get(k.clone()) == Some(name.as_bytes()))?;
        std::str::from_utf8(self.bytes.get(value.clone())?).ok()
    }
}
