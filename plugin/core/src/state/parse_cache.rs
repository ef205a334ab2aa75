//! A worker's parsed copies of small, mutable values of the shared store (server records,
//! session snapshots), reused while the store still holds the very bytes they were parsed
//! from.
//!
//! Main design decision: the store is still read on every use (one hostcall that returns the
//! value and its compare-and-swap version), so a write by another worker is seen at once;
//! only the JSON parse is skipped, and only when both the version and the bytes equal those of
//! the cached parse. Equal bytes alone already guarantee an equal parse; the version check
//! costs nothing and keeps the cache honest on hosts whose versions wrap around. The bytes are
//! compared by words ([`crate::wire::envelope::same_bytes`]): in the `.wasm`, wasi-libc's byte-by-byte
//! `memcmp` of the server record was about a tenth of a `tools/call`. The cache is bounded:
//! when full, it is emptied before a new key goes in (ids come from configuration and routes,
//! so a burst of new ids can only cost parses, never memory).

use std::collections::BTreeMap;
use std::rc::Rc;

/// Server records one worker keeps parsed (servers are few; `limits.max_servers` bounds them
/// in the store, this bounds the worker's copies).
pub const RECORD_ENTRIES: usize = 64;

/// Session snapshots one worker keeps parsed (one per session slot in use).
pub const SNAPSHOT_ENTRIES: usize = 256;

/// One cached parse.
#[derive(Debug)]
struct Entry<T> {
    version: u32,
    bytes: Vec<u8>,
    value: Rc<T>,
}

/// Parsed values by store key, each valid for one (version, bytes) of that key.
#[derive(Debug)]
pub struct ParseCache<T> {
    entries: BTreeMap<String, Entry<T>>,
    capacity: usize,
}

impl<T> ParseCache<T> {
    /// An empty cache holding at most `capacity` keys (at least one).
    pub fn new(capacity: usize) -> Self {
        ParseCache {
            entries: BTreeMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The value parsed from `bytes`, read from the store under `key` at `version`: the
    /// cached parse when version and bytes are unchanged, else `parse(bytes)` (cached when it
    /// succeeds; a failure drops the key's entry and is returned as is).
    pub fn get_or_parse<E>(
        &mut self,
        key: &str,
        bytes: Vec<u8>,
        version: u32,
        parse: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<Rc<T>, E> {
        if let Some(entry) = self.entries.get(key)
            && entry.version == version
            && crate::wire::envelope::same_bytes(&entry.bytes, &bytes)
        {
            return Ok(Rc::clone(&entry.value));
        }
        let value = match parse(&bytes) {
            Ok(value) => Rc::new(value),
            Err(e) => {
                self.entries.remove(key);
                return Err(e);
            }
        };
        let entry = Entry {
            version,
            bytes,
            value: Rc::clone(&value),
        };
        match self.entries.get_mut(key) {
            Some(slot) => *slot = entry,
            None => {
                if self.entries.len() >= self.capacity {
                    self.entries.clear();
                }
                self.entries.insert(key.to_string(), entry);
            }
        }
        Ok(value)
    }

    /// Number of keys held (for tests of the bound).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
