//! The host side of the world's imports: everything the component reaches lives in
//! [`HostState`], the data of one wasmtime `Store`.
//!
//! Main design decision: the key-value store is toolseal-core's own versioned
//! [`MemoryStore`] (the same compare-and-swap semantics every host gives the engine), wrapped
//! to remember whether anything changed, so the caller persists after exactly the calls that
//! wrote. The fleet store, when there is one, is reached with a blocking HTTP client
//! ([`StoreClient`]) from inside the component's call: the guard decides one message at a
//! time, so a call that waits for the store is what it would do anyway.

use crate::audit_sink::AuditSink;
use crate::bindings::toolseal::policy::{audit, clock, fleet, state};
use crate::store_client::StoreClient;
use std::time::{Duration, Instant};
use toolseal_core::state::store::{Expect, MemoryStore, StateStore, StoreError};

/// What the component's imports act on.
pub struct HostState {
    /// The state the component keeps (all keys, versioned).
    pub store: MemoryStore,
    /// A write happened since the flag was last cleared.
    pub changed: bool,
    /// Audit events and decision records.
    pub sink: Box<dyn AuditSink + Send>,
    /// Milliseconds since the epoch.
    pub clock: fn() -> u64,
    /// The fleet store (`--store`), if any.
    pub fleet: Option<StoreClient>,
    /// Calls made to the fleet store, answered or not.
    pub fleet_calls: u64,
    /// Time spent waiting for the fleet store.
    pub fleet_wait: Duration,
}

impl HostState {
    /// Host state over `store`, reporting to `sink`, with the system clock.
    pub fn new(store: MemoryStore, sink: Box<dyn AuditSink + Send>) -> Self {
        HostState {
            store,
            changed: false,
            sink,
            clock: system_now_ms,
            fleet: None,
            fleet_calls: 0,
            fleet_wait: Duration::ZERO,
        }
    }

    /// The same, reaching the fleet store at `fleet`.
    pub fn with_fleet(mut self, fleet: StoreClient) -> Self {
        self.fleet = Some(fleet);
        self
    }
}

/// The system clock in milliseconds since the epoch (0 before 1970).
pub fn system_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl state::Host for HostState {
    fn get(&mut self, key: String) -> Option<state::Entry> {
        // A memory store always answers.
        self.store
            .get(&key)
            .ok()
            .flatten()
            .map(|(value, version)| state::Entry { value, version })
    }

    fn set(
        &mut self,
        key: String,
        value: Vec<u8>,
        expect: state::Expect,
    ) -> Result<(), state::SetError> {
        let expect = match expect {
            state::Expect::Any => Expect::Any,
            state::Expect::Absent => Expect::Absent,
            state::Expect::Version(v) => Expect::Version(v),
        };
        match self.store.set(&key, &value, expect) {
            Ok(()) => {
                self.changed = true;
                Ok(())
            }
            Err(StoreError::Conflict) => Err(state::SetError::Conflict),
            Err(StoreError::Failed(message) | StoreError::Unreadable(message)) => {
                Err(state::SetError::Failed(message))
            }
        }
    }
}

impl audit::Host for HostState {
    fn emit(&mut self, event_json: String) {
        self.sink.event(&event_json);
    }

    fn decision(&mut self, record_json: String) {
        self.sink.decision(&record_json);
    }
}

impl clock::Host for HostState {
    fn now_ms(&mut self) -> u64 {
        (self.clock)()
    }
}

impl fleet::Host for HostState {
    fn call(
        &mut self,
        path: String,
        body: Vec<u8>,
        timeout_ms: u32,
    ) -> Result<(u16, Vec<u8>), String> {
        let Some(client) = &self.fleet else {
            // Only a config with `store` asks, and the guard sets one only with --store.
            return Err("this guard reaches no fleet store (give --store etcd=URL)".into());
        };
        let started = Instant::now();
        let answer = client.post(&path, &body, Duration::from_millis(timeout_ms.into()));
        self.fleet_calls = self.fleet_calls.saturating_add(1);
        self.fleet_wait = self.fleet_wait.saturating_add(started.elapsed());
        answer
    }
}
