//! What a host hands the engine, at its barest: a caller with nothing to show, and a store
//! that fails on chosen keys.

use serde_json::Value;
use toolseal_core::policy::rules::CallerIdentity;
use toolseal_core::state::store::{Expect, MemoryStore, StateStore, StoreError};

/// A caller without headers or metadata.
pub struct NoCaller;

impl CallerIdentity for NoCaller {
    fn header(&self, _name: &str) -> Option<String> {
        None
    }
    fn metadata(&self, _path: &str) -> Result<Option<Value>, String> {
        Ok(None)
    }
}

/// A store that fails reads (or writes) of keys starting with a prefix.
#[derive(Default)]
pub struct FaultyStore {
    pub inner: MemoryStore,
    pub fail_reads: Option<&'static str>,
    pub fail_writes: Option<&'static str>,
}

impl StateStore for FaultyStore {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        if self.fail_reads.is_some_and(|p| key.starts_with(p)) {
            return Err(StoreError::Unreadable("injected".into()));
        }
        self.inner.get(key)
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        if self.fail_writes.is_some_and(|p| key.starts_with(p)) {
            return Err(StoreError::Failed("injected".into()));
        }
        self.inner.set(key, value, expect)
    }
}
