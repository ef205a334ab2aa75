//! What a complete live list makes of a server's record: decided inside the
//! compare-and-swap, from the very record being swapped.
//!
//! Main design decision: the list's own facts (its digests, its view, its screening findings)
//! are computed once; everything that depends on the record (whether it verifies against the
//! catalogue and its view's names, the candidate catalogue, how far a drift reaches, whether
//! a new view is trusted or past the bound) is decided by [`LiveCheck::decide`] on each
//! attempt, so a record another worker wrote in between is decided again, never handed an
//! answer computed for the record before it.

use crate::config::Config;
use crate::policy::approved::{Approved, ApprovedCache, document_fingerprint};
use crate::policy::containment::{self, Differing, DriftReach};
use crate::policy::fingerprint::ToolDigests;
use crate::policy::section::Section;
use crate::policy::status::{LiveSet, Posture, SchemaStatus, ServerRecord};
use crate::policy::views::{self, Candidate, ViewId, ViewRead, ViewRecord};
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use serde_json::Value;
use std::cell::OnceCell;
use std::rc::Rc;

/// The digests of a whole live tool set and its fingerprint: computed from its definitions,
/// or those of the cached set it equals. Shared with the known list that remembers the list
/// ([`crate::gateway::known_list`]), so a list seen again is not digested again.
#[derive(Debug)]
pub(crate) enum LiveDigests {
    /// Digested from the list: the digests and their fingerprint.
    Computed(ToolDigests, String),
    /// The list is known to be exactly this cached set (its digests as pairs made only when
    /// a decision needs them).
    Cached(Rc<Approved>, OnceCell<ToolDigests>),
}

impl LiveDigests {
    /// Digests computed from a list, with their fingerprint.
    pub(crate) fn computed(digests: ToolDigests) -> Self {
        let fingerprint = digests.fingerprint();
        LiveDigests::Computed(digests, fingerprint)
    }

    /// The set's server fingerprint (its tool fingerprint).
    pub(crate) fn fingerprint(&self) -> &str {
        match self {
            LiveDigests::Computed(_, fingerprint) => fingerprint,
            LiveDigests::Cached(set, _) => &set.tool_fingerprint,
        }
    }

    /// Whether these are the digests of a cached set.
    pub(crate) fn is_cached(&self) -> bool {
        matches!(self, LiveDigests::Cached(..))
    }

    /// The `(name, digest)` pairs.
    pub(crate) fn pairs(&self) -> &ToolDigests {
        match self {
            LiveDigests::Computed(digests, _) => digests,
            LiveDigests::Cached(set, pairs) => {
                pairs.get_or_init(|| set.digests().unwrap_or_default())
            }
        }
    }
}

/// A complete live list's own facts, computed once from the list.
pub(super) enum LiveCheck<'t> {
    /// Not a valid tool set (repeated or missing names, ...): the reason.
    Invalid(String),
    /// A valid set.
    Valid {
        /// Its own server fingerprint.
        fingerprint: String,
        /// Its digests, as computed or as the cached set it equals.
        digests: Rc<LiveDigests>,
        /// Its definitions.
        tools: &'t Value,
        /// The view it was listed to.
        view: Option<&'t ViewRead>,
    },
}

/// What [`LiveCheck::decide`] made of one record.
pub(super) enum Decided {
    /// Apply this to the lifecycle (and whether it is a drift from a baseline).
    Apply(LiveSet, bool),
    /// The list was checked against the catalogue alone (its view cannot be told, or is
    /// new past `limits.max_views`): nothing changes; these listed tools are not in the
    /// catalogue and are withheld from the answer.
    CatalogueAlone {
        /// Listed tools the catalogue lacks.
        withheld: Vec<String>,
        /// The view was new past the bound (audited `view.limit`).
        past_bound: bool,
    },
}

/// What `decide` needs besides the record.
pub(super) struct Context<'a> {
    pub(super) config: &'a Config,
    pub(super) server: &'a str,
    pub(super) now_ms: u64,
}

impl LiveCheck<'_> {
    pub(super) fn new<'t>(
        digests: Result<Rc<LiveDigests>, String>,
        tools: &'t Value,
        view: Option<&'t ViewRead>,
    ) -> LiveCheck<'t> {
        match digests {
            Err(reason) => LiveCheck::Invalid(reason),
            Ok(digests) => LiveCheck::Valid {
                fingerprint: digests.fingerprint().to_string(),
                digests,
                tools,
                view,
            },
        }
    }

    /// The list's own digests and fingerprint (none for an invalid set).
    pub(super) fn digests(&self) -> Option<&Rc<LiveDigests>> {
        match self {
            LiveCheck::Valid { digests, .. } => Some(digests),
            LiveCheck::Invalid(_) => None,
        }
    }

    /// What the list makes of `record`. It may store the set it hands the lifecycle (the
    /// candidate an admin reviews; content-addressed, so a retry stores nothing twice).
    pub(super) fn decide(
        &self,
        store: &mut dyn StateStore,
        cache: &mut ApprovedCache,
        memo: &mut CandidateMemo,
        at: &Context<'_>,
        record: &ServerRecord,
    ) -> Result<Decided, StateError> {
        let (fingerprint, listed, tools, view) = match self {
            LiveCheck::Invalid(reason) => {
                let reason = reason.clone();
                return Ok(Decided::Apply(LiveSet::Invalid { reason }, false));
            }
            LiveCheck::Valid {
                fingerprint,
                digests,
                tools,
                view,
            } => (
                fingerprint,
                digests,
                *tools,
                view.and_then(|v| v.as_ref().ok()),
            ),
        };
        let config = at.config;
        let listed_defs = tools.as_array().map_or(&[][..], Vec::as_slice);
        let Some(baseline) = record.baseline.as_deref() else {
            // First contact: the list is the candidate (screened as a first contact).
            let Some(view) = view else {
                return Ok(Decided::CatalogueAlone {
                    withheld: views::names_of(listed.pairs()),
                    past_bound: false,
                });
            };
            store_set(
                store,
                cache,
                (config, at.server, record),
                (fingerprint, None),
                &|| listed_defs.to_vec(),
            )?;
            let findings = crate::policy::screening::screen(tools, Some(record), &config.screening);
            let live = LiveSet::Valid {
                fingerprint: fingerprint.clone(),
                matches: false,
                findings,
                reach: DriftReach::Unknown,
                view: Some(seen(view, listed.pairs(), None, at.now_ms)),
                grows: false,
            };
            return Ok(Decided::Apply(live, false));
        };
        let catalogue = cache.get_or_load(&*store, at.server, baseline, &config.fingerprint)?;
        let Some(catalogue) = catalogue else {
            // Known by its fingerprint only: the list must be the whole of it.
            let matches = fingerprint == baseline;
            store_set(
                store,
                cache,
                (config, at.server, record),
                (fingerprint, None),
                &|| listed_defs.to_vec(),
            )?;
            let reach = match matches {
                true => DriftReach::Unknown,
                false => DriftReach::Server(
                    "the baseline is known by its fingerprint only, so the drift cannot be told tool by tool"
                        .into(),
                ),
            };
            let live = LiveSet::Valid {
                fingerprint: fingerprint.clone(),
                matches,
                findings: Vec::new(),
                reach,
                view: view.map(|v| seen(v, listed.pairs(), record.view(&v.key), at.now_ms)),
                grows: false,
            };
            return Ok(Decided::Apply(live, !matches));
        };
        let known = view.and_then(|v| record.view(&v.key));
        let past_bound =
            view.is_some() && known.is_none() && record.views.len() >= config.limits.max_views;
        let told = view.filter(|_| !past_bound);
        if *fingerprint == catalogue.tool_fingerprint {
            // The list is the catalogue's tools (equal fingerprints, equal digests name for
            // name): nothing is added, redefined or dropped, so it verifies when its view is
            // new or was recorded with the catalogue's names, decided without building a
            // candidate (every list of an honest server takes this path, and its candidate
            // would only be the catalogue again). Any other record is decided below.
            match (told, known) {
                (None, _) => {
                    return Ok(Decided::CatalogueAlone {
                        withheld: Vec::new(),
                        past_bound,
                    });
                }
                (Some(view), Some(known)) if memo.names_are(&known.names, &catalogue) => {
                    let seen = view_record(view, known.names.clone(), Some(known), at.now_ms);
                    return Ok(verified(catalogue.fingerprint.clone(), seen));
                }
                (Some(view), None) => {
                    let names = catalogue.tools.keys().cloned().collect();
                    let seen = view_record(view, names, None, at.now_ms);
                    return Ok(verified(catalogue.fingerprint.clone(), seen));
                }
                (Some(_), Some(_)) => {}
            }
        }
        let listed = listed.pairs();
        let allow_subset = config.server(at.server).allow_subset;
        let others = || {
            record
                .views
                .iter()
                .filter(|o| told.is_none_or(|v| o.key != v.key))
        };
        let made = memo.candidate(
            (&catalogue, fingerprint),
            known.map(|k| &k.names),
            others().map(|o| &o.names),
            allow_subset,
            || {
                views::candidate(
                    &catalogue,
                    (listed, fingerprint),
                    known,
                    others(),
                    allow_subset,
                )
            },
        );
        let candidate = &made.candidate;
        let Some(view) = told else {
            if candidate.redefined.is_empty() {
                return Ok(Decided::CatalogueAlone {
                    withheld: candidate.added.clone(),
                    past_bound,
                });
            }
            // A tool shown differently is drift, whatever the view.
            return drift(
                store,
                cache,
                (at, record),
                &catalogue,
                &made,
                listed_defs,
                None,
            );
        };
        if candidate.verifies(&catalogue) {
            // An allowed subset keeps the names recorded for the view.
            let names = match known {
                Some(known) => known.names.clone(),
                None => made.names(listed),
            };
            let seen = view_record(view, names, known, at.now_ms);
            return Ok(verified(candidate.fingerprint.clone(), seen));
        }
        let seen = view_record(view, made.names(listed), known, at.now_ms);
        // A catalogue another section began (its tools never listed) grows by its first tool
        // list under either posture: under strict it then awaits approval, as a first contact.
        let never_listed = record.views.is_empty() && catalogue.tools.is_empty();
        let grows = known.is_none()
            && candidate.redefined.is_empty()
            && (never_listed || config.posture_of(at.server) == Posture::Discovery)
            && record.status == SchemaStatus::Verified;
        if !grows {
            return drift(
                store,
                cache,
                (at, record),
                &catalogue,
                &made,
                listed_defs,
                Some(seen),
            );
        }
        // A new view trusted on first use: the tools it adds are screened like a first
        // contact, and the grown catalogue is the new baseline.
        let added: Vec<Value> = listed_defs
            .iter()
            .filter(|t| {
                let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
                candidate.added.iter().any(|a| a == name)
            })
            .cloned()
            .collect();
        let fresh = ServerRecord::new(at.now_ms);
        let findings =
            crate::policy::screening::screen(&Value::Array(added), Some(&fresh), &config.screening);
        let fingerprint = store_set(
            store,
            cache,
            (config, at.server, record),
            (&candidate.fingerprint, Some(&catalogue)),
            &|| views::candidate_definitions(&catalogue, candidate, listed_defs),
        )?;
        let live = LiveSet::Valid {
            fingerprint,
            matches: false,
            findings,
            reach: DriftReach::Unknown,
            view: Some(seen),
            grows: true,
        };
        Ok(Decided::Apply(live, false))
    }
}

/// A drift: the candidate is stored for review and handed to the lifecycle with how far it
/// reaches, tool by tool.
fn drift(
    store: &mut dyn StateStore,
    cache: &mut ApprovedCache,
    (at, record): (&Context<'_>, &ServerRecord),
    catalogue: &Approved,
    made: &Made,
    listed: &[Value],
    view: Option<ViewRecord>,
) -> Result<Decided, StateError> {
    let candidate = &made.candidate;
    let fingerprint = store_set(
        store,
        cache,
        (at.config, at.server, record),
        (&candidate.fingerprint, Some(catalogue)),
        &|| views::candidate_definitions(catalogue, candidate, listed),
    )?;
    let reach = made
        .reach
        .get_or_init(|| containment::classify(catalogue, &candidate.digests, true));
    let reach = DriftReach::Tools(reach.clone());
    let live = LiveSet::Valid {
        fingerprint,
        matches: false,
        findings: Vec::new(),
        reach,
        view,
        grows: false,
    };
    Ok(Decided::Apply(live, true))
}

/// A list that verifies against the catalogue, seen through `seen`.
fn verified(fingerprint: String, seen: ViewRecord) -> Decided {
    let live = LiveSet::Valid {
        fingerprint,
        matches: true,
        findings: Vec::new(),
        reach: DriftReach::Unknown,
        view: Some(seen),
        grows: false,
    };
    Decided::Apply(live, false)
}

/// The view record a list of `view` makes: the names it listed.
fn seen(
    view: &ViewId,
    listed: &ToolDigests,
    known: Option<&ViewRecord>,
    now_ms: u64,
) -> ViewRecord {
    view_record(view, views::names_of(listed).into(), known, now_ms)
}

/// The record of `view` listed `names` now (first seen when `known` was, or now).
fn view_record(
    view: &ViewId,
    names: Rc<[String]>,
    known: Option<&ViewRecord>,
    now_ms: u64,
) -> ViewRecord {
    ViewRecord {
        key: view.key.clone(),
        sources: view.sources.clone(),
        names,
        first_ms: known.map_or(now_ms, |k| k.first_ms),
        last_ms: now_ms,
    }
}

/// Stores a set the lifecycle is handed (a candidate for review, a first contact, a set
/// whose definitions were known by fingerprint only) unless it is stored already. The
/// definitions are gathered only to be stored: a drifted server lists the same set again and
/// again, and every definition copied for a set already stored would be thrown away.
/// `sections`: the catalogue whose sealed sections beyond tools the set keeps (a tool list's
/// candidate changes the tools alone). Returns the fingerprint the set is stored under: a
/// set that seals more than tools is named by its own document (the candidate's tools may
/// carry other fields than the catalogue's, which it seals too).
fn store_set(
    store: &mut dyn StateStore,
    cache: &mut ApprovedCache,
    at: (&Config, &str, &ServerRecord),
    (fingerprint, sections): (&str, Option<&Approved>),
    definitions: &dyn Fn() -> Vec<Value>,
) -> Result<String, StateError> {
    let (config, server, record) = at;
    // A set the record names is stored (nothing replaces a named set).
    let named = record.set_refs().contains(&Some(fingerprint));
    if (named && cache.contains(fingerprint))
        || state::holds_tool_set(&*store, server, fingerprint)?
    {
        return Ok(fingerprint.to_string());
    }
    let definitions = definitions();
    if let Some(catalogue) = sections.filter(|c| !c.sealed.is_empty()) {
        let mut document = catalogue.document();
        document.insert(
            Section::Tools.items_member().into(),
            Value::Array(definitions),
        );
        return store_surface(store, cache, (config, server), document);
    }
    state::put_tool_set(store, server, fingerprint, &definitions)?;
    if let Some(approved) =
        Approved::from_definitions(fingerprint, definitions, &config.fingerprint)
    {
        cache.insert(approved);
    }
    Ok(fingerprint.to_string())
}

/// Stores a set that seals more than tools (its surface `document`) under the fingerprint
/// the document names itself by, caches it, and returns that fingerprint.
pub(super) fn store_surface(
    store: &mut dyn StateStore,
    cache: &mut ApprovedCache,
    (config, server): (&Config, &str),
    document: serde_json::Map<String, Value>,
) -> Result<String, StateError> {
    let document = Value::Object(document);
    let invalid =
        || StateError::Corrupt(format!("server {server}: a candidate set is not a surface"));
    let fingerprint = document_fingerprint(&document, &config.fingerprint).ok_or_else(invalid)?;
    let Value::Object(members) = &document else {
        return Err(invalid());
    };
    state::put_surface_set(store, server, &fingerprint, members)?;
    if let Some(approved) = Approved::from_document(&fingerprint, document, &config.fingerprint) {
        cache.insert(approved);
    }
    Ok(fingerprint)
}

/// How many candidates a worker remembers: one per server and view a drift shows to, in the
/// common case; when full, the oldest is forgotten.
const MEMO_ENTRIES: usize = 8;

/// The candidates this worker made lately. A drifted server is listed again and again until
/// an admin acts, each time from the same inputs, so building its candidate catalogue and
/// classifying it anew would repeat, list after list, the work of the first. A candidate is a
/// pure function of the catalogue, the list's digests, the names of the list's view and of
/// the server's other views, and `allow_subset`; an entry is used only when all of them are
/// those of the record being decided (names compared, not assumed), so a record another
/// worker changed is decided again from what it holds.
#[derive(Default)]
pub(crate) struct CandidateMemo {
    entries: Vec<Rc<Made>>,
    /// The recorded names last found to be exactly a catalogue's (by its fingerprint): a
    /// record read again from the same bytes shares them, so an honest server's lists compare
    /// them once, not name by name on every list.
    catalogue_names: Option<(Rc<[String]>, String)>,
}

/// One candidate and what it was made from.
pub(super) struct Made {
    /// The catalogue's fingerprint and the list's (each determines its digests).
    catalogue: String,
    listed: String,
    /// The recorded names of the list's view (none: a new view, or one not told).
    view: Option<Rc<[String]>>,
    /// The names of the server's other views, in the record's order.
    others: Vec<Rc<[String]>>,
    allow_subset: bool,
    /// The candidate made of them.
    candidate: Candidate,
    /// How far it reaches from the catalogue, classified when a drift first needs it.
    reach: OnceCell<Differing>,
    /// The listed names, sorted, made when a view record first needs them.
    names: OnceCell<Rc<[String]>>,
}

impl Made {
    /// The names of `listed` (the list this candidate was made of), sorted.
    fn names(&self, listed: &ToolDigests) -> Rc<[String]> {
        Rc::clone(self.names.get_or_init(|| views::names_of(listed).into()))
    }
}

impl CandidateMemo {
    /// Whether `names` (a view's recorded names) are exactly the catalogue's, in its order
    /// (recorded names are kept sorted; any other record is left to the full decision). The
    /// very names last found so (the same allocation, kept alive here, so never another
    /// list's at a reused address) are not compared again for a catalogue of the same
    /// fingerprint, which determines its names.
    fn names_are(&mut self, names: &Rc<[String]>, catalogue: &Approved) -> bool {
        if let Some((known, fingerprint)) = &self.catalogue_names
            && Rc::ptr_eq(known, names)
            && *fingerprint == catalogue.fingerprint
        {
            return true;
        }
        let same = names.iter().eq(catalogue.tools.keys());
        if same {
            self.catalogue_names = Some((Rc::clone(names), catalogue.fingerprint.clone()));
        }
        same
    }

    /// The candidate of these inputs: remembered when a candidate was made of exactly them,
    /// else made by `make` and remembered.
    fn candidate<'r>(
        &mut self,
        (catalogue, listed): (&Approved, &str),
        view: Option<&Rc<[String]>>,
        others: impl Iterator<Item = &'r Rc<[String]>> + Clone,
        allow_subset: bool,
        make: impl FnOnce() -> Candidate,
    ) -> Rc<Made> {
        let others_len = others.clone().count();
        let hit = self.entries.iter().find(|m| {
            m.catalogue == catalogue.fingerprint
                && m.listed == listed
                && m.allow_subset == allow_subset
                && same_view_names(m.view.as_ref(), view)
                && m.others.len() == others_len
                && m.others
                    .iter()
                    .zip(others.clone())
                    .all(|(a, b)| views::same_names(a, b))
        });
        if let Some(hit) = hit {
            return Rc::clone(hit);
        }
        let made = Rc::new(Made {
            catalogue: catalogue.fingerprint.clone(),
            listed: listed.to_string(),
            view: view.cloned(),
            others: others.cloned().collect(),
            allow_subset,
            candidate: make(),
            reach: OnceCell::new(),
            names: OnceCell::new(),
        });
        if self.entries.len() >= MEMO_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(Rc::clone(&made));
        made
    }
}

/// Whether two optional name lists are the same.
fn same_view_names(a: Option<&Rc<[String]>>, b: Option<&Rc<[String]>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => views::same_names(a, b),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn catalogue(fingerprint: &str) -> Approved {
        Approved {
            fingerprint: fingerprint.into(),
            tools: Default::default(),
            sealed: Vec::new(),
            items: Default::default(),
            tool_fingerprint: fingerprint.into(),
            parts: Vec::new(),
            tool_fields: Default::default(),
        }
    }

    fn names(list: &[&str]) -> Rc<[String]> {
        list.iter().map(|n| n.to_string()).collect()
    }

    fn made_of(fingerprint: &str) -> Candidate {
        Candidate {
            digests: ToolDigests::default(),
            fingerprint: fingerprint.into(),
            added: Vec::new(),
            redefined: Vec::new(),
            names_hold: false,
        }
    }

    #[test]
    fn recorded_names_are_compared_with_the_catalogue_until_the_very_same_names_held() {
        use crate::policy::fingerprint::{FingerprintFields, digest_tools};
        let set = |tools: &[&str]| {
            let defs: Vec<Value> = tools
                .iter()
                .map(|n| serde_json::json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
            let fields = FingerprintFields::default();
            let fp = digest_tools(&Value::Array(defs.clone()), &fields)
                .unwrap()
                .fingerprint();
            Approved::from_definitions(&fp, defs, &fields).unwrap()
        };
        let (two, three) = (set(&["add", "echo"]), set(&["add", "echo", "zero"]));
        let mut memo = CandidateMemo::default();
        let recorded = names(&["add", "echo"]);
        assert!(memo.names_are(&recorded, &two));
        // The same names again (the record read from the same bytes): still exactly the
        // catalogue's; against another catalogue they are compared, and differ.
        assert!(memo.names_are(&recorded, &two));
        assert!(!memo.names_are(&recorded, &three));
        assert!(memo.names_are(&recorded, &two));
        // Other names, or equal names in another allocation, are compared name by name.
        assert!(!memo.names_are(&names(&["add"]), &two));
        assert!(!memo.names_are(&names(&["echo", "add"]), &two));
        assert!(memo.names_are(&names(&["add", "echo"]), &two));
        assert!(memo.names_are(&names(&["add", "echo", "zero"]), &three));
        assert!(!memo.names_are(&names(&["add", "echo", "zero"]), &two));
    }

    #[test]
    fn a_candidate_is_remembered_only_for_exactly_its_inputs() {
        let mut memo = CandidateMemo::default();
        let made = Cell::new(0);
        let ask = |memo: &mut CandidateMemo,
                   catalogue: &Approved,
                   listed: &str,
                   view: Option<&Rc<[String]>>,
                   others: &[Rc<[String]>],
                   allow_subset: bool| {
            memo.candidate(
                (catalogue, listed),
                view,
                others.iter(),
                allow_subset,
                || {
                    made.set(made.get() + 1);
                    made_of(&format!("candidate {}", made.get()))
                },
            )
        };
        let (c1, c2) = (catalogue("c1"), catalogue("c2"));
        let view = names(&["a", "b"]);
        let others = [names(&["b", "c"])];
        let first = ask(&mut memo, &c1, "l1", Some(&view), &others, false);
        assert_eq!(made.get(), 1);
        // The same inputs, the names in other allocations (as a record parsed again has them).
        let again = ask(
            &mut memo,
            &c1,
            "l1",
            Some(&names(&["a", "b"])),
            &[names(&["b", "c"])],
            false,
        );
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(made.get(), 1);
        // Each input on its own makes another candidate.
        let changed: [Rc<Made>; 7] = [
            ask(&mut memo, &c2, "l1", Some(&view), &others, false),
            ask(&mut memo, &c1, "l2", Some(&view), &others, false),
            ask(&mut memo, &c1, "l1", None, &others, false),
            ask(&mut memo, &c1, "l1", Some(&names(&["a"])), &others, false),
            ask(&mut memo, &c1, "l1", Some(&view), &[names(&["b"])], false),
            ask(&mut memo, &c1, "l1", Some(&view), &[], false),
            ask(&mut memo, &c1, "l1", Some(&view), &others, true),
        ];
        assert_eq!(made.get(), 8);
        for other in &changed {
            assert!(!Rc::ptr_eq(&first, other));
        }
        // Bounded: the oldest entries were forgotten, the latest is remembered.
        assert_eq!(memo.entries.len(), MEMO_ENTRIES);
        let latest = ask(&mut memo, &c1, "l1", Some(&view), &others, true);
        assert!(Rc::ptr_eq(&latest, &changed[6]));
        assert_eq!(made.get(), 8);
    }
}
