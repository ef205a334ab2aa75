//! The structural diff of `inputSchema` and `outputSchema`, keyword by keyword.
//!
//! The walk recurses only through schema keywords (`properties`, `items`, `allOf`…), with a
//! depth limit past which any difference is one `schema_changed`. Each keyword has a
//! direction: a change that admits more values is a loosening (authority for inputs), one
//! that admits fewer is a tightening (breaking for inputs); where the direction cannot be
//! known (a changed `pattern`, `$ref` or `if`) the change is breaking. For `outputSchema`
//! the polarity flips, since the server produces and the client consumes: a narrower output
//! is additive, a wider one breaks consumers; every output change has kind
//! `output_schema_changed` and the walker's path says where.

use super::tool_fields::opt_eq;
use super::{Change, ChangeClass, ChangeKind};
use crate::policy::schema::json_value::{canonical_key, json_eq};
use crate::policy::schema::number;
use crate::wire::order::name_set;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeSet;

use ChangeClass::{Additive, Authority, Breaking, Semantic};
use ChangeKind::*;

/// Deepest schema nesting compared keyword by keyword.
const MAX_DIFF_DEPTH: usize = 64;

/// Schema annotations whose change is semantic.
const GUIDANCE: [&str; 9] = [
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "contentMediaType",
    "contentEncoding",
    "$id",
];

/// `path` + `/` + `token` escaped as a JSON pointer token.
pub(super) fn child(path: &str, token: &str) -> String {
    format!("{path}/{}", token.replace('~', "~0").replace('/', "~1"))
}

/// The object `v`, an empty map when `v` is absent, `None` when `v` is not an object.
pub(super) fn object_or_empty<'a>(
    v: Option<&'a Value>,
    empty: &'a Map<String, Value>,
) -> Option<&'a Map<String, Value>> {
    match v {
        None => Some(empty),
        Some(v) => v.as_object(),
    }
}

/// Collects the changes of one tool.
pub(super) struct Recorder<'a> {
    tool: &'a str,
    changes: &'a mut Vec<Change>,
    /// Inside `outputSchema`: kinds become `output_schema_changed`, polarity flips.
    output: bool,
}

impl<'a> Recorder<'a> {
    pub(super) fn new(tool: &'a str, changes: &'a mut Vec<Change>) -> Self {
        Recorder {
            tool,
            changes,
            output: false,
        }
    }

    pub(super) fn push(
        &mut self,
        path: &str,
        kind: ChangeKind,
        class: ChangeClass,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        let (kind, class) = if self.output {
            (OutputSchemaChanged, output_class(kind, class))
        } else {
            (kind, class)
        };
        self.changes.push(Change {
            tool: self.tool.to_owned(),
            path: path.to_owned(),
            kind,
            class,
            before: before.cloned(),
            after: after.cloned(),
        });
    }

    pub(super) fn if_changed(
        &mut self,
        path: &str,
        kind: ChangeKind,
        class: ChangeClass,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        if !opt_eq(before, after) {
            self.push(path, kind, class, before, after);
        }
    }
}

/// The class of an `outputSchema` change that would be `kind`/`class` in an input.
fn output_class(kind: ChangeKind, class: ChangeClass) -> ChangeClass {
    match kind {
        DescriptionChanged | TitleChanged | SchemaAnnotationChanged => Semantic,
        PropertyAddedOptional
        | PropertyAddedRequired
        | TypeNarrowed
        | EnumNarrowed
        | AdditionalPropertiesTightened
        | RequiredAdded
        | ConstraintTightened => Additive,
        _ if class == Additive => Additive,
        _ => Breaking,
    }
}

/// `inputSchema` of one tool in both sets.
pub(super) fn diff_input(
    rec: &mut Recorder<'_>,
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    match (old, new) {
        (Some(o), Some(n)) => diff_schema(rec, path, o, n, 0),
        _ => rec.if_changed(path, SchemaChanged, Breaking, old, new),
    }
}

/// `outputSchema` of one tool in both sets.
pub(super) fn diff_output(
    rec: &mut Recorder<'_>,
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    match (old, new) {
        (Some(o), Some(n)) => {
            rec.output = true;
            diff_schema(rec, path, o, n, 0);
            rec.output = false;
        }
        (None, Some(_)) => rec.push(path, OutputSchemaChanged, Additive, old, new),
        (Some(_), None) => rec.push(path, OutputSchemaChanged, Breaking, old, new),
        (None, None) => {}
    }
}

/// How much a schema admits: `false` < an object schema < `true`.
fn openness(schema: Option<&Value>) -> Option<u8> {
    match schema {
        Some(Value::Bool(false)) => Some(0),
        Some(Value::Object(_)) => Some(1),
        None | Some(Value::Bool(true)) => Some(2),
        _ => None,
    }
}

/// Two schemas at `path`.
fn diff_schema(rec: &mut Recorder<'_>, path: &str, old: &Value, new: &Value, depth: usize) {
    if json_eq(old, new) {
        return;
    }
    if depth > MAX_DIFF_DEPTH {
        rec.push(path, SchemaChanged, Breaking, Some(old), Some(new));
        return;
    }
    if let (Value::Object(o), Value::Object(n)) = (old, new) {
        diff_keywords(rec, path, o, n, depth);
        return;
    }
    let (before, after) = (Some(old), Some(new));
    match openness(before)
        .zip(openness(after))
        .map(|(x, y)| y.cmp(&x))
    {
        Some(Ordering::Greater) => rec.push(path, ConstraintLoosened, Authority, before, after),
        Some(Ordering::Less) => rec.push(path, ConstraintTightened, Breaking, before, after),
        _ => rec.push(path, SchemaChanged, Breaking, before, after),
    }
}

fn diff_keywords(
    rec: &mut Recorder<'_>,
    path: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    depth: usize,
) {
    diff_properties(rec, path, old, new, depth);
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(old.keys().chain(new.keys()));
    for key in keys {
        let (before, after) = (old.get(key), new.get(key));
        if key == "properties" || key == "required" || opt_eq(before, after) {
            continue;
        }
        diff_keyword(rec, key, &child(path, key), before, after, depth);
    }
}

fn diff_keyword(
    rec: &mut Recorder<'_>,
    key: &str,
    at: &str,
    b: Option<&Value>,
    a: Option<&Value>,
    depth: usize,
) {
    match key {
        "description" => rec.push(at, DescriptionChanged, Semantic, b, a),
        "title" => rec.push(at, TitleChanged, Semantic, b, a),
        k if GUIDANCE.contains(&k) || k.starts_with("x-") => {
            rec.push(at, SchemaAnnotationChanged, Semantic, b, a);
        }
        "type" => diff_type(rec, at, b, a),
        "enum" => diff_enum(rec, at, b, a),
        "additionalProperties" => diff_additional(rec, at, b, a, depth),
        "minLength" | "minItems" | "minProperties" | "minContains" | "minimum" => {
            diff_bound(rec, at, b, a, true);
        }
        "maxLength" | "maxItems" | "maxProperties" | "maxContains" | "maximum" => {
            diff_bound(rec, at, b, a, false);
        }
        "exclusiveMinimum" | "exclusiveMaximum" | "uniqueItems"
            if b.is_some_and(Value::is_boolean) || a.is_some_and(Value::is_boolean) =>
        {
            diff_flag(rec, at, b, a);
        }
        "exclusiveMinimum" => diff_bound(rec, at, b, a, true),
        "exclusiveMaximum" => diff_bound(rec, at, b, a, false),
        "multipleOf" => diff_multiple(rec, at, b, a),
        "pattern" | "format" | "const" | "dependentRequired" | "dependencies" | "not" => {
            diff_presence(rec, at, b, a);
        }
        "items" | "additionalItems" | "contains" | "propertyNames" | "then" | "else" => {
            diff_subschema(rec, at, b, a, depth);
        }
        "prefixItems" | "allOf" | "anyOf" | "oneOf" => diff_list(rec, at, b, a, depth),
        "patternProperties" => diff_map(rec, at, b, a, depth, (Breaking, Breaking)),
        "dependentSchemas" => diff_map(rec, at, b, a, depth, (Breaking, Authority)),
        "$defs" | "definitions" => diff_map(rec, at, b, a, depth, (Additive, Breaking)),
        _ => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

/// Added: tightened; removed: loosened; changed: direction unknown.
fn diff_presence(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    match (b, a) {
        (None, Some(_)) => rec.push(at, ConstraintTightened, Breaking, b, a),
        (Some(_), None) => rec.push(at, ConstraintLoosened, Authority, b, a),
        _ => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

/// A boolean constraint (absent is `false`).
fn diff_flag(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    let flag = |v: Option<&Value>| v.map_or(Some(false), Value::as_bool);
    match (flag(b), flag(a)) {
        (Some(false), Some(true)) => rec.push(at, ConstraintTightened, Breaking, b, a),
        (Some(true), Some(false)) => rec.push(at, ConstraintLoosened, Authority, b, a),
        (Some(x), Some(y)) if x == y => rec.push(at, SchemaChanged, Additive, b, a),
        _ => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

/// A numeric bound; `lower` for minimums (raising it tightens).
fn diff_bound(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>, lower: bool) {
    let order = match (b, a) {
        (None, Some(_)) => Some(true),
        (Some(_), None) => Some(false),
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            number::compare(y, x).map(|o| (o == Ordering::Greater) == lower)
        }
        _ => None,
    };
    match order {
        Some(true) => rec.push(at, ConstraintTightened, Breaking, b, a),
        Some(false) => rec.push(at, ConstraintLoosened, Authority, b, a),
        None => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

fn diff_multiple(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    let (Some(Value::Number(x)), Some(Value::Number(y))) = (b, a) else {
        return diff_presence(rec, at, b, a);
    };
    if number::is_multiple_of(y, x) {
        rec.push(at, ConstraintTightened, Breaking, b, a);
    } else if number::is_multiple_of(x, y) {
        rec.push(at, ConstraintLoosened, Authority, b, a);
    } else {
        rec.push(at, SchemaChanged, Breaking, b, a);
    }
}

/// The type names of a `type` value (absent: every type), sorted and unique; `None` if
/// malformed.
fn type_names(v: Option<&Value>) -> Option<Vec<&str>> {
    const ALL: [&str; 7] = [
        "null", "boolean", "object", "array", "number", "integer", "string",
    ];
    Some(match v {
        None => name_set(ALL),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(list)) => name_set(list_of_names(list)?),
        Some(_) => return None,
    })
}

/// The strings of `list`, or `None` if one item is not a string.
fn list_of_names(list: &[Value]) -> Option<Vec<&str>> {
    let mut names = Vec::with_capacity(list.len());
    for item in list {
        names.push(item.as_str()?);
    }
    Some(names)
}

fn diff_type(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    let (Some(old), Some(new)) = (type_names(b), type_names(a)) else {
        return rec.push(at, TypeChanged, Breaking, b, a);
    };
    let covers = |set: &[&str], t: &str| {
        set.binary_search(&t).is_ok() || (t == "integer" && set.binary_search(&"number").is_ok())
    };
    let widened = old.iter().all(|t| covers(&new, t));
    let narrowed = new.iter().all(|t| covers(&old, t));
    match (widened, narrowed) {
        // Same set: only a spelling that the fingerprint sees (`"string"` vs `["string"]`,
        // absent vs every type) is reported; a reordering is not.
        (true, true) if old == new => {
            let shape = |v: Option<&Value>| v.map(Value::is_string);
            if shape(b) != shape(a) {
                rec.push(at, TypeChanged, Additive, b, a);
            }
        }
        (true, true) => rec.push(at, TypeChanged, Additive, b, a),
        (true, false) => rec.push(at, TypeWidened, Authority, b, a),
        (false, true) => rec.push(at, TypeNarrowed, Breaking, b, a),
        (false, false) => rec.push(at, TypeChanged, Breaking, b, a),
    }
}

/// Canonical keys of enum members; a member too deep to key gets a key of its own.
fn member_keys(list: &[Value]) -> BTreeSet<String> {
    let key = |(i, v): (usize, &Value)| canonical_key(v).unwrap_or_else(|| format!("\u{0}{i}"));
    let mut keys = BTreeSet::new();
    keys.extend(list.iter().enumerate().map(key));
    keys
}

fn diff_enum(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    match (b, a) {
        (Some(Value::Array(old)), Some(Value::Array(new))) => {
            let (old_keys, new_keys) = (member_keys(old), member_keys(new));
            if new_keys.difference(&old_keys).next().is_some() {
                rec.push(at, EnumWidened, Authority, b, a);
            }
            if old_keys.difference(&new_keys).next().is_some() {
                rec.push(at, EnumNarrowed, Breaking, b, a);
            }
        }
        (None, Some(_)) => rec.push(at, EnumNarrowed, Breaking, b, a),
        (Some(_), None) => rec.push(at, EnumWidened, Authority, b, a),
        _ => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

fn diff_additional(
    rec: &mut Recorder<'_>,
    at: &str,
    b: Option<&Value>,
    a: Option<&Value>,
    depth: usize,
) {
    if let (Some(o @ Value::Object(_)), Some(n @ Value::Object(_))) = (b, a) {
        return diff_schema(rec, at, o, n, depth + 1);
    }
    match openness(b).zip(openness(a)).map(|(x, y)| y.cmp(&x)) {
        Some(Ordering::Greater) => rec.push(at, AdditionalPropertiesLoosened, Authority, b, a),
        Some(Ordering::Less) => rec.push(at, AdditionalPropertiesTightened, Breaking, b, a),
        Some(Ordering::Equal) => rec.push(at, SchemaChanged, Additive, b, a),
        None => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

/// A keyword holding one schema (or, for `items`, a tuple of schemas).
fn diff_subschema(
    rec: &mut Recorder<'_>,
    at: &str,
    b: Option<&Value>,
    a: Option<&Value>,
    depth: usize,
) {
    match (b, a) {
        (Some(Value::Array(_)), Some(Value::Array(_))) => diff_list(rec, at, b, a, depth),
        (Some(o), Some(n)) if !o.is_array() && !n.is_array() => {
            diff_schema(rec, at, o, n, depth + 1)
        }
        _ => diff_presence(rec, at, b, a),
    }
}

/// A list of schemas compared by position (its shape changing is breaking).
fn diff_list(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>, depth: usize) {
    match (b, a) {
        (Some(Value::Array(old)), Some(Value::Array(new))) if old.len() == new.len() => {
            for (i, (o, n)) in old.iter().zip(new).enumerate() {
                diff_schema(rec, &child(at, &i.to_string()), o, n, depth + 1);
            }
        }
        _ => rec.push(at, SchemaChanged, Breaking, b, a),
    }
}

/// A map of schemas; `(added, removed)` classes for entries that come or go.
fn diff_map(
    rec: &mut Recorder<'_>,
    at: &str,
    b: Option<&Value>,
    a: Option<&Value>,
    depth: usize,
    (added, removed): (ChangeClass, ChangeClass),
) {
    let empty = Map::new();
    let (Some(old), Some(new)) = (object_or_empty(b, &empty), object_or_empty(a, &empty)) else {
        return rec.push(at, SchemaChanged, Breaking, b, a);
    };
    if old.is_empty() && new.is_empty() {
        return presence_only(rec, at, b, a);
    }
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(old.keys().chain(new.keys()));
    for key in keys {
        let entry = child(at, key);
        match (old.get(key), new.get(key)) {
            (Some(o), Some(n)) => diff_schema(rec, &entry, o, n, depth + 1),
            (None, n) => rec.push(&entry, SchemaChanged, added, None, n),
            (o, None) => rec.push(&entry, SchemaChanged, removed, o, None),
        }
    }
}

/// An empty map or list appeared or disappeared (`{}`/`[]` vs absent): the meaning is the
/// same but the fingerprint moves, so it is reported, as additive.
fn presence_only(rec: &mut Recorder<'_>, at: &str, b: Option<&Value>, a: Option<&Value>) {
    if b.is_some() != a.is_some() {
        rec.push(at, SchemaChanged, Additive, b, a);
    }
}

/// The names in a `required` list, sorted and unique (`None` if malformed).
fn required_names(v: Option<&Value>) -> Option<Vec<&str>> {
    match v {
        None => Some(Vec::new()),
        Some(Value::Array(list)) => Some(name_set(list_of_names(list)?)),
        Some(_) => None,
    }
}

/// `properties` and `required` together: a new property is optional or required, and a
/// `required` change is reported on its own only for properties present on both sides.
fn diff_properties(
    rec: &mut Recorder<'_>,
    path: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    depth: usize,
) {
    let empty = Map::new();
    let props_at = child(path, "properties");
    let (op, np) = (old.get("properties"), new.get("properties"));
    let (Some(om), Some(nm)) = (object_or_empty(op, &empty), object_or_empty(np, &empty)) else {
        return rec.if_changed(&props_at, SchemaChanged, Breaking, op, np);
    };
    let (or, nr) = (old.get("required"), new.get("required"));
    let (Some(old_req), Some(new_req)) = (required_names(or), required_names(nr)) else {
        return rec.if_changed(&child(path, "required"), SchemaChanged, Breaking, or, nr);
    };
    if om.is_empty() && nm.is_empty() {
        presence_only(rec, &props_at, op, np);
    }
    if old_req.is_empty() && new_req.is_empty() {
        presence_only(rec, &child(path, "required"), or, nr);
    }
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    keys.extend(om.keys().chain(nm.keys()));
    for key in keys {
        let at = child(&props_at, key);
        match (om.get(key), nm.get(key)) {
            (Some(o), Some(n)) => diff_schema(rec, &at, o, n, depth + 1),
            (Some(o), None) => rec.push(&at, PropertyRemoved, Breaking, Some(o), None),
            (None, Some(n)) if new_req.binary_search(&key.as_str()).is_ok() => {
                rec.push(&at, PropertyAddedRequired, Breaking, None, Some(n));
            }
            (None, n) => rec.push(&at, PropertyAddedOptional, Additive, None, n),
        }
    }
    diff_required(rec, path, (om, nm), (&old_req, &new_req));
}

/// `required` changes of properties present on both sides (a property that comes or goes
/// is reported as added-required or removed instead).
fn diff_required(
    rec: &mut Recorder<'_>,
    path: &str,
    (om, nm): (&Map<String, Value>, &Map<String, Value>),
    (old_req, new_req): (&[&str], &[&str]),
) {
    let required_at = |name: &str| child(&child(path, "required"), name);
    let not_in = |set: &[&str], name: &&str| set.binary_search(name).is_err();
    for name in new_req.iter().filter(|n| not_in(old_req, n)) {
        if !nm.contains_key(*name) || om.contains_key(*name) {
            let after = Value::String((*name).to_owned());
            rec.push(
                &required_at(name),
                RequiredAdded,
                Breaking,
                None,
                Some(&after),
            );
        }
    }
    for name in old_req.iter().filter(|n| not_in(new_req, n)) {
        if !om.contains_key(*name) || nm.contains_key(*name) {
            let before = Value::String((*name).to_owned());
            rec.push(
                &required_at(name),
                RequiredRemoved,
                Authority,
                Some(&before),
                None,
            );
        }
    }
}
