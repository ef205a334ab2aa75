//! Results delivered on a resumed stream: a checked `tools/call` whose answer arrives on
//! another HTTP exchange than its request.
//!
//! Main design decision: a Streamable HTTP server may close a POST event stream before it
//! answers a call and deliver the result on the GET stream the client reopens with
//! `Last-Event-ID` (resumability, SSE polling). The result contract of such a call must still be
//! checked, but the GET is another exchange, possibly on another worker VM. So an exchange that
//! ends with checked calls unanswered writes them to its session's slot in the shared store,
//! and a GET of that session reads them back into its pending calls. Bounded like session
//! snapshots: one slot per (server, session) hash, at most [`MAX_AWAITED`] calls in it; a slot
//! collision evicts, and an evicted call's result is then read as an unknown answer.

use crate::gateway::engine::{Engine, Exchange, PendingCall};
use crate::gateway::response::same_id;
use crate::state::slot;
use crate::state::store::{Expect, StateStore, StoreError};
use serde_json::{Value, json};

/// Checked calls kept per session slot (the oldest go first).
pub const MAX_AWAITED: usize = 32;

impl Engine {
    /// At the end of an exchange: keeps its checked calls that got no answer, so that a
    /// resumed stream of the same session can check their results.
    pub fn exchange_end(&mut self, store: &mut dyn StateStore, exchange: &Exchange) {
        let Some(session) = exchange.session.as_deref() else {
            return;
        };
        if !exchange.pending_calls.iter().any(|c| c.check_result) {
            return;
        }
        let slots = self.config.limits.session_slots;
        // Calls of the session's earlier streams that cannot be read back are lost, as if
        // evicted; this exchange's own are kept.
        let mut calls = awaited(store, &exchange.server, session, slots).unwrap_or_default();
        for call in exchange.pending_calls.iter().filter(|c| c.check_result) {
            calls.retain(|kept| !same_id(&kept.id, &call.id));
            calls.push(call.clone());
        }
        let excess = calls.len().saturating_sub(MAX_AWAITED);
        calls.drain(..excess);
        let entries: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "tool": c.tool}))
            .collect();
        let value = json!({"server": exchange.server, "session": session, "calls": entries});
        if let Ok(bytes) = serde_json::to_vec(&value) {
            let _ = store.set(&key(&exchange.server, session, slots), &bytes, Expect::Any);
        }
    }

    /// On a GET (an event stream that may resume earlier ones): the checked calls of the
    /// session still awaiting their result become pending on this exchange too. An error: the
    /// slot could not be read.
    pub(crate) fn resume_calls(
        &self,
        store: &dyn StateStore,
        exchange: &mut Exchange,
    ) -> Result<(), StoreError> {
        let Some(session) = exchange.session.as_deref() else {
            return Ok(());
        };
        let calls = awaited(
            store,
            &exchange.server,
            session,
            self.config.limits.session_slots,
        )?;
        for call in calls {
            if !exchange
                .pending_calls
                .iter()
                .any(|c| same_id(&c.id, &call.id))
            {
                exchange.pending_calls.push(call);
            }
        }
        Ok(())
    }
}

fn key(server: &str, session: &str, slots: usize) -> String {
    format!("ts/v1/wait/{}", slot(server, session, slots))
}

/// The checked calls of (server, session) still awaiting their result (empty: none, or
/// evicted by another session).
fn awaited(
    store: &dyn StateStore,
    server: &str,
    session: &str,
    slots: usize,
) -> Result<Vec<PendingCall>, StoreError> {
    let Some((bytes, _)) = store.get(&key(server, session, slots))? else {
        return Ok(Vec::new());
    };
    Ok(parse_awaited(&bytes, server, session))
}

fn parse_awaited(bytes: &[u8], server: &str, session: &str) -> Vec<PendingCall> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Vec::new();
    };
    let owner = value.get("server").and_then(Value::as_str) == Some(server)
        && value.get("session").and_then(Value::as_str) == Some(session);
    let Some(entries) = value
        .get("calls")
        .and_then(Value::as_array)
        .filter(|_| owner)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .take(MAX_AWAITED)
        .filter_map(|e| {
            Some(PendingCall {
                id: e.get("id")?.clone(),
                tool: e.get("tool")?.as_str()?.to_string(),
                check_result: true,
                stateless: false,
                allowed_at: None,
            })
        })
        .collect()
}
