//! Schema JSON → arena of [`Node`]s.
//!
//! Every subschema is compiled once, keyed by its JSON pointer; a `$ref` compiles its
//! target under the target's own pointer, so `$defs` entries are shared and a recursive
//! schema becomes a cycle in the arena (the node is reserved before its children are
//! compiled). Every keyword is either understood, a known annotation, or an error: nothing
//! is skipped silently. Nesting and node count are capped.

use super::SchemaError;
use super::keyword_values::{
    bound, compile_regex, count, data_value, enum_values, pattern, percent_decode, string_list,
    type_set,
};
use super::keywords::{Check, Node, NodeId, Pattern};
use super::number;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Deepest schema nesting (subschemas and `$ref` hops) accepted.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;
/// Most subschemas one schema may compile into.
const MAX_NODES: usize = 20_000;

/// Keywords accepted and ignored (annotations). `$id` is accepted at the root only.
/// `discriminator` (pydantic/OpenAPI) only hints which `oneOf` branch applies and `enumNames`
/// only labels enum members: ignoring them never lets an invalid call pass. `nullable`
/// (OpenAPI 3.0) would *allow* null; ignoring it can only refuse a call, never widen one.
const ANNOTATIONS: [&str; 16] = [
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentMediaType",
    "contentEncoding",
    "discriminator",
    "enumNames",
    "nullable",
];

/// Keywords compiled together with a sibling (see `grouped_checks`).
const GROUPED: [&str; 14] = [
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
];

/// Compiles `root`; node 0 is the root schema.
pub(crate) fn compile(root: &Value) -> Result<Vec<Node>, SchemaError> {
    let mut compiler = Compiler {
        root,
        nodes: Vec::new(),
        by_pointer: BTreeMap::new(),
    };
    compiler.schema(root, "", 0)?;
    Ok(compiler.nodes)
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    by_pointer: BTreeMap<String, NodeId>,
}

pub(super) fn invalid(path: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

pub(super) fn unsupported(path: &str, keyword: impl Into<String>) -> SchemaError {
    SchemaError::Unsupported {
        keyword: keyword.into(),
        path: path.to_owned(),
    }
}

/// `path` + `/` + `token` escaped as a JSON pointer token.
pub(crate) fn child(path: &str, token: &str) -> String {
    let mut out = String::with_capacity(path.len() + token.len() + 1);
    out.push_str(path);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

impl Compiler<'_> {
    /// Compiles the schema `value` found at `path` (memoized by path).
    fn schema(&mut self, value: &Value, path: &str, depth: usize) -> Result<NodeId, SchemaError> {
        if let Some(id) = self.by_pointer.get(path) {
            return Ok(*id);
        }
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep);
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(invalid(path, format!("more than {MAX_NODES} subschemas")));
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Bool(false));
        self.by_pointer.insert(path.to_owned(), id);
        let node = match value {
            Value::Bool(b) => Node::Bool(*b),
            Value::Object(map) => Node::Checks(self.checks(map, path, depth)?),
            _ => return Err(invalid(path, "a schema must be an object or a boolean")),
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        Ok(id)
    }

    #[inline(never)]
    fn checks(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Vec<Check>, SchemaError> {
        let mut checks = Vec::new();
        for (key, value) in map {
            let at = child(path, key);
            if key == "$id" && !path.is_empty() {
                return Err(unsupported(&at, "$id (inside a subschema)"));
            }
            if ANNOTATIONS.contains(&key.as_str())
                || GROUPED.contains(&key.as_str())
                || key.starts_with("x-")
            {
                continue;
            }
            if let Some(check) = self.single_check(key, value, map, &at, depth)? {
                checks.push(check);
            }
        }
        self.grouped_checks(map, path, depth, &mut checks)?;
        Ok(checks)
    }

    /// A keyword that compiles on its own.
    #[inline(never)]
    fn single_check(
        &mut self,
        key: &str,
        value: &Value,
        map: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Option<Check>, SchemaError> {
        Ok(Some(match key {
            "type" => Check::Type(type_set(value, at)?),
            "enum" => Check::Enum(enum_values(value, at)?),
            "const" => Check::Const(data_value(value, at)?.clone()),
            "minimum" => Check::Minimum(bound(value, map.get("exclusiveMinimum"), at)?),
            "maximum" => Check::Maximum(bound(value, map.get("exclusiveMaximum"), at)?),
            // Draft-4 boolean forms modify `minimum`/`maximum` (read there).
            "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() => return Ok(None),
            "exclusiveMinimum" => Check::Minimum(bound(value, Some(&Value::Bool(true)), at)?),
            "exclusiveMaximum" => Check::Maximum(bound(value, Some(&Value::Bool(true)), at)?),
            "multipleOf" => match value.as_number() {
                Some(n) if number::is_positive(n) => Check::MultipleOf(n.clone()),
                _ => return Err(invalid(at, "multipleOf must be a number greater than 0")),
            },
            "minLength" => Check::MinLength(count(value, at)?),
            "maxLength" => Check::MaxLength(count(value, at)?),
            "minItems" => Check::MinItems(count(value, at)?),
            "maxItems" => Check::MaxItems(count(value, at)?),
            "minProperties" => Check::MinProperties(count(value, at)?),
            "maxProperties" => Check::MaxProperties(count(value, at)?),
            "uniqueItems" => match value {
                Value::Bool(true) => Check::UniqueItems,
                Value::Bool(false) => return Ok(None),
                _ => return Err(invalid(at, "uniqueItems must be a boolean")),
            },
            "pattern" => Check::Pattern(pattern(value, at)?),
            "required" => Check::Required(string_list(value, at)?),
            "propertyNames" => Check::PropertyNames(self.schema(value, at, depth + 1)?),
            "dependentRequired" => Check::DependentRequired(self.dependent_required(value, at)?),
            "dependentSchemas" => Check::DependentSchemas(self.schema_map(value, at, depth)?),
            "dependencies" => self.dependencies(value, at, depth)?,
            "allOf" => Check::AllOf(self.schema_list(value, at, depth)?),
            "anyOf" => Check::AnyOf(self.schema_list(value, at, depth)?),
            "oneOf" => Check::OneOf(self.schema_list(value, at, depth)?),
            "not" => Check::Not(self.schema(value, at, depth + 1)?),
            "$ref" => Check::Ref(self.reference(value, at, depth)?),
            other => return Err(unsupported(at, other)),
        }))
    }

    /// Keywords that depend on siblings, plus `$defs`/`definitions` (compiled so that an
    /// unsupported keyword anywhere in the document is reported).
    fn grouped_checks(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        checks: &mut Vec<Check>,
    ) -> Result<(), SchemaError> {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = map.get(key) {
                self.schema_map(defs, &child(path, key), depth)?;
            }
        }
        self.array_checks(map, path, depth, checks)?;
        self.object_checks(map, path, depth, checks)?;
        self.conditional_checks(map, path, depth, checks)
    }

    #[inline(never)]
    fn array_checks(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        checks: &mut Vec<Check>,
    ) -> Result<(), SchemaError> {
        let items_at = child(path, "items");
        let additional_at = child(path, "additionalItems");
        let additional = match map.get("additionalItems") {
            Some(v) => Some(self.schema(v, &additional_at, depth + 1)?),
            None => None,
        };
        let (prefix, rest) = match (map.get("items"), map.get("prefixItems")) {
            (Some(Value::Array(_)), Some(_)) => {
                return Err(invalid(
                    &items_at,
                    "items cannot be an array next to prefixItems",
                ));
            }
            (Some(tuple @ Value::Array(_)), None) => {
                (self.schema_list(tuple, &items_at, depth)?, additional)
            }
            (items, prefix_items) => {
                let prefix = match prefix_items {
                    Some(p) => self.schema_list(p, &child(path, "prefixItems"), depth)?,
                    None => Vec::new(),
                };
                let rest = match items {
                    Some(v) => Some(self.schema(v, &items_at, depth + 1)?),
                    None => None,
                };
                (prefix, rest)
            }
        };
        if !prefix.is_empty() || rest.is_some() {
            checks.push(Check::Items { prefix, rest });
        }
        self.contains_check(map, path, depth, checks)
    }

    /// `contains` with `minContains`/`maxContains` (which alone do nothing).
    fn contains_check(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        checks: &mut Vec<Check>,
    ) -> Result<(), SchemaError> {
        let min = map
            .get("minContains")
            .map(|v| count(v, &child(path, "minContains")));
        let max = map
            .get("maxContains")
            .map(|v| count(v, &child(path, "maxContains")));
        let (min, max) = (min.transpose()?, max.transpose()?);
        if let Some(contains) = map.get("contains") {
            let schema = self.schema(contains, &child(path, "contains"), depth + 1)?;
            let min = min.unwrap_or(1);
            checks.push(Check::Contains { schema, min, max });
        }
        Ok(())
    }

    #[inline(never)]
    fn object_checks(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        checks: &mut Vec<Check>,
    ) -> Result<(), SchemaError> {
        let named = match map.get("properties") {
            Some(p) => self.schema_map(p, &child(path, "properties"), depth)?,
            None => Vec::new(),
        };
        let mut patterns = Vec::new();
        if let Some(p) = map.get("patternProperties") {
            let at = child(path, "patternProperties");
            let entries = p
                .as_object()
                .ok_or_else(|| invalid(&at, "must be an object"))?;
            for (source, schema) in entries {
                let entry_at = child(&at, source);
                let regex = compile_regex(source, &entry_at)?;
                let id = self.schema(schema, &entry_at, depth + 1)?;
                let source = source.clone();
                patterns.push((Pattern { source, regex }, id));
            }
        }
        let additional = match map.get("additionalProperties") {
            Some(v) => Some(self.schema(v, &child(path, "additionalProperties"), depth + 1)?),
            None => None,
        };
        if !named.is_empty() || !patterns.is_empty() || additional.is_some() {
            checks.push(Check::Properties {
                named,
                patterns,
                additional,
            });
        }
        Ok(())
    }

    #[inline(never)]
    fn conditional_checks(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        checks: &mut Vec<Check>,
    ) -> Result<(), SchemaError> {
        let branch = |c: &mut Self, key: &str| match map.get(key) {
            Some(v) => c.schema(v, &child(path, key), depth + 1).map(Some),
            None => Ok(None),
        };
        let condition = branch(self, "if")?;
        let then = branch(self, "then")?;
        let otherwise = branch(self, "else")?;
        if let Some(condition) = condition
            && (then.is_some() || otherwise.is_some())
        {
            checks.push(Check::IfThenElse {
                condition,
                then,
                otherwise,
            });
        }
        Ok(())
    }

    fn schema_list(
        &mut self,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<Vec<NodeId>, SchemaError> {
        let list = value
            .as_array()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| invalid(at, "must be a non-empty array of schemas"))?;
        let mut ids = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            ids.push(self.schema(item, &child(at, &i.to_string()), depth + 1)?);
        }
        Ok(ids)
    }

    fn schema_map(
        &mut self,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<Vec<(String, NodeId)>, SchemaError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid(at, "must be an object whose values are schemas"))?;
        let mut entries = Vec::with_capacity(map.len());
        for (key, schema) in map {
            entries.push((
                key.clone(),
                self.schema(schema, &child(at, key), depth + 1)?,
            ));
        }
        Ok(entries)
    }

    fn dependent_required(
        &mut self,
        value: &Value,
        at: &str,
    ) -> Result<Vec<(String, Vec<String>)>, SchemaError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid(at, "must be an object of string arrays"))?;
        map.iter()
            .map(|(k, v)| Ok((k.clone(), string_list(v, &child(at, k))?)))
            .collect()
    }

    /// Draft-07 `dependencies`: array values are `dependentRequired`, schemas are
    /// `dependentSchemas`.
    fn dependencies(
        &mut self,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<Check, SchemaError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid(at, "must be an object"))?;
        let mut required = Vec::new();
        let mut schemas = Vec::new();
        for (key, v) in map {
            let entry_at = child(at, key);
            match v {
                Value::Array(_) => required.push((key.clone(), string_list(v, &entry_at)?)),
                _ => schemas.push((key.clone(), self.schema(v, &entry_at, depth + 1)?)),
            }
        }
        let required = Check::DependentRequired(required);
        if schemas.is_empty() {
            return Ok(required);
        }
        let first = self.push_node(Node::Checks(vec![required]), at)?;
        let second = self.push_node(Node::Checks(vec![Check::DependentSchemas(schemas)]), at)?;
        Ok(Check::AllOf(vec![first, second]))
    }

    fn push_node(&mut self, node: Node, at: &str) -> Result<NodeId, SchemaError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(invalid(at, format!("more than {MAX_NODES} subschemas")));
        }
        self.nodes.push(node);
        Ok(self.nodes.len() - 1)
    }

    /// Resolves a local `$ref` and compiles its target.
    #[inline(never)]
    fn reference(&mut self, value: &Value, at: &str, depth: usize) -> Result<NodeId, SchemaError> {
        let text = value
            .as_str()
            .ok_or_else(|| invalid(at, "$ref must be a string"))?;
        let Some(fragment) = text.strip_prefix('#') else {
            return Err(unsupported(
                at,
                format!("$ref to '{text}' (only local #… references)"),
            ));
        };
        let pointer =
            percent_decode(fragment).ok_or_else(|| invalid(at, "bad %-escape in $ref"))?;
        let local = pointer.is_empty()
            || pointer.starts_with("/$defs/")
            || pointer.starts_with("/definitions/");
        if !local {
            return Err(unsupported(
                at,
                format!("$ref to '{text}' (only #, #/$defs/… and #/definitions/…)"),
            ));
        }
        let target = self
            .root
            .pointer(&pointer)
            .ok_or_else(|| invalid(at, format!("$ref target '{text}' does not exist")))?;
        self.schema(target, &pointer, depth + 1)
    }
}
