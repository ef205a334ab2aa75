//! Surface views: one server, a tool set per kind of caller.
//!
//! Main design decision: the approved surface of a server is split in two. The *catalogue*
//! is the approved definition of every tool name (the baseline set: the server fingerprint
//! is computed over it, so a server seen through one view keeps the fingerprint, pins and
//! locks it always had). A *view* is one kind of caller, keyed by the values of the
//! configured sources for a request (its protocol revision, the client capabilities it
//! declared, a path, a header, a metadata value), and records the names it was listed. A
//! list verifies when every tool it shows has exactly the catalogue's digest (a tool shown
//! differently to one kind of caller is drift: it is how a targeted poisoning looks) and
//! its view lists the names recorded for it. What a list would make of the catalogue (the
//! *candidate*: the catalogue with the list's definitions applied) is one pure function of
//! the catalogue, the views and the list, so the lifecycle decides it from the very record
//! it swaps.

use crate::policy::approved::Approved;
use crate::policy::fingerprint::{ToolDigests, sha256_hex};
use crate::policy::section::Section;
use crate::wire::canonical::to_canonical_string;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Where a request's view comes from (`views`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewSource {
    /// The request's protocol revision.
    Revision,
    /// The sorted names of the client capabilities it declared (only those its revision
    /// defines).
    Capabilities,
    /// The request path without its query.
    Path,
    /// A request header (lower-cased name).
    Header(String),
    /// Envoy dynamic metadata at `NAMESPACE/key/…`.
    Metadata(String),
}

impl ViewSource {
    /// How reviews name the source: `revision`, `capabilities`, `path`, `header:NAME`,
    /// `metadata:PATH`.
    pub fn label(&self) -> String {
        match self {
            ViewSource::Revision => "revision".into(),
            ViewSource::Capabilities => "capabilities".into(),
            ViewSource::Path => "path".into(),
            ViewSource::Header(name) => format!("header:{name}"),
            ViewSource::Metadata(path) => format!("metadata:{path}"),
        }
    }

    /// Header and metadata values can carry identity: reviews show them hashed.
    fn shown_hashed(&self) -> bool {
        matches!(self, ViewSource::Header(_) | ViewSource::Metadata(_))
    }
}

/// The sources used when `views` is not configured.
pub fn default_sources() -> Vec<ViewSource> {
    vec![ViewSource::Revision, ViewSource::Capabilities]
}

/// Most sources `views` may list.
pub const MAX_VIEW_SOURCES: usize = 8;

/// The revision a request without any (no header, no `_meta`) speaks, as the transport
/// specifies.
pub const DEFAULT_REVISION: &str = "2025-03-26";

/// The client capability names a revision defines. Any other name a client declares is
/// ignored, so a caller cannot invent views by declaring made-up capabilities.
pub fn defined_capabilities(revision: &str) -> &'static [&'static str] {
    match revision {
        "2024-11-05" | "2025-03-26" => &["roots", "sampling"],
        "2025-06-18" => &["elicitation", "roots", "sampling"],
        _ => &["elicitation", "roots", "sampling", "tasks"],
    }
}

/// The sorted names of the capabilities in `declared` (a client `capabilities` object) that
/// `revision` defines.
pub fn capability_names(declared: &Value, revision: &str) -> Vec<String> {
    let defined = defined_capabilities(revision);
    let mut names: Vec<String> = declared
        .as_object()
        .map(|caps| {
            caps.keys()
                .filter(|name| defined.contains(&name.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    crate::wire::order::sort(&mut names);
    names
}

/// A request's view, told from its source values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewId {
    /// SHA-256 (hex) of the canonical JSON array of the source values.
    pub key: String,
    /// The sources and their values as reviews show them (`[label, value]`; header and
    /// metadata values as `sha256:` and the first 16 hex digits of their digest).
    pub sources: Vec<(String, Value)>,
}

impl ViewId {
    /// The view of `values`, one per source of `sources` (`Value::Null`: absent).
    pub fn new(sources: &[ViewSource], values: Vec<Value>) -> ViewId {
        let key = sha256_hex(to_canonical_string(&Value::Array(values.clone())).as_bytes());
        let sources = sources
            .iter()
            .zip(values)
            .map(|(source, value)| {
                let shown = match (&value, source.shown_hashed()) {
                    (Value::Null, _) | (_, false) => value,
                    (other, true) => {
                        let text = match other {
                            Value::String(s) => s.clone(),
                            other => to_canonical_string(other),
                        };
                        let digest = sha256_hex(text.as_bytes());
                        Value::String(format!("sha256:{}", digest.get(..16).unwrap_or("")))
                    }
                };
                (source.label(), shown)
            })
            .collect();
        ViewId { key, sources }
    }

    /// The view in words, for audit reasons: `revision=2025-11-25, capabilities=["roots"]`.
    pub fn describe(&self) -> String {
        describe(&self.sources)
    }
}

fn describe(sources: &[(String, Value)]) -> String {
    sources
        .iter()
        .map(|(label, value)| format!("{label}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A request's view as read: told, or not (why: a source could not be read, such as the
/// capabilities of a 2025 session whose `initialize` is no longer remembered).
pub type ViewRead = Result<ViewId, String>;

/// The key of a view as read, if it was read and could be told.
pub fn told_key(view: Option<&ViewRead>) -> Option<&str> {
    view.and_then(|v| v.as_ref().ok()).map(|v| v.key.as_str())
}

/// The key of a view as read (empty: not read, or it cannot be told).
pub fn view_key(view: Option<&ViewRead>) -> &str {
    told_key(view).unwrap_or("")
}

/// One view of a server, kept in its record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewRecord {
    /// [`ViewId::key`].
    pub key: String,
    /// [`ViewId::sources`].
    pub sources: Vec<(String, Value)>,
    /// The tool names listed to this view, sorted. Shared: the record is copied on every
    /// list's decision, and a view's names change only when a list shows others.
    pub names: Rc<[String]>,
    /// When it was first seen (ms since the epoch).
    pub first_ms: u64,
    /// When a list of it last verified (ms since the epoch, kept to [`LAST_SEEN_STEP_MS`]).
    pub last_ms: u64,
}

/// Names shared by two records (a record and the copy a decision made of it) are equal
/// without comparing them name by name: the standard comparison of an `Rc` of a slice
/// compares the contents even when both point to the same allocation, and a record is
/// compared with its copy twice per list.
impl PartialEq for ViewRecord {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && self.sources == other.sources
            && same_names(&self.names, &other.names)
            && self.first_ms == other.first_ms
            && self.last_ms == other.last_ms
    }
}

impl Eq for ViewRecord {}

/// Whether two name lists are equal: the same allocation (shared by a record and its copy, or
/// by the records the parse cache hands out), or equal name for name.
pub(crate) fn same_names(a: &Rc<[String]>, b: &Rc<[String]>) -> bool {
    Rc::ptr_eq(a, b) || a[..] == b[..]
}

impl ViewRecord {
    /// The view in words.
    pub fn describe(&self) -> String {
        describe(&self.sources)
    }
}

/// A view that listed a section beyond tools (its prompts, templates or instructions), as its
/// server's record keeps it ([`SectionView::recorded`]). A view tells whether its kind of
/// caller has been shown the section before, so that under discovery a new kind of caller's
/// first list is trusted on first use, as a new view's tool list is, and which items of a
/// keyed section it has been shown ([`SectionNames`]), so that a prompt or template listed to
/// other kinds of caller only is not used by this one. An item a list leaves out stays in the
/// catalogue and in the names of the views it was listed to: a shorter list is not drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionView {
    /// The section.
    pub section: Section,
    /// [`ViewId::key`].
    pub key: String,
    /// [`ViewId::sources`] (for the audit's words; not recorded).
    pub sources: Vec<(String, Value)>,
    /// The keys of the items the list showed, sorted (none for the instructions).
    pub names: Vec<String>,
}

impl SectionView {
    /// `view` listing `section`, its items `listed`.
    pub fn new(section: Section, view: &ViewId, listed: &ToolDigests) -> SectionView {
        let names = match section.key_member() {
            Some(_) => names_of(listed),
            None => Vec::new(),
        };
        SectionView {
            section,
            key: view.key.clone(),
            sources: view.sources.clone(),
            names,
        }
    }

    /// The view in words.
    pub fn describe(&self) -> String {
        describe(&self.sources)
    }

    /// How a server's record keeps it: `SECTION/KEY` (a string, as the record's other lists
    /// are: the module has no reader of its own for it).
    pub fn recorded(&self) -> String {
        recorded_section_view(self.section, &self.key)
    }
}

/// The recorded form of the view of `key` listing `section` ([`SectionView::recorded`]).
pub fn recorded_section_view(section: Section, key: &str) -> String {
    format!("{}/{key}", section.name())
}

/// The items of each keyed section (prompts, resource templates, sealed resources) each view
/// has been listed, by `SECTION/VIEW-KEY` ([`SectionView::recorded`]): the names only grow
/// (a view shown fewer items keeps those it was shown), so recording them is a write per new
/// item, not per list. A view without names recorded (recorded before names were, or by an
/// instance that does not know them) uses what the catalogue has until its next list records
/// them.
///
/// Each is kept as a view of the tools is ([`ViewRecord`]), its key `SECTION/VIEW-KEY`, so
/// the record is read by the one reader it already has.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SectionNames(Vec<ViewRecord>);

/// Names shared by a record and its copy are equal without comparing them name by name (as a
/// view's tool names, [`same_names`]).
impl PartialEq for SectionNames {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

/// `known` (sorted) with `names` added, sorted (`None`: it holds them all).
fn grown(known: &[String], names: &[String]) -> Option<Rc<[String]>> {
    let mut all: Vec<String> = names.iter().filter(|n| !holds(known, n)).cloned().collect();
    if all.is_empty() {
        return None;
    }
    // Both hold each name once (a list's keys are unique): so does the sum.
    all.extend(known.iter().cloned());
    crate::wire::order::sort(&mut all);
    Some(all.into())
}

/// Whether the sorted `names` hold `name`.
fn holds(names: &[String], name: &str) -> bool {
    names.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
}

impl SectionNames {
    /// Whether no view has names recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names recorded for `recorded` (`SECTION/VIEW-KEY`).
    fn of(&self, recorded: &str) -> Option<&[String]> {
        let found = self.0.iter().find(|v| v.key == recorded);
        found.map(|v| &v.names[..])
    }

    /// Whether the view of `key` was listed `name` of `section` (`None`: its names are not
    /// recorded).
    pub fn lists(&self, section: Section, key: &str, name: &str) -> Option<bool> {
        let names = self.of(&recorded_section_view(section, key))?;
        Some(holds(names, name))
    }

    /// Whether every view with names recorded for `section` was listed `name` (then which
    /// view a caller is does not matter).
    pub fn listed_to_all(&self, section: Section, name: &str) -> bool {
        let of_section = |v: &&ViewRecord| v.key.split('/').next() == Some(section.name());
        self.0
            .iter()
            .filter(of_section)
            .all(|v| holds(&v.names, name))
    }

    /// Whether the names recorded for `recorded` (`SECTION/VIEW-KEY`) lack one of `names`
    /// (none recorded: they lack every one).
    pub fn lack<'a>(&self, recorded: &str, mut names: impl Iterator<Item = &'a str>) -> bool {
        match self.of(recorded) {
            Some(known) => names.any(|n| !holds(known, n)),
            None => names.next().is_some(),
        }
    }

    /// Adds the items `seen` was listed to those recorded for it, at `now_ms`. Returns
    /// whether one was new.
    pub fn record(&mut self, seen: &SectionView, now_ms: u64) -> bool {
        let recorded = seen.recorded();
        match self.0.iter_mut().find(|v| v.key == recorded) {
            Some(view) => {
                let Some(names) = grown(&view.names, &seen.names) else {
                    return false;
                };
                view.names = names;
                view.last_ms = now_ms;
            }
            None => {
                let Some(names) = grown(&[], &seen.names) else {
                    return false;
                };
                let sources = seen.sources.clone();
                let (first_ms, last_ms) = (now_ms, now_ms);
                let key = recorded;
                let view = ViewRecord {
                    key,
                    sources,
                    names,
                    first_ms,
                    last_ms,
                };
                self.0.push(view);
            }
        }
        true
    }

    /// Adds the views `other` records names for that this does not (a view recorded in both
    /// keeps these names: its next list records what it lacks).
    pub fn merge(&mut self, other: &SectionNames) {
        for theirs in &other.0 {
            if self.of(&theirs.key).is_none() {
                self.0.push(theirs.clone());
            }
        }
    }

    /// Forgets every view's names.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Each recorded view, keyed `SECTION/VIEW-KEY`.
    pub fn iter(&self) -> impl Iterator<Item = &ViewRecord> {
        self.0.iter()
    }
}

/// How finely `last_ms` follows a view's lists: a record is rewritten for it at most once
/// per step, so a busy view does not rewrite its server's record on every list.
pub const LAST_SEEN_STEP_MS: u64 = 60_000;

/// What a complete list, seen through one view, makes of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The candidate catalogue's digests: the catalogue with the list's definitions applied,
    /// less the tools the view stopped listing that no other view lists.
    pub digests: ToolDigests,
    /// Its server fingerprint.
    pub fingerprint: String,
    /// Listed tools the catalogue does not have.
    pub added: Vec<String>,
    /// Listed tools the catalogue has with another digest (a tool shown differently).
    pub redefined: Vec<String>,
    /// Whether the view's names hold: a new view, or a known one listing its recorded names
    /// (a subset of them with `allow_subset`).
    pub names_hold: bool,
}

impl Candidate {
    /// Whether the list verifies: the catalogue unchanged, and the view's names hold.
    pub fn verifies(&self, catalogue: &Approved) -> bool {
        self.names_hold && self.fingerprint == catalogue.fingerprint
    }
}

/// The candidate a list (`listed`, its digests, whose fingerprint is `listed_fingerprint`)
/// of view `view` makes of `catalogue`, given the names the server's other views list.
/// `view`: the view's record when it is known.
pub fn candidate<'v>(
    catalogue: &Approved,
    (listed, listed_fingerprint): (&ToolDigests, &str),
    view: Option<&ViewRecord>,
    others: impl Iterator<Item = &'v ViewRecord>,
    allow_subset: bool,
) -> Candidate {
    // The listed names are a set already: `listed` is sorted by name, names unique.
    let is_listed = |name: &str| listed.get(name).is_some();
    let mut added = Vec::new();
    let mut redefined = Vec::new();
    for (name, digest) in &listed.entries {
        match catalogue.digest(name) {
            None => added.push(name.clone()),
            Some(approved) if approved != digest => redefined.push(name.clone()),
            Some(_) => {}
        }
    }
    // Sorted vectors, not `BTreeSet`s: this runs on every filtered list, where sorting is
    // cheaper than filling a set, and each set type is one more copy of the B-tree code in
    // the `.wasm` (docs/performance.md).
    let (names_hold, dropped) = match view {
        None => (true, Vec::new()),
        Some(view) => {
            let mut recorded: Vec<&str> = view.names.iter().map(String::as_str).collect();
            crate::wire::order::merge_sort_by(&mut recorded, |a, b| a.cmp(b));
            recorded.dedup();
            let dropped: Vec<&str> = recorded.iter().copied().filter(|n| !is_listed(n)).collect();
            // Two sets: equal when the recorded one drops nothing and they are as large.
            let equal = dropped.is_empty() && recorded.len() == listed.len();
            let subset = allow_subset
                && listed
                    .entries
                    .iter()
                    .all(|(n, _)| recorded.binary_search(&n.as_str()).is_ok());
            // An allowed subset drops nothing from the catalogue.
            match (equal, subset) {
                (true, _) => (true, Vec::new()),
                (false, true) => (true, Vec::new()),
                (false, false) => (false, dropped),
            }
        }
    };
    // A tool the view stopped listing leaves the catalogue only when no other view lists it.
    let others: Vec<&ViewRecord> = others.collect();
    let orphaned = |name: &str| {
        dropped.binary_search(&name).is_ok()
            && !others.iter().any(|o| o.names.iter().any(|n| n == name))
    };
    let unchanged = added.is_empty() && redefined.is_empty() && dropped.is_empty();
    let mut entries: Vec<(String, String)> = catalogue
        .tools
        .iter()
        .filter(|(name, _)| !is_listed(name) && !orphaned(name))
        .map(|(name, tool)| (name.clone(), tool.digest.clone()))
        .collect();
    let (digests, fingerprint) = match entries.is_empty() {
        // The list is the whole candidate: its fingerprint is known, and hashing every
        // digest again would be the costliest step of the list (docs/performance.md).
        true => (listed.clone(), listed_fingerprint.to_string()),
        false => {
            entries.extend(listed.entries.iter().cloned());
            // Names are unique: the catalogue's, less those listed, plus the listed ones.
            let digests = ToolDigests::from_entries(entries).unwrap_or_default();
            // Nothing added, redefined or dropped: the candidate is the catalogue itself.
            if unchanged {
                let fingerprint = catalogue.fingerprint.clone();
                return Candidate {
                    digests,
                    fingerprint,
                    added,
                    redefined,
                    names_hold,
                };
            }
            let fingerprint = digests.fingerprint();
            (digests, fingerprint)
        }
    };
    // A catalogue that seals more than tools keeps its other sections.
    let fingerprint = catalogue.with_section(Section::Tools, &fingerprint, digests.is_empty());
    Candidate {
        digests,
        fingerprint,
        added,
        redefined,
        names_hold,
    }
}

/// What a complete list of one section beyond tools (prompts, resource templates, sealed
/// resources, the instructions), seen through one view, makes of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionCandidate {
    /// The candidate's entries of that section.
    pub entries: ToolDigests,
    /// The candidate's surface fingerprint (the catalogue with that section replaced and
    /// sealed).
    pub fingerprint: String,
    /// The catalogue does not seal the section yet: this list would seal it first.
    pub first: bool,
    /// Listed items the catalogue does not have.
    pub added: Vec<String>,
    /// Listed items it has with another digest.
    pub redefined: Vec<String>,
}

impl SectionCandidate {
    /// Whether the list verifies: the section sealed already, the catalogue unchanged.
    pub fn verifies(&self, catalogue: &Approved) -> bool {
        !self.first && self.fingerprint == catalogue.fingerprint
    }

    /// The listed items that are not the catalogue's own: added, then redefined.
    pub fn unreviewed(&self) -> Vec<String> {
        let mut unreviewed = self.added.clone();
        unreviewed.extend(self.redefined.iter().cloned());
        unreviewed
    }
}

/// The candidate a complete list of `section` (its digests `listed`) makes of `catalogue`:
/// the catalogue with the listed items as listed and every other item kept as approved (an
/// item a list leaves out stays: which kinds of caller were shown a section is the record's
/// business, see [`SectionView`]).
pub fn section_candidate(
    catalogue: &Approved,
    section: Section,
    listed: &ToolDigests,
) -> SectionCandidate {
    let first = !catalogue.sealed.contains(&section);
    let approved_entries =
        ToolDigests::from_entries(catalogue.section_entries(section)).unwrap_or_default();
    // The instructions are a set of texts: compared by digest, whatever their keys.
    let texts;
    let (approved, listed) = match section {
        Section::Instructions => {
            texts = [texts_by_digest(&approved_entries), texts_by_digest(listed)];
            let [approved, listed] = &texts;
            (approved, listed)
        }
        _ => (&approved_entries, listed),
    };
    let mut added = Vec::new();
    let mut redefined = Vec::new();
    for (key, digest) in &listed.entries {
        match approved.get(key) {
            None => added.push(key.clone()),
            Some(known) if known != digest => redefined.push(key.clone()),
            Some(_) => {}
        }
    }
    let mut entries: Vec<(String, String)> = approved
        .entries
        .iter()
        .filter(|(key, _)| listed.get(key).is_none())
        .cloned()
        .collect();
    entries.extend(listed.entries.iter().cloned());
    let entries = match section {
        Section::Instructions => {
            let digests = entries.into_iter().map(|(_, d)| d).collect();
            crate::policy::section::instruction_texts(digests).unwrap_or_default()
        }
        _ => ToolDigests::from_entries(entries).unwrap_or_default(),
    };
    let fingerprint = catalogue.with_section(section, &entries.fingerprint(), entries.is_empty());
    SectionCandidate {
        fingerprint,
        entries,
        first,
        added,
        redefined,
    }
}

/// Instructions keyed by their digests (one text is keyed `instructions` in a section).
fn texts_by_digest(texts: &ToolDigests) -> ToolDigests {
    let digests = texts.entries.iter().map(|(_, d)| (d.clone(), d.clone()));
    ToolDigests::from_entries(digests.collect()).unwrap_or_default()
}

/// The definitions of a candidate: each listed tool as listed, every other as the
/// catalogue has it.
pub fn candidate_definitions(
    catalogue: &Approved,
    candidate: &Candidate,
    listed: &[Value],
) -> Vec<Value> {
    let name_of = |tool: &Value| tool.get("name").and_then(Value::as_str).map(str::to_string);
    let mut listed_names = BTreeSet::new();
    for name in listed.iter().filter_map(name_of) {
        listed_names.insert(name);
    }
    let mut definitions: Vec<Value> = candidate
        .digests
        .entries
        .iter()
        .filter(|(name, _)| !listed_names.contains(name))
        .filter_map(|(name, _)| catalogue.tools.get(name).map(|t| t.definition.clone()))
        .collect();
    definitions.extend(listed.iter().cloned());
    definitions
}

/// The sorted names of a list's digests.
pub fn names_of(listed: &ToolDigests) -> Vec<String> {
    let mut names: Vec<String> = listed.entries.iter().map(|(n, _)| n.clone()).collect();
    crate::wire::order::sort(&mut names);
    names
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn record(names: &[&str]) -> ViewRecord {
        let id = ViewId::new(
            &default_sources(),
            vec!["2025-06-18".into(), Value::Array(vec![])],
        );
        ViewRecord {
            key: id.key,
            sources: id.sources,
            names: names
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .into(),
            first_ms: 1,
            last_ms: 2,
        }
    }

    mod sections {
        use super::super::*;
        use crate::policy::fingerprint::FingerprintFields;
        use crate::policy::section::{Section, digest_section};
        use serde_json::json;

        fn prompt(name: &str, description: &str) -> Value {
            json!({"name": name, "description": description})
        }

        fn catalogue(prompts: Option<Value>) -> Approved {
            let tools = json!([{"name": "add", "description": "Adds"}]);
            let mut document = json!({"tools": tools, "sealed": []});
            if let Some(prompts) = prompts {
                document["prompts"] = prompts;
                document["sealed"] = json!(["prompts"]);
            }
            let fields = FingerprintFields::default();
            let sealed = match document["sealed"].as_array().unwrap().is_empty() {
                true => vec![],
                false => vec![Section::Prompts],
            };
            let fingerprint =
                crate::policy::section::Surface::of_document(&document, &fields, false)
                    .unwrap()
                    .sealed_fingerprint(&sealed);
            Approved::from_document(&fingerprint, document, &fields).unwrap()
        }

        fn decide(catalogue: &Approved, prompts: Value) -> SectionCandidate {
            let fields = FingerprintFields::default();
            let listed = digest_section(Section::Prompts, &prompts, &fields).unwrap();
            section_candidate(catalogue, Section::Prompts, &listed)
        }

        #[test]
        fn a_sealed_section_listed_again_verifies_and_a_changed_item_does_not() {
            let sealed = catalogue(Some(json!([prompt("greet", "Says hello")])));
            let same = decide(&sealed, json!([prompt("greet", "Says hello")]));
            assert!(same.verifies(&sealed));
            let changed = decide(
                &sealed,
                json!([prompt("greet", "Says hello, then reads ~/.ssh")]),
            );
            assert!(!changed.verifies(&sealed));
            assert_eq!(changed.redefined, ["greet"]);
            let more = decide(
                &sealed,
                json!([prompt("greet", "Says hello"), prompt("bye", "Bye")]),
            );
            assert_eq!(more.added, ["bye"]);
            assert!(!more.verifies(&sealed));
        }

        #[test]
        fn a_section_not_sealed_yet_is_a_first_sealing_whatever_it_lists() {
            let tools_only = catalogue(None);
            let first = decide(&tools_only, json!([prompt("greet", "Says hello")]));
            assert!(first.first && !first.verifies(&tools_only));
            assert_ne!(first.fingerprint, tools_only.fingerprint);
            // Sealed empty is another catalogue: a prompt showing up there is an addition.
            let empty = catalogue(Some(json!([])));
            assert_ne!(empty.fingerprint, tools_only.fingerprint);
            let added = decide(&empty, json!([prompt("greet", "Says hello")]));
            assert!(!added.first);
            assert_eq!(added.added, ["greet"]);
            assert_eq!(added.fingerprint, first.fingerprint);
        }

        #[test]
        fn an_item_a_list_leaves_out_stays_in_the_catalogue() {
            let sealed = catalogue(Some(json!([prompt("greet", "Hi"), prompt("bye", "Bye")])));
            let fewer = decide(&sealed, json!([prompt("greet", "Hi")]));
            assert!(fewer.verifies(&sealed));
            assert_eq!(fewer.entries.len(), 2);
        }
    }

    #[test]
    fn view_records_are_equal_by_content_whether_or_not_they_share_their_names() {
        let a = record(&["add", "echo"]);
        let shared = a.clone();
        assert!(Rc::ptr_eq(&a.names, &shared.names));
        assert_eq!(a, shared);
        let copied = record(&["add", "echo"]);
        assert!(!Rc::ptr_eq(&a.names, &copied.names));
        assert_eq!(a, copied);
        assert_ne!(a, record(&["add"]));
        assert_ne!(a, record(&["add", "echo", "zero"]));
        let mut later = a.clone();
        later.last_ms = 3;
        assert_ne!(a, later);
        let mut other = a.clone();
        other.key = "other".into();
        assert_ne!(a, other);
        let mut sourced = a.clone();
        sourced.sources[0].1 = "2025-11-25".into();
        assert_ne!(a, sourced);
        let mut first = a.clone();
        first.first_ms = 0;
        assert_ne!(a, first);
    }
}
