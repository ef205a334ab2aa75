//! Tool sets and tool-level fields: which tools came and went, and `description`, `title`,
//! `annotations`, `execution`, `icons` and unknown fields of the tools in both sets.
//!
//! Annotation hints are compared by their effective value (the MCP defaults fill in absent
//! hints: `readOnlyHint` false, `destructiveHint` true, `idempotentHint` false,
//! `openWorldHint` true). A hint that grants more (`readOnlyHint` true→false,
//! `destructiveHint` or `openWorldHint` false→true) is authority; a hint that claims less
//! is semantic, because it can relax annotation-based policy rules; spelling out a default
//! is additive. `execution.taskSupport` is additive when every old way of calling still
//! works (`forbidden`→`optional`), breaking otherwise.

use super::schema_diff::{self, Recorder, child, object_or_empty};
use super::{Change, ChangeClass, ChangeKind};
use crate::policy::fingerprint::{FingerprintField, FingerprintFields, tool_digest};
use crate::policy::schema::json_value::json_eq;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fields never compared.
const IGNORED: [&str; 2] = ["name", "_meta"];

/// Every change between the tool sets `old` and `new`.
pub(super) fn diff_sets(old: &[Value], new: &[Value]) -> Vec<Change> {
    let mut changes = Vec::new();
    let old_tools = index(old, true, &mut changes);
    let new_tools = index(new, false, &mut changes);
    for (name, tool) in &old_tools {
        if !new_tools.contains_key(name) {
            changes.push(whole_tool(name, ChangeKind::ToolRemoved, Some(tool), None));
        }
    }
    for (name, tool) in &new_tools {
        match old_tools.get(name) {
            None => changes.push(whole_tool(name, ChangeKind::ToolAdded, None, Some(tool))),
            Some(before) => diff_tool(name, before, tool, &mut changes),
        }
    }
    changes
}

/// Tools by name; tools without a string name, and repeated names, become `invalid_tool`.
#[inline(never)]
fn index<'a>(
    tools: &'a [Value],
    baseline: bool,
    changes: &mut Vec<Change>,
) -> BTreeMap<&'a str, &'a Map<String, Value>> {
    let mut by_name = BTreeMap::new();
    for (i, tool) in tools.iter().enumerate() {
        let named = tool
            .as_object()
            .and_then(|o| Some((o.get("name")?.as_str()?, o)));
        let problem = match named {
            Some((name, object)) if !by_name.contains_key(name) => {
                by_name.insert(name, object);
                continue;
            }
            Some((name, _)) => name.to_owned(),
            None => format!("#{i}"),
        };
        let (before, after) = if baseline {
            (Some(tool.clone()), None)
        } else {
            (None, Some(tool.clone()))
        };
        changes.push(Change {
            tool: problem,
            path: String::new(),
            kind: ChangeKind::InvalidTool,
            class: ChangeClass::Breaking,
            before,
            after,
        });
    }
    by_name
}

/// The tool without its ignored `_meta`.
fn visible(tool: &Map<String, Value>) -> Value {
    let mut copy = tool.clone();
    copy.remove("_meta");
    Value::Object(copy)
}

#[inline(never)]
fn whole_tool(
    name: &str,
    kind: ChangeKind,
    before: Option<&Map<String, Value>>,
    after: Option<&Map<String, Value>>,
) -> Change {
    let class = if kind == ChangeKind::ToolAdded {
        ChangeClass::Additive
    } else {
        ChangeClass::Breaking
    };
    Change {
        tool: name.to_owned(),
        path: String::new(),
        kind,
        class,
        before: before.map(visible),
        after: after.map(visible),
    }
}

/// Field-by-field changes of a tool present in both sets. Should the walk find nothing
/// while the tool's digest over every fingerprintable field moved (a spelling the walk
/// considers equivalent but the fingerprint does not), one unclassified `schema_changed`
/// (breaking) is reported for the whole tool: drift never passes silently.
#[inline(never)]
fn diff_tool(
    name: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    changes: &mut Vec<Change>,
) {
    let start = changes.len();
    diff_fields(name, old, new, changes);
    if changes.len() > start || same_but_meta(old, new) {
        return;
    }
    let fields = FingerprintFields::from_fields(&FingerprintField::ALL);
    let (before, after) = (Value::Object(old.clone()), Value::Object(new.clone()));
    if tool_digest(&before, &fields).ok() != tool_digest(&after, &fields).ok() {
        changes.push(Change {
            tool: name.to_owned(),
            path: String::new(),
            kind: ChangeKind::SchemaChanged,
            class: ChangeClass::Breaking,
            before: Some(visible(old)),
            after: Some(visible(new)),
        });
    }
}

#[inline(never)]
fn diff_fields(
    name: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    changes: &mut Vec<Change>,
) {
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(old.keys().chain(new.keys()));
    let mut rec = Recorder::new(name, changes);
    for key in keys {
        if IGNORED.contains(&key.as_str()) {
            continue;
        }
        let (before, after) = (old.get(key), new.get(key));
        let path = child("", key);
        match key.as_str() {
            "description" => rec.if_changed(
                &path,
                ChangeKind::DescriptionChanged,
                ChangeClass::Semantic,
                before,
                after,
            ),
            "title" => rec.if_changed(
                &path,
                ChangeKind::TitleChanged,
                ChangeClass::Semantic,
                before,
                after,
            ),
            "icons" => rec.if_changed(
                &path,
                ChangeKind::IconsChanged,
                ChangeClass::Semantic,
                before,
                after,
            ),
            "inputSchema" => schema_diff::diff_input(&mut rec, &path, before, after),
            "outputSchema" => schema_diff::diff_output(&mut rec, &path, before, after),
            "annotations" => diff_annotations(&mut rec, &path, before, after),
            "execution" => diff_execution(&mut rec, &path, before, after),
            _ => rec.if_changed(
                &path,
                ChangeKind::SchemaChanged,
                ChangeClass::Breaking,
                before,
                after,
            ),
        }
    }
}

/// `(hint, default, value that grants more authority)`; `None`: no direction is authority.
const HINTS: [(&str, bool, Option<bool>); 4] = [
    ("readOnlyHint", false, Some(false)),
    ("destructiveHint", true, Some(true)),
    ("idempotentHint", false, None),
    ("openWorldHint", true, Some(true)),
];

#[inline(never)]
fn diff_annotations(
    rec: &mut Recorder<'_>,
    path: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) {
    let empty = Map::new();
    let (Some(old), Some(new)) = (
        object_or_empty(before, &empty),
        object_or_empty(after, &empty),
    ) else {
        rec.if_changed(
            path,
            ChangeKind::AnnotationChanged,
            ChangeClass::Semantic,
            before,
            after,
        );
        return;
    };
    // `{}` vs absent: nothing inside changed, but the fingerprint moves.
    empty_presence(
        rec,
        path,
        ChangeKind::AnnotationChanged,
        (old, new),
        (before, after),
    );
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(old.keys().chain(new.keys()));
    for key in keys {
        let (b, a) = (old.get(key), new.get(key));
        if opt_eq(b, a) {
            continue;
        }
        let class = match HINTS.iter().find(|(hint, _, _)| hint == key) {
            Some((_, default, grants)) => {
                let effective = |v: Option<&Value>| match v {
                    None => Some(*default),
                    Some(v) => v.as_bool(),
                };
                match (effective(b), effective(a)) {
                    (Some(x), Some(y)) if x == y => ChangeClass::Additive,
                    (_, Some(y)) if Some(y) == *grants => ChangeClass::Authority,
                    _ => ChangeClass::Semantic,
                }
            }
            None => ChangeClass::Semantic,
        };
        rec.push(
            &child(path, key),
            ChangeKind::AnnotationChanged,
            class,
            b,
            a,
        );
    }
}

/// The call modes a `taskSupport` value allows: (plain call, task-augmented call).
fn task_modes(value: Option<&Value>) -> Option<(bool, bool)> {
    match value.map(Value::as_str) {
        None | Some(Some("forbidden")) => Some((true, false)),
        Some(Some("optional")) => Some((true, true)),
        Some(Some("required")) => Some((false, true)),
        _ => None,
    }
}

#[inline(never)]
fn diff_execution(
    rec: &mut Recorder<'_>,
    path: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) {
    let empty = Map::new();
    let (Some(old), Some(new)) = (
        object_or_empty(before, &empty),
        object_or_empty(after, &empty),
    ) else {
        rec.if_changed(
            path,
            ChangeKind::ExecutionChanged,
            ChangeClass::Breaking,
            before,
            after,
        );
        return;
    };
    empty_presence(
        rec,
        path,
        ChangeKind::ExecutionChanged,
        (old, new),
        (before, after),
    );
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(old.keys().chain(new.keys()));
    for key in keys {
        let (b, a) = (old.get(key), new.get(key));
        if opt_eq(b, a) {
            continue;
        }
        let class = match (key.as_str(), task_modes(b), task_modes(a)) {
            ("taskSupport", Some((p0, t0)), Some((p1, t1))) if (p1 || !p0) && (t1 || !t0) => {
                ChangeClass::Additive
            }
            _ => ChangeClass::Breaking,
        };
        rec.push(&child(path, key), ChangeKind::ExecutionChanged, class, b, a);
    }
}

/// Reports (additive) an empty object field that appeared or disappeared.
fn empty_presence(
    rec: &mut Recorder<'_>,
    path: &str,
    kind: ChangeKind,
    (old, new): (&Map<String, Value>, &Map<String, Value>),
    (before, after): (Option<&Value>, Option<&Value>),
) {
    if old.is_empty() && new.is_empty() && before.is_some() != after.is_some() {
        rec.push(path, kind, ChangeClass::Additive, before, after);
    }
}

/// Whether two tools are equal once `_meta` is set aside.
fn same_but_meta(old: &Map<String, Value>, new: &Map<String, Value>) -> bool {
    let visible = |m: &Map<String, Value>| m.keys().filter(|k| *k != "_meta").count();
    visible(old) == visible(new)
        && old
            .iter()
            .filter(|(k, _)| *k != "_meta")
            .all(|(k, v)| new.get(k).is_some_and(|w| json_eq(v, w)))
}

/// Equality of optional values (`1 == 1.0`).
pub(super) fn opt_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => json_eq(x, y),
        _ => false,
    }
}
