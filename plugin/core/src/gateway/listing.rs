//! Verification of `tools/list` results, whole or page by page.
//!
//! Main design decision: a list result is fingerprinted and checked against the baseline
//! before a single tool reaches the client; when the server is closed afterwards, every tool
//! is removed and a namespaced `_meta` entry says why. Pages are checked tool by tool as they
//! pass, and the last page completes the set check over everything accumulated. The set check
//! and the fingerprint always use the server's whole live list; only then is the client's
//! view cut from it (`answer`): the tools a contained drift withholds
//! ([`crate::policy::containment`]) and those policy refuses this caller whatever the arguments.

mod answer;
mod pages;

use crate::config::Config;
use crate::gateway::engine::{Engine, Exchange, PendingList};
use crate::policy::approved::{Approved, ApprovedCache};
use crate::policy::containment::{self, DriftReach, DriftScope, Serving};
use crate::policy::fingerprint::{ToolDigests, digest_tools};
use crate::policy::status::{Event, LiveSet, SchemaStatus, ServerRecord};
use crate::state::audit::Counter;
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use answer::{Hints, ListNote, Shown};
use serde_json::{Value, json};
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
                let tools = result.get("tools").and_then(Value::as_array);
                let kept: Vec<Value> = kept
                    .iter()
                    .filter_map(|&index| tools.and_then(|t| t.get(index)).cloned())
                    .collect();
                if let Some(obj) = cut.as_object_mut() {
                    obj.insert("tools".into(), Value::Array(kept));
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
        Some(crate::gateway::response::answer(id, result))
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
}

impl Engine {
    /// Checks one `tools/list` result answering `request`; says what to forward.
    /// `known`: the fingerprint `result.tools` is known to have (a result checked before, byte
    /// for byte), so that it is not digested again. A whole list evaluated as a valid set,
    /// served or filtered, leaves the fingerprint computed for it in `checked_list`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_result(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        request: &PendingList,
        result: &Value,
        known: Option<&str>,
    ) -> ListAnswer {
        let id = &request.id;
        let tools = result.get("tools");
        let tools_in = tools.and_then(Value::as_array).map_or(0, Vec::len);
        let next = result.get("nextCursor").and_then(cursor_text);
        let next_cursor = next.is_some();
        let whole = request.cursor.is_none() && !next_cursor;
        self.checked_list = None;
        let verdict = if !whole {
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
            self.check_whole(store, out, now_ms, exchange, tools, known)
        };
        if !whole {
            // The last page completes a set over every page: no single result's bytes.
            self.checked_list = None;
        }
        let status = verdict
            .record
            .as_ref()
            .map_or(SchemaStatus::Unbaselined, |r| r.status);
        let mut decision = self.decision(exchange, "response", "tools/list", Some(id), status);
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
            let shown = self.shown(store, exchange, request, verdict.record.as_ref(), tools);
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
        let reason = match shown.contained {
            true => {
                "the tool set drifted from the approved baseline; its new and changed tools are withheld until an admin reviews them, the others are served"
            }
            false => {
                "some tools are not listed: policy refuses them to this caller whatever the arguments"
            }
        };
        match shown.contained {
            true => out.count(Counter::ListsFiltered, None),
            false => out.count(Counter::ListsVerified, None),
        }
        if shown.hidden > 0 {
            out.count(Counter::ListsScoped, None);
        }
        out.decision(&decision);
        if shown.contained {
            let mut detail = serde_json::Map::new();
            detail.insert("tools_in".into(), json!(tools_in));
            detail.insert("tools_out".into(), json!(tools_out));
            let withheld: Vec<Value> = record
                .map(ServerRecord::withheld_tools)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, _)| Value::from(name))
                .collect();
            detail.insert("withheld".into(), json!(withheld));
            let event = self.event("list.filtered", exchange, now_ms, record, reason, detail);
            self.emit(store, out, &event);
        }
        let note = ListNote {
            server: &exchange.server,
            record,
            reason,
            withheld: shown.contained.then_some(shown.withheld),
            hidden: shown.hidden,
        };
        let hints = match shown.contained {
            true => Hints::Closed,
            false => Hints::Private(self.config.limits.max_list_ttl_ms),
        };
        ListAnswer::Cut {
            result: answer::rewrite(result, &note, hints, request.stateless),
            kept: answer::kept(tools_in, &shown.dropped),
        }
    }

    /// Which tools of a served list result this caller is shown (see [`Shown`]).
    fn shown(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        request: &PendingList,
        record: Option<&ServerRecord>,
        tools: Option<&Value>,
    ) -> Shown {
        let scope = self.config.drift_scope_of(&exchange.server);
        let withheld = record.filter(|r| containment::serving(r, scope) == Serving::AllBut);
        let contained = record.is_some_and(|r| r.status == SchemaStatus::Changed);
        let hiding = self.config.policy.may_hide();
        if withheld.is_none() && !hiding {
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
        known: Option<&str>,
    ) -> Verdict {
        let tools = tools.unwrap_or(&Value::Null);
        let scope = self.config.drift_scope_of(&exchange.server);
        match self.evaluate_set(store, out, now_ms, exchange, tools, known) {
            Ok(record) => serve_if_open(record, scope),
            Err(e) => unchecked(None, &e),
        }
    }

    /// Fingerprints a complete set and applies it to the lifecycle. Whether it matches the
    /// baseline, how far its drift reaches and whether screening holds it are decided inside
    /// the compare-and-swap, from the very record being swapped ([`LiveCheck::decide`]): a
    /// record another worker wrote in between (a first contact, an approval) is decided
    /// again, never given an answer computed for the record read before it.
    /// `fingerprint`: the one `tools` is known to have (its digests are then the cached set's).
    #[allow(clippy::too_many_arguments)]
    fn evaluate_set(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        tools: &Value,
        fingerprint: Option<&str>,
    ) -> Result<ServerRecord, StateError> {
        let server = exchange.server.clone();
        let session = exchange.session.clone();
        // A result served before byte for byte is the cached set of its fingerprint. Whatever
        // cannot be read from the store ends the check here, before any transition: a host
        // fault must not move the lifecycle (`changed` is sticky).
        let cached = match fingerprint {
            Some(f) => self.approved(store, &server, f)?,
            None => None,
        };
        let digests = match cached {
            Some(set) => Ok(LiveDigests::Cached(set)),
            None => self.live_digests(store, &server, tools),
        };
        let mut live = match digests {
            Err(e) => LiveCheck::Invalid(format!("INVALID_TOOL_SET: {e}")),
            Ok(digests) => {
                let fingerprint = digests.fingerprint();
                self.store_live_set(store, &server, &fingerprint, tools)?;
                LiveCheck::Valid {
                    fingerprint,
                    digests,
                    tools,
                    findings: None,
                }
            }
        };
        let checked = match &live {
            LiveCheck::Valid { fingerprint, .. } => Some(fingerprint.clone()),
            LiveCheck::Invalid(_) => None,
        };
        let mut drifted = false;
        let record = self.transition_deciding(
            store,
            out,
            &server,
            session.as_deref(),
            now_ms,
            &serde_json::Map::new(),
            &mut |store, cache, config, record| {
                let (event, differs) = live.decide(store, cache, config, &server, record)?;
                drifted = differs;
                Ok(Some(Event::Live(event)))
            },
        )?;
        if drifted {
            out.count(Counter::ListsChanged, None);
        }
        // Computed here from the tools themselves (or the cached set of the known
        // fingerprint), never read back from the record.
        self.checked_list = checked;
        Ok(record)
    }

    /// Stores a checked set unless it is stored already (a drifted candidate for review, a
    /// matching set whose definitions were not known: a baseline pinned by fingerprint only).
    /// A set this worker has cached and the record names is stored (nothing replaces a set a
    /// record names); another cached set may have lost its slot since.
    fn store_live_set(
        &mut self,
        store: &mut dyn StateStore,
        server: &str,
        fingerprint: &str,
        tools: &Value,
    ) -> Result<(), StateError> {
        let stored = if !self.cache.contains(fingerprint) {
            self.approved(store, server, fingerprint)?.is_some()
        } else {
            let named = self
                .record(store, server)?
                .is_some_and(|r| r.set_refs().contains(&Some(fingerprint)));
            named || state::holds_tool_set(store, server, fingerprint)?
        };
        if stored {
            return Ok(());
        }
        let definitions = tools.as_array().cloned().unwrap_or_default();
        state::put_tool_set(store, server, fingerprint, &definitions)?;
        if let Some(approved) =
            Approved::from_definitions(fingerprint, definitions, &self.config.fingerprint)
        {
            self.cache.insert(approved);
        }
        Ok(())
    }
}

/// A complete live set's own facts, computed once from the list; [`LiveCheck::decide`] makes
/// the lifecycle event from them and the record being swapped.
enum LiveCheck<'t> {
    /// Not a valid tool set (repeated or missing names, ...): the reason.
    Invalid(String),
    /// A valid set.
    Valid {
        fingerprint: String,
        digests: LiveDigests,
        tools: &'t Value,
        /// First-contact screening findings, computed the first time a record without a
        /// baseline asks for them (they depend on the tools alone).
        findings: Option<Vec<String>>,
    },
}

impl LiveCheck<'_> {
    /// The event for `record`, and whether it is a drift from a baseline: matched against
    /// the baseline `record` names (and, with `allow_subset` or to tell the drift's reach,
    /// against that baseline's definitions, a content-addressed set), screened when `record`
    /// has no baseline yet.
    fn decide(
        &mut self,
        store: &dyn StateStore,
        cache: &mut ApprovedCache,
        config: &Config,
        server: &str,
        record: &ServerRecord,
    ) -> Result<(LiveSet, bool), StateError> {
        let (fingerprint, digests, tools, findings) = match self {
            LiveCheck::Invalid(reason) => {
                let reason = reason.clone();
                return Ok((LiveSet::Invalid { reason }, false));
            }
            LiveCheck::Valid {
                fingerprint,
                digests,
                tools,
                findings,
            } => (fingerprint, digests, *tools, findings),
        };
        let baseline = record.baseline.as_deref();
        let mut baseline_set = |b: &str| cache.get_or_load(store, server, b, &config.fingerprint);
        let matches = match baseline {
            Some(b) if b == fingerprint.as_str() => true,
            Some(b) if config.server(server).allow_subset => {
                baseline_set(b)?.is_some_and(|base| digests.is_strict_subset_of(&base))
            }
            _ => false,
        };
        let reach = match baseline {
            Some(b) if !matches => drift_reach(baseline_set(b)?.as_deref(), digests),
            _ => DriftReach::Unknown,
        };
        let findings = match baseline {
            Some(_) => Vec::new(),
            None => findings
                .get_or_insert_with(|| {
                    crate::policy::screening::screen(tools, Some(record), &config.screening)
                })
                .clone(),
        };
        let live = LiveSet::Valid {
            fingerprint: fingerprint.clone(),
            matches,
            findings,
            reach,
        };
        Ok((live, !matches && baseline.is_some()))
    }
}

/// How far a complete valid set that differs from a baseline reaches: the tools that
/// differ, or the whole server when the baseline's definitions are not known (`None`).
fn drift_reach(baseline: Option<&Approved>, live: &LiveDigests) -> DriftReach {
    let Some(approved) = baseline else {
        return DriftReach::Server(
            "the baseline is known by its fingerprint only, so the drift cannot be told tool by tool"
                .into(),
        );
    };
    let cached;
    let digests = match live {
        LiveDigests::Computed(digests, _) => digests,
        LiveDigests::Cached(set) => {
            cached = set.digests().unwrap_or_default();
            &cached
        }
    };
    DriftReach::Tools(containment::classify(approved, digests, true))
}

fn serve_if_open(record: ServerRecord, scope: DriftScope) -> Verdict {
    let serve = !matches!(containment::serving(&record, scope), Serving::Nothing);
    let reason = match record.status {
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
    };
    Verdict {
        record: Some(record),
        serve,
        reason,
        unchecked: false,
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
    }
}

/// The digests of a live tool set: computed from its definitions, or those of the cached set
/// it equals.
enum LiveDigests {
    /// Digested from the list (or taken from a cached set the list was compared with).
    Computed(ToolDigests, Option<String>),
    /// The list is known to be exactly this cached set.
    Cached(Rc<Approved>),
}

impl LiveDigests {
    fn fingerprint(&self) -> String {
        match self {
            LiveDigests::Computed(_, Some(known)) => known.clone(),
            LiveDigests::Computed(digests, None) => digests.fingerprint(),
            LiveDigests::Cached(set) => set.fingerprint.clone(),
        }
    }

    /// Whether every tool is in `baseline` with the same digest, and `baseline` has more.
    fn is_strict_subset_of(&self, baseline: &Approved) -> bool {
        let in_baseline = |name: &str, digest: &str| baseline.digest(name) == Some(digest);
        match self {
            LiveDigests::Computed(digests, _) => {
                digests.entries.len() < baseline.tools.len()
                    && digests.entries.iter().all(|(n, d)| in_baseline(n, d))
            }
            LiveDigests::Cached(set) => {
                set.tools.len() < baseline.tools.len()
                    && set.tools.iter().all(|(n, t)| in_baseline(n, &t.digest))
            }
        }
    }
}

impl Engine {
    /// The digests of `tools`: a list served again unchanged equals a cached set (the
    /// server's baseline or live candidate), whose digests and fingerprint are known;
    /// otherwise every tool is canonicalized and hashed.
    fn live_digests(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        tools: &Value,
    ) -> Result<LiveDigests, crate::policy::fingerprint::ToolSetError> {
        let record = self.record(store, server).ok().flatten();
        let known = record.and_then(|r| {
            self.cache
                .known_digests(tools, [r.baseline.as_deref(), r.live.as_deref()])
        });
        match known {
            Some((digests, fingerprint)) => Ok(LiveDigests::Computed(digests, Some(fingerprint))),
            None => digest_tools(tools, &self.config.fingerprint)
                .map(|digests| LiveDigests::Computed(digests, None)),
        }
    }
}
