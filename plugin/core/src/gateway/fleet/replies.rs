//! How the fleet store's answers change the replica: a record read (absent, unusable, or
//! taken with the sets it names), a write accepted or lost to another writer, a sync of what
//! other instances wrote. Each answer is read strictly; what cannot be read fails closed.

use super::{FleetCall, FleetReply, Purpose};
use crate::gateway::engine::Engine;
use crate::gateway::exchange::Exchange;
use crate::policy::status::ServerRecord;
use crate::state::audit::{AuditEvent, Counter, Outputs};
use crate::state::fleet::{
    EtcdSettings, Merged, closed_before_the_store, closing_on, decode_record, merge,
    unusable_record,
};
use crate::state::store::{Expect, StateStore};
use crate::state::{self, StateError};
use crate::wire::etcd::{self, Kv, TXN_PATH};
use serde_json::Map;

impl Engine {
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
                let mut unusable = None;
                for range in txn.ranges {
                    if let Err(corrupt) = self.store_sets(store, server, range.kvs) {
                        unusable.get_or_insert(corrupt);
                    }
                }
                // A set the record names that does not parse is store data that cannot be
                // used, as a record that does not parse is: the server fails closed.
                match unusable {
                    Some((key, why)) => self.hold_unusable(store, out, now_ms, server, &key, &why),
                    None => self.adopt(
                        store,
                        out,
                        now_ms,
                        server,
                        ServerRecord::clone(record),
                        *mod_revision,
                    ),
                }
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
        let mut exchange = exchange;
        if let Some(exchange) = exchange.as_deref_mut() {
            exchange.fleet.refreshed.push(server.to_string());
        }
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
    /// Keeps the sets read in the replica; `Err((key, why))` names the first one that is not a
    /// set document for the fingerprint its key names.
    fn store_sets(
        &self,
        store: &mut dyn StateStore,
        server: &str,
        kvs: Vec<Kv>,
    ) -> Result<(), (Vec<u8>, String)> {
        let mut corrupt = None;
        for kv in kvs {
            match usable_set(&kv) {
                Ok(fingerprint) => {
                    let _stored = state::put_set_bytes(store, server, &fingerprint, &kv.value);
                }
                Err(why) => {
                    corrupt.get_or_insert((kv.key, why));
                }
            }
        }
        corrupt.map_or(Ok(()), Err)
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
            let Some((local, expect)) = read_copy(store, &key) else {
                return;
            };
            let mut next = record.clone();
            next.fleet_rev = Some(mod_revision);
            if let Some(local) = &local {
                if local.fleet_rev.is_some_and(|r| r >= mod_revision) {
                    return;
                }
                let carried = closed_before_the_store(local);
                if local.fleet_dirty || carried {
                    let merged = match carried {
                        true => Merged::Push(closing_on(&record, local)),
                        false => merge(record.clone(), local),
                    };
                    match merged {
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
            return self.fleet_outbox(store);
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
            let Some((local, expect)) = read_copy(store, &key) else {
                return;
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
                && !closed_before_the_store(&local)
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
}

/// The fingerprint of a set document read from the store, when it is one: a JSON object whose
/// `fingerprint` is the one its key ends with and whose `tools` is an array.
fn usable_set(kv: &Kv) -> Result<String, String> {
    let document: serde_json::Value = serde_json::from_slice(&kv.value)
        .map_err(|e| format!("the tool set does not parse: {e}"))?;
    let fingerprint = document
        .get("fingerprint")
        .and_then(serde_json::Value::as_str)
        .ok_or("the tool set has no fingerprint")?;
    if !kv.key.ends_with(fingerprint.as_bytes()) || fingerprint.is_empty() {
        return Err(format!(
            "the tool set holds {fingerprint}, not the set its key names"
        ));
    }
    if !document
        .get(crate::policy::section::Section::Tools.items_member())
        .is_some_and(serde_json::Value::is_array)
    {
        return Err("the tool set has no tools array".into());
    }
    Ok(fingerprint.to_string())
}

/// The replica's copy of a record (`None`: not held, emptied, or unreadable) and the condition
/// a write over it is made under; `None` when the host could not read the key.
fn read_copy(store: &dyn StateStore, key: &str) -> Option<(Option<ServerRecord>, Expect)> {
    Some(match store.get(key).ok()? {
        None => (None, Expect::Absent),
        Some((bytes, version)) if bytes.is_empty() => (None, Expect::Version(version)),
        Some((bytes, version)) => (
            serde_json::from_slice::<ServerRecord>(&bytes).ok(),
            Expect::Version(version),
        ),
    })
}
