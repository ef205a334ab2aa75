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

use crate::gateway::engine::{Engine, Exchange};
use crate::policy::status::ServerRecord;
use crate::state::audit::{AuditEvent, CollectedOutputs, Counter, Outputs};
use crate::state::fleet::{
    EtcdSettings, FleetView, Merged, Need, decode_record, encode_record, merge, unusable_record,
};
use crate::state::store::{Expect, StateStore};
use crate::state::{self, StateError};
use crate::wire::etcd::{self, Kv, RANGE_PATH, TXN_PATH};
use serde_json::{Map, json};
use std::any::Any;
use std::collections::BTreeMap;

/// How many round trips one callback may make before it fails closed (a store that keeps
/// changing under it, or answers that keep asking for more).
pub const MAX_ROUNDS: u32 = 8;

/// A request for the host to send to the fleet store: an HTTP `POST` of `body` (JSON) to
/// `path`, answered within `timeout_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetCall {
    /// `/v3/kv/range` or `/v3/kv/txn`.
    pub path: &'static str,
    /// The request body.
    pub body: Vec<u8>,
    /// How long the host waits for the answer.
    pub timeout_ms: u64,
    purpose: Purpose,
}

/// What the host got back for a [`FleetCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetReply {
    /// An HTTP answer.
    Answered {
        /// HTTP status.
        status: u16,
        /// Body bytes.
        body: Vec<u8>,
    },
    /// No answer (unreachable, timed out, refused): what needed it fails closed.
    Failed(String),
}

/// Why a call was made: how its answer is read.
#[derive(Debug, Clone, PartialEq)]
enum Purpose {
    /// A record the replica lacks.
    Read { server: String },
    /// The sets a record read from the store names that the replica lacks; the record is
    /// written once they are in.
    ReadSets {
        server: String,
        record: Box<ServerRecord>,
        mod_revision: u64,
    },
    /// A change that opens, to be accepted by the store.
    Open {
        server: String,
        record: Box<ServerRecord>,
    },
    /// A local closure, written to the store.
    Push {
        server: String,
        record: Box<ServerRecord>,
    },
    /// What other instances wrote since the last sync.
    Sync,
}

/// How many callbacks of one worker may wait for the store's yes to an opening change at
/// once; past it the oldest one decides again when its answer comes.
const MAX_DECIDED: usize = 64;

/// A run that proposed an opening change and decided as if it were made: its answer stands
/// once the store accepts.
struct Decided {
    result: Box<dyn Any>,
    exchange: Exchange,
    outputs: CollectedOutputs,
    writes: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for Decided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decided")
            .field("writes", &self.writes.len())
            .finish()
    }
}

/// One run of a callback, its answer erased (see [`Engine::with_fleet`]).
type Run<'r> = dyn FnMut(&mut Engine, &mut dyn StateStore, &mut dyn Outputs, &mut Exchange) -> Box<dyn Any>
    + 'r;

/// A worker's fleet bookkeeping (the replica itself is the host's shared data).
#[derive(Debug, Default)]
pub struct FleetWorker {
    /// Runs waiting for the store's yes, by ticket, oldest first.
    decided: Vec<(u64, Decided)>,
    /// The last ticket given.
    next_ticket: u64,
    /// The store revision this worker has read other instances' writes up to.
    sync_revision: u64,
    /// The last answer from the store was a failure (`store.unreachable` was audited).
    down: bool,
    /// Servers whose records this worker closed locally and has not pushed yet.
    pushes: Vec<String>,
    /// When the last sync answered (ms since the epoch).
    last_sync_ms: u64,
    /// Servers the store had no record of, and when it said so: a first contact does not ask
    /// again for every message within `sync_ms` (a record written since by another instance
    /// is found by the next sync, or by the write that conflicts with it).
    absent: Vec<(String, u64)>,
    /// The configured servers whose config (pin, lock, quarantine) was applied over the
    /// record of this revision of the store.
    configured: BTreeMap<String, Option<u64>>,
}

impl FleetWorker {
    /// When the last sync answered (ms since the epoch; 0: never).
    pub fn last_sync_ms(&self) -> u64 {
        self.last_sync_ms
    }

    /// Whether the last answer from the store was a failure.
    pub fn down(&self) -> bool {
        self.down
    }
}

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
            let decided = match end.decided {
                Some(writes) => Some(Decided {
                    result,
                    exchange: std::mem::replace(exchange, saved),
                    outputs: held,
                    writes,
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

    /// Hands the host's reply to `call` to the engine: what the store said is written into the
    /// replica. Returns the next call of the same chain (send it and hand its reply here);
    /// `None`: the chain is over, and a callback that waited for it is run again.
    /// `exchange`: the waiting stream's, for calls a stream callback asked for.
    pub fn fleet_reply(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: Option<&mut Exchange>,
        call: &FleetCall,
        reply: FleetReply,
    ) -> Option<FleetCall> {
        let settings = self.config.store.clone()?;
        out.count(Counter::StoreRoundTrips, None);
        let body = match reply {
            FleetReply::Answered { status: 200, body } => body,
            FleetReply::Answered { status, body } => {
                let text = String::from_utf8_lossy(body.get(..200).unwrap_or(&body)).into_owned();
                return self.fleet_failed(
                    store,
                    out,
                    now_ms,
                    exchange,
                    format!("HTTP {status}: {text}"),
                );
            }
            FleetReply::Failed(why) => return self.fleet_failed(store, out, now_ms, exchange, why),
        };
        let read = match &call.purpose {
            Purpose::Read { server } => etcd::parse_range(&body).map(|range| {
                self.read_answered(store, out, now_ms, &settings, exchange, server, range.kvs)
            }),
            Purpose::ReadSets {
                server,
                record,
                mod_revision,
            } => etcd::parse_txn(&body).map(|txn| {
                for range in txn.ranges {
                    self.store_sets(store, server, range.kvs);
                }
                self.adopt(
                    store,
                    out,
                    now_ms,
                    server,
                    ServerRecord::clone(record),
                    *mod_revision,
                );
                None
            }),
            Purpose::Open { server, record } => etcd::parse_txn(&body).map(|txn| {
                if let Some(exchange) = exchange {
                    exchange.fleet.accepted = txn.succeeded;
                }
                self.written(store, out, now_ms, server, record, txn, false)
            }),
            Purpose::Push { server, record } => etcd::parse_txn(&body)
                .map(|txn| self.written(store, out, now_ms, server, record, txn, true)),
            Purpose::Sync => etcd::parse_range(&body).map(|range| {
                self.synced(store, out, now_ms, &settings, range.revision, range.kvs);
                None
            }),
        };
        match read {
            Ok(next) => {
                self.fleet_up(store, out, now_ms);
                next
            }
            Err(e) => self.fleet_failed(store, out, now_ms, None, e.to_string()),
        }
    }

    fn fleet_failed(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: Option<&mut Exchange>,
        why: String,
    ) -> Option<FleetCall> {
        out.count(Counter::StoreFailures, None);
        if !self.fleet.down {
            self.fleet.down = true;
            self.fleet_audit(store, out, now_ms, "store.unreachable", "", &why);
        }
        if let Some(exchange) = exchange {
            exchange.fleet.failed = Some(why);
        }
        None
    }

    fn fleet_up(&mut self, store: &mut dyn StateStore, out: &mut dyn Outputs, now_ms: u64) {
        if self.fleet.down {
            self.fleet.down = false;
            self.fleet_audit(
                store,
                out,
                now_ms,
                "store.recovered",
                "",
                "the fleet store answers again",
            );
        }
    }

    fn fleet_audit(
        &self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        event: &'static str,
        server: &str,
        reason: &str,
    ) {
        let event = AuditEvent {
            event,
            time_ms: now_ms,
            server: server.to_string(),
            session: None,
            status_before: None,
            status_after: None,
            baseline: None,
            live: None,
            reason: reason.to_string(),
            detail: Map::new(),
        };
        self.emit(store, out, &event);
    }

    /// A record read: absent (the callback decides a first contact), unusable (the replica
    /// holds why, and the server fails closed), or adopted once the sets it names are in.
    #[allow(clippy::too_many_arguments)]
    fn read_answered(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        settings: &EtcdSettings,
        exchange: Option<&mut Exchange>,
        server: &str,
        kvs: Vec<Kv>,
    ) -> Option<FleetCall> {
        let Some(kv) = kvs.into_iter().next() else {
            if let Some(exchange) = exchange {
                exchange.fleet.absent.push(server.to_string());
            }
            self.fleet.absent.retain(|(s, _)| s != server);
            if self.fleet.absent.len() >= self.config.limits.max_servers {
                self.fleet.absent.clear();
            }
            self.fleet.absent.push((server.to_string(), now_ms));
            return None;
        };
        let record = match decode_record(&kv.value) {
            Ok(record) => record,
            Err(why) => {
                self.hold_unusable(store, out, now_ms, server, &kv.key, &why);
                return None;
            }
        };
        let missing: Vec<Vec<u8>> = record
            .set_refs()
            .into_iter()
            .flatten()
            .filter(|f| !state::holds_tool_set(store, server, f).unwrap_or(false))
            .map(|f| settings.set_key(f))
            .collect();
        if missing.is_empty() {
            self.adopt(store, out, now_ms, server, record, kv.mod_revision);
            return None;
        }
        Some(FleetCall {
            path: TXN_PATH,
            body: etcd::read_many_request(&missing),
            timeout_ms: settings.timeout_ms,
            purpose: Purpose::ReadSets {
                server: server.to_string(),
                record: Box::new(record),
                mod_revision: kv.mod_revision,
            },
        })
    }

    /// Stores set documents read from the store in the replica (each under the fingerprint it
    /// says it is; the definitions are checked against it whenever they are loaded).
    fn store_sets(&self, store: &mut dyn StateStore, server: &str, kvs: Vec<Kv>) {
        for kv in kvs {
            if let Some(fingerprint) = state::document_fingerprint_of(&kv.value) {
                let fingerprint = fingerprint.to_string();
                let _stored = state::put_set_bytes(store, server, &fingerprint, &kv.value);
            }
        }
    }

    /// The replica holds why a store record cannot be used, so every read of it fails closed;
    /// the store's key is never written from here.
    fn hold_unusable(
        &self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        server: &str,
        key: &[u8],
        why: &str,
    ) {
        let local = state::record_key(server);
        let expect = match store.get(&local) {
            Ok(Some((_, version))) => Expect::Version(version),
            Ok(None) => Expect::Absent,
            Err(_) => return,
        };
        let _held = state::register_server(store, server, self.config.limits.max_servers);
        if store
            .set(&local, &unusable_record(key, why), expect)
            .is_ok()
        {
            let reason = format!(
                "the fleet store's record {} cannot be used ({why}); the server fails closed until an operator restores or removes the key",
                String::from_utf8_lossy(key)
            );
            self.fleet_audit(store, out, now_ms, "store.corrupt", server, &reason);
        }
    }

    /// Writes the store's record of `server` at `mod_revision` into the replica: over a copy
    /// that is not newer, or merged with a local closure the store has not accepted yet.
    fn adopt(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        server: &str,
        record: ServerRecord,
        mod_revision: u64,
    ) {
        self.fleet.absent.retain(|(s, _)| s != server);
        let key = state::record_key(server);
        if state::register_server(store, server, self.config.limits.max_servers).is_err() {
            return;
        }
        for _ in 0..state::CAS_ATTEMPTS {
            let held = match store.get(&key) {
                Ok(held) => held,
                Err(_) => return,
            };
            let (local, expect) = match &held {
                None => (None, Expect::Absent),
                Some((bytes, version)) if bytes.is_empty() => (None, Expect::Version(*version)),
                Some((bytes, version)) => (
                    serde_json::from_slice::<ServerRecord>(bytes).ok(),
                    Expect::Version(*version),
                ),
            };
            let mut next = record.clone();
            next.fleet_rev = Some(mod_revision);
            if let Some(local) = &local {
                if local.fleet_rev.is_some_and(|r| r >= mod_revision) {
                    return;
                }
                if local.fleet_dirty {
                    match merge(record.clone(), local) {
                        Merged::Push(merged) => {
                            next = merged;
                            next.fleet_rev = Some(mod_revision);
                            next.fleet_dirty = true;
                            if !self.fleet.pushes.iter().any(|s| s == server) {
                                self.fleet.pushes.push(server.to_string());
                            }
                        }
                        Merged::Take { superseded, .. } => {
                            if superseded {
                                self.fleet_audit(store, out, now_ms, "store.superseded", server,
                                    "a closure made here was decided on a baseline the fleet has replaced (an approval on another instance); the fleet's record is taken and the next list is decided against it");
                            }
                        }
                    }
                }
            }
            let Ok(bytes) = serde_json::to_vec(&next) else {
                return;
            };
            match store.set(&key, &bytes, expect) {
                Ok(()) => return,
                Err(crate::state::store::StoreError::Conflict) => continue,
                Err(_) => return,
            }
        }
    }

    /// A write's answer: accepted (the replica takes the record at its new revision), or lost
    /// to another writer (the replica takes what won, merged with a local closure; a push
    /// that still stands is sent again).
    #[allow(clippy::too_many_arguments)]
    fn written(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        server: &str,
        record: &ServerRecord,
        txn: etcd::TxnAnswer,
        push: bool,
    ) -> Option<FleetCall> {
        if txn.succeeded {
            self.accepted(store, server, record, txn.revision, push);
            return None;
        }
        out.count(Counter::StoreConflicts, None);
        let won = txn
            .ranges
            .into_iter()
            .next()
            .and_then(|r| r.kvs.into_iter().next());
        match won {
            Some(kv) => match decode_record(&kv.value) {
                Ok(fleet) => self.adopt(store, out, now_ms, server, fleet, kv.mod_revision),
                Err(why) => self.hold_unusable(store, out, now_ms, server, &kv.key, &why),
            },
            // The key is gone from the store (an operator removed it): the next callback
            // decides a first contact again; a local closure is pushed as a new record.
            None => {
                let _cleared = self.clear_revision(store, server);
            }
        }
        if push {
            return self.fleet_outbox(store, now_ms);
        }
        None
    }

    /// The store accepted `record` at `revision`: the replica takes it unless it moved on
    /// since (another closure here), which keeps its changes and only learns the revision.
    fn accepted(
        &mut self,
        store: &mut dyn StateStore,
        server: &str,
        record: &ServerRecord,
        revision: u64,
        push: bool,
    ) {
        let key = state::record_key(server);
        for _ in 0..state::CAS_ATTEMPTS {
            let Ok(held) = store.get(&key) else { return };
            let (local, expect) = match &held {
                Some((bytes, version)) if !bytes.is_empty() => (
                    serde_json::from_slice::<ServerRecord>(bytes).ok(),
                    Expect::Version(*version),
                ),
                Some((_, version)) => (None, Expect::Version(*version)),
                None => (None, Expect::Absent),
            };
            let mut next = match &local {
                // A push accepted while the copy moved on: the copy stays, still to push.
                Some(local) if push && crate::state::fleet::differs_for_fleet(local, record) => {
                    let mut kept = local.clone();
                    kept.fleet_dirty = true;
                    kept
                }
                Some(local) if !push && local.fleet_dirty => {
                    // A closure made here while the opening change was on its way: it still
                    // stands on the accepted record when its baseline is the same.
                    match merge(record.clone(), local) {
                        Merged::Push(mut merged) => {
                            merged.fleet_dirty = true;
                            if !self.fleet.pushes.iter().any(|s| s == server) {
                                self.fleet.pushes.push(server.to_string());
                            }
                            merged
                        }
                        Merged::Take { record, .. } => record,
                    }
                }
                _ => {
                    let mut taken = record.clone();
                    taken.fleet_dirty = false;
                    taken
                }
            };
            next.fleet_rev = Some(revision);
            if local.is_none()
                && state::register_server(store, server, self.config.limits.max_servers).is_err()
            {
                return;
            }
            let Ok(bytes) = serde_json::to_vec(&next) else {
                return;
            };
            match store.set(&key, &bytes, expect) {
                Ok(()) => return,
                Err(crate::state::store::StoreError::Conflict) => continue,
                Err(_) => return,
            }
        }
    }

    /// Forgets the store revision of `server`'s copy (its key is gone from the store).
    fn clear_revision(&self, store: &mut dyn StateStore, server: &str) -> Result<(), StateError> {
        let key = state::record_key(server);
        let Some((bytes, version)) = store.get(&key).map_err(StateError::Store)? else {
            return Ok(());
        };
        let Ok(mut local) = serde_json::from_slice::<ServerRecord>(&bytes) else {
            return Ok(());
        };
        local.fleet_rev = None;
        let bytes = serde_json::to_vec(&local).map_err(|e| StateError::Corrupt(e.to_string()))?;
        store
            .set(&key, &bytes, Expect::Version(version))
            .map_err(StateError::Store)
    }

    /// What other instances wrote since the last sync: each newer record is taken into the
    /// replica when it holds the server (a server it does not hold is read when a request
    /// needs it); a local closure meets it through [`merge`].
    fn synced(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        settings: &EtcdSettings,
        revision: u64,
        kvs: Vec<Kv>,
    ) {
        self.fleet.last_sync_ms = now_ms;
        for kv in kvs {
            let Some(server) = settings.server_of(&kv.key) else {
                continue;
            };
            self.fleet.absent.retain(|(s, _)| *s != server);
            let key = state::record_key(&server);
            let local = match store.get(&key) {
                Ok(Some((bytes, _))) if !bytes.is_empty() => {
                    serde_json::from_slice::<ServerRecord>(&bytes).ok()
                }
                _ => continue,
            };
            if local
                .as_ref()
                .and_then(|l| l.fleet_rev)
                .is_some_and(|r| r >= kv.mod_revision)
            {
                continue;
            }
            let record = match decode_record(&kv.value) {
                Ok(record) => record,
                Err(why) => {
                    self.hold_unusable(store, out, now_ms, &server, &kv.key, &why);
                    continue;
                }
            };
            let sets_held = record
                .set_refs()
                .into_iter()
                .flatten()
                .all(|f| state::holds_tool_set(store, &server, f).unwrap_or(false));
            if sets_held {
                self.adopt(store, out, now_ms, &server, record, kv.mod_revision);
            } else if let Some(local) = local
                && !local.fleet_dirty
            {
                // The record names sets this instance does not hold: the copy is dropped, and
                // the next request that needs it reads it whole (record and sets).
                if let Ok(Some((_, version))) = store.get(&key) {
                    let _dropped = store.set(&key, b"", Expect::Version(version));
                }
            }
        }
        self.fleet.sync_revision = self.fleet.sync_revision.max(revision);
    }

    /// Every `sync_ms`: a closure not pushed yet (the store was unreachable, or the stream
    /// that made it ended first), else a read of what other instances wrote since the last.
    pub fn fleet_tick(
        &mut self,
        store: &mut dyn StateStore,
        _out: &mut dyn Outputs,
        now_ms: u64,
    ) -> Option<FleetCall> {
        let settings = self.config.store.clone()?;
        for server in state::server_ids(store) {
            // Through the worker's parse cache: a record that did not change is not parsed
            // again on every tick.
            let dirty = matches!(
                state::load_record_cached(store, &mut self.records, &server),
                Ok(Some((record, _))) if record.fleet_dirty
            );
            if dirty && !self.fleet.pushes.contains(&server) {
                self.fleet.pushes.push(server);
            }
        }
        if let Some(call) = self.fleet_outbox(store, now_ms) {
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
    pub fn fleet_outbox(&mut self, store: &mut dyn StateStore, _now_ms: u64) -> Option<FleetCall> {
        let settings = self.config.store.clone()?;
        while let Some(server) = self.fleet.pushes.first().cloned() {
            self.fleet.pushes.remove(0);
            let Ok(Some((record, _))) = state::load_record(store, &server) else {
                continue;
            };
            if !record.fleet_dirty {
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
