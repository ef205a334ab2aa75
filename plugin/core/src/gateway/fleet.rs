//! The engine's side of the fleet store: what a callback that must wait for etcd asks the
//! host to send, what the answers change in the replica, and the background work of each
//! worker (reading what other instances wrote, pushing what closed here).
//!
//! Main design decision: sans-IO. A stream callback runs through a [`FleetView`] of the
//! host's store; when the view needs the store (a record the replica lacks, a change that
//! opens), the run's effects are dropped (its exchange restored, its outputs discarded) and
//! the callback answers `Fleet(call)`. The host sends the call, hands the reply to
//! [`Engine::fleet_reply`] (which writes what the store said into the replica, and may ask
//! for one more call), then runs the same callback again: that run decides from the record as
//! the store holds it now, so a conflict is decided again from what won (STYLE rule 10 at
//! fleet scale) and an answer that opens leaves only once the store has accepted it. Every
//! host (Envoy's callouts, a blocking client, a simulated store) drives the same decisions.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::Exchange;
use crate::gateway::fleet_worker::{Decided, HeldChange, MAX_DECIDED, Purpose};
pub use crate::gateway::fleet_worker::{FleetCall, FleetReply, FleetWorker};
use crate::policy::status::ServerRecord;
use crate::state;
use crate::state::audit::{CollectedOutputs, Outputs};
use crate::state::fleet::{EtcdSettings, FleetView, Need, closed_before_the_store, encode_record};
use crate::state::store::{Expect, StateStore};
use crate::wire::etcd::{self, RANGE_PATH, TXN_PATH};
use serde_json::json;
mod replies;

use std::any::Any;

/// How many round trips one callback may make before it fails closed (a store that keeps
/// changing under it, or answers that keep asking for more).
pub const MAX_ROUNDS: u32 = 8;

impl Engine {
    /// Takes back what a run changed in the held servers since `before`, returning it (see
    /// [`HeldChange`]).
    fn take_back_held(&mut self, before: std::collections::BTreeSet<String>) -> HeldChange {
        let after = std::mem::replace(&mut self.held, before);
        HeldChange {
            held: after.difference(&self.held).cloned().collect(),
            released: self.held.difference(&after).cloned().collect(),
        }
    }

    /// Makes the change a kept run made in the held servers.
    fn make_held(&mut self, change: &HeldChange) {
        for server in &change.held {
            self.hold(server);
        }
        for server in &change.released {
            self.release(server);
        }
    }
}

/// One run of a callback, its answer erased (see [`Engine::with_fleet`]).
type Run<'r> = dyn FnMut(&mut Engine, &mut dyn StateStore, &mut dyn Outputs, &mut Exchange) -> Box<dyn Any>
    + 'r;

impl Engine {
    /// The fleet store's settings (`None`: runtime state is this process's only).
    pub fn fleet_settings(&self) -> Option<&EtcdSettings> {
        self.config.store.as_ref()
    }

    /// Runs one stream callback through the fleet store's view of `store`. `Err(call)`: the
    /// callback must wait for the store; nothing it did is kept (its exchange is restored and
    /// its outputs dropped) and the host calls it again once the call's chain is answered.
    pub(crate) fn with_fleet<T: 'static>(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        mut run: impl FnMut(&mut Engine, &mut dyn StateStore, &mut dyn Outputs, &mut Exchange) -> T,
    ) -> Result<T, FleetCall> {
        if self.config.store.is_none() {
            return Ok(run(self, store, out, exchange));
        }
        // One copy of the fleet's rounds for every kind of callback: the answer travels as
        // `Any` and comes back as what `run` made.
        let result = {
            let mut erased =
                |engine: &mut Engine,
                 store: &mut dyn StateStore,
                 out: &mut dyn Outputs,
                 exchange: &mut Exchange|
                 -> Box<dyn Any> { Box::new(run(engine, store, out, exchange)) };
            self.fleet_rounds(store, out, now_ms, exchange, &mut erased)?
        };
        match result.downcast::<T>() {
            Ok(answer) => Ok(*answer),
            // A kept answer of another kind of callback (never made): decide anew.
            Err(_) => Ok(run(self, store, out, exchange)),
        }
    }

    #[inline(never)]
    fn fleet_rounds(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        run: &mut Run<'_>,
    ) -> Result<Box<dyn Any>, FleetCall> {
        let Some(settings) = self.config.store.clone() else {
            return Ok(run(self, store, out, exchange));
        };
        if let Some(result) = self.take_decided(store, out, exchange) {
            return Ok(result);
        }
        loop {
            let saved = exchange.clone();
            let mut progress = std::mem::take(&mut exchange.fleet);
            let server = exchange.server.as_str();
            let said = self.fleet.absent.iter().find(|(s, _)| s == server);
            if let Some((_, said)) = said
                && now_ms.saturating_sub(*said) < settings.sync_ms
                && !progress.absent.iter().any(|s| s == server)
            {
                progress.absent.push(server.to_string());
            }
            let mut held = CollectedOutputs::default();
            let mut view = FleetView::new(store, &progress);
            if !exchange.server.is_empty() {
                self.apply_fleet_config(&mut view, &mut held, now_ms, &exchange.server.clone());
            }
            let held_before = self.held.clone();
            let result = run(self, &mut view, &mut held, exchange);
            let end = view.finish();
            let Some(need) = end.need else {
                replay(&held, out);
                for server in end.closed {
                    if !self.fleet.pushes.contains(&server) {
                        self.fleet.pushes.push(server);
                    }
                }
                return Ok(result);
            };
            let held_change = self.take_back_held(held_before);
            let decided = match end.decided {
                Some(writes) => Some(Decided {
                    result,
                    exchange: std::mem::replace(exchange, saved),
                    outputs: held,
                    writes,
                    held: held_change,
                }),
                None => {
                    *exchange = saved;
                    None
                }
            };
            exchange.fleet = progress;
            exchange.fleet.rounds += 1;
            exchange.fleet.accepted = false;
            if let Some(ticket) = exchange.fleet.ticket.take() {
                self.fleet.decided.retain(|(t, _)| *t != ticket);
            }
            if exchange.fleet.rounds > MAX_ROUNDS {
                // The store kept changing under this callback: decide without it (what opens
                // fails closed, what is unknown is unreadable).
                exchange.fleet.failed =
                    Some(format!("no stable answer after {MAX_ROUNDS} round trips"));
                continue;
            }
            if let Some(decided) = decided {
                self.fleet.next_ticket = self.fleet.next_ticket.wrapping_add(1);
                let ticket = self.fleet.next_ticket;
                if self.fleet.decided.len() >= MAX_DECIDED {
                    // Its stream decides again when its answer comes (bounded memory).
                    self.fleet.decided.remove(0);
                }
                self.fleet.decided.push((ticket, decided));
                exchange.fleet.ticket = Some(ticket);
            }
            return Err(self.call_for(store, &settings, need));
        }
    }

    /// The run a callback kept while its opening change went to the store, once the store
    /// accepted it: its writes are made, its outputs sent, and its answer stands.
    fn take_decided(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &mut Exchange,
    ) -> Option<Box<dyn Any>> {
        let ticket = exchange.fleet.ticket?;
        if !exchange.fleet.accepted {
            return None;
        }
        let index = self.fleet.decided.iter().position(|(t, _)| *t == ticket)?;
        let (_, decided) = self.fleet.decided.remove(index);
        // The keys several workers move with compare-and-swap (the server registry, the audit
        // ring's head) are not written over: the registry was brought up to date when the
        // record was taken, and the run's audit events enter the ring now.
        for (key, value) in &decided.writes {
            if !state::is_shared_counter(key) {
                let _written = store.set(key, value, Expect::Any);
            }
        }
        for event in &decided.outputs.audits {
            state::push_audit(store, &event.to_json(), self.config.audit.ring_size);
        }
        replay(&decided.outputs, out);
        self.make_held(&decided.held);
        *exchange = decided.exchange;
        exchange.fleet = Default::default();
        Some(decided.result)
    }

    /// Applies a configured server's `pin`, `lock` or `quarantine` over the record the store
    /// holds, once per store revision of that record (the operator's decision stands over the
    /// fleet's; what it opens goes through the store like any other change).
    fn apply_fleet_config(
        &mut self,
        view: &mut FleetView<'_>,
        out: &mut dyn Outputs,
        now_ms: u64,
        server: &str,
    ) {
        if !self.config.servers.contains_key(server) {
            return;
        }
        let revision = match self.record(view, server) {
            Ok(record) => record.and_then(|r| r.fleet_rev),
            // Unknown yet: the record is read first (the run that follows asks for it).
            Err(_) => return,
        };
        if self.fleet.configured.get(server) == Some(&revision) {
            return;
        }
        if self.configure_server(view, out, now_ms, server).is_empty() {
            let revision = self
                .record(view, server)
                .ok()
                .flatten()
                .and_then(|r| r.fleet_rev);
            self.fleet.configured.insert(server.to_string(), revision);
        }
    }

    /// The call that answers `need`.
    fn call_for(&self, store: &dyn StateStore, settings: &EtcdSettings, need: Need) -> FleetCall {
        match need {
            Need::Read { server } => FleetCall {
                path: RANGE_PATH,
                body: etcd::range_request(&settings.record_key(&server), None, false, 0),
                timeout_ms: settings.timeout_ms,
                purpose: Purpose::Read { server },
            },
            Need::Open {
                server,
                mod_revision,
                record,
            } => {
                let puts = writes(store, settings, &server, &record);
                FleetCall {
                    path: TXN_PATH,
                    body: etcd::txn_request(&settings.record_key(&server), mod_revision, &puts),
                    timeout_ms: settings.timeout_ms,
                    purpose: Purpose::Open { server, record },
                }
            }
        }
    }

    /// Every `sync_ms`: a closure not pushed yet (the store was unreachable, or the stream
    /// that made it ended first), else a read of what other instances wrote since the last.
    pub fn fleet_tick(
        &mut self,
        store: &mut dyn StateStore,
        _out: &mut dyn Outputs,
        _now_ms: u64,
    ) -> Option<FleetCall> {
        let settings = self.config.store.clone()?;
        for server in state::server_ids(store) {
            // Through the worker's parse cache: a record that did not change is not parsed
            // again on every tick.
            let dirty = matches!(
                state::load_record_cached(store, &mut self.records, &server),
                Ok(Some((record, _))) if record.fleet_dirty || closed_before_the_store(&record)
            );
            if dirty && !self.fleet.pushes.contains(&server) {
                self.fleet.pushes.push(server);
            }
        }
        if let Some(call) = self.fleet_outbox(store) {
            return Some(call);
        }
        let prefix = settings.records_prefix();
        Some(FleetCall {
            path: RANGE_PATH,
            body: etcd::range_request(
                &prefix,
                Some(&etcd::prefix_end(&prefix)),
                false,
                self.fleet.sync_revision.saturating_add(1),
            ),
            timeout_ms: settings.timeout_ms,
            purpose: Purpose::Sync,
        })
    }

    /// A closure this worker made and has not pushed: the call that writes it (send it after
    /// the answer it came with, and hand its reply to [`Engine::fleet_reply`]).
    pub fn fleet_outbox(&mut self, store: &mut dyn StateStore) -> Option<FleetCall> {
        // Asked after every callback: nothing to push costs one test.
        if self.fleet.pushes.is_empty() {
            return None;
        }
        let settings = self.config.store.clone()?;
        while let Some(server) = self.fleet.pushes.first().cloned() {
            self.fleet.pushes.remove(0);
            let Ok(Some((record, _))) = state::load_record(store, &server) else {
                continue;
            };
            if !record.fleet_dirty && !closed_before_the_store(&record) {
                continue;
            }
            let puts = writes(store, &settings, &server, &record);
            return Some(FleetCall {
                path: TXN_PATH,
                body: etcd::txn_request(
                    &settings.record_key(&server),
                    record.fleet_rev.unwrap_or(0),
                    &puts,
                ),
                timeout_ms: settings.timeout_ms,
                purpose: Purpose::Push {
                    server,
                    record: Box::new(record),
                },
            });
        }
        None
    }

    /// This worker's fleet bookkeeping (for the admin API).
    pub fn fleet_worker(&self) -> &FleetWorker {
        &self.fleet
    }
}

/// The puts that write `record`: every set it names that the replica holds (content
/// addressed: writing one again changes nothing), then the record itself.
fn writes(
    store: &dyn StateStore,
    settings: &EtcdSettings,
    server: &str,
    record: &ServerRecord,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut puts = Vec::new();
    for fingerprint in record.set_refs().into_iter().flatten() {
        if puts
            .iter()
            .any(|(k, _): &(Vec<u8>, Vec<u8>)| *k == settings.set_key(fingerprint))
        {
            continue;
        }
        if let Ok(Some(document)) = state::tool_set_document(store, server, fingerprint) {
            puts.push((settings.set_key(fingerprint), document));
        }
    }
    puts.push((settings.record_key(server), encode_record(record)));
    puts
}

/// Sends what a run that did not wait produced to the host's outputs, in order.
fn replay(held: &CollectedOutputs, out: &mut dyn Outputs) {
    for event in &held.audits {
        out.audit(event);
    }
    for decision in &held.decisions {
        out.decision(decision);
    }
    for (counter, detail) in &held.counts {
        out.count(*counter, detail.as_deref());
    }
}

/// The `GET store` answer of the admin API.
pub fn store_report(engine: &Engine, store: &dyn StateStore) -> serde_json::Value {
    let Some(settings) = engine.fleet_settings() else {
        return json!({"store": null, "note": "no fleet store configured: runtime state lives in this Envoy's shared data only"});
    };
    let dirty: Vec<String> = state::server_ids(store)
        .into_iter()
        .filter(|s| matches!(state::load_record(store, s), Ok(Some((r, _))) if r.fleet_dirty))
        .collect();
    json!({"store": "etcd", "cluster": settings.cluster, "prefix": settings.prefix,
        "reachable": !engine.fleet.down, "last_sync_ms": engine.fleet.last_sync_ms,
        "sync_ms": settings.sync_ms, "timeout_ms": settings.timeout_ms, "dirty": dirty})
}
