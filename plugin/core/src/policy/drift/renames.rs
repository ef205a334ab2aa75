//! Likely renames, for review: a tool that went away and a tool that appeared taking the
//! very same arguments.
//!
//! Main design decision: a rename is a hint to the reviewer and never changes a class. The
//! drift stays what it is: the old name's removal is breaking (every call to it now fails),
//! the new name is additive, and the exit codes and fingerprints do not move. A removed tool
//! and an added tool are paired when their `inputSchema`s are equal under the fingerprint's
//! normalization (RFC 8785, `required`/`enum`/`type` as sets: the view the digest covers), and
//! the pair is then compared under one name to say what else changed (description, title,
//! annotations, output schema…). Pairing is one to one or not at all: when several removed
//! and several added tools share one schema (tools without arguments often do), nothing is
//! paired and the group is reported as *possible renames* with every candidate, because any
//! pick would be a guess. A tool without `inputSchema` is never paired.
//!
//! Only the review tools build this (feature `review`): the data plane never asks for it.

use super::{Change, ChangeKind, DriftDiff, diff_tools};
use crate::policy::fingerprint::{FingerprintField, FingerprintFields, canonical_tool_view};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// A removed tool and an added tool with the same input schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Rename {
    /// The baseline's name (removed).
    pub from: String,
    /// The candidate's name (added).
    pub to: String,
    /// The baseline's definition, as listed (without `_meta`).
    pub before: Value,
    /// The candidate's definition, as listed (without `_meta`).
    pub after: Value,
    /// What else changed: the diff of the two definitions compared under the new name
    /// (`tool` is `to`), ordered by path; empty when only the name moved.
    pub changes: Vec<Change>,
}

impl Rename {
    /// The baseline's definition under the new name: what [`Rename::changes`] compares with
    /// [`Rename::after`].
    pub fn before_under_new_name(&self) -> Value {
        let mut tool = self.before.clone();
        if let Some(object) = tool.as_object_mut() {
            object.insert("name".to_owned(), Value::String(self.to.clone()));
        }
        tool
    }
}

/// Removed and added tools that all share one input schema, several on at least one side:
/// possible renames, left unpaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PossibleRenames {
    /// The removed tools, by name.
    pub removed: Vec<String>,
    /// The added tools, by name.
    pub added: Vec<String>,
}

/// The renames a drift suggests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Renames {
    /// One-to-one pairs, ordered by the old name.
    pub likely: Vec<Rename>,
    /// Ambiguous groups, ordered by their first removed name.
    pub possible: Vec<PossibleRenames>,
}

impl DriftDiff {
    /// The renames among this diff's removed and added tools (see the module docs).
    pub fn renames(&self) -> Renames {
        let whole = |kind: ChangeKind| {
            self.changes
                .iter()
                .filter(move |c| c.kind == kind)
                .filter_map(|c| c.before.as_ref().or(c.after.as_ref()))
                .collect::<Vec<&Value>>()
        };
        find_renames(
            &whole(ChangeKind::ToolRemoved),
            &whole(ChangeKind::ToolAdded),
        )
    }
}

/// The canonical bytes of `tool`'s `inputSchema` under the fingerprint's normalization, with
/// its name set aside; `None` without an `inputSchema`.
fn schema_key(tool: &Value) -> Option<Vec<u8>> {
    let schema = tool.get("inputSchema")?;
    let view = json!({"name": "", "inputSchema": schema});
    let fields = FingerprintFields::from_fields(&[FingerprintField::InputSchema]);
    canonical_tool_view(&view, &fields).ok()
}

fn name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

/// Pairs `removed` tools with `added` tools by input schema (see the module docs). Tools
/// without a string `name` are ignored.
pub fn find_renames(removed: &[&Value], added: &[&Value]) -> Renames {
    type Group<'a> = (Vec<&'a Value>, Vec<&'a Value>);
    let mut groups: BTreeMap<Vec<u8>, Group<'_>> = BTreeMap::new();
    for (side, tools) in [(0, removed), (1, added)] {
        for tool in tools.iter().copied().filter(|t| name(t).is_some()) {
            if let Some(key) = schema_key(tool) {
                let group = groups.entry(key).or_default();
                if side == 0 {
                    group.0.push(tool);
                } else {
                    group.1.push(tool);
                }
            }
        }
    }
    let mut renames = Renames::default();
    for (old, new) in groups.into_values() {
        match (old.as_slice(), new.as_slice()) {
            ([], _) | (_, []) => {}
            ([before], [after]) => renames.likely.extend(pair(before, after)),
            _ => renames.possible.push(PossibleRenames {
                removed: sorted_names(&old),
                added: sorted_names(&new),
            }),
        }
    }
    renames.likely.sort_by(|a, b| a.from.cmp(&b.from));
    renames.possible.sort_by(|a, b| a.removed.cmp(&b.removed));
    renames
}

fn sorted_names(tools: &[&Value]) -> Vec<String> {
    let mut names: Vec<String> = tools
        .iter()
        .filter_map(|t| name(t))
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}

fn pair(before: &Value, after: &Value) -> Option<Rename> {
    let (from, to) = (name(before)?.to_owned(), name(after)?.to_owned());
    let mut rename = Rename {
        from,
        to,
        before: before.clone(),
        after: after.clone(),
        changes: Vec::new(),
    };
    rename.changes = diff_tools(
        &[rename.before_under_new_name()],
        std::slice::from_ref(after),
    )
    .changes;
    Some(rename)
}

impl Renames {
    /// Whether the drift suggests no rename at all.
    pub fn is_empty(&self) -> bool {
        self.likely.is_empty() && self.possible.is_empty()
    }

    /// `{"likely": [{"from", "to", "changes": [Change::to_json …]}], "possible":
    /// [{"removed": […], "added": […]}]}`.
    pub fn to_json(&self) -> Value {
        let likely: Vec<Value> = self
            .likely
            .iter()
            .map(|r| {
                let changes: Vec<Value> = r.changes.iter().map(Change::to_json).collect();
                json!({"from": r.from, "to": r.to, "changes": changes})
            })
            .collect();
        let possible: Vec<Value> = self
            .possible
            .iter()
            .map(|p| json!({"removed": p.removed, "added": p.added}))
            .collect();
        let mut object = Map::new();
        object.insert("likely".to_owned(), Value::Array(likely));
        object.insert("possible".to_owned(), Value::Array(possible));
        Value::Object(object)
    }

    /// The block `toolseal diff` prints after the changes: a `likely renames` heading, each
    /// pair as `old -> new` with one `path  kind  class` line per other change, then the
    /// `possible renames` groups; the empty string when there is none.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        if !self.likely.is_empty() {
            out.push_str(
                "likely renames (same inputSchema; still drift: calls to the old name fail):\n",
            );
        }
        for rename in &self.likely {
            out.push_str(&format!("  {} -> {}\n", rename.from, rename.to));
            if rename.changes.is_empty() {
                out.push_str("    (nothing else changed)\n");
            }
            for c in &rename.changes {
                let path = if c.path.is_empty() { "-" } else { &c.path };
                out.push_str(&format!(
                    "    {path}  {}  {}\n",
                    c.kind.as_str(),
                    c.class.as_str()
                ));
            }
        }
        if !self.possible.is_empty() {
            out.push_str(
                "possible renames (one inputSchema shared by several removed or added tools; not paired):\n",
            );
        }
        for group in &self.possible {
            out.push_str(&format!(
                "  {} -> {}\n",
                group.removed.join(", "),
                group.added.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, properties: Value) -> Value {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn a_one_to_one_match_is_a_likely_rename_with_what_else_changed() {
        let old = tool("add", "Adds two numbers", json!({"a": {"type": "number"}}));
        let new = tool(
            "get-sum",
            "Returns the sum",
            json!({"a": {"type": "number"}}),
        );
        let renames = diff_tools(&[old], &[new]).renames();
        assert_eq!(renames.possible, vec![]);
        let [rename] = renames.likely.as_slice() else {
            panic!("{renames:?}")
        };
        assert_eq!(
            (rename.from.as_str(), rename.to.as_str()),
            ("add", "get-sum")
        );
        let what: Vec<_> = rename
            .changes
            .iter()
            .map(|c| (c.tool.as_str(), c.path.as_str(), c.kind))
            .collect();
        assert_eq!(
            what,
            vec![("get-sum", "/description", ChangeKind::DescriptionChanged)]
        );
    }

    #[test]
    fn schemas_are_compared_as_the_fingerprint_normalizes_them() {
        let old = json!({"name": "a", "inputSchema": {"type": "object", "required": ["x", "y"],
                         "properties": {"x": {"type": ["string", "null"]}, "y": {"minimum": 1}}}});
        let new = json!({"name": "b", "inputSchema": {"properties": {"y": {"minimum": 1.0},
                         "x": {"type": ["null", "string"]}}, "required": ["y", "x", "x"], "type": "object"}});
        let renames = find_renames(&[&old], &[&new]);
        assert_eq!(renames.likely.len(), 1);
        assert_eq!(renames.likely[0].changes, vec![]);
        let other = json!({"name": "c", "inputSchema": {"type": "object", "required": ["x"]}});
        assert!(find_renames(&[&old], &[&other]).is_empty());
    }

    #[test]
    fn several_tools_on_one_schema_are_possible_renames_not_pairs() {
        let empty = json!({});
        let (a, b) = (tool("a", "", empty.clone()), tool("b", "", empty.clone()));
        let (x, y) = (tool("x", "", empty.clone()), tool("y", "", empty));
        let renames = find_renames(&[&b, &a], &[&y, &x]);
        assert_eq!(renames.likely, vec![]);
        assert_eq!(
            renames.possible,
            vec![PossibleRenames {
                removed: vec!["a".into(), "b".into()],
                added: vec!["x".into(), "y".into()],
            }]
        );
        // Two removed and one added: still ambiguous.
        assert_eq!(find_renames(&[&a, &b], &[&x]).possible.len(), 1);
        // A removed tool alone on its schema pairs with nothing.
        assert!(find_renames(&[&a], &[]).is_empty());
    }

    #[test]
    fn tools_without_an_input_schema_are_never_paired() {
        let (old, new) = (json!({"name": "a"}), json!({"name": "b"}));
        assert!(find_renames(&[&old], &[&new]).is_empty());
    }
}
