//! Drift scope (`servers.<id>.drift_scope`): how far a drift reaches, and what a drifted
//! server still serves.
//!
//! Main design decision: how far a drift reaches is decided once, when a live set is
//! compared with the baseline, and kept in the server's record ([`DriftReach`]), so that the
//! call path decides from the record it reads anyway, without loading or comparing tool
//! sets. A drift reaches single tools when the live set is a valid set and the baseline's
//! definitions are known: then each tool that is new, changed (another digest) or gone is
//! withheld on its own, because a withheld tool never reaches a client or a model, so
//! nothing it says (a poisoned description, a name that mimics another tool's) can act on
//! the tools that keep serving. Anything that cannot be told tool by tool reaches the server
//! as a whole: an invalid set (a repeated name, a tool without a name), or a baseline known
//! by fingerprint only. With `drift_scope: "tool"` a server whose drift reaches single tools
//! keeps serving every other tool; in every other case a drifted server is closed whole, as
//! with `"server"`. A drift of a sealed section reaches its items the same way, named
//! `SECTION/KEY` among the changed ones ([`crate::policy::section::Section::item_name`]),
//! and a tool drift on top of it reaches the server as a whole. The reach follows the last
//! live set (a server that fixes one tool gets it back once listed), while the status stays `changed` until an admin acts; a drift whose
//! reach is not known (a new pin moved the baseline, a record written before drift scopes)
//! serves nothing.

use crate::policy::approved::Approved;
use crate::policy::fingerprint::ToolDigests;
use crate::policy::section::Section;
use crate::policy::status::{SchemaStatus, ServerRecord};

/// How much of a drifted server is closed (`servers.<id>.drift_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriftScope {
    /// Any drift closes the whole server (the default).
    #[default]
    Server,
    /// A drift confined to single tools withholds only those tools: the others keep serving
    /// and working (see this module).
    Tool,
}

impl DriftScope {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftScope::Server => "server",
            DriftScope::Tool => "tool",
        }
    }
}

/// How one tool of a live set differs from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChange {
    /// Not in the baseline.
    Added,
    /// In the baseline with another digest.
    Changed,
    /// In the baseline, not in the live set.
    Removed,
}

impl ToolChange {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChange::Added => "added",
            ToolChange::Changed => "changed",
            ToolChange::Removed => "removed",
        }
    }
}

/// The tools of a live set that differ from the baseline, by how: what a drift confined to
/// tools withholds. Kept in the server's record (`drift_added`, `drift_changed`,
/// `drift_removed`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Differing {
    /// Tools the baseline does not have.
    pub added: Vec<String>,
    /// Tools the baseline has with another digest.
    pub changed: Vec<String>,
    /// Baseline tools the live set lacks.
    pub removed: Vec<String>,
}

impl Differing {
    /// Whether no tool differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }

    fn push(&mut self, name: &str, change: ToolChange) {
        let list = match change {
            ToolChange::Added => &mut self.added,
            ToolChange::Changed => &mut self.changed,
            ToolChange::Removed => &mut self.removed,
        };
        if !list.iter().any(|known| known == name) {
            list.push(name.to_string());
        }
    }
}

/// How far the drift of a live set reaches, as the list check tells the lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftReach {
    /// Not known (no baseline, or the set matches it).
    Unknown,
    /// These tools differ from the baseline, and nothing else.
    Tools(Differing),
    /// The set as a whole (why): it cannot be compared tool by tool.
    Server(String),
}

/// Classifies a valid live set against the baseline, tool by tool: every live tool that is
/// new or changed and, when `live` is the whole set, every baseline tool it lacks (a page
/// may lack a tool another page has). Empty when the two sets are equal. (A set that is not
/// valid, or a baseline whose definitions are not known, reaches the server as a whole: the
/// caller says so with [`DriftReach::Server`].)
pub fn classify(baseline: &Approved, live: &ToolDigests, whole: bool) -> Differing {
    let mut differing = Differing::default();
    for (name, digest) in &live.entries {
        match baseline.digest(name) {
            None => differing.push(name, ToolChange::Added),
            Some(approved) if approved != digest => differing.push(name, ToolChange::Changed),
            Some(_) => {}
        }
    }
    if whole {
        for name in baseline.tools.keys() {
            if live.get(name).is_none() {
                differing.push(name, ToolChange::Removed);
            }
        }
    }
    differing
}

impl ServerRecord {
    /// How `tool` differs from the baseline in the last live set, when the record says so.
    /// (The lists are short, and only a drifted server's calls look in them.)
    pub fn withheld(&self, tool: &str) -> Option<ToolChange> {
        self.drift_lists()
            .into_iter()
            .find(|(list, _)| list.iter().any(|name| name == tool))
            .map(|(_, change)| change)
    }

    /// Whether the record's drift reaches `item` of `section` (a prompt's name, a resource's
    /// URI): a section's drift names its items among the changed ones as `SECTION/KEY`
    /// ([`crate::policy::section::Section::item_name`]), and a drifted resource template
    /// reaches every URI it names.
    pub fn reaches_item(&self, section: Section, item: &str) -> bool {
        self.drift_changed
            .iter()
            .chain(&self.drift_also)
            .any(|name| match name.split_once('/') {
                Some((kind, key)) if kind == section.name() => key == item,
                Some((kind, template)) => {
                    section == Section::Resources
                        && kind == Section::ResourceTemplates.name()
                        && crate::policy::uri_template::matches(template, item)
                }
                None => false,
            })
    }

    /// Every tool the record says differs from the baseline: added, changed, then removed
    /// (then what lists checked against the catalogue alone added).
    pub fn withheld_tools(&self) -> Vec<(&str, ToolChange)> {
        let mut all = Vec::new();
        for (list, change) in self.drift_lists() {
            for name in list {
                all.push((name.as_str(), change));
            }
        }
        all
    }

    fn drift_lists(&self) -> [(&[String], ToolChange); 4] {
        [
            (&self.drift_added, ToolChange::Added),
            (&self.drift_changed, ToolChange::Changed),
            (&self.drift_removed, ToolChange::Removed),
            (&self.drift_also, ToolChange::Changed),
        ]
    }

    /// Records how far the last live set's drift reaches.
    pub(crate) fn set_reach(&mut self, reach: &DriftReach) {
        let (tools, whole) = match reach {
            DriftReach::Unknown => (Differing::default(), None),
            DriftReach::Tools(tools) => (tools.clone(), None),
            DriftReach::Server(why) => (Differing::default(), Some(why.clone())),
        };
        // What lists checked against the catalogue alone added to a drift told item by item
        // stays while the drift is measured again; it goes with the drift.
        if !matches!(reach, DriftReach::Tools(_)) {
            self.drift_also.clear();
        }
        self.drift_added = tools.added;
        self.drift_changed = tools.changed;
        self.drift_removed = tools.removed;
        self.drift_whole = whole;
    }

    /// Adds the tools a page showed differing to those already withheld (the complete set is
    /// compared when the last page arrives); a drift over the whole server stays so.
    pub(crate) fn add_page_reach(&mut self, page: &Differing) {
        if self.drift_whole.is_some() {
            return;
        }
        let mut tools = Differing {
            added: std::mem::take(&mut self.drift_added),
            changed: std::mem::take(&mut self.drift_changed),
            removed: std::mem::take(&mut self.drift_removed),
        };
        for name in &page.added {
            tools.push(name, ToolChange::Added);
        }
        for name in &page.changed {
            tools.push(name, ToolChange::Changed);
        }
        self.set_reach(&DriftReach::Tools(tools));
    }
}

/// What a server serves now: every tool, every tool but those its record withholds
/// ([`ServerRecord::withheld`]), or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// Every tool (verified, or drifted back to the baseline under tool scope).
    All,
    /// Every tool but those a drift confined to tools reaches (under tool scope).
    AllBut,
    /// Nothing: closed, or no baseline.
    Nothing,
}

/// What `record`'s server serves under `scope`. A server without a baseline serves nothing;
/// `verified` (and `unbaselined` with a baseline, awaiting a list) serves everything; under
/// tool scope, `changed` serves every tool its drift does not reach, or nothing when the drift
/// reaches the server as a whole or is not known; `pending` and `quarantined` serve nothing.
pub fn serving(record: &ServerRecord, scope: DriftScope) -> Serving {
    if record.baseline.is_none() {
        return Serving::Nothing;
    }
    match record.status {
        SchemaStatus::Unbaselined | SchemaStatus::Verified => Serving::All,
        SchemaStatus::Changed if scope == DriftScope::Tool => {
            let told = !(record.drift_added.is_empty()
                && record.drift_changed.is_empty()
                && record.drift_removed.is_empty());
            match (record.live_matches, &record.drift_whole, told) {
                (true, _, _) => Serving::All,
                (false, None, true) => Serving::AllBut,
                _ => Serving::Nothing,
            }
        }
        SchemaStatus::Changed | SchemaStatus::Pending | SchemaStatus::Quarantined => {
            Serving::Nothing
        }
    }
}
