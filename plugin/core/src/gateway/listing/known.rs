//! The listing path's memory of a list seen before (see [`crate::gateway::known_list`]): a
//! body that repeats the remembered `result` bytes is checked with the remembered parse (and a
//! tool list's digests), and a list read is remembered for the next time.

use super::ListAnswer;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, PendingList, ResponseState};
use crate::gateway::known_list::{KnownList, Listed};
use crate::gateway::live::LiveDigests;
use crate::gateway::response::Forward;
use crate::policy::section::Section;
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use crate::wire::envelope::{Envelope, ResultBytes, split_response};
use crate::wire::jsonrpc::{Message, Payload};
use serde_json::Value;
use std::rc::Rc;

impl Engine {
    /// The fingerprint of the list result this worker remembered last for `server`, if any.
    pub fn remembered_list(&self, server: &str) -> Option<String> {
        self.known_lists
            .latest(server)
            .and_then(|list| list.digests().map(|d| d.fingerprint().to_string()))
    }

    /// The fingerprints of every list remembered for `server` (one per view), oldest first.
    pub fn remembered_lists(&self, server: &str) -> Vec<String> {
        self.known_lists
            .of(server)
            .filter_map(|list| list.digests().map(|d| d.fingerprint().to_string()))
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
        let known = self.known_lists.get(server, Section::Tools, view)?;
        known.digests_of(tools).map(Rc::clone)
    }

    /// The list remembered for the server of `exchange` when a body arriving on it may repeat
    /// its `result` bytes (the exchange awaits a list of its section for its view, and the
    /// list has bytes).
    pub(crate) fn known_list_for(&self, exchange: &Exchange) -> Option<Rc<KnownList>> {
        let (section, view) = exchange.awaited_list()?;
        self.known_lists
            .get(&exchange.server, section, view)
            .filter(|known| known.result_bytes().is_some())
    }

    /// The remembered list whose `result` bytes `body` repeats, with its section and the
    /// body's envelope: the list of the section and view the exchange awaits first, compared
    /// byte for byte (`None`: the body must be parsed).
    pub(crate) fn repeated_list(
        &self,
        exchange: &Exchange,
        body: &[u8],
    ) -> Option<(Section, Rc<KnownList>, Envelope)> {
        let (section, view) = exchange.awaited_list()?;
        let known = self.known_lists.get(&exchange.server, section, view)?;
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
        Some((section, known, envelope))
    }

    /// Checks the answer to `request` whose envelope is `envelope` and whose `result` bytes
    /// are the remembered tool list's, `known`: the list check with the remembered parse and
    /// digests. Returns the bytes to forward instead, if any.
    pub(crate) fn known_tool_list(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        (request, known): (&PendingList, &KnownList),
        envelope: &Envelope,
    ) -> Option<Forward> {
        // The list is remembered already: the digests its check hands back are not needed.
        let verdict = self
            .list_result(
                store,
                out,
                now_ms,
                exchange,
                request,
                known.result(),
                known.digests(),
            )
            .answer;
        // A lowered `ttlMs` is spliced into the server's bytes: only the number changes.
        if let (ListAnswer::LowerTtl(cap), Some(span)) = (&verdict, known.ttl()) {
            let start = envelope.result.start.saturating_add(span.start);
            let end = envelope.result.start.saturating_add(span.end);
            return Some(Forward::Splice(start..end, *cap));
        }
        // A list served in part writes the kept tools' remembered encodings.
        let verdict = match verdict {
            ListAnswer::Cut { result, kept } => {
                match known.cut_answer(&envelope.id, result, &kept) {
                    Ok(bytes) => return Some(Forward::Bytes(bytes)),
                    Err(result) => ListAnswer::Cut { result, kept },
                }
            }
            other => other,
        };
        verdict
            .into_answer(&envelope.id, known.result())
            .map(|v| Forward::Bytes(crate::wire::json::encode(&v)))
    }

    /// After the full path read `body` as `payload`, a single answer to a list of
    /// `listed.section` (for tools, one checked whole, whose tools have `listed.digests`):
    /// remembers its `result` bytes and their parse.
    pub(crate) fn remember_list(
        &mut self,
        server: &str,
        listed: Listed,
        body: &[u8],
        payload: Payload,
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
        let list = match listed.digests {
            Some(digests) => KnownList::new(bytes.to_vec(), result, digests),
            None => KnownList::answer(bytes.to_vec(), result),
        };
        let max_bytes = self.config.limits.max_response_bytes;
        let key = (server, listed.section, listed.view.as_str());
        self.known_lists.remember(key, list, max_bytes);
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
        let known = self.known_lists.get(server, Section::Tools, view);
        let same = known.as_deref().and_then(KnownList::digests);
        if same.is_some_and(|same| Rc::ptr_eq(same, &digests)) {
            return;
        }
        let list = KnownList::gathered(tools, size, digests);
        let max_bytes = self.config.limits.max_response_bytes;
        let key = (server, Section::Tools, view);
        self.known_lists.remember(key, list, max_bytes);
    }
}
