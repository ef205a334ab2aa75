//! The sections a server seals beyond tools: its prompts, its resource templates, its
//! resources (`"resources": "seal"`) and the instructions of its handshake answer, held to the
//! catalogue as its tools are.
//!
//! Main design decision: a section's list is one more way of seeing the catalogue, decided
//! inside the compare-and-swap from the very record being swapped, like a tool list. The
//! catalogue is one set named by its surface fingerprint; a whole list of a section that
//! matches it verifies, and the catalogue with that section as listed (every item the list
//! does not show kept as approved) is the candidate otherwise: the first list of a section
//! the catalogue does not seal yet seals it (trusted on first use under discovery, awaiting
//! approval under strict or when screening flags it; on a server whose tools were never
//! listed, it begins the catalogue, with no tools, which the first tool list joins as a new
//! view's), and any other difference is drift, which closes the server as a whole (under
//! `drift_scope: "tool"`, the items that differ). The pages of a paginated listing accumulate
//! as a tool list's do, and its last page decides the whole list. What cannot be decided
//! whole never moves the lifecycle: a page before the last, a page seen without its first, a list whose
//! items cannot be read (duplicate keys, an item that is not an object), or a list of a
//! server another change closed (under tool scope it still serves) is checked against the
//! catalogue alone, and what it does not hold is withheld from that answer. Items a list
//! leaves out stay in the catalogue (a caller shown fewer prompts than another is not a
//! drift), so no item is recorded per view (only which views listed each section): what a
//! server lists to one caller and not to another is sealed by the first list that shows it,
//! and a list of a known view that adds an item to a sealed section is drift for an admin to
//! approve.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, PendingList, SectionVerdict};
use crate::gateway::listing::cursor_text;
use crate::gateway::listing::pages::{self, NotAdded};
use crate::gateway::live;
use crate::policy::approved::Approved;
use crate::policy::containment::DriftScope;
use crate::policy::screening::{self, Role};
use crate::policy::section::{Section, digest_section, item_digest};
use crate::policy::status::{Event, Posture, SectionLive};
use crate::policy::views::{self, SectionView};
use crate::state::store::StateStore;
use crate::state::{self, audit::Outputs};
use serde_json::{Map, Value};

/// What the decision made of one record.
enum Outcome {
    /// Verified, moved the lifecycle, or nothing to check against.
    Checked,
    /// Checked against the catalogue alone: these listed items are not its own.
    Unreviewed(Vec<String>),
    /// Nothing of the answer is served, for this reason (the catalogue cannot be read, a
    /// page of a section not sealed yet was flagged or awaits approval).
    Withheld(String),
}

impl Engine {
    /// Checks the answer to a list of a sealed section (`pending`), `result`. A whole list
    /// is decided into the lifecycle ([`crate::policy::status::Event::Section`]); so is the
    /// last page of a paginated listing seen from its first, with the items of every page
    /// before it; any other page, or a list that cannot be read, is checked against the
    /// catalogue alone.
    pub(crate) fn check_section(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        pending: &PendingList,
        result: &Value,
    ) -> SectionVerdict {
        let section = pending.section;
        let items = result.get(section.items_member()).unwrap_or(&Value::Null);
        // A handshake without instructions shows the model nothing to seal.
        if section == Section::Instructions && items.is_null() {
            return SectionVerdict::Checked;
        }
        let next = result.get("nextCursor").and_then(cursor_text);
        let listing = (exchange, pending);
        match (&pending.cursor, next, items.as_array()) {
            (None, None, _) => self.decide_section(store, out, now_ms, listing, items, true),
            (_, next, Some(page)) => {
                self.section_page(store, out, now_ms, listing, (items, page), next.as_deref())
            }
            (_, _, None) => self.decide_section(store, out, now_ms, listing, items, false),
        }
    }

    /// One page of a paginated list of a sealed section: added to what was kept for the
    /// cursor it was asked with (pages accumulate per caller and section along the chain of
    /// cursors, as a paginated `tools/list`'s do); a page with more to come is checked
    /// against the catalogue alone and its listing kept for the cursor it hands out, and the
    /// last page of a listing seen from its first decides the whole list.
    fn section_page(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        (exchange, pending): (&Exchange, &PendingList),
        (items, page): (&Value, &[Value]),
        next: Option<&str>,
    ) -> SectionVerdict {
        let server = exchange.server.as_str();
        let caller = pages::pages_owner(pending.key_identity().as_deref(), pending.view_id());
        let owner = format!("{caller}\0{}", pending.section.name());
        let link = |cursor: &str| pages::chain_link(&owner, cursor);
        let read_from = pending.cursor.as_deref().map(link);
        let limits = &self.config.limits;
        let bounds = (limits.session_slots, limits.max_response_bytes);
        let listing = (exchange, pending);
        let acc = match pages::add_page(store, server, read_from.as_deref(), page, bounds) {
            Ok(acc) => acc,
            Err(NotAdded::Unreadable(e)) => return unreadable_state(&e),
            Err(NotAdded::TooLarge) => {
                return SectionVerdict::Withhold {
                    keys: None,
                    reason: format!(
                        "paginated {} over limits.max_response_bytes",
                        pending.method
                    ),
                };
            }
        };
        let Some(acc) = acc else {
            // Not seen from its first page: this page alone, against the catalogue.
            return self.decide_section(store, out, now_ms, listing, items, false);
        };
        match next {
            Some(next) => {
                if let Err(e) = state::put_pages(store, server, &link(next), bounds.0, Some(&acc)) {
                    // The whole list's decision at the last page would miss this page.
                    return unreadable_state(&e);
                }
                self.decide_section(store, out, now_ms, listing, items, false)
            }
            None => {
                if let Some(link) = &read_from {
                    let _cleared = state::put_pages(store, server, link, bounds.0, None);
                }
                let all = Value::Array(acc.items);
                self.decide_section(store, out, now_ms, listing, &all, true)
            }
        }
    }

    /// Decides a list of `section` showing `items`: into the lifecycle when it is the whole
    /// list (`whole`), against the catalogue alone otherwise.
    fn decide_section(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        (exchange, pending): (&Exchange, &PendingList),
        items: &Value,
        whole: bool,
    ) -> SectionVerdict {
        let section = pending.section;
        if self.seen_verified(store, (&exchange.server, section), pending.view_id(), items) {
            return SectionVerdict::Checked;
        }
        // The resources screening withholds never reach a client: they are no part of the
        // surface (a list seen verified before is not screened again here).
        let served;
        let items = match section {
            Section::Resources => match self.served_resources(&exchange.server, items) {
                Some(screened) => {
                    served = screened;
                    &served
                }
                None => items,
            },
            _ => items,
        };
        // A server shows one text: an array (a catalogue's form for several) is read as
        // something no catalogue holds, so it is withheld as unreadable.
        let shown = match (section, items) {
            (Section::Instructions, Value::Array(_)) => &Value::Bool(false),
            _ => items,
        };
        let listed = match digest_section(section, shown, &self.config.fingerprint) {
            Ok(listed) => listed,
            Err(e) => {
                return SectionVerdict::Withhold {
                    keys: None,
                    reason: format!("the {} cannot be checked: {e}", section.name()),
                };
            }
        };
        let server = exchange.server.clone();
        let mut outcome = Outcome::Checked;
        let mut verified = None;
        let decided = self.transition_deciding(
            store,
            out,
            &server,
            exchange.session.as_deref(),
            now_ms,
            &Map::new(),
            &mut |store, cache, config, record| {
                (outcome, verified) = (Outcome::Checked, None);
                // A list decides into the lifecycle when it is whole and the server's state
                // is this section's to move. A server closed by something else (another
                // section's drift, a tool drift, approval awaited, quarantine) keeps its
                // candidate under review, and its list is checked against the catalogue alone:
                // closed whole under server scope, and under tool scope, where the server
                // still serves, without the items the catalogue lacks or has otherwise.
                let decides = whole && movable(record, section);
                // A server without a baseline (its tools never listed: a server of prompts
                // alone, or a client that lists prompts before tools) begins its catalogue
                // here, with no tools: its first tool list is then a new view's, trusted on
                // first use under discovery like a first contact.
                let catalogue = match record.baseline.as_deref() {
                    Some(baseline) => {
                        cache.get_or_load(&*store, &server, baseline, &config.fingerprint)?
                    }
                    None => Some(Approved::empty()),
                };
                let Some(catalogue) = catalogue else {
                    let baseline = record.baseline.as_deref().unwrap_or_default();
                    outcome = Outcome::Withheld(format!(
                        "the approved catalogue {baseline} is not stored"
                    ));
                    return Ok(None);
                };
                let made = views::section_candidate(&catalogue, section, &listed);
                // Whether this kind of caller was shown the section before, and whether
                // there is room to record it.
                let view = pending.view_id().filter(|v| {
                    record.lists_section(section, &v.key)
                        || record.section_view_count(section) < config.limits.max_views
                });
                let seen = view.map(|v| SectionView::new(section, v, &listed));
                let new_view = seen
                    .as_ref()
                    .filter(|v| !record.lists_section(section, &v.key));
                if made.verifies(&catalogue) {
                    verified = Some(catalogue.fingerprint.clone());
                    // A view's first list of a sealed section is recorded once, and then
                    // each item it is listed for the first time (also while something else
                    // closes the server: the catalogue already has the item).
                    let unrecorded = |v: &&SectionView| {
                        let names = v.names.iter().map(String::as_str);
                        match new_view {
                            Some(_) => decides,
                            None => whole && record.section_names.lack(&v.recorded(), names),
                        }
                    };
                    return Ok(seen
                        .as_ref()
                        .filter(unrecorded)
                        .cloned()
                        .map(Event::SectionViewed));
                }
                if !decides {
                    // Only a whole list seals a section. A page of a section not sealed yet
                    // reaches the client before its listing is whole, so it is screened on
                    // its own (a flagged string never reaches the client on an early page),
                    // and under strict nothing unapproved is served.
                    if !made.first && !movable(record, section) {
                        // Under tool scope, items a drift of something else does not reach
                        // yet join its reach: refused, not only withheld from this answer.
                        let unreviewed = made.unreviewed();
                        let scope = config.drift_scope_of(&server);
                        let event = reach_widened(record, scope, section, &unreviewed);
                        outcome = Outcome::Unreviewed(unreviewed);
                        return Ok(event);
                    }
                    outcome = match made.first {
                        false => Outcome::Unreviewed(made.unreviewed()),
                        true if config.posture_of(&server) == Posture::Strict => {
                            Outcome::Withheld(format!(
                                "strict posture: the server's {} await approval of a whole list",
                                section.name()
                            ))
                        }
                        true => match screen_items(section, items, config, None) {
                            findings if findings.is_empty() => Outcome::Checked,
                            findings => Outcome::Withheld(format!(
                                "first-contact screening flagged this page: {}",
                                findings.join("; ")
                            )),
                        },
                    };
                    return Ok(None);
                }
                let document = candidate_document(&catalogue, section, items, &made.entries);
                let fingerprint = live::store_surface(store, cache, (config, &server), document)?;
                // Under discovery a kind of caller never shown the section before is trusted
                // on first use when it only adds items, as a new view of the tools is.
                let grows = !made.first
                    && made.redefined.is_empty()
                    && new_view.is_some()
                    && config.posture_of(&server) == Posture::Discovery;
                let findings = match (made.first, grows) {
                    (true, _) => screen_items(section, items, config, None),
                    (false, true) => screen_items(section, items, config, Some(&made.added)),
                    (false, false) => Vec::new(),
                };
                let reason = drift_reason(section, &made, seen.as_ref());
                // A drift: this answer is served without the items the catalogue lacks or
                // has otherwise (under server scope the closed server's answer replaces it),
                // and under tool scope those items are all the drift reaches.
                let mut reach = None;
                if !made.first && !grows {
                    let unreviewed = made.unreviewed();
                    if config.drift_scope_of(&server) == DriftScope::Tool {
                        reach = Some(unreviewed.iter().map(|k| section.item_name(k)).collect());
                    }
                    outcome = Outcome::Unreviewed(unreviewed);
                }
                Ok(Some(Event::Section(SectionLive {
                    section,
                    fingerprint,
                    first: made.first,
                    findings,
                    approved: false,
                    reason,
                    view: seen,
                    grows,
                    reach,
                })))
            },
        );
        if let (Ok(_), Some(baseline)) = (&decided, &verified) {
            self.sealed_memo.remember(&server, section, baseline, items);
        }
        match (decided, outcome) {
            (Err(e), _) => unreadable_state(&e),
            (Ok(_), Outcome::Checked) => SectionVerdict::Checked,
            (Ok(_), Outcome::Withheld(reason)) => SectionVerdict::Withhold { keys: None, reason },
            (Ok(_), Outcome::Unreviewed(keys)) => SectionVerdict::Withhold {
                reason: format!(
                    "{} {}(s) of this answer are not the approved ones and were withheld",
                    keys.len(),
                    section.item_word()
                ),
                keys: Some(keys),
            },
        }
    }
}

impl Engine {
    /// After a whole tool list's own decision, for a server that seals its tools' other
    /// fields (`annotations`, `outputSchema`, `title`, `execution`, `icons`): the listed tools
    /// the catalogue has with the same tool digest are compared field for field with the
    /// approved definitions. The first such list seals them as approved (under every posture:
    /// they are the approved definitions' own fields); a difference is drift, its candidate
    /// the catalogue with those tools as listed. A tool the catalogue lacks or has otherwise
    /// is the tool check's. Returns the record after the decision (`None`: nothing to
    /// decide), and the tools whose fields differ on a server closed by something else, which
    /// this list cannot decide: they are withheld from it (under tool scope the server still
    /// serves its other tools).
    pub(crate) fn check_tool_fields(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        tools: &Value,
        digests: &std::rc::Rc<live::LiveDigests>,
    ) -> Result<(Option<crate::policy::status::ServerRecord>, Vec<String>), crate::state::StateError>
    {
        let section = Section::ToolFields;
        let baseline = match self.record(store, &exchange.server) {
            Ok(Some(record)) => record.baseline.clone(),
            _ => None,
        };
        if let Some(baseline) = baseline
            && self
                .sealed_memo
                .tools_verified(&exchange.server, digests, &baseline)
        {
            return Ok((None, Vec::new()));
        }
        let listed = digests.pairs();
        let Ok(fields) = digest_section(section, tools, &self.config.fingerprint) else {
            return Ok((None, Vec::new()));
        };
        let server = exchange.server.clone();
        let mut decided = false;
        let mut verified = None;
        let mut unreviewed: Vec<String> = Vec::new();
        let updated = self.transition_deciding(
            store,
            out,
            &server,
            exchange.session.as_deref(),
            now_ms,
            &Map::new(),
            &mut |store, cache, config, record| {
                (decided, verified) = (false, None);
                unreviewed.clear();
                let Some(baseline) = record.baseline.as_deref() else {
                    return Ok(None);
                };
                // A server closed by something else keeps that candidate under review: this
                // list decides nothing, and a tool whose fields differ is withheld from it.
                let movable = movable(record, section);
                let Some(catalogue) =
                    cache.get_or_load(&*store, &server, baseline, &config.fingerprint)?
                else {
                    return Ok(None);
                };
                let sealed = catalogue.sealed.contains(&section);
                let computed;
                let approved = match sealed {
                    true => &catalogue.tool_fields,
                    false => {
                        let definitions = Value::Array(catalogue.definitions());
                        computed = digest_section(section, &definitions, &config.fingerprint)
                            .unwrap_or_default();
                        &computed
                    }
                };
                let changed: Vec<&str> = listed
                    .entries
                    .iter()
                    .filter(|(name, digest)| catalogue.digest(name) == Some(digest.as_str()))
                    .map(|(name, _)| name.as_str())
                    .filter(|name| fields.get(name) != approved.get(name))
                    .collect();
                if !movable {
                    unreviewed = changed.iter().map(|name| (*name).to_string()).collect();
                    // Under tool scope, tools a drift of something else does not reach yet
                    // join its reach: their calls are refused, not only their listing.
                    let scope = config.drift_scope_of(&server);
                    return Ok(reach_widened(record, scope, section, &unreviewed));
                }
                if changed.is_empty() && sealed {
                    verified = Some(baseline.to_string());
                    return Ok(None);
                }
                let mut document = catalogue.document();
                let mut definitions = catalogue.definitions();
                let listed_defs = tools.as_array().map_or(&[][..], Vec::as_slice);
                for definition in &mut definitions {
                    let name = definition.get("name").and_then(Value::as_str).unwrap_or("");
                    if !changed.contains(&name) {
                        continue;
                    }
                    let as_listed = listed_defs
                        .iter()
                        .find(|t| t.get("name").and_then(Value::as_str) == Some(name));
                    if let Some(as_listed) = as_listed {
                        *definition = as_listed.clone();
                    }
                }
                document.insert(Section::Tools.items_member().into(), Value::Array(definitions));
                seal_in(&mut document, &catalogue, section);
                let fingerprint = live::store_surface(store, cache, (config, &server), document)?;
                decided = true;
                let reason = match changed.is_empty() {
                    true => "the tools' other fields are sealed as the catalogue approved them".into(),
                    false => format!(
                        "the other fields (annotations, outputSchema, title, execution, icons) of tool(s) {changed:?} differ from the approved ones"
                    ),
                };
                // Under tool scope the drift reaches the tools whose fields differ.
                let reach = (!changed.is_empty()
                    && config.drift_scope_of(&server) == DriftScope::Tool)
                    .then(|| changed.iter().map(|name| (*name).to_string()).collect());
                Ok(Some(Event::Section(SectionLive {
                    section,
                    fingerprint,
                    first: changed.is_empty(),
                    findings: Vec::new(),
                    approved: changed.is_empty(),
                    reason,
                    view: None,
                    grows: false,
                    reach,
                })))
            },
        )?;
        if let Some(baseline) = &verified {
            self.sealed_memo.remember_tools(&server, digests, baseline);
        }
        Ok((decided.then_some(updated.after), unreviewed))
    }

    /// Whether `items` of `section` verified on this worker against the server's baseline of
    /// now (see [`crate::gateway::sealed_memo`]), seen through a view the record knows for
    /// the section (a view's first list is decided, to record it); a record that cannot be
    /// read: no.
    fn seen_verified(
        &mut self,
        store: &dyn StateStore,
        (server, section): (&str, Section),
        view: Option<&crate::policy::views::ViewId>,
        items: &Value,
    ) -> bool {
        let Ok(Some(record)) = self.record(store, server) else {
            return false;
        };
        let room = record.section_view_count(section) < self.config.limits.max_views;
        if view.is_some_and(|v| room && !record.lists_section(section, &v.key)) {
            return false;
        }
        let Some(baseline) = record.baseline.as_deref() else {
            return false;
        };
        let known = self.known_lists.holding(server, section, items);
        let listed = (server, section, baseline);
        let Some(mut verified) = self.sealed_memo.verified(listed, items, known.as_ref()) else {
            return false;
        };
        // A recorded view listed an item it was not listed before: decided, to record it.
        // Which items a view was listed only grows, so a remembered list is looked up in a
        // view's names once.
        let (Some(view), Some(member)) = (view, section.key_member()) else {
            return true;
        };
        if !record.lists_section(section, &view.key) || verified.covers(&view.key) {
            return true;
        }
        let keys = items.as_array().map_or(&[][..], Vec::as_slice);
        let keys = keys
            .iter()
            .filter_map(|i| i.get(member).and_then(Value::as_str));
        let recorded = crate::policy::views::recorded_section_view(section, &view.key);
        if record.section_names.lack(&recorded, keys) {
            return false;
        }
        verified.cover(&view.key);
        true
    }
}

/// Whether a list of `section` may move `record`: a verified server, or one whose candidate
/// under review this section made.
fn movable(record: &crate::policy::status::ServerRecord, section: Section) -> bool {
    use crate::policy::status::SchemaStatus;
    match record.status {
        SchemaStatus::Verified => true,
        SchemaStatus::Unbaselined => record.baseline.is_none(),
        _ => record.live_section == Some(section),
    }
}

/// The event that widens the reach of a drift under review to the items `keys` of `section`
/// (other than approved in a list checked against the catalogue alone) it does not reach yet,
/// when that drift is told item by item under tool scope: they are then refused, not only
/// withheld from that list. (Under server scope, or a drift that closes the whole server,
/// they are refused already.)
fn reach_widened(
    record: &crate::policy::status::ServerRecord,
    scope: DriftScope,
    section: Section,
    keys: &[String],
) -> Option<Event> {
    use crate::policy::containment::{Serving, serving};
    if scope != DriftScope::Tool || serving(record, scope) != Serving::AllBut {
        return None;
    }
    let names = keys.iter().map(|key| section.item_name(key));
    let unreached: Vec<String> = names.filter(|n| record.withheld(n).is_none()).collect();
    (!unreached.is_empty()).then_some(Event::Withheld(unreached))
}

/// The verdict when the server's state cannot be read: nothing of the answer is served.
fn unreadable_state(e: &crate::state::StateError) -> SectionVerdict {
    SectionVerdict::Withhold {
        keys: None,
        reason: format!("the server's state cannot be read ({e})"),
    }
}

/// The stored form of the candidate: the catalogue's document with `section` holding the
/// items of `entries` (each as listed in `items` when listed, else as approved) and sealed.
fn candidate_document(
    catalogue: &Approved,
    section: Section,
    items: &Value,
    entries: &crate::policy::fingerprint::ToolDigests,
) -> Map<String, Value> {
    let mut document = catalogue.document();
    // An entry as listed, else as approved; the instructions are found by their digest (one
    // text is keyed `instructions`, each of several by its digest).
    let listed_item = |key: &str, digest: &str| -> Option<&Value> {
        match (section.key_member(), items) {
            (None, text) => (item_digest(section, text) == digest).then_some(text),
            (Some(member), Value::Array(list)) => list
                .iter()
                .find(|item| item.get(member).and_then(Value::as_str) == Some(key)),
            _ => None,
        }
    };
    // An item's digest covers its key: the approved item of an entry is the one of its digest.
    let approved_item = |digest: &str| {
        let mut items = catalogue.section_items(section);
        items.find(|item| item.digest == digest)
    };
    let mut chosen: Vec<Value> = entries
        .entries
        .iter()
        .filter_map(|(key, digest)| {
            listed_item(key, digest)
                .cloned()
                .or_else(|| approved_item(digest).map(|i| i.definition.clone()))
        })
        .collect();
    let member = section.items_member().to_string();
    let shown = match (section.key_member(), chosen.len()) {
        (None, 1) => chosen.pop(),
        (None, 0) => None,
        _ => Some(Value::Array(chosen)),
    };
    match shown {
        Some(shown) => document.insert(member, shown),
        None => document.remove(&member),
    };
    seal_in(&mut document, catalogue, section);
    document
}

/// Names in `document` the sections `catalogue` seals and `section`.
fn seal_in(document: &mut Map<String, Value>, catalogue: &Approved, section: Section) {
    let mut sealed: Vec<Section> = catalogue.sealed.clone();
    if !sealed.contains(&section) {
        sealed.push(section);
        crate::wire::order::sort(&mut sealed);
    }
    let names = sealed.iter().map(|s| Value::from(s.name()));
    document.insert("sealed".into(), Value::Array(names.collect()));
}

/// What differs, in words (`view`: the view that was shown it).
fn drift_reason(
    section: Section,
    made: &views::SectionCandidate,
    view: Option<&SectionView>,
) -> String {
    let shown = view.map_or(String::new(), |v| {
        format!(" (shown to the view {})", v.describe())
    });
    let reason = what_differs(section, made);
    format!("{reason}{shown}")
}

/// What differs, in words.
fn what_differs(section: Section, made: &views::SectionCandidate) -> String {
    let word = section.item_word();
    if made.first {
        return format!(
            "the server's {} are listed for the first time",
            section.name()
        );
    }
    if section == Section::Instructions {
        return "the server's instructions differ from the approved ones".to_string();
    }
    let mut parts = Vec::new();
    if !made.added.is_empty() {
        parts.push(format!("new {word}(s) {:?}", made.added));
    }
    if !made.redefined.is_empty() {
        parts.push(format!("changed {word}(s) {:?}", made.redefined));
    }
    format!(
        "the server's {} differ from the approved ones: {}",
        section.name(),
        parts.join(", ")
    )
}

/// First-contact screening of a section's model-visible strings: the instructions, and
/// each item's `title` and `description` (a prompt's arguments' descriptions too), as
/// `item: kind: detail` lines. `only`: the keys of the items to screen (`None`: every item;
/// the instructions are one text, always screened).
fn screen_items(
    section: Section,
    items: &Value,
    config: &crate::config::Config,
    only: Option<&[String]>,
) -> Vec<String> {
    if !config.screening.enabled {
        return Vec::new();
    }
    let mut strings = screening::Strings::new(&config.screening);
    let mut found = Vec::new();
    let mut screen = |item: &str, at: String, text: &str| {
        for finding in strings.screen(item, &at, text, Role::Prose) {
            found.push(finding.to_string());
        }
    };
    let name = section.name();
    if let Value::String(text) = items {
        screen("instructions", "instructions".into(), text);
    }
    for item in items.as_array().map_or(&[][..], Vec::as_slice) {
        let key = section
            .key_member()
            .and_then(|m| item.get(m))
            .and_then(Value::as_str)
            .unwrap_or("");
        if only.is_some_and(|keys| !keys.iter().any(|k| k == key)) {
            continue;
        }
        for field in ["title", "description"] {
            if let Some(text) = item.get(field).and_then(Value::as_str) {
                screen(key, format!("{name}/{key}/{field}"), text);
            }
        }
        let arguments = item.get("arguments").and_then(Value::as_array);
        for argument in arguments.map_or(&[][..], Vec::as_slice) {
            let arg = argument.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(text) = argument.get("description").and_then(Value::as_str) {
                screen(key, format!("{name}/{key}/arguments/{arg}"), text);
            }
        }
    }
    crate::wire::order::sort(&mut found);
    found.dedup();
    found.truncate(screening::MAX_FINDINGS);
    found
}
