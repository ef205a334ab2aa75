//! Array and object keywords.

use super::{Path, Seg, Walker, list, short};
use crate::policy::schema::json_value::canonical_key;
use crate::policy::schema::keywords::{Check, Node, NodeId, Pattern};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `properties`, `patternProperties` and `additionalProperties` of one schema.
type PropertyChecks<'s> = (
    &'s [(String, NodeId)],
    &'s [(Pattern, NodeId)],
    Option<NodeId>,
);

impl<'s> Walker<'s> {
    pub(super) fn array_keyword<'i>(
        &mut self,
        check: &'s Check,
        items: &'i [Value],
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        let len = items.len() as u64;
        match check {
            Check::MinItems(min) => {
                len >= *min
                    || self.fail(
                        path,
                        format!("array has {len} items; at least {min} are required"),
                    )
            }
            Check::MaxItems(max) => {
                len <= *max
                    || self.fail(
                        path,
                        format!("array has {len} items; at most {max} are allowed"),
                    )
            }
            Check::UniqueItems => self.check_unique(items, path),
            Check::Items { prefix, rest } => self.check_items(prefix, *rest, items, path, dive),
            Check::Contains { schema, min, max } => {
                self.check_contains(*schema, (*min, *max), items, path, dive)
            }
            _ => true,
        }
    }

    fn check_unique(&mut self, items: &[Value], path: &[Seg<'_>]) -> bool {
        if !self.spend(items.len() as u64, path) {
            return false;
        }
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            let Some(key) = canonical_key(item) else {
                return self.abort(path, "array item nests too deeply to compare".to_owned());
            };
            if let Some(first) = seen.get(&key) {
                let msg = format!("items {first} and {i} are equal; items must be unique");
                return self.fail(path, msg);
            }
            seen.insert(key, i);
        }
        true
    }

    fn check_items<'i>(
        &mut self,
        prefix: &'s [NodeId],
        rest: Option<NodeId>,
        items: &'i [Value],
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        let mut valid = true;
        for (i, item) in items.iter().enumerate() {
            let Some(id) = prefix.get(i).copied().or(rest) else {
                break;
            };
            path.push(Seg::Index(i));
            let ok = self.check(id, item, path, dive + 1);
            path.pop();
            if !ok {
                valid = false;
                if self.full() {
                    break;
                }
            }
        }
        valid
    }

    fn check_contains<'i>(
        &mut self,
        schema: NodeId,
        (min, max): (u64, Option<u64>),
        items: &'i [Value],
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        let mut found = 0u64;
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            let (ok, _) = self.probe(schema, item, path, dive);
            path.pop();
            if self.aborted.is_some() {
                return false;
            }
            found += u64::from(ok);
        }
        if found < min {
            let msg = format!(
                "array has {found} items matching the `contains` schema; at least {min} are required"
            );
            return self.fail(path, msg);
        }
        match max {
            Some(max) if found > max => {
                let msg = format!(
                    "array has {found} items matching the `contains` schema; at most {max} are allowed"
                );
                self.fail(path, msg)
            }
            _ => true,
        }
    }

    pub(super) fn object_keyword<'i>(
        &mut self,
        check: &'s Check,
        inst: &'i Value,
        map: &'i Map<String, Value>,
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        let len = map.len() as u64;
        match check {
            Check::MinProperties(min) => {
                len >= *min
                    || self.fail(
                        path,
                        format!("object has {len} properties; at least {min} are required"),
                    )
            }
            Check::MaxProperties(max) => {
                len <= *max
                    || self.fail(
                        path,
                        format!("object has {len} properties; at most {max} are allowed"),
                    )
            }
            Check::Required(names) => self.check_required(names, map, path, None),
            Check::DependentRequired(rules) => {
                let mut valid = true;
                for (key, names) in rules.iter().filter(|(k, _)| map.contains_key(k)) {
                    valid &= self.check_required(names, map, path, Some(key));
                }
                valid
            }
            Check::DependentSchemas(rules) => {
                let mut valid = true;
                for (_, id) in rules.iter().filter(|(k, _)| map.contains_key(k)) {
                    valid &= self.check(*id, inst, path, dive + 1);
                }
                valid
            }
            Check::PropertyNames(id) => self.check_property_names(*id, map, path, dive),
            Check::Properties {
                named,
                patterns,
                additional,
            } => self.check_properties((named, patterns, *additional), map, path, dive),
            _ => true,
        }
    }

    fn check_required(
        &mut self,
        names: &[String],
        map: &Map<String, Value>,
        path: &[Seg<'_>],
        because: Option<&str>,
    ) -> bool {
        let mut valid = true;
        for name in names.iter().filter(|n| !map.contains_key(n.as_str())) {
            let msg = match because {
                None => format!("required property '{name}' is missing"),
                Some(key) => format!("property '{name}' is required when '{key}' is present"),
            };
            valid = self.fail(path, msg);
            if self.full() {
                break;
            }
        }
        valid
    }

    fn check_property_names(
        &mut self,
        id: NodeId,
        map: &Map<String, Value>,
        path: &[Seg<'_>],
        dive: usize,
    ) -> bool {
        let mut valid = true;
        for key in map.keys() {
            let name = Value::String(key.clone());
            let (ok, first) = self.probe(id, &name, &mut Vec::new(), dive);
            if self.aborted.is_some() {
                return false;
            }
            if !ok {
                let why = first.map(|v| v.message).unwrap_or_default();
                let msg = format!("property name '{}' is not allowed: {why}", short(key));
                valid = self.fail(path, msg);
                if self.full() {
                    break;
                }
            }
        }
        valid
    }

    fn check_properties<'i>(
        &mut self,
        (named, patterns, additional): PropertyChecks<'s>,
        map: &'i Map<String, Value>,
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        let mut valid = true;
        for (key, value) in map {
            path.push(Seg::Key(key));
            let mut ok = true;
            let mut matched = false;
            if let Ok(i) = named.binary_search_by(|(n, _)| n.as_str().cmp(key)) {
                matched = true;
                ok &= named
                    .get(i)
                    .is_some_and(|(_, id)| self.check(*id, value, path, dive + 1));
            }
            for (pattern, id) in patterns {
                match self.search(pattern, key, path) {
                    Some(true) => {
                        matched = true;
                        ok &= self.check(*id, value, path, dive + 1);
                    }
                    Some(false) => {}
                    None => ok = false,
                }
            }
            if let (false, Some(id)) = (matched, additional) {
                ok &= self.check_additional(id, key, value, named, path, dive);
            }
            path.pop();
            if !ok {
                valid = false;
                if self.full() {
                    break;
                }
            }
        }
        valid
    }

    fn check_additional<'i>(
        &mut self,
        id: NodeId,
        key: &str,
        value: &'i Value,
        named: &[(String, NodeId)],
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        if !matches!(self.nodes.get(id), Some(Node::Bool(false))) {
            return self.check(id, value, path, dive + 1);
        }
        let msg = if named.is_empty() {
            format!("property '{}' is not allowed", short(key))
        } else {
            let allowed = list(named.iter().map(|(n, _)| n.as_str()));
            format!(
                "property '{}' is not allowed; allowed properties: {allowed}",
                short(key)
            )
        };
        self.fail(path, msg)
    }
}
