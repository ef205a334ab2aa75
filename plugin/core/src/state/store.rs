//! The state store the engine keeps its runtime state in, supplied by the host.
//!
//! Main design decision: the store is a flat key-value map with compare-and-swap, exactly
//! what proxy-wasm shared data offers across Envoy worker VMs, so one engine runs unchanged on
//! every host. Every read-modify-write in the engine is a bounded CAS loop; a missing key is
//! created with [`Expect::Absent`] so that two workers seeing a new server at once cannot
//! both win. A read the host could not serve is an error, never an absent key: what the
//! engine cannot read, it cannot check, so it fails closed.

#[cfg(feature = "memory-store")]
use std::collections::BTreeMap;
use std::fmt;

/// The condition a write is made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No condition: the value is written whatever is there.
    Any,
    /// The key must not exist yet.
    Absent,
    /// The key must still hold the version read before (its CAS token).
    Version(u32),
}

/// Why a read or a write did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// Another writer got there first: read again and retry.
    Conflict,
    /// The host refused the write (message from the host).
    Failed(String),
    /// The host could not serve a read (message from the host).
    Unreadable(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Conflict => {
                write!(f, "state changed concurrently (compare-and-swap conflict)")
            }
            StoreError::Failed(m) => write!(f, "state store write failed: {m}"),
            StoreError::Unreadable(m) => write!(f, "state store read failed: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A key-value store with versions, shared by every worker that runs the policy.
pub trait StateStore {
    /// The value of `key` and its version; `Ok(None)` when the key does not exist, an error
    /// when the host could not read it.
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError>;
    /// Writes `value` under `key` if `expect` holds.
    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError>;
}

/// An in-memory store: for the native command line, tests, and single-threaded hosts (the
/// `memory-store` feature; the plugin never holds its state in its own memory).
#[cfg(feature = "memory-store")]
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    entries: BTreeMap<String, (Vec<u8>, u32)>,
    next_version: u32,
}

#[cfg(feature = "memory-store")]
impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Total bytes held in values (for memory reports).
    pub fn value_bytes(&self) -> usize {
        self.entries.values().map(|(v, _)| v.len()).sum()
    }

    /// Every key and value, in key order (for persisting the store).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.entries
            .iter()
            .map(|(k, (v, _))| (k.as_str(), v.as_slice()))
    }
}

#[cfg(feature = "memory-store")]
impl StateStore for MemoryStore {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        Ok(self.entries.get(key).cloned())
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        let current = self.entries.get(key).map(|(_, v)| *v);
        let allowed = match (expect, current) {
            (Expect::Any, _) => true,
            (Expect::Absent, None) => true,
            (Expect::Absent, Some(_)) => false,
            (Expect::Version(want), Some(have)) => want == have,
            (Expect::Version(_), None) => false,
        };
        if !allowed {
            return Err(StoreError::Conflict);
        }
        self.next_version = self.next_version.wrapping_add(1).max(1);
        self.entries
            .insert(key.to_string(), (value.to_vec(), self.next_version));
        Ok(())
    }
}
