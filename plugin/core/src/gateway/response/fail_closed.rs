//! A response that cannot be checked: the error that replaces it, one per request it was to
//! answer, and the end of a stream that can no longer be followed.
//!
//! Main design decision: what cannot be inspected is withheld whole and every request still
//! waiting on it is answered with an error, so no client waits forever and nothing unchecked
//! leaves; the tool lists it owed hold the server on this worker until a list verifies.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, Pending, ResponseState};
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use crate::wire::jsonrpc;
use serde_json::Value;

impl Engine {
    /// [`Engine::fail_closed`] as the bytes of the body that replaces the answer.
    pub(crate) fn fail_closed_bytes(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        why: &str,
    ) -> Vec<u8> {
        self.fail_closed(store, out, now_ms, exchange, why)
            .to_string()
            .into_bytes()
    }

    /// The error that replaces an uninspectable answer, one per request it was to answer.
    ///
    /// An HTTP body (or the rest of an event stream) is withheld whole, so every request still
    /// pending on the exchange gets the error: a request left unanswered would keep its client
    /// waiting. A stdio message answers one request among those in flight: there, only the
    /// answers that must be inspected (tool lists, enforced result contracts) are replaced.
    pub(crate) fn fail_closed(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        why: &str,
    ) -> Value {
        let whole_body = !matches!(exchange.response, ResponseState::Message);
        let lists = exchange.awaits_tool_list();
        let withheld = if lists {
            "the tool list"
        } else {
            "the response"
        };
        let message = format!("toolseal: {why}; {withheld} was withheld (fail closed)");
        let enforced =
            self.config.server(&exchange.server).results == crate::config::ResultsMode::Enforce;
        // Every list; a call when the whole body is lost or its result is checked; any other
        // request when the whole body is lost. The rest stay pending.
        let answers = |pending: &Pending| match pending {
            Pending::List(_) => true,
            Pending::Call(call) => whole_body || (enforced && call.check_result),
            Pending::Other(..) => whole_body,
        };
        let (mut answered, kept): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut exchange.pending)
                .into_iter()
                .partition(answers);
        exchange.pending = kept;
        // Lists first, then calls, then the rest, each in the order they were asked.
        crate::wire::order::sort_by(&mut answered, |a, b| a.kind_index().cmp(&b.kind_index()));
        if lists {
            out.count(
                crate::state::audit::Counter::ListsFiltered,
                Some("unreadable"),
            );
            // The live set is unknown: calls wait for a list that verifies.
            self.hold(&exchange.server);
        }
        let name = if lists {
            "list.filtered"
        } else {
            "response.withheld"
        };
        let event = self.event(
            name,
            exchange,
            now_ms,
            None,
            &message,
            serde_json::Map::new(),
        );
        self.emit(store, out, &event);
        for pending in &answered {
            let mut decision = self.decision(
                exchange,
                "response",
                pending.method(),
                Some(pending.id()),
                crate::policy::status::SchemaStatus::Unbaselined,
            );
            decision.decision = "rewrite";
            match pending {
                Pending::List(list) if list.shows_tools() => decision.tools_out = Some(0),
                Pending::Call(call) => decision.tool = Some(call.tool.clone()),
                Pending::List(_) | Pending::Other(..) => {}
            }
            decision.error_code = Some("UNINSPECTABLE_RESPONSE");
            out.decision(&decision);
        }
        // No request known to answer: one error with a null id.
        let ids: Vec<&Value> = match answered.is_empty() {
            true => vec![&Value::Null],
            false => answered.iter().map(Pending::id).collect(),
        };
        let errors: Vec<Value> = ids
            .into_iter()
            .map(|id| jsonrpc::error_response(id, jsonrpc::INTERNAL_ERROR, &message))
            .collect();
        match <[Value; 1]>::try_from(errors) {
            Ok([single]) => single,
            Err(many) => Value::Array(many),
        }
    }

    /// The stream ended in the middle of an event (which clients discard): every tool list it
    /// still owes gets a JSON-RPC error event rather than leaving its client waiting. Calls
    /// and other requests are left pending: a resumed stream may still answer them.
    pub(super) fn truncated_stream(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
    ) -> Option<Vec<u8>> {
        if !exchange.awaits_tool_list() {
            return None;
        }
        let (lists, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut exchange.pending)
            .into_iter()
            .partition(|p| matches!(p, Pending::List(list) if list.shows_tools()));
        exchange.pending = lists;
        let why = "the event stream ended in the middle of an event";
        let error = self.fail_closed(store, out, now_ms, exchange, why);
        exchange.pending = rest;
        Some(format!("event: message\ndata: {error}\n\n").into_bytes())
    }

    /// Fails an event stream closed: the error as one event, and nothing more of the stream.
    pub(crate) fn drop_stream(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        why: &str,
    ) -> Vec<u8> {
        let error = self.fail_closed(store, out, now_ms, exchange, why);
        exchange.response = ResponseState::Dropped;
        format!("event: message\ndata: {error}\n\n").into_bytes()
    }
}
