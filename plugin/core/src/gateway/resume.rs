//! Answers delivered on a resumed stream: requests whose answer arrives on another HTTP
//! exchange than the request.
//!
//! Main design decision: a Streamable HTTP server may close a POST event stream before it
//! answers and deliver the answer on the GET stream the client reopens with `Last-Event-ID`
//! (resumability, SSE polling). The answer must still be checked (a tool list, a call's
//! result contract), and it must be told from an answer nobody asked for, which is dropped.
//! The GET is another exchange, possibly on another worker VM. So an exchange that ends with
//! requests unanswered writes them to its session's slot in the shared store, a GET of that
//! session reads them back as pending, and the GET's end takes out of the slot what it
//! answered (a second answer to one id is then unsolicited). Bounded like session
//! snapshots: one slot per (server, session) hash, at most [`MAX_AWAITED`] requests of each
//! kind in it; a slot collision evicts, and an evicted request's answer is then unsolicited
//! (dropped: its client is left without it, never given it unchecked). The slot changes by
//! compare-and-swap from the very value read, so two exchanges of one session ending at
//! once both keep what they left.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, Pending, PendingCall, PendingList};
use crate::policy::section::TOOLS_CALL;
use crate::state::slot;
use crate::state::snapshot_key::ClientKey;
use crate::state::store::{Expect, StateStore, StoreError};
use crate::wire::jsonrpc::same_id;
use serde_json::{Value, json};

/// Requests kept per session slot (the oldest go first).
pub const MAX_AWAITED: usize = 64;

/// How many times an exchange's end tries to swap the slot before it gives up (the slot
/// then misses its requests: their answers are dropped as unsolicited).
const SWAPS: usize = 8;

/// One request awaiting its answer, as a slot keeps it.
#[derive(Debug, Clone)]
struct Waiting {
    id: Value,
    method: String,
    /// A call's tool, and whether its result is checked against a contract.
    tool: Option<String>,
    check: bool,
    /// A list's cursor, and whether it was asked under a stateless revision.
    cursor: Option<String>,
    stateless: bool,
    /// A list of a sealed section beyond tools (its answer is checked as such).
    sealed: bool,
}

impl Waiting {
    fn of(exchange: &Exchange) -> impl Iterator<Item = Waiting> + '_ {
        exchange.pending.iter().map(|pending| {
            let waiting = Waiting {
                id: pending.id().clone(),
                method: pending.method().to_string(),
                tool: None,
                check: false,
                cursor: None,
                stateless: false,
                sealed: false,
            };
            match pending {
                Pending::Call(call) => Waiting {
                    tool: Some(call.tool.clone()),
                    check: call.check_result,
                    stateless: call.stateless,
                    ..waiting
                },
                Pending::List(list) => Waiting {
                    cursor: list.cursor.clone(),
                    stateless: list.stateless,
                    sealed: !list.shows_tools(),
                    ..waiting
                },
                Pending::Other(..) => waiting,
            }
        })
    }

    fn to_json(&self) -> Value {
        json!({"id": self.id, "method": self.method, "tool": self.tool, "check": self.check,
            "cursor": self.cursor, "stateless": self.stateless, "sealed": self.sealed})
    }

    /// An entry of a slot; one written before the slot kept every kind (`calls`, no
    /// `method`) is a checked call.
    fn parse(entry: &Value) -> Option<Waiting> {
        let text = |name: &str| entry.get(name).and_then(Value::as_str).map(str::to_string);
        let flag = |name: &str| entry.get(name).and_then(Value::as_bool);
        let id = entry
            .get("id")
            .filter(|id| id.is_string() || id.is_number())?;
        let waiting = Waiting {
            id: id.clone(),
            method: text("method").unwrap_or_else(|| TOOLS_CALL.into()),
            tool: text("tool"),
            check: flag("check").unwrap_or(true),
            cursor: text("cursor"),
            stateless: flag("stateless") == Some(true),
            sealed: flag("sealed") == Some(true),
        };
        (waiting.method != TOOLS_CALL || waiting.tool.is_some()).then_some(waiting)
    }

    /// Makes it pending on `exchange` again, unless a request of that id already is.
    fn resume(self, exchange: &mut Exchange, session: &str) {
        if exchange.waits(&self.id) {
            return;
        }
        // A list of a section other than tools is checked as such only when it was (the
        // server sealed it when it was asked).
        let list = PendingList::of(&self.id, &self.method)
            .filter(|list| list.shows_tools() || self.sealed);
        let pending = match (list, self.tool) {
            (_, Some(tool)) if self.method == TOOLS_CALL => Pending::Call(PendingCall {
                id: self.id,
                tool,
                check_result: self.check,
                stateless: self.stateless,
                allowed_at: None,
            }),
            (Some(list), _) => Pending::List(PendingList {
                cursor: self.cursor,
                stateless: self.stateless,
                key: Some(ClientKey::session(session).into_owned()),
                ..list
            }),
            _ => Pending::Other(self.id, self.method),
        };
        exchange.pending.push(pending);
    }
}

/// The slot's requests for (server, session); none when it is another pair's (a hash
/// collision) or unreadable.
fn parse_slot(bytes: &[u8], server: &str, session: &str) -> Vec<Waiting> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Vec::new();
    };
    let owner = value.get("server").and_then(Value::as_str) == Some(server)
        && value.get("session").and_then(Value::as_str) == Some(session);
    let entries = value.get("waiting").or_else(|| value.get("calls"));
    match (owner, entries.and_then(Value::as_array)) {
        (true, Some(entries)) => entries
            .iter()
            .take(MAX_AWAITED)
            .filter_map(Waiting::parse)
            .collect(),
        _ => Vec::new(),
    }
}

fn slot_json(waiting: &[Waiting], server: &str, session: &str) -> Value {
    let entries: Vec<Value> = waiting.iter().map(Waiting::to_json).collect();
    json!({"server": server, "session": session, "waiting": entries})
}

impl Engine {
    /// At the end of an exchange: keeps its requests that got no answer, so that a resumed
    /// stream of the same session can check theirs, and takes out of the slot the ones it
    /// resumed and answered.
    pub fn exchange_end(&mut self, store: &mut dyn StateStore, exchange: &Exchange) {
        let Some(session) = exchange.session.as_deref() else {
            return;
        };
        let unanswered = exchange.awaits_answer();
        // A request this stream resumed and no longer waits for was answered here.
        let answered =
            |id: &Value| exchange.resumed.iter().any(|r| same_id(r, id)) && !exchange.waits(id);
        if !unanswered && exchange.resumed.iter().all(|id| exchange.waits(id)) {
            return;
        }
        let key = key(&exchange.server, session, self.config.limits.session_slots);
        for _ in 0..SWAPS {
            let Ok(held) = store.get(&key) else {
                return;
            };
            let (before, expect) = match &held {
                Some((bytes, version)) => (
                    parse_slot(bytes, &exchange.server, session),
                    Expect::Version(*version),
                ),
                None => (Vec::new(), Expect::Absent),
            };
            let unchanged = slot_json(&before, &exchange.server, session);
            // What this exchange answered leaves; what it leaves unanswered is added.
            let mut after = before;
            after.retain(|w| !answered(&w.id));
            for waiting in Waiting::of(exchange) {
                after.retain(|kept| !same_id(&kept.id, &waiting.id));
                after.push(waiting);
            }
            let excess = after.len().saturating_sub(MAX_AWAITED);
            after.drain(..excess);
            let value = slot_json(&after, &exchange.server, session);
            if held.is_some() && value == unchanged {
                return;
            }
            let Ok(bytes) = serde_json::to_vec(&value) else {
                return;
            };
            match store.set(&key, &bytes, expect) {
                Err(StoreError::Conflict) => continue,
                _ => return,
            }
        }
    }

    /// On a GET (an event stream that may resume earlier ones): the requests of the session
    /// still awaiting their answer become pending on this exchange too. An error: the slot
    /// could not be read.
    pub(crate) fn resume_awaited(
        &self,
        store: &dyn StateStore,
        exchange: &mut Exchange,
    ) -> Result<(), StoreError> {
        let Some(session) = exchange.session.as_deref() else {
            return Ok(());
        };
        let key = key(&exchange.server, session, self.config.limits.session_slots);
        let Some((bytes, _)) = store.get(&key)? else {
            return Ok(());
        };
        let waiting = parse_slot(&bytes, &exchange.server, session);
        exchange.resumed = waiting.iter().map(|w| w.id.clone()).collect();
        let session = session.to_string();
        for request in waiting {
            request.resume(exchange, &session);
        }
        Ok(())
    }
}

fn key(server: &str, session: &str, slots: usize) -> String {
    format!("ts/v1/wait/{}", slot(server, session, slots))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn a_slot_keeps_every_kind_and_reads_back_what_it_wrote() {
        let mut ex = Exchange::new("srv", Some("s"));
        ex.pending.push(Pending::Call(PendingCall {
            id: json!(3),
            tool: "add".into(),
            check_result: false,
            stateless: false,
            allowed_at: None,
        }));
        ex.pending
            .push(Pending::List(PendingList::new(json!("l1"), Some("s"))));
        ex.pending
            .push(Pending::Other(json!(9), "prompts/get".into()));
        // A sealed section's list, whole or a later page: still checked as one when resumed.
        for (id, cursor) in [(10, None), (11, Some("page-2".to_string()))] {
            let list = PendingList {
                cursor,
                key: Some(ClientKey::session("s").into_owned()),
                ..PendingList::of(&json!(id), "prompts/list").unwrap()
            };
            ex.pending.push(Pending::List(list));
        }
        let waiting: Vec<Waiting> = Waiting::of(&ex).collect();
        let bytes = serde_json::to_vec(&slot_json(&waiting, "srv", "s")).unwrap();
        let read = parse_slot(&bytes, "srv", "s");
        assert_eq!(
            slot_json(&read, "srv", "s"),
            slot_json(&waiting, "srv", "s")
        );
        assert!(parse_slot(&bytes, "srv", "other").is_empty());
        let mut resumed = Exchange::new("srv", Some("s"));
        for request in read {
            request.resume(&mut resumed, "s");
        }
        assert_eq!(resumed.pending, ex.pending);
    }

    #[test]
    fn a_slot_written_before_every_kind_was_kept_reads_as_checked_calls() {
        let old = br#"{"server":"srv","session":"s","calls":[{"id":1,"tool":"add"}]}"#;
        let read = parse_slot(old, "srv", "s");
        assert_eq!(read.len(), 1);
        assert!(read[0].check && read[0].method == "tools/call");
    }
}
