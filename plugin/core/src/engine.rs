//! The engine: one object per worker that every host adapter drives.
//!
//! Main design decision: the engine speaks in HTTP-level facts (method, content type, body
//! bytes) and returns verdicts (forward, answer locally, replace the body); the host adapter
//! only moves bytes. Everything that decides is here, once, so Envoy, a wasmtime component
//! and the native command line cannot disagree. State lives in the host's
//! [`StateStore`]; the engine itself only caches immutable, content-addressed tool sets.

use crate::approved::{Approved, ApprovedCache};
use crate::audit::{AuditEvent, Counter, Decision, Outputs};
use crate::call::{Call, CallOutcome, CheckedCall};
use crate::config::Config;
use crate::denial::{Denial, ErrorCode, denial_message};
use crate::jsonrpc::{self, Message, Payload};
use crate::parse_cache::ParseCache;
use crate::policy::{Action, CallFacts, CallerIdentity};
use crate::revision::RoutingHeaders;
use crate::snapshot_key::{ClientKey, KeyRead};
use crate::state::{self, StateError};
use crate::status::{self as lifecycle, SchemaStatus, ServerRecord};
use crate::store::StateStore;
use serde_json::{Map, Value, json};
use std::rc::Rc;

/// Facts about one client request, gathered by the host adapter.
pub struct RequestInfo<'a> {
    /// HTTP method.
    pub http_method: &'a str,
    /// `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// `Mcp-Session-Id` header.
    pub session: Option<&'a str>,
    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` (MCP 2026-07-28 routes on them).
    pub routing: RoutingHeaders<'a>,
    /// Headers and metadata for policy principals and snapshot keys.
    pub caller: &'a dyn CallerIdentity,
}

/// An answer the host sends instead of forwarding the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type` of `body`.
    pub content_type: &'static str,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl LocalReply {
    /// A JSON reply.
    pub fn json(status: u16, body: &Value) -> Self {
        LocalReply {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
        }
    }
}

/// The shared state could not be brought in line with the configuration (see
/// [`Engine::configure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigureError {
    /// What was not applied, one sentence each.
    pub problems: Vec<String>,
}

impl std::fmt::Display for ConfigureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the configuration could not be applied to the shared state ({}); it is refused so that no pinned, locked or quarantined server is served without its setting",
            self.problems.join("; ")
        )
    }
}

impl std::error::Error for ConfigureError {}

/// What to do with a client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestVerdict {
    /// Send it on to the server unchanged.
    Forward,
    /// Answer locally; the server never sees the request.
    Reply(LocalReply),
}

/// A forwarded `tools/call` awaiting its result.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// JSON-RPC id.
    pub id: Value,
    /// Tool name.
    pub tool: String,
    /// The approved tool has an `outputSchema`: check the result against it.
    pub check_result: bool,
    /// Asked under a stateless revision (MCP 2026-07-28): the answer may be an interim
    /// `input_required` one, and a replacement must carry `resultType`.
    pub stateless: bool,
    /// The server's status when the call was allowed (`None`: not known, read it again). A
    /// result checked against no contract is recorded with it, so its response does not read
    /// the server record again.
    pub allowed_at: Option<crate::status::SchemaStatus>,
}

/// A forwarded `tools/list` awaiting its result.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingList {
    /// JSON-RPC id.
    pub id: Value,
    /// The request sent a cursor (a later page).
    pub cursor: bool,
    /// Asked under a stateless revision (MCP 2026-07-28): a rewritten result must carry that
    /// revision's members (`resultType`, cache hints).
    pub stateless: bool,
    /// The caller's snapshot key: a verified list is recorded as what this caller saw.
    pub key: Option<ClientKey<'static>>,
    /// The caller's principal outcomes, read with the request when policy can hide tools
    /// from a list (`None`: it cannot, or the request was not seen: every principal unread).
    pub caller: Option<crate::policy::CallerView>,
}

impl PendingList {
    /// A pending handshake-era list of `session` (no cursor).
    pub fn new(id: Value, session: Option<&str>) -> Self {
        PendingList {
            id,
            cursor: false,
            stateless: false,
            key: session.map(|s| ClientKey::session(s).into_owned()),
            caller: None,
        }
    }
}

/// What one HTTP exchange (a request and its response stream) remembers between callbacks.
#[derive(Debug, Default)]
pub struct Exchange {
    /// Server id.
    pub server: String,
    /// `Mcp-Session-Id` of the request.
    pub session: Option<String>,
    /// The stateless revision the request declared (header or `_meta`: MCP 2026-07-28 or
    /// later), once its body was read; `None` for the handshake era.
    pub protocol_version: Option<String>,
    /// `tools/list` requests awaiting their response.
    pub pending_lists: Vec<PendingList>,
    /// `tools/call` requests awaiting their result.
    pub pending_calls: Vec<PendingCall>,
    /// Other requests awaiting an answer (id, method), so each answer's record names its method.
    pub pending_other: Vec<(Value, String)>,
    /// Response framing state.
    pub response: crate::response::ResponseState,
}

impl Exchange {
    /// A new exchange for `server`.
    pub fn new(server: &str, session: Option<&str>) -> Self {
        Exchange {
            server: server.to_string(),
            session: session.map(str::to_string),
            ..Default::default()
        }
    }

    /// Whether the request was made under a stateless revision (MCP 2026-07-28 or later).
    pub fn stateless(&self) -> bool {
        self.protocol_version
            .as_deref()
            .is_some_and(crate::revision::is_stateless)
    }

    /// Takes over what `later` (a forwarded message of the same server and session) left
    /// pending, for hosts that keep one exchange per session across messages (the WIT
    /// component); keeps at most `max_pending` ids of each kind, dropping the oldest, so the
    /// exchange stays bounded when answers never come.
    pub fn absorb(&mut self, later: Exchange, max_pending: usize) {
        if later.protocol_version.is_some() {
            self.protocol_version = later.protocol_version;
        }
        self.pending_lists.extend(later.pending_lists);
        self.pending_calls.extend(later.pending_calls);
        self.pending_other.extend(later.pending_other);
        let excess = self.pending_lists.len().saturating_sub(max_pending);
        self.pending_lists.drain(..excess);
        let excess = self.pending_calls.len().saturating_sub(max_pending);
        self.pending_calls.drain(..excess);
        let excess = self.pending_other.len().saturating_sub(max_pending);
        self.pending_other.drain(..excess);
    }
}

/// One worker's policy engine.
pub struct Engine {
    /// The validated configuration.
    pub config: Config,
    pub(crate) cache: ApprovedCache,
    /// Server records as last parsed, by server id (see [`ParseCache`]).
    pub(crate) records: ParseCache<ServerRecord>,
    /// Session snapshots as last parsed, by slot key.
    pub(crate) snapshots: ParseCache<state::Snapshot>,
    /// The last whole `tools/list` result checked per server (served or filtered), by its
    /// bytes.
    pub(crate) known_lists: crate::known_list::KnownLists,
    /// Fingerprint the list check computed for the whole `tools/list` result of the message
    /// being read, served or filtered (left by the check, taken by the body reader to
    /// remember the result's bytes).
    pub(crate) checked_list: Option<String>,
    /// Servers whose last `tools/list` this worker could not check (unreadable, or the check
    /// could not read or write the state): their live set is unknown, so calls to them are
    /// refused until a list verifies here. At most `limits.max_servers` entries.
    pub(crate) held: std::collections::BTreeSet<String>,
}

impl Engine {
    /// An engine for `config`.
    pub fn new(config: Config) -> Self {
        Engine {
            config,
            cache: ApprovedCache::default(),
            records: ParseCache::new(crate::parse_cache::RECORD_ENTRIES),
            snapshots: ParseCache::new(crate::parse_cache::SNAPSHOT_ENTRIES),
            known_lists: crate::known_list::KnownLists::default(),
            checked_list: None,
            held: std::collections::BTreeSet::new(),
        }
    }

    /// Holds calls to `server` on this worker (see [`Engine::held`]). Beyond
    /// `limits.max_servers` held servers, no more are added (the registry refuses more
    /// servers than that anyway).
    pub(crate) fn hold(&mut self, server: &str) {
        if self.held.len() < self.config.limits.max_servers {
            self.held.insert(server.to_string());
        }
    }

    /// A list of `server` verified on this worker: its calls are no longer held.
    pub(crate) fn release(&mut self, server: &str) {
        if !self.held.is_empty() {
            self.held.remove(server);
        }
    }

    /// Brings the shared state in line with the config (seeds keys, applies pins, locks and
    /// config quarantines). Every worker runs it at start; it is idempotent. An error lists
    /// what could not be applied: the host must refuse the configuration, or a pinned server
    /// would be trusted on first use and a quarantined one served.
    pub fn configure(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
    ) -> Result<(), ConfigureError> {
        let mut problems = Vec::new();
        if let Err(e) = state::seed(store) {
            problems.push(format!("shared state not seeded: {e}"));
        }
        let servers: Vec<(String, crate::config::ServerConfig)> = self
            .config
            .servers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, server) in servers {
            if let Some(pin) = &server.pin {
                if let crate::config::Pin::Lock { fingerprint, tools } = pin {
                    let stored = state::load_record(store, &id).and_then(|record| {
                        let record = record.map(|(r, _)| r);
                        let referenced = record.as_ref().map_or([None; 3], |r| r.set_refs());
                        state::put_tool_set(store, &id, &referenced, fingerprint, tools)
                    });
                    if let Err(e) = stored {
                        problems.push(format!("{id}: lock not stored: {e}"));
                    }
                }
                let lock = matches!(pin, crate::config::Pin::Lock { .. });
                let event = crate::status::Event::Pin {
                    fingerprint: pin.fingerprint().to_string(),
                    lock,
                };
                if let Err(e) = self.transition(store, out, &id, None, &event, now_ms) {
                    problems.push(format!("{id}: pin not applied: {e}"));
                }
            }
            let held = match state::load_record(store, &id) {
                Ok(record) => record.and_then(|(r, _)| r.quarantine),
                Err(e) => {
                    problems.push(format!("{id}: record unreadable: {e}"));
                    continue;
                }
            };
            match (&server.quarantine, held) {
                (Some(reason), held) if held.as_ref().map(|h| &h.0) != Some(reason) => {
                    let event = crate::status::Event::Quarantine {
                        reason: reason.clone(),
                        by: crate::status::Actor::Config,
                    };
                    if let Err(e) = self.transition(store, out, &id, None, &event, now_ms) {
                        problems.push(format!("{id}: quarantine not applied: {e}"));
                    }
                }
                (None, Some((_, crate::status::Actor::Config))) => {
                    let event = crate::status::Event::Release {
                        by: crate::status::Actor::Config,
                    };
                    match self.transition(store, out, &id, None, &event, now_ms) {
                        // Between the read above and the compare-and-swap, another worker (or
                        // the other listener's root context, which shares the state) released
                        // it already, or an administrator took the hold over: either way there
                        // is no config hold left to lift, which is what this config asks.
                        Ok(_)
                        | Err(StateError::Refused(
                            lifecycle::Refusal::NotQuarantined | lifecycle::Refusal::HeldByAdmin,
                        )) => {}
                        Err(e) => problems.push(format!("{id}: release not applied: {e}")),
                    }
                }
                _ => {}
            }
        }
        let event = AuditEvent {
            event: "config.loaded",
            time_ms: now_ms,
            server: String::new(),
            session: None,
            status_before: None,
            status_after: None,
            baseline: None,
            live: None,
            reason: format!(
                "posture {}, {} configured server(s), admin API {}{}",
                self.config.posture.as_str(),
                self.config.servers.len(),
                if !self.config.admin.token_sha256.is_empty() {
                    "on"
                } else {
                    "off"
                },
                if problems.is_empty() {
                    String::new()
                } else {
                    format!("; problems: {}", problems.join("; "))
                }
            ),
            detail: Map::new(),
        };
        self.emit(store, out, &event);
        match problems.is_empty() {
            true => Ok(()),
            false => Err(ConfigureError { problems }),
        }
    }

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
            && let Err(e) = self.resume_calls(store, exchange)
            && self.config.server(&exchange.server).results == crate::config::ResultsMode::Enforce
        {
            // The results this stream may deliver could not be checked.
            let reason = format!("the session's awaited calls could not be read: {e}");
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
        match crate::revision::read(&info.routing, &payload) {
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
            .any(|m| matches!(m, Message::Notification { method, .. } if method == "tools/call"))
        {
            let reason = "a tools/call must carry an id: a call sent as a notification cannot be checked and answered";
            let refusal = Refusal {
                payload: Some(&payload),
                ..Refusal::new(400, reason)
            };
            return self.refuse(store, out, now_ms, exchange, refusal);
        }
        // The caller's snapshot key is read once, and only for a body that lists or calls;
        // its principals only for a list, and only when policy can hide tools from one.
        let (mut lists, mut calls) = (false, false);
        for message in payload.messages() {
            if let Message::Request { method, .. } = message {
                lists |= method == "tools/list";
                calls |= method == "tools/call";
            }
        }
        let key = match lists || calls {
            true => self.client_key(info),
            false => Ok(None),
        };
        let view = match lists {
            true => self.config.policy.caller_view(info.caller),
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
                (method == "tools/call").then(|| {
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
        let refused = checked.iter().flatten().any(CheckedCall::denied);
        let mut answers: Vec<Option<Value>> = Vec::with_capacity(checked.len());
        for (index, (message, checked)) in payload.messages().iter().zip(checked).enumerate() {
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
        let schema_status = self
            .record(store, &exchange.server)
            .ok()
            .flatten()
            .map_or(SchemaStatus::Unbaselined, |r| r.status);
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
            decision.error_code = Some(crate::audit::REQUEST_REJECTED);
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
        (key, view): (&KeyRead<'_>, Option<&crate::policy::CallerView>),
        refused: bool,
    ) -> Option<Value> {
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            _ if refused => {
                self.refused_with_batch(store, out, exchange, message);
                return None;
            }
            _ => {
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
                    exchange.pending_calls.push(pending);
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
        if method == "tools/list" {
            let cursor = params
                .as_ref()
                .and_then(|p| p.get("cursor"))
                .is_some_and(|c| !c.is_null());
            // A list whose caller's key cannot be read is served as any other, but recorded as
            // seen by nobody: a later call compares with an older snapshot, never a newer one.
            let key = key.as_ref().ok().and_then(Option::as_ref);
            exchange.pending_lists.push(PendingList {
                id: id.clone(),
                cursor,
                stateless: exchange.stateless(),
                key: key.cloned().map(ClientKey::into_owned),
                caller: view.cloned(),
            });
        } else if exchange.pending_other.len() < jsonrpc::MAX_BATCH {
            exchange.pending_other.push((id.clone(), method.clone()));
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
        let status = self
            .record(store, &exchange.server)
            .ok()
            .flatten()
            .map_or(SchemaStatus::Unbaselined, |r| r.status);
        let method = message.method().unwrap_or("response");
        let mut decision = self.decision(exchange, "request", method, message.id(), status);
        decision.decision = "deny";
        decision.error_code = Some(crate::audit::BATCH_REFUSED);
        out.decision(&decision);
    }

    /// The snapshot key of a request (`snapshots.key`: its first source the request has).
    fn client_key<'a>(&self, info: &RequestInfo<'a>) -> KeyRead<'a> {
        crate::snapshot_key::resolve(&self.config.snapshot_key, info.session, info.caller)
    }

    /// A `pass` decision record for a message no check applies to (SPEC section 10: one
    /// record per MCP message). Responses carry the method of their request when known.
    pub(crate) fn pass_record(
        &mut self,
        store: &dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &Exchange,
        direction: &'static str,
        message: &Message,
        answers: Option<&str>,
    ) {
        let status = self
            .record(store, &exchange.server)
            .ok()
            .flatten()
            .map_or(SchemaStatus::Unbaselined, |r| r.status);
        let method = message.method().or(answers).unwrap_or("response");
        out.decision(&self.decision(exchange, direction, method, message.id(), status));
    }

    /// A server's record (`None`: never seen), read from the store and parsed only when it
    /// changed since this worker last parsed it.
    pub(crate) fn record(
        &mut self,
        store: &dyn StateStore,
        server: &str,
    ) -> Result<Option<Rc<ServerRecord>>, StateError> {
        state::load_record_cached(store, &mut self.records, server).map(|r| r.map(|(r, _)| r))
    }

    /// Loads `server`'s stored set of a fingerprint (cached by fingerprint). `Ok(None)`: not
    /// stored; an error: the store could not be read (the caller fails closed).
    pub(crate) fn approved(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        fingerprint: &str,
    ) -> Result<Option<Rc<Approved>>, StateError> {
        self.cache
            .get_or_load(store, server, fingerprint, &self.config.fingerprint)
    }

    /// Applies a lifecycle event and audits what it produced. Returns the new record, or the
    /// error (the caller fails closed).
    pub(crate) fn transition(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        server: &str,
        session: Option<&str>,
        event: &crate::status::Event,
        now_ms: u64,
    ) -> Result<ServerRecord, StateError> {
        self.transition_with(store, out, server, session, event, now_ms, &Map::new())
    }

    /// [`Engine::transition`] whose audit events also carry `extra` (who asked, from where).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transition_with(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        server: &str,
        session: Option<&str>,
        event: &crate::status::Event,
        now_ms: u64,
        extra: &Map<String, Value>,
    ) -> Result<ServerRecord, StateError> {
        let posture = self.config.posture_of(server);
        let updated = state::update_record(
            store,
            &mut self.records,
            server,
            event,
            posture,
            now_ms,
            self.config.limits.max_servers,
        )?;
        for note in &updated.notes {
            let mut detail = extra.clone();
            if note.event == "schema.changed" || note.event == "schema.pending" {
                if let Some(summary) = self.diff_summary(store, server, &updated.after) {
                    detail.insert("diff".into(), summary);
                }
                if !updated.after.findings.is_empty() {
                    detail.insert("findings".into(), json!(updated.after.findings));
                }
            }
            let audit = AuditEvent {
                event: note.event,
                time_ms: now_ms,
                server: server.to_string(),
                session: session.map(str::to_string),
                status_before: Some(updated.before.status),
                status_after: Some(updated.after.status),
                baseline: updated.after.baseline.clone(),
                live: updated.after.live.clone(),
                reason: note.reason.clone(),
                detail,
            };
            self.emit(store, out, &audit);
        }
        Ok(updated.after)
    }

    /// The classified diff between `server`'s baseline and its live candidate (`None` when
    /// they are equal or a set cannot be read).
    pub(crate) fn diff(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        record: &ServerRecord,
    ) -> Option<crate::drift::DriftDiff> {
        let live = record.live.as_deref()?;
        let old = match record.baseline.as_deref() {
            Some(b) if b == live => return None,
            Some(b) => self.approved(store, server, b).ok()??.definitions(),
            None => Vec::new(),
        };
        let new = self.approved(store, server, live).ok()??.definitions();
        Some(crate::drift::diff_tools(&old, &new))
    }

    fn diff_summary(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        record: &ServerRecord,
    ) -> Option<Value> {
        self.diff(store, server, record).map(|d| d.summary_json())
    }

    /// Sends an audit event to the host and the ring.
    pub(crate) fn emit(
        &self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        event: &AuditEvent,
    ) {
        out.audit(event);
        state::push_audit(store, &event.to_json(), self.config.audit.ring_size);
    }

    /// An audit event about `exchange`'s server with its current record.
    pub(crate) fn event(
        &self,
        name: &'static str,
        exchange: &Exchange,
        now_ms: u64,
        record: Option<&ServerRecord>,
        reason: &str,
        mut detail: Map<String, Value>,
    ) -> AuditEvent {
        if exchange.stateless() {
            detail.insert("protocol_version".into(), json!(exchange.protocol_version));
        }
        AuditEvent {
            event: name,
            time_ms: now_ms,
            server: exchange.server.clone(),
            session: exchange.session.clone(),
            status_before: record.map(|r| r.status),
            status_after: record.map(|r| r.status),
            baseline: record.and_then(|r| r.baseline.clone()),
            live: record.and_then(|r| r.live.clone()),
            reason: reason.to_string(),
            detail,
        }
    }

    /// A decision record for `exchange`.
    pub(crate) fn decision(
        &self,
        exchange: &Exchange,
        direction: &'static str,
        method: &str,
        id: Option<&Value>,
        status: SchemaStatus,
    ) -> Decision {
        Decision {
            direction,
            method: method.to_string(),
            id: id.map(Value::to_string),
            server: exchange.server.clone(),
            session: exchange.session.clone(),
            schema_status: status,
            tools_in: None,
            tools_out: None,
            tool: None,
            decision: "pass",
            error_code: None,
            protocol_version: exchange.protocol_version.clone(),
        }
    }

    /// A denial for `code` on `tool`.
    pub(crate) fn denial(
        &self,
        code: ErrorCode,
        exchange: &Exchange,
        tool: &str,
        record: Option<&ServerRecord>,
        detail: &str,
    ) -> Denial {
        Denial {
            code,
            server: exchange.server.clone(),
            tool: tool.to_string(),
            status: record.map_or(SchemaStatus::Unbaselined, |r| r.status),
            fingerprint: record.and_then(|r| r.baseline.clone()),
            message: denial_message(code, tool, detail),
            required_action: code.required_action(),
            extra: Map::new(),
        }
    }

    /// Evaluates the policy for an approved call.
    pub(crate) fn policy(&self, facts: &CallFacts<'_>) -> Option<crate::policy::PolicyDecision> {
        let decision = self.config.policy.evaluate(facts);
        (decision.action == Action::Deny).then_some(decision)
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
