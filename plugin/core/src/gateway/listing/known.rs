//! The listing path's memory of a list seen before (see [`crate::gateway::known_list`]): a
//! body that repeats the remembered `result` bytes is checked with the remembered parse and
//! digests, and a checked list is remembered for the next time.

use super::ListAnswer;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, ResponseState};
use crate::gateway::known_list::KnownList;
use crate::gateway::live::LiveDigests;
use crate::gateway::response::Forward;
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use crate::wire::envelope::{ResultBytes, split_response};
use crate::wire::jsonrpc::{Message, Payload};
use serde_json::Value;
use std::rc::Rc;

impl Engine {
    /// The fingerprint of the list result this worker remembered last for `server`, if any.
    pub fn remembered_list(&self, server: &str) -> Option<String> {
        self.known_lists
            .latest(server)
            .map(|list| list.digests().fingerprint().to_string())
    }

    /// The fingerprints of every list remembered for `server` (one per view), oldest first.
    pub fn remembered_lists(&self, server: &str) -> Vec<String> {
        self.known_lists
            .of(server)
            .map(|list| list.digests().fingerprint().to_string())
            .collect()
    }

    /// The digests of `tools` when they are the tools of the list remembered for `server` and
    /// the view of `view`.
    pub(crate) fn remembered_digests(
        &self,
        server: &str,
        view: &str,
        tools: &Value,
    ) -> Option<Rc<LiveDigests>> {
        let known = self.known_lists.get(server, view)?;
        known.digests_of(tools).map(Rc::clone)
    }

    /// The list remembered for the server of `exchange` when a body arriving on it may repeat
    /// its `result` bytes (the exchange awaits a `tools/list` answer, and the list has bytes).
    pub(crate) fn known_list_for(&self, exchange: &Exchange) -> Option<Rc<KnownList>> {
        if !exchange.awaits_tool_list() {
            return None;
        }
        self.known_lists
            .get(&exchange.server, exchange.tool_list_view())
            .filter(|known| known.result_bytes().is_some())
    }

    /// Checks `body` as a `tools/list` answer served again byte for byte, if it is one:
    /// `Some(replacement)` is the verdict (`Some(None)`: forward unchanged), `None` means
    /// the caller must parse the body as usual.
    pub(crate) fn known_list_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
    ) -> Option<Option<Forward>> {
        if !exchange.awaits_tool_list() {
            return None;
        }
        let known = self
            .known_lists
            .get(&exchange.server, exchange.tool_list_view())?;
        let (at, compared) = match &exchange.response {
            ResponseState::Json(held) => held.repeated(&known),
            _ => None,
        }
        .unwrap_or_default();
        let result = ResultBytes::Known {
            known: known.result_bytes()?,
            at,
            compared,
        };
        let envelope = split_response(body, result)?;
        let request = exchange.settle_tool_list(&envelope.id)?;
        // The list is remembered already: the digests its check hands back are not needed.
        let verdict = self
            .list_result(
                store,
                out,
                now_ms,
                exchange,
                &request,
                known.result(),
                Some(known.digests()),
            )
            .answer;
        // A lowered `ttlMs` is spliced into the server's bytes: only the number changes.
        if let (ListAnswer::LowerTtl(cap), Some(span)) = (&verdict, known.ttl()) {
            let start = envelope.result.start.saturating_add(span.start);
            let end = envelope.result.start.saturating_add(span.end);
            return Some(Some(Forward::Splice(start..end, *cap)));
        }
        // A list served in part writes the kept tools' remembered encodings.
        let verdict = match verdict {
            ListAnswer::Cut { result, kept } => {
                match known.cut_answer(&envelope.id, result, &kept) {
                    Ok(bytes) => {
                        return Some(Some(Forward::Bytes(bytes)));
                    }
                    Err(result) => ListAnswer::Cut { result, kept },
                }
            }
            other => other,
        };
        Some(
            verdict
                .into_answer(&envelope.id, known.result())
                .map(|v| Forward::Bytes(crate::wire::json::encode(&v))),
        )
    }

    /// After the full path read `body` as `payload` and checked it as a whole `tools/list`
    /// result whose tools have `digests`: remembers its `result` bytes.
    pub(crate) fn remember_checked_list(
        &mut self,
        server: &str,
        view: &str,
        body: &[u8],
        payload: Payload,
        digests: Rc<LiveDigests>,
    ) {
        let Payload::Single(Message::Response { result, .. }) = payload else {
            return;
        };
        let Some(envelope) = split_response(body, ResultBytes::Parsed) else {
            return;
        };
        let Some(bytes) = body.get(envelope.result) else {
            return;
        };
        let list = KnownList::new(bytes.to_vec(), result, digests);
        let max_bytes = self.config.limits.max_response_bytes;
        self.known_lists.remember(server, view, list, max_bytes);
    }

    /// After the last page completed a set of `size` bytes of definitions whose digests the
    /// check computed: remembers its tools, so the same pages gathered again are recognized.
    /// A set recognized as the remembered one is left as it is.
    pub(crate) fn remember_gathered_list(
        &mut self,
        server: &str,
        view: &str,
        tools: Value,
        size: usize,
        digests: Rc<LiveDigests>,
    ) {
        let known = self.known_lists.get(server, view);
        if known.is_some_and(|known| Rc::ptr_eq(known.digests(), &digests)) {
            return;
        }
        let list = KnownList::gathered(tools, size, digests);
        let max_bytes = self.config.limits.max_response_bytes;
        self.known_lists.remember(server, view, list, max_bytes);
    }
}
