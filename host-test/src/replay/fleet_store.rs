//! The simulated fleet store of a replay (`toolseal replay --store sim`): an in-memory etcd
//! ([`MemoryEtcd`], the core's, answering the same v3 JSON API) behind the store's cluster,
//! shared by every VM of the replay and by every instance of a simulated fleet.
//!
//! Main design decision: the store answers; *when* a callout is answered is a
//! [`CalloutServer`]'s decision. A plain replay answers every call at once, at the first
//! point Envoy could (right after the callback that made it); the fleet harness answers
//! later, after other instances' steps, or as failed, to explore what latency, conflicts
//! and an outage do.

use crate::abi::header_map::HeaderMap;
use crate::abi::http_call::{CallAnswer, HttpCall};
use crate::wasm::plugin_vm::PluginVm;
use anyhow::Result;
use std::sync::{Arc, Mutex};
use toolseal_core::state::fleet::memory_etcd::MemoryEtcd;

/// The most callouts answered at one wait point: a plugin whose answers keep making calls
/// is left with its calls in flight (its stream stalls, and the replay says so).
pub const MAX_ROUNDS_PER_WAIT: usize = 64;

/// An etcd in memory, shared by handle.
#[derive(Clone, Default)]
pub struct FleetStore {
    etcd: Arc<Mutex<MemoryEtcd>>,
}

impl std::fmt::Debug for FleetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.with(|etcd| etcd.keys().len());
        f.debug_struct("FleetStore").field("keys", &keys).finish()
    }
}

impl FleetStore {
    /// An empty store at revision 1.
    pub fn new() -> Self {
        FleetStore {
            etcd: Arc::new(Mutex::new(MemoryEtcd::new())),
        }
    }

    /// Runs `f` on the store (a poisoned lock is taken over: the store has no invariant a
    /// panicking reader could break).
    pub fn with<R>(&self, f: impl FnOnce(&mut MemoryEtcd) -> R) -> R {
        let mut etcd = match self.etcd.lock() {
            Ok(etcd) => etcd,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut etcd)
    }

    /// While down, every call fails (delivered as Envoy delivers a reset or a timeout).
    pub fn set_down(&self, down: bool) {
        self.with(|etcd| etcd.set_down(down));
    }

    /// The store's answer to `call`: `None` when it fails. Only `POST` is served (etcd's
    /// gateway answers 405 to anything else).
    pub fn answer(&self, call: &HttpCall) -> Option<CallAnswer> {
        if call.headers.get(b":method") != Some(b"POST") {
            return Some(answer(405, b"method not allowed".to_vec()));
        }
        let path = call.path();
        let (status, body) = self.with(|etcd| etcd.call(&path, &call.body)).ok()?;
        Some(answer(status, body))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.with(|etcd| etcd.get(key.as_bytes()).map(<[u8]>::to_vec))
    }

    /// Every key and value, in key order (text, lossy).
    pub fn entries(&self) -> Vec<(String, String)> {
        self.with(|etcd| {
            etcd.keys()
                .into_iter()
                .map(|k| {
                    let v = etcd.get(&k).map(<[u8]>::to_vec).unwrap_or_default();
                    (
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
                .collect()
        })
    }

    /// How many calls the store received.
    pub fn calls(&self) -> usize {
        self.with(|etcd| etcd.calls.len())
    }
}

fn answer(status: u16, body: Vec<u8>) -> CallAnswer {
    let status = status.to_string();
    CallAnswer {
        headers: HeaderMap::from_pairs([
            (":status", status.as_str()),
            ("content-type", "application/json"),
        ]),
        body,
    }
}

/// What the runner does with a VM's callouts at a wait point (after every callback that may
/// have made one, and after a tick).
pub trait CalloutServer: Send + Sync + std::fmt::Debug {
    /// Answers (or not) the calls `vm` has in flight.
    fn serve(&self, vm: &mut PluginVm) -> Result<()>;
}

/// Answers every call at once, in the order they were made, until none is left.
impl CalloutServer for FleetStore {
    fn serve(&self, vm: &mut PluginVm) -> Result<()> {
        for _ in 0..MAX_ROUNDS_PER_WAIT {
            let Some(call) = vm.host().vm.callouts.pending.first().cloned() else {
                return Ok(());
            };
            let answer = self.answer(&call);
            vm.deliver_http_call(call.token, answer)?;
        }
        Ok(())
    }
}
