//! What a fleet run may change about how its scenario runs, and the callout server that
//! does it: the store's answers pass through [`Perturbed`], which knows the step running.
//!
//! Main design decision: a perturbation is one fact about the world (an instance restarts,
//! the store is down, another writer writes, an answer comes too late, the store lies), at
//! one place in the scenario, so a violation names the smallest change that caused it.

use super::instance::Event;
use crate::abi::header_map::HeaderMap;
use crate::abi::http_call::{CallAnswer, HttpCall};
use crate::replay::fleet_store::{CalloutServer, FleetStore, MAX_ROUNDS_PER_WAIT};
use crate::wasm::plugin_vm::PluginVm;
use anyhow::Result;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender};

/// One change to how a scenario runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Perturbation {
    /// None: the reference run.
    None,
    /// Instance `instance` restarts before step `at`: its shared data is wiped and its VMs
    /// are created again (their start sequences run again).
    Restart {
        /// The step it restarts before.
        at: usize,
        /// The instance.
        instance: usize,
    },
    /// The store fails every call during steps `from..to`.
    Outage {
        /// The first step it is down.
        from: usize,
        /// The first step it is up again.
        to: usize,
    },
    /// In step `at`, before the store answers its first transaction, another writer
    /// rewrites the keys it compares as they stand (etcd bumps its revision): the
    /// transaction's compare fails and the plugin must decide again from what it reads.
    Conflict {
        /// The step.
        at: usize,
    },
    /// In step `at`, every call is answered too late (after its timeout): delivered as
    /// failed, though the store applied it.
    Late {
        /// The step.
        at: usize,
    },
    /// Step `at`'s first transaction is held (sent, not yet at the store) while step
    /// `other` (a later step of another instance) runs whole; then it reaches the store.
    /// The run must decide as one of the two serial orders does (`other` after `at`, the
    /// scenario's, or before it: [`Perturbation::Reorder`]).
    Interleave {
        /// The step whose callout is held.
        at: usize,
        /// The step that runs meanwhile.
        other: usize,
    },
    /// The scenario with step `other` moved just before step `at` (the serial order an
    /// interleaving may stand for).
    Reorder {
        /// The step `other` runs before.
        at: usize,
        /// The step moved.
        other: usize,
    },
    /// In step `at`, the store answers every transaction "succeeded" without writing: a
    /// host-side stand-in for a plugin that serves before the store's yes (what it serves
    /// is then in no store). The invariants must catch it.
    LyingYes {
        /// The step.
        at: usize,
    },
}

impl Perturbation {
    /// Whether `instance` restarts before step `step`.
    pub fn restarts_before(&self, step: usize, instance: usize) -> bool {
        *self == Perturbation::Restart { at: step, instance }
    }

    /// Whether the store is down during step `step`.
    pub fn store_down_at(&self, step: usize) -> bool {
        matches!(self, Perturbation::Outage { from, to } if (*from..*to).contains(&step))
    }

    /// Whether a decision may legitimately differ from the reference run's under it: an
    /// outage and a late answer fail closed what needed the store; a lie is meant to be
    /// caught; another order of steps decides as that order does. A restart and a conflict
    /// must change no decision.
    pub fn may_change_decisions(&self) -> bool {
        !matches!(
            self,
            Perturbation::None | Perturbation::Restart { .. } | Perturbation::Conflict { .. }
        )
    }

    /// The steps in the order they run (an interleaved step runs inside the one it is
    /// interleaved with when that one holds a callout, and is then skipped here; when it
    /// holds none, the interleaving is the scenario's order).
    pub fn order(&self, steps: usize) -> Vec<usize> {
        match *self {
            Perturbation::Reorder { at, other } => {
                let mut order: Vec<usize> = (0..steps).filter(|s| *s != other).collect();
                let place = order.iter().position(|s| *s == at).unwrap_or(order.len());
                order.insert(place, other);
                order
            }
            _ => (0..steps).collect(),
        }
    }

    /// The step that runs while step `step`'s callout is held, if any.
    pub fn interleaved_with(&self, step: usize) -> Option<usize> {
        match *self {
            Perturbation::Interleave { at, other } if at == step => Some(other),
            _ => None,
        }
    }
}

impl std::fmt::Display for Perturbation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Perturbation::None => write!(f, "none"),
            Perturbation::Restart { at, instance } => {
                write!(f, "restart:{instance}@{at}")
            }
            Perturbation::Outage { from, to } => write!(f, "outage:{from}..{to}"),
            Perturbation::Conflict { at } => write!(f, "conflict@{at}"),
            Perturbation::Late { at } => write!(f, "late@{at}"),
            Perturbation::LyingYes { at } => write!(f, "lying-yes@{at}"),
            Perturbation::Interleave { at, other } => write!(f, "interleave:{other}@{at}"),
            Perturbation::Reorder { at, other } => write!(f, "reorder:{other}@{at}"),
        }
    }
}

/// Every interleaving of a scenario whose steps are on `instances` (the instance of each
/// step): each step's first transaction held while each later step of another instance runs.
pub fn interleavings(instances: &[usize]) -> Vec<Perturbation> {
    let mut all = Vec::new();
    for (at, a) in instances.iter().enumerate() {
        for (other, b) in instances.iter().enumerate().skip(at + 1) {
            if a != b {
                all.push(Perturbation::Interleave { at, other });
            }
        }
    }
    all
}

/// Every perturbation of the usual kinds for a scenario of `steps` steps on `instances`
/// instances: a restart of each instance before each step, outages of one to three steps,
/// a conflict and a late answer in each step.
pub fn every(steps: usize, instances: usize) -> Vec<Perturbation> {
    let mut all = Vec::new();
    for at in 0..=steps {
        for instance in 0..instances {
            all.push(Perturbation::Restart { at, instance });
        }
    }
    for from in 0..steps {
        for len in 1..=3 {
            let to = from + len;
            if to <= steps {
                all.push(Perturbation::Outage { from, to });
            }
        }
    }
    for at in 0..steps {
        all.push(Perturbation::Conflict { at });
        all.push(Perturbation::Late { at });
    }
    all
}

/// Where a held callout tells the run it is held, and waits to go on.
#[derive(Debug)]
pub struct Gate {
    /// The run's events.
    pub paused: Mutex<Sender<Event>>,
    /// The run's word to go on (a hang-up ends the wait too).
    pub resume: Mutex<Receiver<()>>,
}

/// The callout server of a fleet run: the store's answers, perturbed in the step the
/// perturbation names.
#[derive(Debug)]
pub struct Perturbed {
    store: FleetStore,
    perturbation: Perturbation,
    gate: Gate,
    /// Whether the interleaving's callout was held already (once per run).
    held: Mutex<bool>,
    /// The step running, and whether its conflict was written already (once per step: one
    /// other writer, not a livelock).
    step: Mutex<(usize, bool)>,
}

impl Perturbed {
    /// A server answering from `store` under `perturbation`.
    pub fn new(store: FleetStore, perturbation: Perturbation, gate: Gate) -> Self {
        Perturbed {
            store,
            perturbation,
            gate,
            held: Mutex::new(false),
            step: Mutex::new((0, false)),
        }
    }

    /// The step now running (`usize::MAX`: the last ticks, never perturbed).
    pub fn enter_step(&self, step: usize) {
        if let Ok(mut at) = self.step.lock() {
            *at = (step, false);
        }
    }

    fn in_step(&self, wanted: usize) -> bool {
        self.step.lock().is_ok_and(|at| at.0 == wanted)
    }

    /// Whether the conflict of step `wanted` is still to be written (and marks it written).
    fn conflict_due(&self, wanted: usize) -> bool {
        self.step.lock().is_ok_and(|mut at| {
            let due = at.0 == wanted && !at.1;
            at.1 = at.1 || due;
            due
        })
    }

    /// Holds the interleaving's callout until the run says go on.
    fn hold(&self) {
        let first = self
            .held
            .lock()
            .is_ok_and(|mut held| !std::mem::replace(&mut *held, true));
        if !first {
            return;
        }
        let told = self
            .gate
            .paused
            .lock()
            .is_ok_and(|paused| paused.send(Event::Paused).is_ok());
        if told && let Ok(resume) = self.gate.resume.lock() {
            let _resumed = resume.recv();
        }
    }

    fn answer(&self, call: &HttpCall) -> Option<CallAnswer> {
        let txn = call.path() == "/v3/kv/txn";
        match self.perturbation {
            Perturbation::Interleave { at, .. } if txn && self.in_step(at) => {
                self.hold();
                self.store.answer(call)
            }
            Perturbation::Conflict { at } if txn && self.conflict_due(at) => {
                self.rewrite_compared_keys(call);
                self.store.answer(call)
            }
            Perturbation::Late { at } if self.in_step(at) => {
                let _applied = self.store.answer(call);
                None
            }
            Perturbation::LyingYes { at } if txn && self.in_step(at) => {
                let revision = self.store.with(|etcd| etcd.keys().len() + 100);
                let body = format!(
                    r#"{{"header":{{"revision":"{revision}"}},"succeeded":true,"responses":[]}}"#
                );
                Some(CallAnswer {
                    headers: HeaderMap::from_pairs([(":status", "200")]),
                    body: body.into_bytes(),
                })
            }
            _ => self.store.answer(call),
        }
    }

    /// Rewrites, as they stand, the keys a transaction compares (those that exist).
    fn rewrite_compared_keys(&self, call: &HttpCall) {
        let Ok(request) = serde_json::from_slice::<serde_json::Value>(&call.body) else {
            return;
        };
        let keys: Vec<Vec<u8>> = request
            .get("compare")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("key")?.as_str())
            .filter_map(toolseal_core::wire::etcd::decode)
            .collect();
        self.store.with(|etcd| {
            for key in keys {
                if let Some(value) = etcd.get(&key).map(<[u8]>::to_vec) {
                    etcd.put(&key, &value);
                }
            }
        });
    }
}

impl CalloutServer for Perturbed {
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
