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

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::rc::Rc;

/// Server records one worker keeps parsed (servers are few; `limits.max_servers` bounds them
/// in the store, this bounds the worker's copies).
pub const RECORD_ENTRIES: usize = 64;

/// Session snapshots one worker keeps parsed (one per session slot in use).
pub const SNAPSHOT_ENTRIES: usize = 256;

/// One cached parse. The value is kept as `dyn Any` so that every cache of a worker (records,
/// snapshots, capability slots) shares one map's code in the `.wasm`.
#[derive(Debug)]
struct Entry {
    version: u32,
    bytes: Vec<u8>,
    value: Rc<dyn Any>,
}

/// Parsed values by store key, each valid for one (version, bytes) of that key.
#[derive(Debug)]
pub struct ParseCache<T> {
    entries: Entries,
    parsed: PhantomData<T>,
}

/// The entries of a cache, by store key.
#[derive(Debug)]
struct Entries {
    map: BTreeMap<String, Entry>,
    capacity: usize,
}

impl Entries {
    /// The value cached for `key` when it was parsed from this version and these bytes.
    fn get(&self, key: &str, version: u32, bytes: &[u8]) -> Option<Rc<dyn Any>> {
        self.map
            .get(key)
            .filter(|e| e.version == version && crate::wire::envelope::same_bytes(&e.bytes, bytes))
            .map(|e| Rc::clone(&e.value))
    }

    /// Keeps `entry` for `key`; a full cache is emptied before a new key goes in.
    fn put(&mut self, key: &str, entry: Entry) {
        match self.map.get_mut(key) {
            Some(slot) => *slot = entry,
            None => {
                if self.map.len() >= self.capacity {
                    self.map.clear();
                }
                self.map.insert(key.to_string(), entry);
            }
        }
    }
}

impl<T: 'static> ParseCache<T> {
    /// An empty cache holding at most `capacity` keys (at least one).
    pub fn new(capacity: usize) -> Self {
        ParseCache {
            entries: Entries {
                map: BTreeMap::new(),
                capacity: capacity.max(1),
            },
            parsed: PhantomData,
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
        if let Some(cached) = self.entries.get(key, version, &bytes)
            && let Ok(value) = cached.downcast::<T>()
        {
            return Ok(value);
        }
        let value = match parse(&bytes) {
            Ok(value) => Rc::new(value),
            Err(e) => {
                self.entries.map.remove(key);
                return Err(e);
            }
        };
        let entry = Entry {
            version,
            bytes,
            value: Rc::clone(&value) as Rc<dyn Any>,
        };
        self.entries.put(key, entry);
        Ok(value)
    }

    /// Number of keys held (for tests of the bound).
    pub fn len(&self) -> usize {
        self.entries.map.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.map.is_empty()
    }
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests {
    use super::ParseCache;
    use std::cell::Cell;

    #[test]
    fn the_parse_cache_reparses_on_any_change_of_version_or_bytes() {
        let parses = Cell::new(0);
        let parse = |b: &[u8]| -> Result<String, ()> {
            parses.set(parses.get() + 1);
            Ok(String::from_utf8_lossy(b).into_owned())
        };
        let mut cache = ParseCache::new(4);
        let mut get = |key: &str, bytes: &[u8], version: u32| {
            cache
                .get_or_parse(key, bytes.to_vec(), version, parse)
                .map(|v| v.as_str().to_string())
        };
        assert_eq!(get("k", b"one", 1), Ok("one".into()));
        assert_eq!(get("k", b"one", 1), Ok("one".into()));
        assert_eq!(parses.get(), 1);
        // Same version, other bytes (a host whose versions wrapped or are missing).
        assert_eq!(get("k", b"two", 1), Ok("two".into()));
        assert_eq!(parses.get(), 2);
        // Other version, same bytes.
        assert_eq!(get("k", b"two", 2), Ok("two".into()));
        assert_eq!(parses.get(), 3);
        // Keys do not share entries.
        assert_eq!(get("j", b"two", 2), Ok("two".into()));
        assert_eq!(parses.get(), 4);
    }

    #[test]
    fn the_parse_cache_is_bounded_and_drops_an_entry_that_fails_to_parse() {
        let mut cache: ParseCache<u32> = ParseCache::new(3);
        let number = |b: &[u8]| std::str::from_utf8(b).unwrap().parse::<u32>();
        for n in 0..10u32 {
            let key = format!("k{n}");
            let value = cache.get_or_parse(&key, n.to_string().into_bytes(), 1, number);
            assert_eq!(*value.unwrap(), n);
            assert!(cache.len() <= 3, "{} entries", cache.len());
        }
        assert_eq!(cache.len(), 1);
        assert!(cache.get_or_parse("k9", b"x".to_vec(), 2, number).is_err());
        assert!(cache.is_empty());
    }
}
