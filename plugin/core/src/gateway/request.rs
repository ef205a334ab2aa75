//! Client requests: the checks every request passes before it may reach the server.
//!
//! Main design decision: a request is refused before it is forwarded, never after. The
//! headers are checked first (a POST carries JSON; a resumed stream's awaited requests are
//! readable), then the whole body: every message of a batch is checked before any is
//! recorded, and a batch with one refused call is answered locally as a whole, so the server
//! never sees part of a batch. A request the host could not hand over, whose server cannot be
//! told or whose body is over its limit is refused (and audited) the same way.

use crate::gateway::call::{Call, CallOutcome, CheckedCall};
use crate::gateway::denial::Denial;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{
    Exchange, LocalReply, Pending, PendingList, RequestInfo, RequestVerdict,
};
use crate::policy::section::{Section, TOOLS_CALL};
use crate::state::audit::{Counter, Outputs};
use crate::state::snapshot_key::{ClientKey, KeyRead};
use crate::state::store::StateStore;
use crate::wire::jsonrpc::{self, Message, Payload};
use serde_json::{Map, Value, json};

impl Engine {
    /// Checks request headers: a POST must carry JSON (HTTP 415 otherwise). A refusal is
    /// audited (`request.rejected`), recorded and counted.
    pub fn request_headers(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        info: &RequestInfo<'_>,
    ) -> RequestVerdict {
        if info.http_method.eq_ignore_ascii_case("GET")
            && let Err(e) = self.resume_awaited(store, exchange)
            && self.config.server(&exchange.server).results == crate::config::ResultsMode::Enforce
        {
            // The results this stream may deliver could not be checked.
            let reason = format!("the session's awaited requests could not be read: {e}");
            return self.refuse(store, out, now_ms, exchange, Refusal::unavailable(&reason));
        }
        if info.http_method.eq_ignore_ascii_case("POST") && !is_json(info.content_type) {
            let reason = format!(
                "MCP POST bodies must be sent with Content-Type: application/json (got {:?})",
                info.content_type.unwrap_or("")
            );
            return self.refuse(store, out, now_ms, exchange, Refusal::new(415, &reason));
        }
        RequestVerdict::Forward
    }

    /// Refuses a request body over `limits.max_request_bytes` (HTTP 413), audited.
    pub fn request_too_large(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
    ) -> LocalReply {
        let reason = format!(
            "request body over limits.max_request_bytes ({})",
            self.config.limits.max_request_bytes
        );
        self.reply_refused(store, out, now_ms, exchange, Refusal::new(413, &reason))
    }

    /// Refuses a request the host could not hand over whole (its headers or its body): it
    /// cannot be checked, so it never reaches the server (HTTP 503, audited and recorded).
    /// `what` says what could not be read. The request may have been a `tools/list` whose
    /// answer would have shown a drift, so this worker holds calls to the server until a list
    /// verifies.
    pub fn request_unreadable(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        what: &str,
    ) -> LocalReply {
        if !exchange.server.is_empty() {
            self.hold(&exchange.server);
        }
        let reason = format!("the host could not hand over {what}, so it cannot be checked");
        self.reply_refused(store, out, now_ms, exchange, Refusal::unavailable(&reason))
    }

    /// Refuses a request whose server cannot be told (see `server_id` in the config): HTTP
    /// 503, audited and recorded under an empty server id.
    pub fn request_without_server(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
    ) -> LocalReply {
        let reason = "cannot tell which MCP server this request is for (check server_id in the plugin config)";
        self.reply_refused(store, out, now_ms, exchange, Refusal::unavailable(reason))
    }

    fn reply_refused(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        refusal: Refusal<'_>,
    ) -> LocalReply {
        let status = refusal.status;
        match self.refuse(store, out, now_ms, exchange, refusal) {
            RequestVerdict::Reply(reply) => reply,
            RequestVerdict::Forward => LocalReply::json(status, &Value::Null),
        }
    }

    /// Decides on a complete client request body.
    pub fn request_body(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        info: &RequestInfo<'_>,
        body: &[u8],
    ) -> RequestVerdict {
        if let RequestVerdict::Reply(reply) =
            self.request_headers(store, out, now_ms, exchange, info)
        {
            return RequestVerdict::Reply(reply);
        }
        if body.len() > self.config.limits.max_request_bytes {
            return RequestVerdict::Reply(self.request_too_large(store, out, now_ms, exchange));
        }
        if body.is_empty() && !info.http_method.eq_ignore_ascii_case("POST") {
            return RequestVerdict::Forward;
        }
        let payload = match jsonrpc::parse_payload(body, self.config.limits.max_depth) {
            Ok(p) => p,
            Err(e) => {
                let reason = e.to_string();
                let refusal = Refusal {
                    code: e.code(),
                    ..Refusal::new(400, &reason)
                };
                return self.refuse(store, out, now_ms, exchange, refusal);
            }
        };
        match crate::wire::revision::read(&info.routing, &payload) {
            Ok(version) => exchange.protocol_version = version,
            Err(mismatch) => {
                // The stateless revision answers a header mismatch with the request's id.
                let id = match (&payload, &mismatch.version) {
                    (Payload::Single(m), Some(_)) => m.id(),
                    _ => None,
                };
                exchange.protocol_version = mismatch.version;
                let refusal = Refusal {
                    code: mismatch.code,
                    payload: Some(&payload),
                    id,
                    ..Refusal::new(400, &mismatch.reason)
                };
                return self.refuse(store, out, now_ms, exchange, refusal);
            }
        }
        if payload
            .messages()
            .iter()
            .any(|m| matches!(m, Message::Notification { method, .. } if method == TOOLS_CALL))
        {
            let reason = "a tools/call must carry an id: a call sent as a notification cannot be checked and answered";
            let refusal = Refusal {
                payload: Some(&payload),
                ..Refusal::new(400, reason)
            };
            return self.refuse(store, out, now_ms, exchange, refusal);
        }
        // The caller's snapshot key is read once, and only for a body that lists or calls;
        // its principals only for a tool list, and only when policy can hide tools from one.
        let server = exchange.server.as_str();
        let (mut tool_lists, mut lists, mut calls, mut any_use) = (false, false, false, false);
        // A list of prompts or resources: what policy refuses the caller is left out of it.
        let mut usables = false;
        // The parameters of the first list or call: they tell the view.
        let mut first_params = None;
        for message in payload.messages() {
            if let Message::Request { method, params, .. } = message {
                let shown = Section::shown_by(method).map(|(_, section)| section);
                let checked = shown.filter(|section| self.checks_list(server, *section));
                let call = method == TOOLS_CALL;
                if first_params.is_none() && (call || checked.is_some()) {
                    first_params = Some(params.as_ref());
                }
                tool_lists |= checked == Some(Section::Tools);
                lists |= checked.is_some();
                calls |= call;
                any_use |= crate::gateway::closed::is_use(method);
                usables |= shown.and_then(crate::gateway::closed::use_kind).is_some();
            }
        }
        let key = match lists || calls {
            true => self.client_key(info),
            false => Ok(None),
        };
        let view = match tool_lists {
            true => self.config.policy.caller_view(info.caller),
            false => None,
        };
        exchange.uses_caller = match usables {
            true => self.config.policy.use_caller_view(info.caller),
            false => None,
        };
        // The view of a list (a stateless request is one message, and a batch of the
        // handshake era tells its view from its session, so the first list or call decides).
        // A call alone asks for its view only when the record makes it matter.
        exchange.surface = match lists {
            true => {
                let params = first_params.flatten();
                Some(self.view_of(store, exchange, info, params, Some(now_ms)))
            }
            false => None,
        };
        // Every call is checked before any message is recorded: a batch with a refused call
        // is answered locally as a whole, and no element of it may be recorded as passing.
        let batch = matches!(payload, Payload::Batch(_));
        let checked: Vec<Option<CheckedCall>> = payload
            .messages()
            .iter()
            .enumerate()
            .map(|(index, message)| {
                let Message::Request { id, method, params } = message else {
                    return None;
                };
                (method == TOOLS_CALL).then(|| {
                    let call = Call {
                        id,
                        params: params.as_ref(),
                        body,
                        element: batch.then_some(index),
                        key: &key,
                    };
                    self.check_tools_call(store, exchange, info, &call)
                })
            })
            .collect();
        // A prompt or resource of a closed server is refused like a call (a body that uses
        // none, as every tools/call, asks nothing more).
        let uses: Vec<Option<Box<Denial>>> = payload
            .messages()
            .iter()
            .map(|message| match message {
                Message::Request { method, params, .. } if any_use => {
                    self.use_refusal(store, (exchange, info), method, params.as_ref())
                }
                _ => None,
            })
            .collect();
        let refused =
            checked.iter().flatten().any(CheckedCall::denied) || uses.iter().any(Option::is_some);
        let mut answers: Vec<Option<Value>> = Vec::with_capacity(checked.len());
        let messages = payload.messages().iter().zip(checked).zip(uses);
        for (index, ((message, checked), refusal)) in messages.enumerate() {
            if let (Some(denial), Message::Request { id, method, .. }) = (refusal, message) {
                let used = (id, method.as_str());
                answers.push(Some(
                    self.refuse_use(store, out, now_ms, exchange, used, &denial),
                ));
                continue;
            }
            let element = batch.then_some(index);
            let caller = (&key, view.as_ref());
            let answer = self.settle_message(
                store, out, now_ms, exchange, message, checked, body, element, caller, refused,
            );
            answers.push(answer);
        }
        if !refused {
            return RequestVerdict::Forward;
        }
        let reply = match payload {
            Payload::Single(_) => answers.into_iter().flatten().next().unwrap_or(Value::Null),
            Payload::Batch(_) => Value::Array(answers.into_iter().flatten().collect()),
        };
        RequestVerdict::Reply(LocalReply::json(200, &reply))
    }

    /// Answers a request that cannot be checked: audited, recorded (one `deny` /
    /// `REQUEST_REJECTED` record per message when the body was read, else one for the
    /// request), counted, never forwarded.
    fn refuse(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        refusal: Refusal<'_>,
    ) -> RequestVerdict {
        let Refusal {
            status,
            code,
            reason,
            payload,
            id,
        } = refusal;
        out.count(Counter::RequestsRejected, Some(&status.to_string()));
        let mut detail = Map::new();
        detail.insert("http_status".into(), json!(status));
        let event = self.event("request.rejected", exchange, now_ms, None, reason, detail);
        self.emit(store, out, &event);
        let schema_status = self.status_of(store, &exchange.server);
        let messages = payload.map(Payload::messages).unwrap_or_default();
        let mut described: Vec<(&str, Option<&Value>)> = messages
            .iter()
            .map(|m| (m.method().unwrap_or(""), m.id()))
            .collect();
        if described.is_empty() {
            described.push(("", None));
        }
        for (method, id) in described {
            let mut decision = self.decision(exchange, "request", method, id, schema_status);
            decision.decision = "deny";
            decision.error_code = Some(crate::state::audit::REQUEST_REJECTED);
            out.decision(&decision);
        }
        RequestVerdict::Reply(LocalReply::json(
            status,
            &jsonrpc::error_response(
                id.unwrap_or(&Value::Null),
                code,
                &format!("toolseal: {reason}"),
            ),
        ))
    }

    /// Records one client message once its body is decided (`refused`: a call in it was
    /// denied, so nothing of it is forwarded); returns its local answer when refused.
    #[allow(clippy::too_many_arguments)]
    fn settle_message(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        message: &Message,
        checked: Option<CheckedCall>,
        body: &[u8],
        element: Option<usize>,
        (key, view): (&KeyRead<'_>, Option<&crate::policy::rules::CallerView>),
        refused: bool,
    ) -> Option<Value> {
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            _ if refused => {
                self.refused_with_batch(store, out, exchange, message);
                return None;
            }
            _ => {
                if let Message::Notification { method, .. } = message
                    && method == "notifications/initialized"
                {
                    self.handshake_ended(store, exchange);
                }
                self.pass_record(store, out, exchange, "request", message, None);
                return None;
            }
        };
        if let Some(checked) = checked {
            let call = Call {
                id,
                params: params.as_ref(),
                body,
                element,
                key,
            };
            return match self.settle_call(store, out, now_ms, exchange, &call, checked, refused) {
                CallOutcome::Forward(pending) => {
                    exchange.pending.push(Pending::Call(pending));
                    None
                }
                CallOutcome::Denied(denial) => Some(denial.response(id, exchange.stateless())),
                CallOutcome::BatchRefused => not_forwarded(message),
            };
        }
        if refused {
            self.refused_with_batch(store, out, exchange, message);
            return not_forwarded(message);
        }
        if method == "initialize" {
            self.initialize_seen(exchange, params.as_ref(), now_ms);
        }
        // A tool list is checked when answered; so is a list of a section the server seals.
        let list = PendingList::of(id, method)
            .filter(|list| self.checks_list(&exchange.server, list.section));
        match list {
            Some(list) => {
                // A list whose caller's key cannot be read is served as any other, but recorded
                // as seen by nobody: a later call compares with an older snapshot, never a
                // newer one.
                let key = key.as_ref().ok().and_then(Option::as_ref);
                let list = PendingList {
                    cursor: params
                        .as_ref()
                        .and_then(|p| p.get("cursor"))
                        .and_then(crate::gateway::listing::cursor_text),
                    stateless: exchange.stateless(),
                    key: key.cloned().map(ClientKey::into_owned),
                    view: exchange.surface.clone(),
                    caller: view.cloned(),
                    ..list
                };
                exchange.pending.push(Pending::List(list));
            }
            // Past the bound, an answer answers nothing and is dropped, as any other's.
            None if exchange.others_waiting() < jsonrpc::MAX_BATCH => {
                exchange
                    .pending
                    .push(Pending::Other(id.clone(), method.clone()));
            }
            None => {}
        }
        self.pass_record(store, out, exchange, "request", message, None);
        None
    }

    /// The record of a message that was not forwarded because its batch was refused.
    fn refused_with_batch(
        &mut self,
        store: &dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &Exchange,
        message: &Message,
    ) {
        let status = self.status_of(store, &exchange.server);
        let method = message.method().unwrap_or("response");
        let mut decision = self.decision(exchange, "request", method, message.id(), status);
        decision.decision = "deny";
        decision.error_code = Some(crate::state::audit::BATCH_REFUSED);
        out.decision(&decision);
    }

    /// Whether an answer showing `section` is checked: a tool list always, a list of another
    /// section (a handshake for the instructions) when the server seals it.
    fn checks_list(&self, server: &str, section: Section) -> bool {
        section == Section::Tools || self.config.seals(server, section)
    }

    /// The snapshot key of a request (`snapshots.key`: its first source the request has).
    fn client_key<'a>(&self, info: &RequestInfo<'a>) -> KeyRead<'a> {
        crate::state::snapshot_key::resolve(&self.config.snapshot_key, info.session, info.caller)
    }
}

/// A request refused before any check could run.
struct Refusal<'a> {
    /// HTTP status of the local answer.
    status: u16,
    /// JSON-RPC error code of the answer.
    code: i64,
    /// Why, for the operator and the client.
    reason: &'a str,
    /// The body, when it was read: each of its messages gets a record.
    payload: Option<&'a Payload>,
    /// The id the answer carries (the stateless revision echoes a refused request's id);
    /// `None`: null.
    id: Option<&'a Value>,
}

impl<'a> Refusal<'a> {
    fn new(status: u16, reason: &'a str) -> Self {
        Refusal {
            status,
            code: jsonrpc::INVALID_REQUEST,
            reason,
            payload: None,
            id: None,
        }
    }

    /// The request could not be checked for want of the host (HTTP 503).
    fn unavailable(reason: &'a str) -> Self {
        Refusal {
            code: jsonrpc::INTERNAL_ERROR,
            ..Refusal::new(503, reason)
        }
    }
}

fn is_json(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The answer for a batch element that was allowed but not forwarded because another
/// element was denied (a batch is answered as a whole).
fn not_forwarded(message: &Message) -> Option<Value> {
    let Message::Request { id, .. } = message else {
        return None;
    };
    Some(jsonrpc::error_response(
        id,
        jsonrpc::INVALID_REQUEST,
        "toolseal: not forwarded because another call in the same batch was refused; send it again on its own",
    ))
}
