//! The part of a server's admin view that says what it serves: its drift scope and, under a
//! drift confined to tools, which tools are withheld and how each differs.
//!
//! Main design decision: everything here is derived, on request, from what the data path
//! decides with (the record's drift reach, through [`crate::policy::containment::serving`]), so the
//! view can never tell a reviewer something the gateway does not do. Who sees which tool
//! (caller-scoped lists) depends on the policy alone, which the operator's tools read from
//! the configuration (`toolseal report --config`, the console), not from a listener.

use crate::policy::containment::DriftScope;
use crate::policy::containment::{self, Serving};
use crate::policy::drift::DriftDiff;
use crate::policy::status::{SchemaStatus, ServerRecord};
use serde_json::{Map, Value, json};

/// Adds `drift_scope`, `serving` (`all`, `unchanged_tools` or `none`), `withheld_tools`
/// (`[{"tool", "change"}]`, each with its classified `changes` when `diff` is given) and,
/// when tool scope still closes the whole server, `server_level_drift` (why).
pub fn drift_scope(
    view: &mut Map<String, Value>,
    record: &ServerRecord,
    scope: DriftScope,
    diff: Option<&DriftDiff>,
) {
    let serving = containment::serving(record, scope);
    view.insert("drift_scope".into(), json!(scope.as_str()));
    let serves = match serving {
        Serving::All => "all",
        Serving::AllBut => "unchanged_tools",
        Serving::Nothing => "none",
    };
    view.insert("serving".into(), json!(serves));
    let withheld: Vec<Value> = match serving {
        Serving::AllBut => record
            .withheld_tools()
            .into_iter()
            .map(|(tool, change)| {
                let mut entry = Map::new();
                entry.insert("tool".into(), json!(tool));
                entry.insert("change".into(), json!(change.as_str()));
                if let Some(diff) = diff {
                    let changes = diff.changes.iter().filter(|c| c.tool == tool);
                    let changes = changes.map(crate::policy::drift::Change::to_json).collect();
                    entry.insert("changes".into(), Value::Array(changes));
                }
                Value::Object(entry)
            })
            .collect(),
        _ => Vec::new(),
    };
    view.insert("withheld_tools".into(), Value::Array(withheld));
    if scope == DriftScope::Tool
        && record.status == SchemaStatus::Changed
        && serving == Serving::Nothing
    {
        let why = record
            .drift_whole
            .as_deref()
            .unwrap_or("which tools differ is not known until the server's tools are listed again");
        view.insert("server_level_drift".into(), json!(why));
    }
}

/// Adds `views`: each view of the server (its sources and their values, header and
/// metadata values as SHA-256 prefixes; the names listed to it; when it was first and last
/// seen), and `drifted_view`: the view whose list made the candidate under review, with the
/// names it listed (approving the candidate records them); `section_views`: the keys of the
/// views that listed each sealed section, by section; `section_view_names`: the items of each
/// keyed section each view was listed, as `views` shows a view, keyed `SECTION/VIEW-KEY`;
/// and `drifted_section_view`:
/// the key of the view whose list of a section made the candidate.
pub fn views(view: &mut Map<String, Value>, record: &ServerRecord) {
    let shown = |v: &crate::policy::views::ViewRecord| {
        // Filled by insertion: collecting sorts through a copy of the standard sort.
        let mut sources = Map::new();
        for (name, value) in &v.sources {
            sources.insert(name.clone(), value.clone());
        }
        json!({"key": v.key, "sources": sources, "names": v.names,
            "first_seen_ms": v.first_ms, "last_seen_ms": v.last_ms})
    };
    let views: Vec<Value> = record.views.iter().map(shown).collect();
    view.insert("views".into(), Value::Array(views));
    let drifted = record.live_view.as_ref().map_or(Value::Null, shown);
    view.insert("drifted_view".into(), drifted);
    let also: Vec<Value> = record.live_views_also.iter().map(shown).collect();
    view.insert("drifted_views_also".into(), Value::Array(also));
    // The views that listed each sealed section (`SECTION/VIEW-KEY` in the record).
    let mut sections = Map::new();
    for recorded in &record.section_views {
        if let Some((section, key)) = recorded.split_once('/') {
            let keys = sections
                .entry(section)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(keys) = keys {
                keys.push(Value::from(key));
            }
        }
    }
    view.insert("section_views".into(), Value::Object(sections));
    // The items of each keyed section listed to each view (keyed `SECTION/VIEW-KEY`).
    let names: Vec<Value> = record.section_names.iter().map(shown).collect();
    view.insert("section_view_names".into(), Value::Array(names));
    let drifted = record
        .live_section_view
        .as_deref()
        .and_then(|v| v.split_once('/'));
    let drifted = drifted.map_or(Value::Null, |(_, key)| Value::from(key));
    view.insert("drifted_section_view".into(), drifted);
}
