//! The parts of a server's admin view that say what it serves and to whom: its drift scope,
//! the tools a contained drift withholds (and how each differs), and which approved tools
//! policy hides from every caller or from some.
//!
//! Main design decision: everything here is derived, on request, from what the data path
//! decides with (the record's drift reach, the policy, the baseline's definitions), through
//! the same functions ([`crate::containment::serving`], [`Policy::visibility`]), so the view
//! can never tell a reviewer something the gateway does not do.

use crate::approved::Approved;
use crate::config::DriftScope;
use crate::containment::{self, DriftReach, Serving};
use crate::drift::DriftDiff;
use crate::policy::{Policy, Visibility};
use crate::status::{SchemaStatus, ServerRecord};
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
    let (serves, withheld) = match serving {
        Serving::All => ("all", &[][..]),
        Serving::AllBut(tools) => ("unchanged_tools", tools),
        Serving::Nothing => ("none", &[][..]),
    };
    view.insert("serving".into(), json!(serves));
    let withheld: Vec<Value> = withheld
        .iter()
        .map(|w| {
            let mut entry = json!({"tool": w.tool, "change": w.change.as_str()});
            if let (Some(diff), Some(obj)) = (diff, entry.as_object_mut()) {
                let changes: Vec<Value> = diff
                    .changes
                    .iter()
                    .filter(|c| c.tool == w.tool)
                    .map(crate::drift::Change::to_json)
                    .collect();
                obj.insert("changes".into(), Value::Array(changes));
            }
            entry
        })
        .collect();
    view.insert("withheld_tools".into(), Value::Array(withheld));
    let closed_whole = scope == DriftScope::Tool
        && record.status == SchemaStatus::Changed
        && serving == Serving::Nothing;
    if closed_whole {
        let why = match &record.drift_reach {
            DriftReach::Server(why) => why.as_str(),
            _ => "which tools differ is not known until the server's tools are listed again",
        };
        view.insert("server_level_drift".into(), json!(why));
    }
}

/// `{"caller_scoped", "hidden_from_everyone": [names], "depends_on_caller": [{"tool",
/// "rules"}]}` over the approved tools of `server` (`baseline`): `caller_scoped` says whether
/// policy can hide anything at all; a tool every caller sees is not listed.
pub fn visibility(policy: &Policy, server: &str, baseline: Option<&Approved>) -> Value {
    let mut nobody = Vec::new();
    let mut depends = Vec::new();
    if policy.may_hide() {
        for (name, tool) in baseline.map(|b| &b.tools).into_iter().flatten() {
            match policy.visibility(server, name, tool.annotations()) {
                Visibility::Everyone => {}
                Visibility::Nobody => nobody.push(json!(name)),
                Visibility::Depends(rules) => depends.push(json!({"tool": name, "rules": rules})),
            }
        }
    }
    json!({
        "caller_scoped": policy.may_hide(),
        "hidden_from_everyone": nobody,
        "depends_on_caller": depends,
    })
}
