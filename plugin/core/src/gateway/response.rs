//! Server → client: response bodies as JSON or as Server-Sent Events.
//!
//! Main design decision: the engine tells the host, from the response headers, how to feed
//! the body: pass it through untouched (nothing to check), buffer it whole (JSON that answers a
//! `tools/list`), or stream it event by event (SSE, where progress must not wait). Whether a
//! body that cannot be read (compressed, malformed, too large, not handed over by the host)
//! may pass is decided in one place ([`crate::gateway::unread`]); when it may not, it is replaced by a
//! JSON-RPC error: the client never receives unchecked tools.

mod fail_closed;

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{
    BodyPlan, Exchange, Pending, PendingList, ResponseState, SectionVerdict, Unread,
};
use crate::gateway::held_json::HeldJson;
use crate::gateway::known_list::Listed;
use crate::gateway::unread::may_hold_tools;
use crate::policy::section::Section;
use crate::policy::views::view_key;
use crate::state::audit::{Counter, Outputs};
use crate::state::store::StateStore;
use crate::wire::jsonrpc::{self, Message, Payload, answer};
use crate::wire::sse::SseParser;
use serde_json::Value;
use std::borrow::Cow;

impl Engine {
    /// Chooses how to read a response from its headers.
    pub fn response_headers(
        &self,
        exchange: &mut Exchange,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> BodyPlan {
        let mime = content_type
            .and_then(|c| c.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase());
        let encoded = content_encoding
            .is_some_and(|e| !e.trim().is_empty() && !e.trim().eq_ignore_ascii_case("identity"));
        let unread = match (mime.as_deref(), encoded) {
            (Some("text/event-stream"), false) => {
                exchange.response = ResponseState::Sse(Box::new(SseParser::new(
                    self.config.limits.max_response_bytes,
                )));
                return BodyPlan::Stream;
            }
            // Every JSON answer is read: a server can answer a tools/list id on another
            // exchange (clients route responses by id, not by stream).
            (Some("application/json"), false) => {
                exchange.response = ResponseState::Json(HeldJson::default());
                return BodyPlan::Buffer;
            }
            (Some("application/json" | "text/event-stream"), true) => Unread::Compressed,
            // MCP answers a request with JSON or SSE only: any other body that answers one is
            // read by no compliant client, so a lenient client must not read it unchecked
            // either.
            _ => Unread::Foreign,
        };
        if self.may_pass_unread(exchange, unread, None) {
            exchange.response = ResponseState::Pass;
            return BodyPlan::Pass;
        }
        let why = match unread {
            Unread::Foreign => format!(
                "the response has content type {:?}, not JSON or an event stream{}",
                content_type.unwrap_or(""),
                if encoded { " (compressed)" } else { "" }
            ),
            other => other.why().to_string(),
        };
        exchange.response = ResponseState::Unreadable(why);
        BodyPlan::Buffer
    }

    /// The host could not hand over the response headers: the body cannot be told JSON,
    /// stream or other, so it is read whole and withheld unless it is empty and no tool list
    /// is awaited.
    pub fn response_headers_unreadable(&self, exchange: &mut Exchange) -> BodyPlan {
        exchange.response = ResponseState::Unreadable(Unread::Headers.why().into());
        BodyPlan::Buffer
    }

    /// A complete buffered body; returns the body to forward instead, if it changes (empty:
    /// nothing of it is forwarded).
    pub fn response_json(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        if let ResponseState::Unreadable(why) = &exchange.response {
            if self.may_pass_unread(exchange, Unread::Withheld, Some(body)) {
                return None;
            }
            let why = why.clone();
            return Some(self.fail_closed_bytes(store, out, now_ms, exchange, &why));
        }
        if !matches!(
            exchange.response,
            ResponseState::Json(_) | ResponseState::Message
        ) {
            return None;
        }
        if body.len() > self.config.limits.max_response_bytes {
            if self.may_pass_unread(exchange, Unread::Oversized, Some(body)) {
                return None;
            }
            let why = format!(
                "the response is over limits.max_response_bytes ({})",
                self.config.limits.max_response_bytes
            );
            return Some(self.fail_closed_bytes(store, out, now_ms, exchange, &why));
        }
        if let Some(verdict) = self.known_answer(store, out, now_ms, exchange, body) {
            return verdict.map(|forward| forward.into_bytes(body));
        }
        let payload = match jsonrpc::parse_payload(body, self.config.limits.max_depth) {
            Ok(p) => p,
            Err(e) => {
                // No compliant server sends JSON this parser refuses (duplicate keys, bad
                // UTF-8…), and a lenient client could read it.
                if self.may_pass_unread(exchange, Unread::MalformedBody, Some(body)) {
                    return None;
                }
                let why = format!("{}: {e}", Unread::MalformedBody.why());
                return Some(self.fail_closed_bytes(store, out, now_ms, exchange, &why));
            }
        };
        let forward = self.read_payload(store, out, now_ms, exchange, body, payload);
        let answered_nothing = forward.as_ref().is_some_and(Vec::is_empty)
            && matches!(exchange.response, ResponseState::Json(_))
            && exchange.awaits_answer();
        if answered_nothing {
            // The body was this POST's answer and nothing of it answered the POST: its
            // requests get an error rather than no answer at all.
            let why = "the server's answer answered none of the requests it was sent";
            return Some(self.fail_closed_bytes(store, out, now_ms, exchange, why));
        }
        forward
    }

    /// One whole server message (stdio, or any framing that delivers messages whole): always
    /// inspected, so `notifications/tools/list_changed` and tool lists are never missed.
    /// Returns the message to forward instead, if it changes (empty: forward nothing, the
    /// message was dropped).
    pub fn server_message_bytes(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        exchange.response = ResponseState::Message;
        self.response_json(store, out, now_ms, exchange, body)
    }

    /// One chunk of an event stream (`end`: the stream ends with it); returns the bytes to
    /// forward now in place of the chunk: `None` to forward the chunk unchanged (nothing held
    /// from earlier chunks, nothing held back, no event replaced), `Some(bytes)` otherwise
    /// (`Some(vec![])` to forward nothing yet).
    pub fn response_sse(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        chunk: &[u8],
        end: bool,
    ) -> Option<Vec<u8>> {
        let mut parser = match std::mem::take(&mut exchange.response) {
            ResponseState::Sse(parser) => parser,
            ResponseState::Dropped => {
                exchange.response = ResponseState::Dropped;
                return Some(Vec::new());
            }
            other => {
                exchange.response = other;
                return None;
            }
        };
        // Events are read in place; bytes are copied only when something differs.
        let read = parser.rewrite(chunk, end, |event| match event.data.as_deref() {
            Some(data) if !data.is_empty() => self
                .server_data(store, out, now_ms, exchange, data)
                .map(|forward| match (forward, &event.data) {
                    // Its message was dropped: the event goes with it.
                    (Forward::Bytes(bytes), _) if bytes.is_empty() => Vec::new(),
                    // One `data` line, read in place: the number is spliced into the event's
                    // own bytes (no re-framing of a large list).
                    (Forward::Splice(at, n), Some(Cow::Borrowed(line))) => {
                        let offset =
                            (line.as_ptr() as usize).wrapping_sub(event.raw.as_ptr() as usize);
                        let within = event
                            .raw
                            .get(offset..offset.saturating_add(line.len()))
                            .is_some_and(|s| s.as_ptr() == line.as_ptr());
                        match within {
                            true => splice(event.raw, shift(at, offset), n),
                            false => event.with_data(&text(splice(data, at, n))),
                        }
                    }
                    (forward, _) => event.with_data(&text(forward.into_bytes(data))),
                }),
            _ => None,
        });
        let forward = match read {
            Ok(forward) => forward,
            Err(e) => {
                let why = format!("unreadable event stream: {e}");
                return Some(self.drop_stream(store, out, now_ms, exchange, &why));
            }
        };
        let mut forward = forward;
        // An unterminated last event is discarded by SSE clients; never forward it unchecked.
        if end
            && parser.finish().is_some()
            && let Some(error) = self.truncated_stream(store, out, now_ms, exchange)
        {
            let mut bytes = forward.unwrap_or_else(|| chunk.to_vec());
            bytes.extend_from_slice(&error);
            forward = Some(bytes);
        }
        exchange.response = ResponseState::Sse(parser);
        forward
    }

    /// The data of one SSE event; returns replacement data, if it changes.
    fn server_data(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        data: &[u8],
    ) -> Option<Forward> {
        // Every response is read (its id must answer a waiting request); an event without the
        // bytes `id` (nor an escape that could spell them) is a notification.
        let relevant = exchange
            .pending
            .iter()
            .any(|p| p.lists_tools() || matches!(p, Pending::Call(_)))
            || data.windows(2).any(|w| w == b"id")
            || data.windows(12).any(|w| w == b"list_changed")
            || may_hold_tools(data);
        if !relevant {
            return None;
        }
        if let Some(verdict) = self.known_answer(store, out, now_ms, exchange, data) {
            return verdict;
        }
        match jsonrpc::parse_payload(data, self.config.limits.max_depth) {
            Ok(payload) => self
                .read_payload(store, out, now_ms, exchange, data, payload)
                .map(Forward::Bytes),
            Err(_) if self.may_pass_unread(exchange, Unread::MalformedEvent, Some(data)) => None,
            Err(e) => {
                let why = format!("{}: {e}", Unread::MalformedEvent.why());
                let error = self.fail_closed(store, out, now_ms, exchange, &why);
                Some(Forward::Bytes(error.to_string().into_bytes()))
            }
        }
    }

    /// A body that repeats the `result` bytes of a list this worker remembers, answering a
    /// list of its section (see [`crate::gateway::known_list`]): read with the remembered
    /// parse, through the very checks a fresh parse goes through. `Some(replacement)` is the
    /// verdict (`Some(None)`: forward unchanged); `None` means the body must be parsed.
    fn known_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
    ) -> Option<Option<Forward>> {
        let (section, known, envelope) = self.repeated_list(exchange, body)?;
        let pending = exchange.settle_list(&envelope.id, section)?;
        let forward = match pending {
            Pending::List(request) if request.shows_tools() => {
                let listing = (&request, &*known);
                self.known_tool_list(store, out, now_ms, exchange, listing, &envelope)
            }
            pending => {
                let answered = (&envelope.id, known.result());
                let (fate, _) = self.answer_of(store, out, now_ms, exchange, &pending, answered);
                fate.forward()
            }
        };
        Some(forward)
    }

    /// [`Engine::server_payload`] on a freshly parsed `body`, then remembers the list it
    /// answered alone, if any (see [`crate::gateway::known_list`]); returns the bytes to
    /// forward instead, if any (empty: no message of it is left to forward).
    fn read_payload(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
        payload: Payload,
    ) -> Option<Vec<u8>> {
        let (fate, listed) = self.server_payload(store, out, now_ms, exchange, &payload);
        let replaced = match fate {
            Fate::Unchanged => None,
            Fate::Replaced(value) => Some(crate::wire::json::encode(&value)),
            Fate::Dropped => Some(Vec::new()),
        };
        // `body` and `payload` are the server's bytes and their parse whatever became of the
        // answer (a rewritten one is rewritten from them the next time too).
        if let Some(listed) = listed {
            self.remember_list(&exchange.server, listed, body, payload);
        }
        replaced
    }

    /// The messages of a response payload: what is forwarded instead when a message changed
    /// or was dropped (a batch keeps the messages that stand), and the list a single message
    /// answered, to remember (a tool list only when checked whole: see
    /// `listing::ListOutcome`).
    fn server_payload(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        payload: &Payload,
    ) -> (Fate, Option<Listed>) {
        let mut fates = Vec::with_capacity(payload.messages().len());
        let mut listed = None;
        for message in payload.messages() {
            let (fate, list) = self.server_message(store, out, now_ms, exchange, message);
            fates.push(fate);
            listed = list;
        }
        // Only a single message's result bytes are the body's to remember.
        let listed = listed.filter(|_| matches!(payload, Payload::Single(_)));
        (payload_fate(payload, fates), listed)
    }

    /// One server message: forwarded as it is, replaced, or dropped; with the list it
    /// answered, to remember.
    fn server_message(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        message: &Message,
    ) -> (Fate, Option<Listed>) {
        match message {
            Message::Response { id, result } => match exchange.settle(id) {
                Some(Pending::List(request)) if request.shows_tools() => {
                    let list =
                        self.list_result(store, out, now_ms, exchange, &request, result, None);
                    let listed = list.checked.map(|digests| Listed {
                        section: request.section,
                        view: view_key(request.view.as_ref()).to_string(),
                        digests: Some(digests),
                    });
                    (Fate::from(list.answer.into_answer(id, result)), listed)
                }
                Some(Pending::Call(call)) => {
                    let new = self.call_result(store, out, now_ms, exchange, &call, result);
                    (Fate::from(new.map(|new| answer(id, new))), None)
                }
                Some(pending) => {
                    self.answer_of(store, out, now_ms, exchange, &pending, (id, result))
                }
                None => (self.unsolicited(store, out, now_ms, exchange, id), None),
            },
            _ => (
                self.other_message(store, out, now_ms, exchange, message),
                None,
            ),
        }
    }

    /// The answer `result` to `pending`, a request other than a tool list or call (a list of
    /// a section the server seals or not, a handshake, anything else); with the list it is,
    /// to remember.
    fn answer_of(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        pending: &Pending,
        answered: (&Value, &Value),
    ) -> (Fate, Option<Listed>) {
        let (fate, listed) = match pending {
            Pending::List(request) => {
                let fate = self.section_answer(store, out, now_ms, exchange, request, answered);
                (
                    fate,
                    Some((request.section, view_key(request.view.as_ref()))),
                )
            }
            _ => {
                let method = pending.method();
                let fate = self.other_answer(store, out, now_ms, exchange, answered, method);
                let listed = Section::other_listed_by(method);
                (
                    fate,
                    listed.map(|s| (s, view_key(exchange.surface.as_ref()))),
                )
            }
        };
        let listed = listed.map(|(section, view)| Listed {
            section,
            view: view.to_string(),
            digests: None,
        });
        (fate, listed)
    }

    /// One server message that is not a result.
    fn other_message(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        message: &Message,
    ) -> Fate {
        match message {
            Message::Notification { method, .. }
                if method == "notifications/tools/list_changed" =>
            {
                self.list_changed(store, out, now_ms, exchange);
                Fate::Unchanged
            }
            // An error the server could not tie to a request (`id: null`) may answer any
            // request still waiting; with none waiting, it answers nothing.
            Message::Error { id, .. } if id.is_null() && exchange.awaits_answer() => {
                self.pass_record(store, out, exchange, "response", message, None);
                Fate::Unchanged
            }
            Message::Error { id, .. } => match exchange.settle(id) {
                Some(pending) => {
                    let method = pending.method();
                    self.pass_record(store, out, exchange, "response", message, Some(method));
                    Fate::Unchanged
                }
                None => self.unsolicited(store, out, now_ms, exchange, id),
            },
            _ => {
                self.pass_record(store, out, exchange, "response", message, None);
                Fate::Unchanged
            }
        }
    }

    /// The answer to a request other than a tool list or call: a closed server's section
    /// emptied or its instructions withheld ([`crate::gateway::closed`]), a resource list
    /// screened ([`crate::gateway::resources`]), or passed as it is.
    fn other_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        (id, result): (&Value, &Value),
        method: &str,
    ) -> Fate {
        let answered = (id, method);
        let replaced = match self.closed_answer(store, out, now_ms, exchange, answered, result) {
            Some(closed) => Some(closed),
            None => {
                let screened =
                    self.screened_resources(store, out, now_ms, exchange, answered, result);
                // What policy refuses this caller is not served to it (so not listed either).
                let served = screened.as_ref().unwrap_or(result);
                let cut = self.hidden_by_policy(store, exchange, method, served);
                if cut.is_some() && screened.is_none() {
                    self.rewrite_record(store, out, exchange, answered);
                }
                let replaced = cut.or(screened);
                self.remember_listed(store, exchange, method, replaced.as_ref().unwrap_or(result));
                replaced
            }
        };
        match replaced {
            Some(replaced) => Fate::Replaced(answer(id, replaced)),
            None => {
                self.pass_answer(store, out, exchange, (id, method));
                Fate::Unchanged
            }
        }
    }

    /// The answer to a list of a section the server seals beyond tools (a handshake for its
    /// instructions): checked against the catalogue ([`crate::gateway::sealed`]), then closed
    /// or screened as any other answer; what the catalogue does not hold and the lifecycle
    /// could not decide is withheld.
    fn section_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        pending: &PendingList,
        (id, result): (&Value, &Value),
    ) -> Fate {
        let method = pending.method;
        let SectionVerdict::Withhold { keys, reason } =
            self.check_section(store, out, now_ms, exchange, pending, result)
        else {
            return self.other_answer(store, out, now_ms, exchange, (id, result), method);
        };
        let answered = (id, method);
        if let Some(closed) = self.closed_answer(store, out, now_ms, exchange, answered, result) {
            return Fate::Replaced(answer(id, closed));
        }
        // What screening withholds from any answer is withheld from this one too.
        let screened = self.screened_resources(store, out, now_ms, exchange, answered, result);
        let shown = screened.as_ref().unwrap_or(result);
        let record = self.record(store, &exchange.server).ok().flatten();
        let kept = self.withheld_answer(
            store,
            out,
            now_ms,
            exchange,
            answered,
            (pending.section, shown),
            (keys.as_deref(), &reason),
            record.as_deref(),
        );
        let kept = self
            .hidden_by_policy(store, exchange, method, &kept)
            .unwrap_or(kept);
        self.remember_listed(store, exchange, method, &kept);
        Fate::Replaced(answer(id, kept))
    }

    /// The decision record of an answer served rewritten (items cut from it).
    fn rewrite_record(
        &mut self,
        store: &dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &Exchange,
        (id, method): (&serde_json::Value, &str),
    ) {
        let status = self.status_of(store, &exchange.server);
        let mut decision = self.decision(exchange, "response", method, Some(id), status);
        decision.decision = "rewrite";
        out.decision(&decision);
    }

    /// A response whose id answers no request of this client still waiting (a second answer
    /// to one id, an id never sent, a result nobody asked for): a client would take it for
    /// the answer to whatever it sends next under that id, past every check, so it is dropped
    /// and audited.
    fn unsolicited(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        id: &Value,
    ) -> Fate {
        let why = "the server sent a response whose id answers no request of this client still \
            waiting (a second answer, an id never sent, or an unsolicited result); it was dropped";
        let mut detail = serde_json::Map::new();
        detail.insert("id".into(), id.clone());
        let event = self.event("response.unsolicited", exchange, now_ms, None, why, detail);
        self.emit(store, out, &event);
        out.count(Counter::ResponsesDropped, Some("unsolicited"));
        let status = self.status_of(store, &exchange.server);
        let mut decision = self.decision(exchange, "response", "response", Some(id), status);
        decision.decision = "drop";
        decision.error_code = Some("UNSOLICITED_RESPONSE");
        out.decision(&decision);
        Fate::Dropped
    }

    fn list_changed(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
    ) {
        let mode = self.config.server(&exchange.server).list_changed;
        let status = match mode {
            crate::config::ListChanged::Hold => {
                let server = exchange.server.clone();
                let event = crate::policy::status::Event::ListChanged;
                self.transition(
                    store,
                    out,
                    &server,
                    exchange.session.as_deref(),
                    &event,
                    now_ms,
                )
                .map_or(crate::policy::status::SchemaStatus::Unbaselined, |r| {
                    r.status
                })
            }
            crate::config::ListChanged::Observe => self.status_of(store, &exchange.server),
        };
        let decision = self.decision(
            exchange,
            "response",
            "notifications/tools/list_changed",
            None,
            status,
        );
        out.decision(&decision);
    }
}

/// What becomes of one server message (or of a payload).
enum Fate {
    /// Forwarded as the server sent it.
    Unchanged,
    /// Forwarded as this value instead.
    Replaced(Value),
    /// Not forwarded at all.
    Dropped,
}

impl Fate {
    /// What replaces the message's bytes, if anything.
    fn forward(self) -> Option<Forward> {
        match self {
            Fate::Unchanged => None,
            Fate::Replaced(value) => Some(Forward::Bytes(crate::wire::json::encode(&value))),
            Fate::Dropped => Some(Forward::Bytes(Vec::new())),
        }
    }
}

impl From<Option<Value>> for Fate {
    fn from(replacement: Option<Value>) -> Self {
        replacement.map_or(Fate::Unchanged, Fate::Replaced)
    }
}

/// What replaces a body (or an event's data).
pub(crate) enum Forward {
    /// These bytes.
    Bytes(Vec<u8>),
    /// The same bytes with this range replaced by the decimal digits of the number.
    Splice(std::ops::Range<usize>, u64),
}

impl Forward {
    /// The bytes to forward in place of `original`.
    fn into_bytes(self, original: &[u8]) -> Vec<u8> {
        match self {
            Forward::Bytes(bytes) => bytes,
            Forward::Splice(at, number) => splice(original, at, number),
        }
    }
}

/// Event data as text (it was checked as UTF-8, and a splice writes ASCII digits).
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn shift(at: std::ops::Range<usize>, by: usize) -> std::ops::Range<usize> {
    at.start.saturating_add(by)..at.end.saturating_add(by)
}

/// `bytes` with the range `at` replaced by the decimal digits of `number`.
pub(crate) fn splice(bytes: &[u8], at: std::ops::Range<usize>, number: u64) -> Vec<u8> {
    let digits = number.to_string();
    let mut out = Vec::with_capacity(bytes.len() + digits.len());
    out.extend_from_slice(bytes.get(..at.start).unwrap_or_default());
    out.extend_from_slice(digits.as_bytes());
    out.extend_from_slice(bytes.get(at.end..).unwrap_or_default());
    out
}

/// What is forwarded for a payload whose messages met `fates`.
fn payload_fate(payload: &Payload, fates: Vec<Fate>) -> Fate {
    if fates.iter().all(|f| matches!(f, Fate::Unchanged)) {
        return Fate::Unchanged;
    }
    // Unchanged messages are copied only when something changed (a list result is large).
    let values: Vec<Value> = fates
        .into_iter()
        .zip(payload.messages())
        .filter_map(|(fate, message)| match fate {
            Fate::Unchanged => Some(message.to_value()),
            Fate::Replaced(value) => Some(value),
            Fate::Dropped => None,
        })
        .collect();
    match (payload, values.is_empty()) {
        (_, true) => Fate::Dropped,
        (Payload::Single(_), false) => values
            .into_iter()
            .next()
            .map_or(Fate::Dropped, Fate::Replaced),
        (Payload::Batch(_), false) => Fate::Replaced(Value::Array(values)),
    }
}
