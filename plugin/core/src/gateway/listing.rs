//! Verification of `tools/list` results, whole or page by page.
//!
//! Main design decision: a list result is fingerprinted and checked against the baseline
//! before a single tool reaches the client; when the server is closed afterwards, every tool
//! is removed and a namespaced `_meta` entry says why. Pages are checked tool by tool as they
//! pass, and the last page completes the set check over everything accumulated. The set check
//! and the fingerprint always use the server's whole live list; only then is the client's
//! view cut from it (`answer`): the tools a contained drift withholds
//! ([`crate::policy::containment`]) and those policy refuses this caller whatever the arguments.

pub(crate) mod answer;
mod known;
pub(crate) mod pages;

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, PendingList};
use crate::gateway::live::{self, Decided, LiveCheck, LiveDigests};
use crate::policy::containment::{self, DriftScope, Serving};
use crate::policy::fingerprint::digest_tools;
use crate::policy::section::Section;
use crate::policy::status::{Event, LiveSet, SchemaStatus, ServerRecord};
use crate::policy::views::ViewRead;
use crate::state::audit::Counter;
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use answer::{Hints, ListNote, Shown};
use serde_json::{Map, Value, json};
use std::rc::Rc;

pub use answer::META_KEY;

/// What to forward for one list result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListAnswer {
    /// The server's result, unchanged.
    Unchanged,
    /// The server's result with its top-level `ttlMs` lowered to this number of milliseconds
    /// (a verified list whose cache lifetime is over `limits.max_list_ttl_ms`).
    LowerTtl(u64),
    /// This result instead (every tool removed).
    Replace(Value),
    /// This result, whose `tools` is empty, with the server's tools at the `kept` positions
    /// (ascending) put back: a list served in part. The tools are left out of `result` so
    /// that the known-list path can write their remembered encodings instead of copying and
    /// encoding every kept tool again.
    Cut { result: Value, kept: Vec<usize> },
}

impl ListAnswer {
    /// The JSON-RPC response to request `id` to forward instead of the server's (whose
    /// `result` was `result`), if it changes. A lowered `ttlMs` is set on a copy here; the
    /// known-list path splices it into the server's bytes instead.
    pub(crate) fn into_answer(self, id: &Value, result: &Value) -> Option<Value> {
        let result = match self {
            ListAnswer::Unchanged => return None,
            ListAnswer::Replace(result) => result,
            ListAnswer::Cut {
                result: mut cut,
                kept,
            } => {
                let tools = result
                    .get(Section::Tools.items_member())
                    .and_then(Value::as_array);
                let kept: Vec<Value> = kept
                    .iter()
                    .filter_map(|&index| tools.and_then(|t| t.get(index)).cloned())
                    .collect();
                if let Some(obj) = cut.as_object_mut() {
                    obj.insert(Section::Tools.items_member().into(), Value::Array(kept));
                }
                cut
            }
            ListAnswer::LowerTtl(cap) => {
                let mut result = result.clone();
                if let Some(obj) = result.as_object_mut() {
                    obj.insert("ttlMs".into(), json!(cap));
                }
                result
            }
        };
        Some(crate::wire::jsonrpc::answer(id, result))
    }
}

/// A cursor (`params.cursor`, `nextCursor`) as text: a string as it is, another JSON value as
/// its JSON text (`None`: absent or null, no more pages).
pub(crate) fn cursor_text(cursor: &Value) -> Option<String> {
    match cursor {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// The verdict on one list result.
struct Verdict {
    record: Option<ServerRecord>,
    serve: bool,
    reason: String,
    /// The check could not complete (state unreadable or unwritable): the live set is
    /// unknown, so this worker holds calls to the server until a list verifies.
    unchecked: bool,
    /// Listed tools withheld from this answer: the list was checked against the catalogue
    /// alone (its view cannot be told, or is new past the bound), and they are not in it.
    unreviewed: Vec<String>,
    /// The digests of the whole set the check evaluated, served or filtered (none when it
    /// was not a valid set or the check could not complete).
    checked: Option<Rc<LiveDigests>>,
}

impl Verdict {
    /// The verdict on an evaluated set: served as far as the server is open, withholding
    /// what was checked against the catalogue alone.
    fn evaluated(set: Evaluated, scope: DriftScope) -> Self {
        Verdict {
            unreviewed: set.unreviewed,
            checked: set.checked,
            ..serve_if_open(set.record, scope)
        }
    }
}

/// What one list result makes the gateway forward, and the digests of its tools when the
/// result was a whole list evaluated as a valid set (served or filtered): the body reader
/// remembers the result's bytes with them ([`crate::gateway::known_list`]).
pub(crate) struct ListOutcome {
    pub(crate) answer: ListAnswer,
    pub(crate) checked: Option<Rc<LiveDigests>>,
}

/// A complete set applied to the lifecycle's record ([`Engine::decide_set`]).
struct Applied {
    /// The server's record after it.
    record: ServerRecord,
    /// The set differs from the catalogue.
    drifted: bool,
    /// It was checked against the catalogue alone: the tools withheld, and whether its view
    /// is one past `limits.max_views`.
    alone: Option<(Vec<String>, bool)>,
}

/// A complete set applied to the lifecycle ([`Engine::evaluate_set`]).
struct Evaluated {
    /// The server's record after it.
    record: ServerRecord,
    /// Listed tools withheld because the list was checked against the catalogue alone.
    unreviewed: Vec<String>,
    /// The set's digests, computed from its tools (or the cached set of the known
    /// fingerprint), never read back from the record.
    checked: Option<Rc<LiveDigests>>,
}

impl Engine {
    /// Checks one `tools/list` result answering `request`; says what to forward and, for a
    /// whole list evaluated as a valid set, the digests computed for it. `known`: the digests
    /// `result.tools` is known to have (a result checked before, byte for byte), so that it
    /// is not digested again.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_result(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        request: &PendingList,
        result: &Value,
        known: Option<&Rc<LiveDigests>>,
    ) -> ListOutcome {
        let next = result.get("nextCursor").and_then(cursor_text);
        let whole = request.cursor.is_none() && next.is_none();
        let tools = result.get(Section::Tools.items_member());
        let mut verdict = if !whole {
            self.check_page(
                store,
                out,
                now_ms,
                exchange,
                tools,
                request,
                next.as_deref(),
            )
        } else {
            self.check_whole(
                store,
                out,
                now_ms,
                exchange,
                tools,
                known,
                request.view.as_ref(),
            )
        };
        // The last page completes a set over every page: no single result's bytes.
        let checked = match whole {
            true => verdict.checked.take(),
            false => None,
        };
        let answer = self.list_answer(store, out, now_ms, exchange, request, result, verdict);
        ListOutcome { answer, checked }
    }

    /// What to forward for a list result, given the verdict on it.
    #[allow(clippy::too_many_arguments)]
    fn list_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        request: &PendingList,
        result: &Value,
        verdict: Verdict,
    ) -> ListAnswer {
        let id = &request.id;
        let tools = result.get(Section::Tools.items_member());
        let tools_in = tools.and_then(Value::as_array).map_or(0, Vec::len);
        // As `cursor_text` reads it: absent or null ends the listing.
        let next_cursor = result.get("nextCursor").is_some_and(|c| !c.is_null());
        let status = verdict
            .record
            .as_ref()
            .map_or(SchemaStatus::Unbaselined, |r| r.status);
        let mut decision = self.decision(exchange, "response", request.method, Some(id), status);
        decision.tools_in = Some(tools_in);
        if request.stateless {
            decision.protocol_version = exchange.protocol_version.clone();
        }
        if verdict.unchecked {
            self.hold(&exchange.server);
        }
        // A listing that verified to its end shows the live set again.
        if verdict.serve && !next_cursor {
            self.release(&exchange.server);
        }
        if verdict.serve {
            // Every tool served has the baseline's digest: the caller saw the baseline.
            if let (Some(key), Some(baseline)) = (
                request.key.as_ref(),
                verdict.record.as_ref().and_then(|r| r.baseline.as_deref()),
            ) {
                state::put_snapshot(
                    store,
                    &exchange.server,
                    key,
                    baseline,
                    self.config.limits.session_slots,
                );
            }
            let shown = self.shown(store, exchange, request, &verdict, tools);
            if shown.is_whole() {
                out.count(Counter::ListsVerified, None);
                decision.tools_out = Some(tools_in);
                // The gateway owns cache hints: a client keeps a verified list at most this
                // long.
                let cap = self.config.limits.max_list_ttl_ms;
                let answer = match result.get("ttlMs").and_then(Value::as_f64) {
                    Some(ttl) if ttl > cap as f64 => {
                        decision.decision = "rewrite";
                        ListAnswer::LowerTtl(cap)
                    }
                    _ => ListAnswer::Unchanged,
                };
                out.decision(&decision);
                return answer;
            }
            return self.partial_list(
                store, out, now_ms, exchange, request, result, verdict, shown, decision,
            );
        }
        out.count(Counter::ListsFiltered, None);
        decision.tools_out = Some(0);
        decision.decision = "rewrite";
        out.decision(&decision);
        let mut detail = serde_json::Map::new();
        detail.insert("tools_in".into(), json!(tools_in));
        let event = self.event(
            "list.filtered",
            exchange,
            now_ms,
            verdict.record.as_ref(),
            &verdict.reason,
            detail,
        );
        self.emit(store, out, &event);
        let note = ListNote {
            server: &exchange.server,
            record: verdict.record.as_ref(),
            reason: &verdict.reason,
            withheld: None,
            hidden: 0,
        };
        ListAnswer::Replace(answer::rewrite(
            result,
            Section::Tools.items_member(),
            &note,
            Hints::Closed,
            request.stateless,
        ))
    }

    /// The answer for a list served in part: without the tools a contained drift withholds
    /// (the server is `changed` under tool scope) and those policy hides from this caller.
    /// A contained drift's list is filtered (counted, audited, never cached: `ttlMs: 0`); a
    /// list only cut for its caller is verified and private to that caller.
    #[allow(clippy::too_many_arguments)]
    fn partial_list(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        request: &PendingList,
        result: &Value,
        verdict: Verdict,
        shown: Shown,
        mut decision: crate::state::audit::Decision,
    ) -> ListAnswer {
        let tools_in = decision.tools_in.unwrap_or(0);
        let tools_out = tools_in.saturating_sub(shown.dropped.len());
        decision.tools_out = Some(tools_out);
        decision.decision = "rewrite";
        let record = verdict.record.as_ref();
        let filtered = shown.contained || shown.unreviewed > 0;
        let reason = match (shown.contained, shown.unreviewed > 0) {
            (true, _) => {
                "the tool set drifted from the approved baseline; its new and changed tools are withheld until an admin reviews them, the others are served"
            }
            (false, true) => {
                "some tools are withheld: this caller's view cannot be told (or is one view too many), so its list was checked against the approved catalogue alone, and they are not in it"
            }
            (false, false) => {
                "some tools are not listed: policy refuses them to this caller whatever the arguments"
            }
        };
        match filtered {
            true => out.count(Counter::ListsFiltered, None),
            false => out.count(Counter::ListsVerified, None),
        }
        if shown.hidden > 0 {
            out.count(Counter::ListsScoped, None);
        }
        out.decision(&decision);
        if filtered {
            let mut detail = serde_json::Map::new();
            detail.insert("tools_in".into(), json!(tools_in));
            detail.insert("tools_out".into(), json!(tools_out));
            let withheld: Vec<Value> = record
                .map(ServerRecord::withheld_tools)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, _)| Value::from(name))
                .chain(
                    verdict
                        .unreviewed
                        .iter()
                        .map(|name| Value::from(name.as_str())),
                )
                .collect();
            detail.insert("withheld".into(), json!(withheld));
            let event = self.event("list.filtered", exchange, now_ms, record, reason, detail);
            self.emit(store, out, &event);
        }
        let note = ListNote {
            server: &exchange.server,
            record,
            reason,
            withheld: filtered.then_some(shown.withheld),
            hidden: shown.hidden,
        };
        let hints = match filtered {
            true => Hints::Closed,
            false => Hints::Private(self.config.limits.max_list_ttl_ms),
        };
        ListAnswer::Cut {
            result: answer::rewrite(
                result,
                Section::Tools.items_member(),
                &note,
                hints,
                request.stateless,
            ),
            kept: answer::kept(tools_in, &shown.dropped),
        }
    }

    /// Which tools of a served list result this caller is shown (see [`Shown`]).
    fn shown(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        request: &PendingList,
        verdict: &Verdict,
        tools: Option<&Value>,
    ) -> Shown {
        let record = verdict.record.as_ref();
        let scope = self.config.drift_scope_of(&exchange.server);
        let withheld = record.filter(|r| containment::serving(r, scope) == Serving::AllBut);
        let contained = record.is_some_and(|r| r.status == SchemaStatus::Changed);
        let hiding = self.config.policy.may_hide();
        if withheld.is_none() && !hiding && verdict.unreviewed.is_empty() {
            return Shown::whole(contained);
        }
        // Policy looks at the approved tool's annotations, as the call check does.
        let baseline = match (hiding, record.and_then(|r| r.baseline.as_deref())) {
            (true, Some(b)) => self.approved(store, &exchange.server, b).ok().flatten(),
            _ => None,
        };
        let policy = &self.config.policy;
        let unknown;
        let view = match (&request.caller, hiding) {
            (_, false) => None,
            (Some(view), true) => Some(view),
            (None, true) => {
                unknown = policy.unknown_caller();
                Some(&unknown)
            }
        };
        answer::cut(
            tools,
            withheld,
            &verdict.unreviewed,
            view.map(|view| {
                move |name: &str, tool: &Value| {
                    let annotations = match baseline.as_ref().and_then(|b| b.tools.get(name)) {
                        Some(approved) => approved.annotations(),
                        None => tool.get("annotations"),
                    };
                    policy.hides(view, &exchange.server, name, annotations)
                }
            }),
            contained,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn check_whole(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        tools: Option<&Value>,
        known: Option<&Rc<LiveDigests>>,
        view: Option<&ViewRead>,
    ) -> Verdict {
        let tools = tools.unwrap_or(&Value::Null);
        let scope = self.config.drift_scope_of(&exchange.server);
        match self.evaluate_set(store, out, now_ms, exchange, tools, known, view) {
            Ok(set) => Verdict::evaluated(set, scope),
            Err(e) => unchecked(None, &e),
        }
    }

    /// Fingerprints a complete set and applies it to the lifecycle. Whether it verifies
    /// (against the catalogue and the names of its view), the candidate it makes, how far a
    /// drift reaches and whether a new view is trusted are decided inside the
    /// compare-and-swap, from the very record being swapped ([`LiveCheck::decide`]): a record
    /// another worker wrote in between (a first contact, an approval, another view) is
    /// decided again, never given an answer computed for the record read before it. The
    /// remembered list, verified before against the very record the store holds now without
    /// changing it, is not decided again ([`crate::gateway::verified_again`]).
    /// `known`: the digests `tools` is known to have (a result checked before, byte for byte).
    #[allow(clippy::too_many_arguments)]
    fn evaluate_set(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        tools: &Value,
        known: Option<&Rc<LiveDigests>>,
        view: Option<&ViewRead>,
    ) -> Result<Evaluated, StateError> {
        let server = exchange.server.clone();
        // Tools equal to the remembered list's (other bytes around them, or the same pages
        // gathered again) have its digests, the same allocation.
        let remembered = match known {
            Some(known) => Some(Rc::clone(known)),
            None => self.remembered_digests(&server, crate::policy::views::view_key(view), tools),
        };
        let digests = match (known, &remembered) {
            // A result served before byte for byte is the cached set of its fingerprint when
            // one is stored. Whatever cannot be read from the store ends the check here,
            // before any transition: a host fault must not move the lifecycle (`changed` is
            // sticky).
            (Some(known), _) => match self.approved(store, &server, known.fingerprint())? {
                Some(_) if known.is_cached() => Ok(Rc::clone(known)),
                Some(set) => Ok(Rc::new(LiveDigests::Cached(set, Default::default()))),
                None => Ok(Rc::clone(known)),
            },
            (None, Some(remembered)) => Ok(Rc::clone(remembered)),
            // Any other tools are canonicalized and hashed.
            (None, None) => digest_tools(tools, &self.config.fingerprint)
                .map(|digests| Rc::new(LiveDigests::computed(digests)))
                .map_err(|e| format!("INVALID_TOOL_SET: {e}")),
        };
        let live = LiveCheck::new(digests, tools, view);
        let checked = live.digests().map(Rc::clone);
        let again = remembered
            .as_ref()
            .zip(crate::policy::views::told_key(view));
        let Applied {
            mut record,
            drifted,
            alone,
        } = match self.verified_again(store, &server, again, now_ms)? {
            Some(record) => Applied {
                record,
                drifted: false,
                alone: None,
            },
            None => self.decide_set(store, out, now_ms, exchange, &live, again)?,
        };
        // A server that seals its tools' other fields has them checked once the tools are
        // (a list served again byte for byte known by its remembered digests, which stay the
        // same allocation while it is remembered); a tool whose fields a closed server's list
        // cannot decide is withheld from it.
        let mut fields_differ = Vec::new();
        if let Some(digests) = known.or(checked.as_ref())
            && self.config.seals(&server, Section::ToolFields)
        {
            let (after, differ) =
                self.check_tool_fields(store, out, now_ms, exchange, tools, digests)?;
            if let Some(after) = after {
                record = after;
            }
            fields_differ = differ;
        }
        if drifted {
            out.count(Counter::ListsChanged, None);
        }
        let Some((mut withheld, past_bound)) = alone else {
            return Ok(Evaluated {
                record,
                unreviewed: fields_differ,
                checked,
            });
        };
        if past_bound {
            let reason = format!(
                "a list of a new view past limits.max_views ({}) was checked against the approved catalogue alone; {} tools it lists are not in the catalogue and were withheld",
                self.config.limits.max_views,
                withheld.len()
            );
            let event = self.event(
                "view.limit",
                exchange,
                now_ms,
                Some(&record),
                &reason,
                Map::new(),
            );
            self.emit(store, out, &event);
        }
        withheld.extend(fields_differ);
        Ok(Evaluated {
            record,
            unreviewed: withheld,
            checked,
        })
    }

    /// The record as it is when the remembered list `again` names (its digests and the key
    /// of the view it is listed to) verified, against the very record the store holds now,
    /// without changing it, and would again now (see [`crate::gateway::verified_again`]).
    fn verified_again(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        again: Option<(&Rc<LiveDigests>, &str)>,
        now_ms: u64,
    ) -> Result<Option<ServerRecord>, StateError> {
        let Some((known, view)) = again else {
            return Ok(None);
        };
        if !self.verified_again.lists(server, view, known) {
            return Ok(None);
        }
        let record = self.record(store, server)?;
        let again = record.filter(|r| self.verified_again.verified(server, view, known, r, now_ms));
        Ok(again.as_deref().cloned())
    }

    /// Applies the set `live` to the lifecycle, deciding inside the compare-and-swap (see
    /// [`Engine::evaluate_set`]): the record after, whether the set drifted, and what a list
    /// checked against the catalogue alone withholds (and whether its view was one past the
    /// bound). A remembered list (`again`) that verified without changing the record is
    /// remembered so.
    fn decide_set(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        live: &LiveCheck<'_>,
        again: Option<(&Rc<LiveDigests>, &str)>,
    ) -> Result<Applied, StateError> {
        let server = &exchange.server;
        let (mut drifted, mut alone, mut verified) = (false, None, false);
        // Taken for the decision and put back (`transition_deciding` borrows the engine).
        let mut memo = std::mem::take(&mut self.candidates);
        let updated = self.transition_deciding(
            store,
            out,
            server,
            exchange.session.as_deref(),
            now_ms,
            &serde_json::Map::new(),
            &mut |store, cache, config, record| {
                let at = live::Context {
                    config,
                    server,
                    now_ms,
                };
                match live.decide(store, cache, &mut memo, &at, record)? {
                    Decided::Apply(event, differs) => {
                        verified = matches!(
                            event,
                            LiveSet::Valid {
                                matches: true,
                                view: Some(_),
                                ..
                            }
                        );
                        (drifted, alone) = (differs, None);
                        Ok(Some(Event::Live(event)))
                    }
                    Decided::CatalogueAlone {
                        withheld,
                        past_bound,
                    } => {
                        (drifted, alone, verified) = (false, Some((withheld, past_bound)), false);
                        Ok(None)
                    }
                }
            },
        );
        self.candidates = memo;
        let updated = updated?;
        if let Some((known, view)) = again
            && verified
            && updated.kept
            && updated.notes.is_empty()
        {
            self.verified_again
                .remember(server, view, known, &updated.before);
        }
        Ok(Applied {
            record: updated.after,
            drifted,
            alone,
        })
    }
}

fn serve_if_open(record: ServerRecord, scope: DriftScope) -> Verdict {
    let serve = !matches!(containment::serving(&record, scope), Serving::Nothing);
    let reason = closed_reason(&record, scope, serve);
    Verdict {
        record: Some(record),
        serve,
        reason,
        unchecked: false,
        unreviewed: Vec::new(),
        checked: None,
    }
}

/// Why a server whose record this is serves nothing, in words (empty when it is not closed).
pub(crate) fn closed_reason(record: &ServerRecord, scope: DriftScope, serve: bool) -> String {
    match record.status {
        SchemaStatus::Changed if scope == DriftScope::Tool && !serve => format!(
            "the tool set drifted from the approved baseline in a way that closes the whole server ({}); an admin must review it",
            record
                .drift_whole
                .as_deref()
                .unwrap_or("which tools differ is not known; list tools again")
        ),
        SchemaStatus::Changed => {
            "the tool set drifted from the approved baseline; an admin must review it".to_string()
        }
        SchemaStatus::Pending if !record.findings.is_empty() => {
            "first-contact screening flagged the tool set; it awaits admin approval".to_string()
        }
        SchemaStatus::Pending => "the tool set awaits admin approval".to_string(),
        SchemaStatus::Quarantined => {
            format!(
                "the server is quarantined: {}",
                record.quarantine.as_ref().map_or("", |q| q.0.as_str())
            )
        }
        _ => String::new(),
    }
}

/// The verdict of a check that could not complete: withheld, and the server held on this
/// worker (unless it was refused as one server too many: it has no record, so its calls are
/// refused anyway).
fn unchecked(record: Option<ServerRecord>, error: &StateError) -> Verdict {
    Verdict {
        record,
        serve: false,
        reason: error.to_string(),
        unchecked: !matches!(error, StateError::TooManyServers(_)),
        unreviewed: Vec::new(),
        checked: None,
    }
}
