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
//! with `"server"`. The reach follows the last live set (a server that fixes one tool gets
//! it back once listed), while the status stays `changed` until an admin acts; whatever is
//! not known is [`DriftReach::Unknown`], which serves nothing.

use crate::config::DriftScope;
use crate::status::{SchemaStatus, ServerRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How one tool of a live set differs from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// A tool withheld from clients until an admin reviews the drift.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldTool {
    /// Its name.
    pub tool: String,
    /// How it differs from the baseline.
    pub change: ToolChange,
}

/// How far the drift of a server's last live set reaches.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftReach {
    /// Not known: no drifted set compared yet, the baseline moved since (a new pin), or a
    /// record written before drift scopes existed. Serves nothing.
    #[default]
    Unknown,
    /// These tools differ from the baseline, sorted by name (empty: none does), and nothing
    /// else.
    Tools(Vec<WithheldTool>),
    /// The set as a whole (why): it cannot be compared tool by tool.
    Server(String),
}

impl DriftReach {
    /// Whether nothing is known (not written to the record).
    pub fn is_unknown(&self) -> bool {
        *self == DriftReach::Unknown
    }

    /// The withheld tool called `name`, if the reach names it.
    pub fn withheld(&self, name: &str) -> Option<&WithheldTool> {
        match self {
            DriftReach::Tools(tools) => find(tools, name),
            _ => None,
        }
    }

    /// The reach after a page of a paginated list showed `page` differing from the baseline:
    /// those tools join the ones already withheld (the complete set is compared when the last
    /// page arrives). A reach over the whole server stays so.
    pub fn with_page(&self, page: &[WithheldTool]) -> DriftReach {
        let mut tools: BTreeMap<&str, ToolChange> = BTreeMap::new();
        match self {
            DriftReach::Server(why) => return DriftReach::Server(why.clone()),
            DriftReach::Tools(known) => {
                tools.extend(known.iter().map(|t| (t.tool.as_str(), t.change)));
            }
            DriftReach::Unknown => {}
        }
        tools.extend(page.iter().map(|t| (t.tool.as_str(), t.change)));
        DriftReach::Tools(withheld_list(tools))
    }
}

/// The tool called `name` in `tools` (sorted by name, as a [`DriftReach`] keeps them).
pub fn find<'a>(tools: &'a [WithheldTool], name: &str) -> Option<&'a WithheldTool> {
    tools
        .binary_search_by(|t| t.tool.as_str().cmp(name))
        .ok()
        .and_then(|i| tools.get(i))
}

fn withheld_list(tools: BTreeMap<&str, ToolChange>) -> Vec<WithheldTool> {
    tools
        .into_iter()
        .map(|(tool, change)| WithheldTool {
            tool: tool.to_string(),
            change,
        })
        .collect()
}

/// Classifies a valid live set against the baseline, tool by tool, from their `(name,
/// digest)` pairs: every tool new, changed or gone, sorted by name. An empty list means the
/// two sets are equal. (A set that is not valid, or a baseline whose definitions are not
/// known, reaches the server as a whole: the caller says so with [`DriftReach::Server`].)
pub fn classify<'a>(
    baseline: impl IntoIterator<Item = (&'a str, &'a str)>,
    live: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<WithheldTool> {
    let mut approved: BTreeMap<&str, &str> = baseline.into_iter().collect();
    let mut differing: BTreeMap<&str, ToolChange> = BTreeMap::new();
    for (name, digest) in live {
        match approved.remove(name) {
            None => {
                differing.insert(name, ToolChange::Added);
            }
            Some(known) if known != digest => {
                differing.insert(name, ToolChange::Changed);
            }
            Some(_) => {}
        }
    }
    differing.extend(approved.into_keys().map(|name| (name, ToolChange::Removed)));
    withheld_list(differing)
}

/// What a server serves now: every tool, every tool but some, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving<'a> {
    /// Every tool (verified, or drifted back to the baseline under tool scope).
    All,
    /// Every tool but these (a drift reaching only them, under tool scope).
    AllBut(&'a [WithheldTool]),
    /// Nothing: closed, or no baseline.
    Nothing,
}

/// What `record`'s server serves under `scope`. A server without a baseline serves nothing;
/// `verified` (and `unbaselined` with a baseline, awaiting a list) serves everything; under
/// tool scope, `changed` serves every tool its drift does not reach, or nothing when the drift
/// reaches the server as a whole or is not known; `pending` and `quarantined` serve nothing.
pub fn serving(record: &ServerRecord, scope: DriftScope) -> Serving<'_> {
    if record.baseline.is_none() {
        return Serving::Nothing;
    }
    match record.status {
        SchemaStatus::Unbaselined | SchemaStatus::Verified => Serving::All,
        SchemaStatus::Changed if scope == DriftScope::Tool => {
            if record.live_matches {
                return Serving::All;
            }
            match &record.drift_reach {
                DriftReach::Tools(tools) if tools.is_empty() => Serving::All,
                DriftReach::Tools(tools) => Serving::AllBut(tools),
                DriftReach::Server(_) | DriftReach::Unknown => Serving::Nothing,
            }
        }
        SchemaStatus::Changed | SchemaStatus::Pending | SchemaStatus::Quarantined => {
            Serving::Nothing
        }
    }
}
