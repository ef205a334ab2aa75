//! A JSON tree that keeps every object member, duplicates included, read by serde_json's
//! lexer: the reference the strict parser is compared with.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::collections::HashSet;
use std::fmt;

/// A parsed JSON document with object members in order, repeats kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// `null`, `true`/`false`, a number or a string.
    Scalar(Value),
    /// An array.
    Array(Vec<Tree>),
    /// An object: every member in document order.
    Object(Vec<(String, Tree)>),
}

impl Tree {
    /// Nesting depth: a scalar 0, `[]` 1, `[[]]` 2.
    pub fn depth(&self) -> usize {
        match self {
            Tree::Scalar(_) => 0,
            Tree::Array(items) => 1 + items.iter().map(Tree::depth).max().unwrap_or(0),
            Tree::Object(members) => 1 + members.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
        }
    }

    /// The first key repeated inside one object, anywhere in the tree.
    pub fn duplicate_key(&self) -> Option<String> {
        match self {
            Tree::Scalar(_) => None,
            Tree::Array(items) => items.iter().find_map(Tree::duplicate_key),
            Tree::Object(members) => {
                let mut seen = HashSet::new();
                for (k, _) in members {
                    if !seen.insert(k.as_str()) {
                        return Some(k.clone());
                    }
                }
                members.iter().find_map(|(_, v)| v.duplicate_key())
            }
        }
    }

    /// The value a last-wins parser (serde_json, JavaScript's `JSON.parse`) reads.
    pub fn to_value(&self) -> Value {
        match self {
            Tree::Scalar(v) => v.clone(),
            Tree::Array(items) => Value::Array(items.iter().map(Tree::to_value).collect()),
            Tree::Object(members) => {
                let mut map = Map::new();
                for (k, v) in members {
                    map.insert(k.clone(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

/// Parses `bytes` as one JSON document, keeping duplicate keys (serde_json's own limits:
/// recursion 128, no trailing data).
pub fn parse(bytes: &[u8]) -> Result<Tree, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let tree = (&mut de).deserialize_any(TreeVisitor)?;
    de.end()?;
    Ok(tree)
}

struct TreeVisitor;

impl<'de> de::DeserializeSeed<'de> for TreeVisitor {
    type Value = Tree;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(TreeVisitor)
    }
}

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::Null))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::Number(v.into())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::Number(v.into())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tree, E> {
        Number::from_f64(v)
            .map(|n| Tree::Scalar(Value::Number(n)))
            .ok_or_else(|| E::custom("not finite"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::String(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Tree, E> {
        Ok(Tree::Scalar(Value::String(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(TreeVisitor)? {
            items.push(item);
        }
        Ok(Tree::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(TreeVisitor)?;
            members.push((key, value));
        }
        Ok(Tree::Object(members))
    }
}
