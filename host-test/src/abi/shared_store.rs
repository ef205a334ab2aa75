//! The shared data a plugin VM's hostcalls reach: one [`SharedData`] map that several VMs
//! (Envoy's workers) may hold at once, and the switch point every access passes.
//!
//! Main design decision: a multi-worker replay must decide *which worker's access goes
//! next*, so every `proxy_get_shared_data` and `proxy_set_shared_data` first asks the
//! [`SwitchPoint`] for its turn, then reads or writes under the store's lock, then notes
//! what it did in the access trace. With one VM and no switch point (`toolseal replay`
//! without `--workers`) the turn is always granted and nothing is traced.

use super::shared::SharedData;
use super::types::Status;
use std::sync::{Arc, Mutex, MutexGuard};

/// What decides the order of shared-data accesses between workers (the multi-worker
/// scheduler). Only one worker runs between two switch points.
pub trait SwitchPoint: Send + Sync {
    /// Blocks until `worker` may make its next shared-data access. An error ends the
    /// worker's guest call (a trap): the schedule was abandoned or timed out.
    fn turn(&self, worker: usize) -> Result<(), String>;
}

/// One shared-data access, as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The worker that made it.
    pub worker: usize,
    /// `get` or `set`.
    pub op: &'static str,
    /// The key (lossy text).
    pub key: String,
    /// The CAS token a `set` carried (0 for a `get`).
    pub cas: u32,
    /// What the host answered: the CAS token read or written, `not found`, `cas mismatch`.
    pub answer: String,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.op {
            "set" => write!(
                f,
                "w{} set {} cas={} -> {}",
                self.worker, self.key, self.cas, self.answer
            ),
            _ => write!(
                f,
                "w{} {} {} -> {}",
                self.worker, self.op, self.key, self.answer
            ),
        }
    }
}

/// Why a shared-data access was not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// An ABI status for the guest (a CAS mismatch, a store the host cannot serve).
    Status(Status),
    /// The worker's turn never came (the schedule was abandoned or timed out): the guest
    /// call traps.
    NoTurn(String),
}

#[derive(Debug, Default)]
struct Inner {
    data: SharedData,
    trace: Option<Vec<Access>>,
}

/// A handle on shared data: cloned into every worker VM of one replay.
#[derive(Clone, Default)]
pub struct SharedStore {
    inner: Arc<Mutex<Inner>>,
    switch: Option<Arc<dyn SwitchPoint>>,
    worker: usize,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("worker", &self.worker)
            .field("scheduled", &self.switch.is_some())
            .finish()
    }
}

impl SharedStore {
    /// A new empty store whose accesses are traced (for a multi-worker replay).
    pub fn traced() -> Self {
        let store = SharedStore::default();
        if let Ok(mut inner) = store.inner.lock() {
            inner.trace = Some(Vec::new());
        }
        store
    }

    /// The same store, seen by `worker`, whose accesses wait for `switch`.
    pub fn for_worker(&self, worker: usize, switch: Arc<dyn SwitchPoint>) -> Self {
        SharedStore {
            inner: Arc::clone(&self.inner),
            switch: Some(switch),
            worker,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Status> {
        // A worker that panicked while holding the lock leaves it poisoned: the host cannot
        // serve the access, which the plugin sees as a failed hostcall.
        self.inner.lock().map_err(|_| Status::InternalFailure)
    }

    fn wait_turn(&self) -> Result<(), String> {
        match &self.switch {
            Some(switch) => switch.turn(self.worker),
            None => Ok(()),
        }
    }

    /// `proxy_get_shared_data`: waits for the worker's turn, then reads.
    pub fn get(&self, key: &[u8]) -> Result<Option<(Vec<u8>, u32)>, Refusal> {
        self.wait_turn().map_err(Refusal::NoTurn)?;
        let mut inner = self.lock().map_err(Refusal::Status)?;
        let found = inner.data.get(key).map(|(v, cas)| (v.to_vec(), cas));
        let answer = found
            .as_ref()
            .map_or_else(|| "not found".to_owned(), |(_, cas)| format!("cas={cas}"));
        self.note(&mut inner, "get", key, 0, answer);
        Ok(found)
    }

    /// `proxy_set_shared_data`: waits for the worker's turn, then writes with Envoy's CAS
    /// semantics ([`SharedData::set`]).
    pub fn set(&self, key: &[u8], value: &[u8], cas: u32) -> Result<(), Refusal> {
        self.wait_turn().map_err(Refusal::NoTurn)?;
        let mut inner = self.lock().map_err(Refusal::Status)?;
        let written = inner.data.set(key, value, cas);
        let answer = match written {
            Ok(()) => format!("written cas={}", inner.data.last_cas()),
            Err(_) => "cas mismatch".to_owned(),
        };
        self.note(&mut inner, "set", key, cas, answer);
        written.map_err(Refusal::Status)
    }

    fn note(&self, inner: &mut Inner, op: &'static str, key: &[u8], cas: u32, answer: String) {
        if let Some(trace) = inner.trace.as_mut() {
            trace.push(Access {
                worker: self.worker,
                op,
                key: String::from_utf8_lossy(key).into_owned(),
                cas,
                answer,
            });
        }
    }

    /// The value and CAS token of `key`, read without a turn (for the runner and tests,
    /// never for the guest).
    pub fn peek(&self, key: &[u8]) -> Option<(Vec<u8>, u32)> {
        let inner = self.lock().ok()?;
        inner.data.get(key).map(|(v, cas)| (v.to_vec(), cas))
    }

    /// Every key and value, in key order (for the runner and tests).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let Ok(inner) = self.lock() else {
            return Vec::new();
        };
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = inner
            .data
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        entries.sort();
        entries
    }

    /// The accesses made so far, in the order they were served (empty unless traced).
    pub fn trace(&self) -> Vec<Access> {
        self.lock()
            .ok()
            .and_then(|inner| inner.trace.clone())
            .unwrap_or_default()
    }

    /// How many accesses were traced so far (a position in [`SharedStore::trace`]).
    pub fn accesses(&self) -> usize {
        self.lock()
            .ok()
            .and_then(|inner| inner.trace.as_ref().map(Vec::len))
            .unwrap_or(0)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.lock().map_or(0, |inner| inner.data.len())
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
