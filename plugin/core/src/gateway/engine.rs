//! The engine: one object per worker that every host adapter drives.
//!
//! Main design decision: the engine speaks in HTTP-level facts (method, content type, body
//! bytes) and returns verdicts (forward, answer locally, replace the body); the host adapter
//! only moves bytes. Everything that decides is here, once, so Envoy, a wasmtime component
//! and the native command line cannot disagree. State lives in the host's
//! [`StateStore`]; the engine itself only caches immutable, content-addressed tool sets.

use crate::config::Config;
use crate::gateway::denial::{Denial, ErrorCode, denial_message};
use crate::gateway::exchange::Exchange;
use crate::policy::approved::{Approved, ApprovedCache};
use crate::policy::rules::{Action, CallFacts};
use crate::policy::section::Section;
use crate::policy::status::{self as lifecycle, SchemaStatus, ServerRecord};
use crate::state::audit::{AuditEvent, Decision, Outputs};
use crate::state::parse_cache::ParseCache;
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use crate::wire::jsonrpc::Message;
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
    /// `live::CandidateMemo`).
    pub(crate) candidates: crate::gateway::live::CandidateMemo,
    /// This worker's fleet store bookkeeping (see [`crate::gateway::fleet`]).
    pub(crate) fleet: crate::gateway::fleet_worker::FleetWorker,
    /// The verdicts of resources this worker screened lately, by their screened strings: the
    /// finding, or `null` for a resource served (see `gateway::resources`; a JSON map, whose
    /// code the module already holds).
    pub(crate) screened: Map<String, Value>,
    /// The views this worker told lately and what it read to tell them (see
    /// `view_memo::ViewMemo`).
    pub(crate) view_memo: crate::gateway::view_memo::ViewMemo,
    /// The sealed sections' lists this worker saw verify lately (see
    /// `sealed_memo::SealedMemo`).
    pub(crate) sealed_memo: crate::gateway::sealed_memo::SealedMemo,
    /// The remembered tool lists this worker saw verify lately without changing their
    /// server's record (see `verified_again::VerifiedAgain`).
    pub(crate) verified_again: crate::gateway::verified_again::VerifiedAgain,
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
            sealed_memo: Default::default(),
            verified_again: Default::default(),
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
                if let Some(pin) = &server.pin
                    && let Err(e) = store_lock(store, id, pin)
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
            if let Err(e) = store_lock(store, id, pin) {
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

    /// The record of an answer `id` to a request of `method` forwarded as the server sent it.
    pub(crate) fn pass_answer(
        &mut self,
        store: &dyn StateStore,
        out: &mut dyn Outputs,
        exchange: &Exchange,
        (id, method): (&Value, &str),
    ) {
        let status = self.status_of(store, &exchange.server);
        out.decision(&self.decision(exchange, "response", method, Some(id), status));
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
            .map(|updated| updated.after)
    }

    /// Applies the event `decide` makes from the very record each compare-and-swap attempt
    /// read (see [`state::update_record_with`]), and audits what it produced; returns the
    /// record read, the record after, and whether it was left as it was. `decide` may load the
    /// tool sets that record names through the worker's cache.
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
    ) -> Result<state::Updated, StateError> {
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
        Ok(updated)
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

    /// The classified changes of the sections beyond tools between `server`'s baseline and
    /// its live candidate, section by section (`None`: neither seals one, they are equal, or a
    /// set cannot be read).
    pub(crate) fn section_diff(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        record: &ServerRecord,
    ) -> Option<crate::policy::drift::SurfaceDiff> {
        let live = record.live.as_deref()?;
        let baseline = record.baseline.as_deref()?;
        if baseline == live {
            return None;
        }
        let old = self.approved(store, server, baseline).ok()??;
        let new = self.approved(store, server, live).ok()??;
        if old.sealed.is_empty() && new.sealed.is_empty() {
            return None;
        }
        let resources = [&old, &new]
            .iter()
            .any(|set| set.sealed.contains(&Section::Resources));
        let mut diff = crate::policy::drift::diff_surface(
            &Value::Object(old.document()),
            &Value::Object(new.document()),
            resources,
        );
        diff.sections
            .retain(|(section, _)| *section != Section::Tools);
        (!diff.is_empty()).then_some(diff)
    }

    fn diff_summary(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        record: &ServerRecord,
    ) -> Option<Value> {
        let tools = self.diff(store, server, record).map(|d| d.summary_json());
        let Some(sections) = self.section_diff(store, server, record) else {
            return tools;
        };
        let mut summary = match tools {
            Some(Value::Object(summary)) => summary,
            _ => Map::new(),
        };
        summary.insert("sections".into(), sections.by_section(false));
        Some(Value::Object(summary))
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

/// Stores the set a `lock` names (a tool set, or a whole surface's catalogue); a pin by
/// fingerprint alone stores nothing.
fn store_lock(
    store: &mut dyn StateStore,
    server: &str,
    pin: &crate::config::Pin,
) -> Result<(), StateError> {
    match pin {
        crate::config::Pin::Lock {
            fingerprint,
            surface: Some(document),
            ..
        } => state::put_surface_set(store, server, fingerprint, document),
        crate::config::Pin::Lock {
            fingerprint, tools, ..
        } => state::put_tool_set(store, server, fingerprint, tools),
        crate::config::Pin::Fingerprint(_) => Ok(()),
    }
}
