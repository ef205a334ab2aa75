//! The engine: one object per worker that every host adapter drives.
//!
//! Main design decision: the engine speaks in HTTP-level facts (method, content type, body
//! bytes) and returns verdicts (forward, answer locally, replace the body); the host adapter
//! only moves bytes. Everything that decides is here, once, so Envoy, a wasmtime component
//! and the native command line cannot disagree. State lives in the host's
//! [`StateStore`]; the engine itself only caches immutable, content-addressed tool sets.

use crate::approved::{Approved, ApprovedCache};
use crate::audit::{AuditEvent, Counter, Decision, Outputs};
use crate::config::Config;
use crate::denial::{Denial, ErrorCode, denial_message};
use crate::jsonrpc::{self, Message, Payload};
use crate::parse_cache::ParseCache;
use crate::policy::{Action, CallFacts, CallerIdentity};
use crate::revision::RoutingHeaders;
use crate::snapshot_key::ClientKey;
use crate::state::{self, StateError};
use crate::status::{SchemaStatus, ServerRecord};
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
}

impl PendingList {
    /// A pending handshake-era list of `session` (no cursor).
    pub fn new(id: Value, session: Option<&str>) -> Self {
        PendingList {
            id,
            cursor: false,
            stateless: false,
            key: session.map(|s| ClientKey::session(s).into_owned()),
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
        }
    }

    /// Brings the shared state in line with the config (seeds keys, applies pins, locks and
    /// config quarantines). Every worker runs it at start; it is idempotent.
    pub fn configure(&mut self, store: &mut dyn StateStore, out: &mut dyn Outputs, now_ms: u64) {
        state::seed(store);
        let mut problems = Vec::new();
        let servers: Vec<(String, crate::config::ServerConfig)> = self
            .config
            .servers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, server) in servers {
            if let Some(pin) = &server.pin {
                if let crate::config::Pin::Lock { fingerprint, tools } = pin {
                    let _ = state::put_tool_set(store, fingerprint, tools);
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
            let held = state::load_record(store, &id)
                .ok()
                .flatten()
                .and_then(|(r, _)| r.quarantine);
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
                    if let Err(e) = self.transition(store, out, &id, None, &event, now_ms) {
                        problems.push(format!("{id}: release not applied: {e}"));
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
    }

    /// Checks request headers: a POST must carry JSON (HTTP 415 otherwise). A refusal is
    /// audited (`request.rejected`) and counted.
    pub fn request_headers(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        info: &RequestInfo<'_>,
    ) -> RequestVerdict {
        if info.http_method.eq_ignore_ascii_case("GET") {
            self.resume_calls(store, exchange);
        }
        if info.http_method.eq_ignore_ascii_case("POST") && !is_json(info.content_type) {
            let reason = format!(
                "MCP POST bodies must be sent with Content-Type: application/json (got {:?})",
                info.content_type.unwrap_or("")
            );
            return self.refuse(
                store,
                out,
                now_ms,
                exchange,
                415,
                jsonrpc::INVALID_REQUEST,
                &reason,
            );
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
        match self.refuse(
            store,
            out,
            now_ms,
            exchange,
            413,
            jsonrpc::INVALID_REQUEST,
            &reason,
        ) {
            RequestVerdict::Reply(reply) => reply,
            RequestVerdict::Forward => LocalReply::json(413, &Value::Null),
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
                return self.refuse(store, out, now_ms, exchange, 400, e.code(), &e.to_string());
            }
        };
        match crate::revision::read(&info.routing, &payload) {
            Ok(version) => exchange.protocol_version = version,
            Err(mismatch) => {
                // The stateless revision answers a header mismatch with the request's id.
                let id = match (&payload, mismatch.stateless) {
                    (Payload::Single(m), true) => m.id().cloned(),
                    _ => None,
                };
                return self.refuse_request(
                    store,
                    out,
                    now_ms,
                    exchange,
                    (400, mismatch.code, id.as_ref().unwrap_or(&Value::Null)),
                    &mismatch.reason,
                );
            }
        }
        if payload
            .messages()
            .iter()
            .any(|m| matches!(m, Message::Notification { method, .. } if method == "tools/call"))
        {
            let reason = "a tools/call must carry an id: a call sent as a notification cannot be checked and answered";
            return self.refuse(
                store,
                out,
                now_ms,
                exchange,
                400,
                jsonrpc::INVALID_REQUEST,
                reason,
            );
        }
        let mut answers: Vec<Option<Value>> = Vec::new();
        let mut denied = false;
        for message in payload.messages() {
            let answer = self.client_message(store, out, now_ms, exchange, info, message, body);
            denied |= answer.is_some();
            answers.push(answer);
        }
        if !denied {
            return RequestVerdict::Forward;
        }
        exchange.pending_lists.clear();
        exchange.pending_calls.clear();
        let reply = match payload {
            Payload::Single(_) => answers.into_iter().flatten().next().unwrap_or(Value::Null),
            Payload::Batch(messages) => Value::Array(
                messages
                    .iter()
                    .zip(answers)
                    .filter_map(|(m, a)| a.or_else(|| not_forwarded(m)))
                    .collect(),
            ),
        };
        RequestVerdict::Reply(LocalReply::json(200, &reply))
    }

    /// Answers a request that cannot be checked: audited, counted, never forwarded.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        status: u16,
        code: i64,
        reason: &str,
    ) -> RequestVerdict {
        self.refuse_request(
            store,
            out,
            now_ms,
            exchange,
            (status, code, &Value::Null),
            reason,
        )
    }

    /// [`Engine::refuse`] answering `(HTTP status, JSON-RPC code, request id)`.
    fn refuse_request(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        (status, code, id): (u16, i64, &Value),
        reason: &str,
    ) -> RequestVerdict {
        out.count(Counter::RequestsRejected, Some(&status.to_string()));
        let mut detail = Map::new();
        detail.insert("http_status".into(), json!(status));
        let event = self.event("request.rejected", exchange, now_ms, None, reason, detail);
        self.emit(store, out, &event);
        RequestVerdict::Reply(LocalReply::json(
            status,
            &jsonrpc::error_response(id, code, &format!("toolseal: {reason}")),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn client_message(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        info: &RequestInfo<'_>,
        message: &Message,
        body: &[u8],
    ) -> Option<Value> {
        let Message::Request { id, method, params } = message else {
            self.pass_record(store, out, exchange, "request", message, None);
            return None;
        };
        let stateless = exchange.stateless();
        match method.as_str() {
            "tools/list" => {
                let cursor = params
                    .as_ref()
                    .and_then(|p| p.get("cursor"))
                    .is_some_and(|c| !c.is_null());
                let key = self.client_key(info).map(ClientKey::into_owned);
                exchange.pending_lists.push(PendingList {
                    id: id.clone(),
                    cursor,
                    stateless,
                    key,
                });
                self.pass_record(store, out, exchange, "request", message, None);
                None
            }
            "tools/call" => {
                let call = crate::call::Call {
                    id,
                    params: params.as_ref(),
                    body,
                    key: self.client_key(info),
                };
                match self.authorize_call(store, out, now_ms, exchange, info, &call) {
                    Ok((tool, check_result)) => {
                        exchange.pending_calls.push(PendingCall {
                            id: id.clone(),
                            tool,
                            check_result,
                            stateless,
                        });
                        None
                    }
                    Err(denial) => Some(denial.response(id, stateless)),
                }
            }
            _ => {
                if exchange.pending_other.len() < jsonrpc::MAX_BATCH {
                    exchange.pending_other.push((id.clone(), method.clone()));
                }
                self.pass_record(store, out, exchange, "request", message, None);
                None
            }
        }
    }

    /// The snapshot key of a request (`snapshots.key`: its first source the request has).
    fn client_key<'a>(&self, info: &RequestInfo<'a>) -> Option<ClientKey<'a>> {
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

    /// Loads the approved set of a fingerprint (cached, content-addressed).
    pub(crate) fn approved(
        &mut self,
        store: &dyn StateStore,
        fingerprint: &str,
    ) -> Option<Rc<Approved>> {
        self.cache
            .get_or_load(store, fingerprint, &self.config.fingerprint)
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
                if let Some(summary) = self.diff_summary(store, &updated.after) {
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

    /// The classified diff between a record's baseline and its live candidate.
    pub(crate) fn diff(
        &mut self,
        store: &dyn StateStore,
        record: &ServerRecord,
    ) -> Option<crate::drift::DriftDiff> {
        let live = record.live.as_deref()?;
        let old = match record.baseline.as_deref() {
            Some(b) if b == live => return None,
            Some(b) => self.approved(store, b)?.definitions(),
            None => Vec::new(),
        };
        let new = self.approved(store, live)?.definitions();
        Some(crate::drift::diff_tools(&old, &new))
    }

    fn diff_summary(&mut self, store: &dyn StateStore, record: &ServerRecord) -> Option<Value> {
        self.diff(store, record).map(|d| d.summary_json())
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
