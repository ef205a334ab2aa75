//! The pages of a paginated `tools/list`: each checked against the baseline's definitions
//! as it passes, the last one completing the set that is then checked whole.
//!
//! Main design decision: a page never reaches the client before it is checked against what it
//! can be checked against. A page that redefines a baseline tool is withheld (and moves the
//! lifecycle) at once, since that tool's calls must stop now; tools the baseline only lacks
//! are withheld from a page of a listing seen from its first, and its last page decides them
//! with the whole set (a new kind of caller's first list is trusted on first use there, as an
//! unpaginated one is); a middle page is served by the server's status, or, at first contact,
//! only when screening flags nothing on it; pages accumulate per caller (per view for callers
//! without a key) in the shared store, so the last page of a listing seen from its first
//! completes the set, which is compared whole like an unpaginated list.

use super::{Verdict, serve_if_open, unchecked};
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, PendingList};
use crate::policy::approved::Approved;
use crate::policy::containment::{self, Differing, DriftScope};
use crate::policy::fingerprint::{FingerprintFields, digest_tools};
use crate::policy::status::{Event, LiveSet, Posture, SchemaStatus, ServerRecord};
use crate::policy::views::ViewRead;
use crate::state::store::StateStore;
use crate::state::{self, PageAccumulator};
use serde_json::Value;
use std::rc::Rc;

impl Engine {
    /// Checks one page of a paginated listing: a page that differs from the baseline's
    /// definitions is withheld as it passes; a middle page is served by the server's status
    /// (screened on its own at first contact); the last page of a listing seen from its first
    /// completes the set, which is then checked whole.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_page(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        tools: Option<&Value>,
        request: &PendingList,
        next: Option<&str>,
    ) -> Verdict {
        let Some(items) = tools.and_then(Value::as_array) else {
            return self.check_whole(
                store,
                out,
                now_ms,
                exchange,
                tools,
                None,
                request.view.as_ref(),
            );
        };
        // Pages accumulate per caller (its snapshot key; without one, per view) along the
        // chain of cursors: a page is added to what was kept for the cursor that asked for it
        // and kept for the cursor it hands out, so two listings of one caller (or of callers
        // without a key) that run at once never mix their pages into a set no server listed.
        let key = request.key.as_ref().map(state::key_identity);
        let view = request.view.as_ref().and_then(|v| v.as_ref().ok());
        let caller = pages_owner(key.as_deref(), view);
        let page = Page {
            exchange,
            now_ms,
            tools: tools.unwrap_or(&Value::Null),
            read_from: request.cursor.as_deref().map(|c| chain_link(&caller, c)),
            keep_for: next.map(|c| chain_link(&caller, c)).unwrap_or_default(),
            slots: self.config.limits.session_slots,
            scope: self.config.drift_scope_of(&exchange.server),
            next_cursor: next.is_some(),
            view: request.view.as_ref(),
        };
        let acc = match self.accumulate(store, &page, items) {
            Ok(acc) => acc,
            Err(verdict) => return *verdict,
        };
        let (record, baseline_set) = match self.page_baseline(store, &exchange.server) {
            Ok(read) => read,
            Err(verdict) => return *verdict,
        };
        // A baseline without its definitions (pinned by fingerprint only) cannot check a page.
        let unknown =
            record.as_ref().is_some_and(|r| r.baseline.is_some()) && baseline_set.is_none();
        // The last page of a listing seen from its first completes the set, which is then
        // compared whole (so a drift on it leaves a candidate to review); any other page is
        // compared on its own as it passes.
        let completes = !page.next_cursor && acc.is_some();
        if !completes
            && let Some(live) = page_drift(
                baseline_set.as_deref(),
                page.tools,
                &self.config.fingerprint,
            )
        {
            // A tool the baseline has otherwise is drift at once: its calls must stop now.
            // Tools it only lacks are not callable, and a listing seen from its first page is
            // decided whole by its last page, as an unpaginated list is (a new kind of
            // caller's first list trusted on first use there, docs/views.md): they are
            // withheld from this page, and nothing moves yet.
            if acc.is_some()
                && let LiveSet::Partial { withheld, .. } = &live
                && withheld.changed.is_empty()
            {
                let mut verdict = self.middle_page(store, &page, acc, record, unknown);
                verdict.unreviewed.extend(withheld.added.iter().cloned());
                return verdict;
            }
            return self.page_drifted(store, out, &page, acc.as_ref(), record, live);
        }
        if page.next_cursor {
            return self.middle_page(store, &page, acc, record, unknown);
        }
        self.last_page(store, out, &page, acc, record, unknown)
    }

    /// This listing's accumulator with the page added (see [`add_page`]); over
    /// `limits.max_response_bytes` the page is withheld.
    fn accumulate(
        &self,
        store: &mut dyn StateStore,
        page: &Page<'_>,
        items: &[Value],
    ) -> Result<Option<PageAccumulator>, Box<Verdict>> {
        let limits = (page.slots, self.config.limits.max_response_bytes);
        let server = &page.exchange.server;
        add_page(store, server, page.read_from.as_deref(), items, limits).map_err(|e| {
            Box::new(match e {
                NotAdded::Unreadable(e) => unchecked(None, &e),
                NotAdded::TooLarge => withheld(
                    None,
                    "paginated tools/list over limits.max_response_bytes".into(),
                ),
            })
        })
    }

    /// The server's record and its baseline's definitions, read once for the page.
    fn page_baseline(
        &mut self,
        store: &dyn StateStore,
        server: &str,
    ) -> Result<RecordAndBaseline, Box<Verdict>> {
        let record = match self.record(store, server) {
            Ok(r) => r.map(|r| ServerRecord::clone(&r)),
            Err(e) => return Err(Box::new(unchecked(None, &e))),
        };
        let baseline = record.as_ref().and_then(|r| r.baseline.clone());
        let baseline_set = match &baseline {
            Some(b) => match self.approved(store, server, b) {
                Ok(set) => set,
                Err(e) => return Err(Box::new(unchecked(record, &e))),
            },
            None => None,
        };
        Ok((record, baseline_set))
    }

    /// A page that differs from the baseline: the drift is applied to the lifecycle and the
    /// page withheld, unless a drift confined to tools leaves the server serving the others.
    fn page_drifted(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        page: &Page<'_>,
        acc: Option<&PageAccumulator>,
        record: Option<ServerRecord>,
        live: LiveSet,
    ) -> Verdict {
        let server = &page.exchange.server;
        let mut reason = drift_reason(&live);
        // The page is compared again with the baseline of the record being swapped: another
        // worker may have approved or baselined the set in between.
        let tools = page.tools;
        let updated = self.transition_deciding(
            store,
            out,
            server,
            page.exchange.session.as_deref(),
            page.now_ms,
            &serde_json::Map::new(),
            &mut |store, cache, config, record| {
                let baseline = match record.baseline.as_deref() {
                    Some(b) => cache.get_or_load(&*store, server, b, &config.fingerprint)?,
                    None => None,
                };
                let live = page_drift(baseline.as_deref(), tools, &config.fingerprint);
                if let Some(live) = &live {
                    reason = drift_reason(live);
                }
                Ok(live.map(Event::Live))
            },
        );
        if page.next_cursor
            && let Some(acc) = acc
        {
            // Kept either way; a later page that finds no accumulator is withheld.
            let _kept = state::put_pages(store, server, &page.keep_for, page.slots, Some(acc));
        }
        // Under tool scope the page's other tools may still be served.
        match updated {
            Ok(updated) => match serve_if_open(updated.after, page.scope) {
                Verdict {
                    serve: false,
                    record,
                    ..
                } => withheld(record, reason),
                served => served,
            },
            Err(_) => withheld(record, reason),
        }
    }

    /// A page with more to come: its accumulator is kept for the last page, and it is served
    /// by the server's status (a first contact in discovery: by screening it on its own).
    fn middle_page(
        &mut self,
        store: &mut dyn StateStore,
        page: &Page<'_>,
        acc: Option<PageAccumulator>,
        record: Option<ServerRecord>,
        unknown: bool,
    ) -> Verdict {
        let Some(acc) = acc else {
            return withheld(
                record,
                "page seen without its first page; list again from the start".into(),
            );
        };
        let server = &page.exchange.server;
        if let Err(e) = state::put_pages(store, server, &page.keep_for, page.slots, Some(&acc)) {
            // The set check at the last page would miss this page's tools.
            return unchecked(record, &e);
        }
        let discovery = self.config.posture_of(server) == Posture::Discovery;
        // A first-contact page is served before the set is complete: screen it on its own
        // so that a flagged description never reaches the client on an early page.
        let first_contact = record
            .as_ref()
            .is_none_or(|r| r.status == SchemaStatus::Unbaselined && r.baseline.is_none());
        if discovery && first_contact {
            return self.screened_page(page, record);
        }
        match record {
            Some(r) if unknown => withheld(
                Some(r),
                "the baseline is pinned by fingerprint only, so a page cannot be checked on its own \
                until a complete list has verified; list again from the start"
                    .into(),
            ),
            Some(r) => serve_if_open(r, page.scope),
            None => withheld(None, "strict posture: awaiting admin approval".into()),
        }
    }

    /// A first-contact page, served only when screening flags nothing on it.
    fn screened_page(&self, page: &Page<'_>, record: Option<ServerRecord>) -> Verdict {
        let findings =
            crate::policy::screening::screen(page.tools, record.as_ref(), &self.config.screening);
        let serve = findings.is_empty();
        let reason = if serve {
            String::new()
        } else {
            format!(
                "first-contact screening flagged this page: {}",
                findings.join("; ")
            )
        };
        Verdict {
            record,
            serve,
            reason,
            unchecked: false,
            unreviewed: Vec::new(),
            checked: None,
        }
    }

    /// The last page: the accumulated set is checked whole; without an accumulator (the
    /// listing was not seen from its first page) only a verified server's page is served.
    fn last_page(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        page: &Page<'_>,
        acc: Option<PageAccumulator>,
        record: Option<ServerRecord>,
        unknown: bool,
    ) -> Verdict {
        let exchange = page.exchange;
        // This listing's accumulator is in hand; a slot left full is overwritten by the next
        // listing's first page.
        if let Some(link) = &page.read_from {
            let _cleared = state::put_pages(store, &exchange.server, link, page.slots, None);
        }
        match acc {
            Some(acc) => {
                let all = Value::Array(acc.items);
                match self.evaluate_set(store, out, page.now_ms, exchange, &all, None, page.view) {
                    Ok(mut set) => {
                        if let Some(digests) = set.checked.take() {
                            let view = crate::policy::views::view_key(page.view);
                            self.remember_gathered_list(
                                &exchange.server,
                                view,
                                all,
                                acc.bytes,
                                digests,
                            );
                        }
                        Verdict::evaluated(set, page.scope)
                    }
                    Err(e) => unchecked(record, &e),
                }
            }
            None => match record {
                Some(r) if r.status == SchemaStatus::Verified && !unknown => {
                    serve_if_open(r, page.scope)
                }
                other => withheld(
                    other,
                    "last page seen without the first; list again from the start".into(),
                ),
            },
        }
    }
}

/// How a page differs from the baseline's definitions (checked per tool as pages pass;
/// none to check against without them): an invalid page, or the tools that are new or
/// changed on it.
fn page_drift(
    baseline: Option<&Approved>,
    page: &Value,
    fields: &FingerprintFields,
) -> Option<LiveSet> {
    let approved = baseline?;
    let digests = match digest_tools(page, fields) {
        Ok(d) => d,
        Err(e) => {
            return Some(LiveSet::Invalid {
                reason: format!("INVALID_TOOL_SET: {e}"),
            });
        }
    };
    // Tools of the baseline that are not on this page may be on another.
    let withheld: Differing = containment::classify(approved, &digests, false);
    (!withheld.is_empty()).then(|| LiveSet::Partial {
        reason: format!(
            "a tools/list page differs from the baseline: {}",
            digests
                .entries
                .iter()
                .filter(|(name, digest)| approved.digest(name) != Some(digest.as_str()))
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        withheld,
    })
}

/// The reason a page's drift gives, in words.
fn drift_reason(live: &LiveSet) -> String {
    match live {
        LiveSet::Invalid { reason } | LiveSet::Partial { reason, .. } => reason.clone(),
        LiveSet::Valid { .. } => String::new(),
    }
}

/// Why a page was not added to its listing's accumulator.
pub(crate) enum NotAdded {
    /// The stored accumulator cannot be read.
    Unreadable(state::StateError),
    /// The listing's items are over `limits.max_response_bytes`.
    TooLarge,
}

/// The accumulator of a paginated listing with a page's `items` added: a fresh one on a first
/// page (`read_from`: `None`), the one kept for the cursor it was asked with otherwise
/// (`Ok(None)`: none is kept, or it was evicted). `(slots, max_bytes)`: the store's slots and
/// the most bytes of items a listing may hold; over it, the slot read is cleared.
pub(crate) fn add_page(
    store: &mut dyn StateStore,
    server: &str,
    read_from: Option<&str>,
    items: &[Value],
    (slots, max_bytes): (usize, usize),
) -> Result<Option<PageAccumulator>, NotAdded> {
    let mut acc = match read_from {
        Some(link) => state::get_pages(store, server, link, slots).map_err(NotAdded::Unreadable)?,
        None => Some(PageAccumulator::default()),
    };
    if let Some(acc) = acc.as_mut() {
        acc.pages = acc.pages.saturating_add(1);
        let added: usize = items.iter().map(|t| t.to_string().len()).sum();
        acc.bytes = acc.bytes.saturating_add(added);
        acc.items.extend(items.iter().cloned());
        if acc.bytes > max_bytes {
            // Withheld either way; a slot left full is overwritten by the next listing.
            if let Some(link) = read_from {
                let _cleared = state::put_pages(store, server, link, slots, None);
            }
            return Err(NotAdded::TooLarge);
        }
    }
    Ok(acc)
}

/// Whose pages a listing's are: the caller's snapshot key; without one (a stateless caller
/// with no key source), its view, so that kinds of caller shown different pages under the same
/// cursors never add their pages to each other's.
pub(crate) fn pages_owner(
    key: Option<&str>,
    view: Option<&crate::policy::views::ViewId>,
) -> String {
    match (key, view) {
        (Some(key), _) => key.to_string(),
        (None, Some(view)) => format!("\0view\0{}", view.key),
        (None, None) => String::new(),
    }
}

/// The identity pages are kept under: the caller's and the cursor's (hashed, so a cursor of
/// any length keeps a slot identity of one size).
pub(crate) fn chain_link(caller: &str, cursor: &str) -> String {
    let cursor = crate::policy::fingerprint::sha256_hex(cursor.as_bytes());
    format!("{caller}\0{cursor}")
}

/// A verdict that withholds the list for `reason` (the check itself completed).
fn withheld(record: Option<ServerRecord>, reason: String) -> Verdict {
    Verdict {
        record,
        serve: false,
        reason,
        unchecked: false,
        unreviewed: Vec::new(),
        checked: None,
    }
}

/// A server's record and its baseline's definitions (none: no baseline, or pinned by
/// fingerprint only).
type RecordAndBaseline = (Option<ServerRecord>, Option<Rc<Approved>>);

/// One page of a paginated `tools/list` result being checked.
struct Page<'p> {
    exchange: &'p Exchange,
    now_ms: u64,
    /// The page's `tools`.
    tools: &'p Value,
    /// Where this listing's pages so far are kept: the caller and the cursor this page was
    /// asked for with (`None`: a first page).
    read_from: Option<String>,
    /// Where they are kept for the next page: the caller and the cursor this page hands out
    /// (empty on a last page).
    keep_for: String,
    slots: usize,
    scope: DriftScope,
    /// More pages follow.
    next_cursor: bool,
    /// The view the listing belongs to.
    view: Option<&'p ViewRead>,
}
