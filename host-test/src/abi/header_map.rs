//! Header maps and their wire form ("pairs"): a little-endian `u32` count, then a
//! `(key length, value length)` `u32` pair per entry, then each key and value followed by a
//! NUL byte. Envoy uses the same form for `request.headers` properties and local-response
//! headers.
//!
//! Main design decision: names are stored lowercased, as Envoy's `LowerCaseString` does, and
//! values as bytes; lookups are case-insensitive because the stored names already are.

/// An ordered multimap of header names (lowercase) to values, like Envoy's `HeaderMap`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderMap {
    entries: Vec<Pair>,
}

/// Why a serialized map from the guest was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairsError {
    /// The data ends before the count, the size table or an entry does.
    Truncated,
    /// An entry is not followed by its NUL terminator.
    MissingNul,
    /// Bytes remain after the last entry.
    TrailingBytes,
}

impl std::fmt::Display for PairsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PairsError::Truncated => "serialized header map ends early",
            PairsError::MissingNul => "serialized header map entry lacks its NUL terminator",
            PairsError::TrailingBytes => "serialized header map has bytes after its last entry",
        })
    }
}

impl std::error::Error for PairsError {}

impl HeaderMap {
    /// Builds a map from `(name, value)` pairs, lowercasing the names.
    pub fn from_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut map = HeaderMap::default();
        for (k, v) in pairs {
            map.add(k.as_ref(), v.as_ref());
        }
        map
    }

    /// The entries in order.
    pub fn entries(&self) -> &[Pair] {
        &self.entries
    }

    /// Number of entries (what `proxy_on_*_headers` receives as `num_headers`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first value of `name` (Envoy answers `proxy_get_header_map_value` with the first).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        let name = name.to_ascii_lowercase();
        self.entries
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Appends an entry (`proxy_add_header_map_value`).
    pub fn add(&mut self, name: &[u8], value: &[u8]) {
        self.entries
            .push((name.to_ascii_lowercase(), value.to_vec()));
    }

    /// Sets `name` to exactly one value, keeping the position of its first entry, or appends
    /// it (`proxy_replace_header_map_value`).
    pub fn replace(&mut self, name: &[u8], value: &[u8]) {
        let name = name.to_ascii_lowercase();
        match self.entries.iter().position(|(k, _)| *k == name) {
            Some(first) => {
                if let Some(slot) = self.entries.get_mut(first) {
                    slot.1 = value.to_vec();
                }
                let mut index = 0;
                self.entries.retain(|(k, _)| {
                    let keep = index <= first || *k != name;
                    index += 1;
                    keep
                });
            }
            None => self.entries.push((name, value.to_vec())),
        }
    }

    /// Removes every entry of `name` (`proxy_remove_header_map_value`).
    pub fn remove(&mut self, name: &[u8]) {
        let name = name.to_ascii_lowercase();
        self.entries.retain(|(k, _)| *k != name);
    }

    /// The wire form of the whole map.
    pub fn serialize(&self) -> Vec<u8> {
        serialize_pairs(
            self.entries
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_slice())),
        )
    }

    /// Parses the wire form; an empty slice is an empty map (as the hosts accept).
    pub fn deserialize(bytes: &[u8]) -> Result<Self, PairsError> {
        let pairs = deserialize_pairs(bytes)?;
        Ok(HeaderMap::from_pairs(pairs))
    }
}

/// An owned `(name, value)` entry.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Serializes `(key, value)` pairs in the wire form.
pub fn serialize_pairs<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone) -> Vec<u8> {
    let count = pairs.clone().count();
    let mut out = Vec::new();
    out.extend_from_slice(&len_u32(count).to_le_bytes());
    for (k, v) in pairs.clone() {
        out.extend_from_slice(&len_u32(k.len()).to_le_bytes());
        out.extend_from_slice(&len_u32(v.len()).to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(k);
        out.push(0);
        out.extend_from_slice(v);
        out.push(0);
    }
    out
}

/// Parses the wire form into owned pairs, checking every length against the data.
pub fn deserialize_pairs(bytes: &[u8]) -> Result<Vec<Pair>, PairsError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let count = read_u32(bytes, 0)? as usize;
    let table_end = count
        .checked_mul(8)
        .and_then(|n| n.checked_add(4))
        .filter(|end| *end <= bytes.len())
        .ok_or(PairsError::Truncated)?;
    let mut pairs = Vec::with_capacity(count);
    let mut at = table_end;
    for n in 0..count {
        let key_len = read_u32(bytes, 4 + n * 8)? as usize;
        let value_len = read_u32(bytes, 8 + n * 8)? as usize;
        let key = take_terminated(bytes, &mut at, key_len)?;
        let value = take_terminated(bytes, &mut at, value_len)?;
        pairs.push((key.to_vec(), value.to_vec()));
    }
    if at != bytes.len() {
        return Err(PairsError::TrailingBytes);
    }
    Ok(pairs)
}

/// Reads `len` bytes at `*at` followed by a NUL, advancing `*at` past the NUL.
fn take_terminated<'a>(
    bytes: &'a [u8],
    at: &mut usize,
    len: usize,
) -> Result<&'a [u8], PairsError> {
    let end = at.checked_add(len).ok_or(PairsError::Truncated)?;
    let data = bytes.get(*at..end).ok_or(PairsError::Truncated)?;
    match bytes.get(end) {
        Some(0) => {}
        Some(_) => return Err(PairsError::MissingNul),
        None => return Err(PairsError::Truncated),
    }
    *at = end + 1;
    Ok(data)
}

/// Reads a little-endian `u32` at `at`.
fn read_u32(bytes: &[u8], at: usize) -> Result<u32, PairsError> {
    let raw = bytes
        .get(at..at.saturating_add(4))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .ok_or(PairsError::Truncated)?;
    Ok(u32::from_le_bytes(raw))
}

/// A length as the wire form's `u32`; lengths never exceed guest memory (4 GiB), and a
/// larger one saturates, which the guest then sees as a truncated map rather than a wrap.
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}
