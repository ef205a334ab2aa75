//! The engine: one object per worker that every host adapter drives.
//!
//! Main design decision: the engine speaks in HTTP-level facts (method, content type, body
//! bytes) and returns verdicts (forward, answer locally, replace the body); the host adapter
//! only moves bytes. Everything that decides is here, once, so Envoy, a wasmtime component
//! and the native command line cannot disagree. State lives in the host's
//! [`StateStore`]; the engine itself only caches immutable, content-addressed tool sets.

use crate::config::Config;
use crate::gateway::denial::{Denial, ErrorCode, denial_message};
use crate::gateway::response::same_id;
use crate::policy::approved::{Approved, ApprovedCache};
use crate::policy::rules::{Action, CallFacts, CallerIdentity};
use crate::policy::status::{self as lifecycle, SchemaStatus, ServerRecord};
use crate::state::audit::{AuditEvent, Decision, Outputs};
use crate::state::parse_cache::ParseCache;
use crate::state::snapshot_key::ClientKey;
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use crate::wire::jsonrpc::Message;
use crate::wire::revision::RoutingHeaders;
use serde_json::{Map, Value, json};
use std::rc::Rc;

/// What a transition decides from the record it is about to swap: the event to apply, made
/// from that record alone (and the content-addressed tool sets it names, loaded through the
/// worker's cache), or `None` to leave it as it is.
pub(crate) type DecideLive<'d> = dyn FnMut(
        &mut dyn StateStore,
        &mut ApprovedCache,
        &Config,
        &ServerRecord,
    ) -> Result<Option<crate::policy::status::Event>, StateError>
    + 'd;

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

/// A forwarded request awaiting its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// A `tools/list`: its result is checked.
    List(PendingList),
    /// A `tools/call`: its result may be held to the tool's output contract.
    Call(PendingCall),
    /// Any other request (id, method), so its answer's record names its method.
    Other(Value, String),
}

impl Pending {
    /// The request's JSON-RPC id.
    pub fn id(&self) -> &Value {
        match self {
            Pending::List(list) => &list.id,
            Pending::Call(call) => &call.id,
            Pending::Other(id, _) => id,
        }
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        match self {
            Pending::List(_) => "tools/list",
            Pending::Call(_) => "tools/call",
            Pending::Other(_, method) => method,
        }
    }

    /// Lists (0), calls (1) and the rest (2): bounded apart, and answered in that order by
    /// an error that answers several.
    pub(crate) fn kind_index(&self) -> usize {
        match self {
            Pending::List(_) => 0,
            Pending::Call(_) => 1,
            Pending::Other(..) => 2,
        }
    }
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
    pub allowed_at: Option<crate::policy::status::SchemaStatus>,
}

/// A forwarded `tools/list` awaiting its result.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingList {
    /// JSON-RPC id.
    pub id: Value,
    /// The cursor the request sent (a later page), as its text: pages accumulate along the
    /// chain of cursors, so listings that run at once never mix their pages.
    pub cursor: Option<String>,
    /// Asked under a stateless revision (MCP 2026-07-28): a rewritten result must carry that
    /// revision's members (`resultType`, cache hints).
    pub stateless: bool,
    /// The caller's snapshot key: a verified list is recorded as what this caller saw.
    pub key: Option<ClientKey<'static>>,
    /// The view the list belongs to (`None`: the request was not seen, so its view cannot be
    /// told).
    pub view: Option<crate::policy::views::ViewRead>,
    /// The caller's principal outcomes, read with the request when policy can hide tools
    /// from a list (`None`: it cannot, or the request was not seen: every principal unread).
    pub caller: Option<crate::policy::rules::CallerView>,
}

impl PendingList {
    /// A pending handshake-era list of `session` (no cursor).
    pub fn new(id: Value, session: Option<&str>) -> Self {
        PendingList {
            id,
            cursor: None,
            stateless: false,
            key: session.map(|s| ClientKey::session(s).into_owned()),
            view: None,
            caller: None,
        }
    }
}

/// What one HTTP exchange (a request and its response stream) remembers between callbacks.
#[derive(Debug, Default, Clone)]
pub struct Exchange {
    /// Server id.
    pub server: String,
    /// `Mcp-Session-Id` of the request.
    pub session: Option<String>,
    /// The stateless revision the request declared (header or `_meta`: MCP 2026-07-28 or
    /// later), once its body was read; `None` for the handshake era.
    pub protocol_version: Option<String>,
    /// The requests awaiting their answer, in the order they were forwarded.
    pub pending: Vec<Pending>,
    /// The ids a resumed stream took over from its session's earlier exchanges (see
    /// [`crate::gateway::resume`]): those it answers leave the session's slot at its end.
    pub resumed: Vec<Value>,
    /// Response framing state.
    pub response: crate::gateway::response::ResponseState,
    /// The request path without its query, kept when a view reads it.
    pub path: String,
    /// The view of the request's lists and calls, once its body was read.
    pub surface: Option<crate::policy::views::ViewRead>,
    /// The capability names an `initialize` request declared and when it was seen, until
    /// the server names the session they belong to ([`Engine::session_assigned`]).
    pub declared: Option<(Vec<String>, u64)>,
    /// What the fleet store answered the callback that waits for it (see
    /// [`crate::gateway::fleet`]).
    pub fleet: crate::state::fleet::FleetProgress,
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

    /// Whether the answer's `Mcp-Session-Id` header is wanted: the request was an
    /// `initialize` whose declared capabilities wait for the session they belong to.
    pub fn awaits_session(&self) -> bool {
        self.declared.is_some()
    }

    /// Whether the request was made under a stateless revision (MCP 2026-07-28 or later).
    pub fn stateless(&self) -> bool {
        self.protocol_version
            .as_deref()
            .is_some_and(crate::wire::revision::is_stateless)
    }

    /// Takes over what `later` (a forwarded message of the same server and session) left
    /// pending, for hosts that keep one exchange per session across messages (the WIT
    /// component); keeps at most `max_pending` ids of each kind, dropping the oldest, so the
    /// exchange stays bounded when answers never come.
    pub fn absorb(&mut self, later: Exchange, max_pending: usize) {
        if later.protocol_version.is_some() {
            self.protocol_version = later.protocol_version;
        }
        // What the later message's request told (its view, an initialize's declared
        // capabilities) is what its answer is checked with.
        if later.surface.is_some() {
            self.surface = later.surface;
        }
        if later.declared.is_some() {
            self.declared = later.declared;
        }
        if !later.path.is_empty() {
            self.path = later.path;
        }
        self.pending.extend(later.pending);
        // The newest `max_pending` of each kind stay.
        let mut kept = [0usize; 3];
        let mut newest_first: Vec<Pending> = std::mem::take(&mut self.pending)
            .into_iter()
            .rev()
            .filter(|pending| match kept.get_mut(pending.kind_index()) {
                Some(count) if *count < max_pending => {
                    *count += 1;
                    true
                }
                _ => false,
            })
            .collect();
        newest_first.reverse();
        self.pending = newest_first;
    }

    /// Whether a request still waits for its answer.
    pub fn awaits_answer(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Whether a request with this id still waits for its answer.
    pub fn waits(&self, id: &Value) -> bool {
        self.pending.iter().any(|p| same_id(p.id(), id))
    }

    /// The `tools/list` requests awaiting their result.
    pub fn lists(&self) -> impl Iterator<Item = &PendingList> {
        self.pending.iter().filter_map(|p| match p {
            Pending::List(list) => Some(list),
            _ => None,
        })
    }

    /// Whether a `tools/list` request awaits its result.
    pub fn awaits_list(&self) -> bool {
        self.lists().next().is_some()
    }

    /// The `tools/call` requests awaiting their result.
    pub fn calls(&self) -> impl Iterator<Item = &PendingCall> {
        self.pending.iter().filter_map(|p| match p {
            Pending::Call(call) => Some(call),
            _ => None,
        })
    }

    /// How many requests other than lists and calls wait.
    pub(crate) fn others_waiting(&self) -> usize {
        let others = self.pending.iter();
        others.filter(|p| matches!(p, Pending::Other(..))).count()
    }

    /// Takes out the request `id` answers (an error answers it as a result would).
    pub(crate) fn settle(&mut self, id: &Value) -> Option<Pending> {
        let index = self.pending.iter().position(|p| same_id(p.id(), id))?;
        Some(self.pending.remove(index))
    }

    /// Takes out the `tools/list` request `id` answers, if it is one.
    pub(crate) fn settle_list(&mut self, id: &Value) -> Option<PendingList> {
        let index = self
            .pending
            .iter()
            .position(|p| matches!(p, Pending::List(l) if same_id(&l.id, id)))?;
        match self.pending.remove(index) {
            Pending::List(list) => Some(list),
            _ => None,
        }
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
    /// The last whole `tools/list` checked per server (served or filtered): its bytes, its
    /// parse and its digests, the one memory of a list seen before (see `known_list`).
    pub(crate) known_lists: crate::gateway::known_list::KnownLists,
    /// Servers whose last `tools/list` this worker could not check (unreadable, or the check
    /// could not read or write the state): their live set is unknown, so calls to them are
    /// refused until a list verifies here. At most `limits.max_servers` entries.
    pub(crate) held: std::collections::BTreeSet<String>,
    /// The candidate catalogues this worker made of drifted lists lately (see
    /// `listing::live::CandidateMemo`).
    pub(crate) candidates: crate::gateway::listing::live::CandidateMemo,
    /// This worker's fleet store bookkeeping (see [`crate::gateway::fleet`]).
    pub(crate) fleet: crate::gateway::fleet::FleetWorker,
    /// The verdicts of resources this worker screened lately, by their screened strings: the
    /// finding, or `null` for a resource served (see `gateway::resources`; a JSON map, whose
    /// code the module already holds).
    pub(crate) screened: Map<String, Value>,
    /// The views this worker told lately and what it read to tell them (see
    /// `surface::ViewMemo`).
    pub(crate) view_memo: crate::gateway::surface::ViewMemo,
}

impl Engine {
    /// An engine for `config`.
    pub fn new(config: Config) -> Self {
        Engine {
            config,
            cache: ApprovedCache::default(),
            records: ParseCache::new(crate::state::parse_cache::RECORD_ENTRIES),
            snapshots: ParseCache::new(crate::state::parse_cache::SNAPSHOT_ENTRIES),
            known_lists: crate::gateway::known_list::KnownLists::default(),
            candidates: Default::default(),
            held: std::collections::BTreeSet::new(),
            fleet: Default::default(),
            screened: Default::default(),
            view_memo: Default::default(),
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
        // With a fleet store, a configured server's settings are applied over the record the
        // fleet holds, the first time a callback touches it (`gateway::fleet`).
        if self.config.store.is_none() {
            let ids: Vec<String> = self.config.servers.keys().cloned().collect();
            for id in ids {
                problems.extend(self.configure_server(store, out, now_ms, &id));
            }
        } else {
            for (id, server) in &self.config.servers {
                if let Some(crate::config::Pin::Lock { fingerprint, tools }) = &server.pin
                    && let Err(e) = state::put_tool_set(store, id, fingerprint, tools)
                {
                    problems.push(format!("{id}: lock not stored: {e}"));
                }
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

    /// Applies one configured server's `pin`, `lock` and `quarantine` to its record; the
    /// problems, one sentence each (none: applied).
    pub(crate) fn configure_server(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        id: &str,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(server) = self.config.servers.get(id).cloned() else {
            return problems;
        };
        if let Some(pin) = &server.pin {
            if let crate::config::Pin::Lock { fingerprint, tools } = pin
                && let Err(e) = state::put_tool_set(store, id, fingerprint, tools)
            {
                problems.push(format!("{id}: lock not stored: {e}"));
            }
            let lock = matches!(pin, crate::config::Pin::Lock { .. });
            let event = crate::policy::status::Event::Pin {
                fingerprint: pin.fingerprint().to_string(),
                lock,
            };
            if let Err(e) = self.transition(store, out, id, None, &event, now_ms) {
                problems.push(format!("{id}: pin not applied: {e}"));
            }
        }
        let held = match state::load_record(store, id) {
            Ok(record) => record.and_then(|(r, _)| r.quarantine),
            Err(e) => {
                problems.push(format!("{id}: record unreadable: {e}"));
                return problems;
            }
        };
        match (&server.quarantine, held) {
            (Some(reason), held) if held.as_ref().map(|h| &h.0) != Some(reason) => {
                let event = crate::policy::status::Event::Quarantine {
                    reason: reason.clone(),
                    by: crate::policy::status::Actor::Config,
                };
                if let Err(e) = self.transition(store, out, id, None, &event, now_ms) {
                    problems.push(format!("{id}: quarantine not applied: {e}"));
                }
            }
            (None, Some((_, crate::policy::status::Actor::Config))) => {
                let event = crate::policy::status::Event::Release {
                    by: crate::policy::status::Actor::Config,
                };
                match self.transition(store, out, id, None, &event, now_ms) {
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
        problems
    }

    /// A `pass` decision record for a message no check applies to (every MCP message
    /// gets one decision record). Responses carry the method of their request when known.
    pub(crate) fn pass_record(
        &mut self,
        store: &dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &Exchange,
        direction: &'static str,
        message: &Message,
        answers: Option<&str>,
    ) {
        let status = self.status_of(store, &exchange.server);
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

    /// The status a decision record names for `server` (`unbaselined` when it has no record
    /// or it cannot be read).
    pub(crate) fn status_of(&mut self, store: &dyn StateStore, server: &str) -> SchemaStatus {
        self.record(store, server)
            .ok()
            .flatten()
            .map_or(SchemaStatus::Unbaselined, |r| r.status)
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
        event: &crate::policy::status::Event,
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
        event: &crate::policy::status::Event,
        now_ms: u64,
        extra: &Map<String, Value>,
    ) -> Result<ServerRecord, StateError> {
        let decide = &mut |_: &mut dyn StateStore,
                           _: &mut ApprovedCache,
                           _: &Config,
                           _: &ServerRecord| { Ok(Some(event.clone())) };
        self.transition_deciding(store, out, server, session, now_ms, extra, decide)
    }

    /// Applies the event `decide` makes from the very record each compare-and-swap attempt
    /// read (see [`state::update_record_with`]), and audits what it produced. `decide` may
    /// load the tool sets that record names through the worker's cache.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transition_deciding(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        server: &str,
        session: Option<&str>,
        now_ms: u64,
        extra: &Map<String, Value>,
        decide: &mut DecideLive<'_>,
    ) -> Result<ServerRecord, StateError> {
        let posture = self.config.posture_of(server);
        let max_servers = self.config.limits.max_servers;
        let (cache, config) = (&mut self.cache, &self.config);
        let updated = state::update_record_with(
            store,
            &mut self.records,
            server,
            &mut |store, record| decide(store, cache, config, record),
            posture,
            now_ms,
            max_servers,
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
    ) -> Option<crate::policy::drift::DriftDiff> {
        let live = record.live.as_deref()?;
        let old = match record.baseline.as_deref() {
            Some(b) if b == live => return None,
            Some(b) => self.approved(store, server, b).ok()??.definitions(),
            None => Vec::new(),
        };
        let new = self.approved(store, server, live).ok()??.definitions();
        Some(crate::policy::drift::diff_tools(&old, &new))
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
    pub(crate) fn policy(
        &self,
        facts: &CallFacts<'_>,
    ) -> Option<crate::policy::rules::PolicyDecision> {
        let decision = self.config.policy.evaluate(facts);
        (decision.action == Action::Deny).then_some(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(exchange: &Exchange) -> Vec<Value> {
        exchange.pending.iter().map(|p| p.id().clone()).collect()
    }

    /// A later message's requests join in the order they were forwarded; past the bound,
    /// the oldest of that kind leave, and the other kinds keep theirs.
    #[test]
    fn absorbing_keeps_the_newest_of_each_kind_in_the_order_they_were_forwarded() {
        let mut exchange = Exchange::new("s", Some("a"));
        let mut later = Exchange::new("s", Some("a"));
        for n in 0..4 {
            later
                .pending
                .push(Pending::List(PendingList::new(json!(n), Some("a"))));
            later
                .pending
                .push(Pending::Other(json!(format!("o{n}")), "ping".into()));
        }
        exchange.absorb(later, 3);
        let expected = [1, 2, 3].map(|n| [json!(n), json!(format!("o{n}"))]);
        assert_eq!(ids(&exchange), expected.concat());
        exchange.absorb(Exchange::default(), 2);
        assert_eq!(
            ids(&exchange),
            [json!(2), json!("o2"), json!(3), json!("o3")]
        );
        assert_eq!(exchange.others_waiting(), 2);
    }
}
