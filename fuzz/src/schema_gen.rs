//! Schemas and instances for the validator differential, drawn from fuzz bytes: every
//! keyword toolseal's validator supports, in the forms where JSON Schema 2020-12 gives one
//! answer and an independent validator must agree (integers and halves for numbers, integer
//! `multipleOf`, patterns both regex dialects read alike, `$ref`s to non-recursive `$defs`).
//!
//! Main design decision: the instances come from the same small vocabulary as the schemas'
//! constants, keys and bounds, so that most instances are near a boundary the schema draws
//! (a length of 2 against `maxLength: 2`, the key `a` against `required: ["a"]`).

use crate::bytes::Choices;
use serde_json::{Map, Value, json};

const KEYS: [&str; 4] = ["a", "b", "c", "x-y"];
const STRINGS: [&str; 8] = ["", "a", "ab", "abc", "b1", "Zz", "日本", "x-y"];
/// Patterns that read the same in ECMAScript and in the reference validator's engine.
const PATTERNS: [&str; 8] = [
    "^a", "b", "[0-9]", "^[a-z]+$", "^(a|b)*$", "y$", "^.{2}$", "a{2,}",
];
const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// A number: a small integer, a half, or an integer written as a float.
fn number(c: &mut Choices<'_>) -> Value {
    let n = i64::from(c.byte() % 9) - 3;
    match c.below(3) {
        0 => json!(n),
        1 => json!(n as f64 + 0.5),
        _ => json!(n as f64),
    }
}

/// An instance (or a constant) of at most `depth` levels.
pub fn value(c: &mut Choices<'_>, depth: usize) -> Value {
    let scalar = depth == 0 || c.is_empty();
    match c.below(if scalar { 5 } else { 7 }) {
        0 => json!(null),
        1 => json!(c.byte() & 1 == 1),
        2 => number(c),
        3 | 4 => json!(*c.pick(&STRINGS)),
        5 => Value::Array((0..c.below(4)).map(|_| value(c, depth - 1)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..c.below(4) {
                map.insert((*c.pick(&KEYS)).to_string(), value(c, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// A schema of at most `depth` levels; `defs` names the `$defs` a `$ref` may point to.
pub fn schema(c: &mut Choices<'_>, depth: usize, defs: &[&str]) -> Value {
    if c.below(8) == 0 {
        return json!(c.byte() & 1 == 1);
    }
    let mut s = Map::new();
    let keywords = 1 + c.below(3);
    for _ in 0..keywords {
        keyword(c, depth, defs, &mut s);
    }
    Value::Object(s)
}

fn sub(c: &mut Choices<'_>, depth: usize, defs: &[&str]) -> Value {
    if depth == 0 {
        json!({"type": *c.pick(&TYPES)})
    } else {
        schema(c, depth - 1, defs)
    }
}

fn keyword(c: &mut Choices<'_>, depth: usize, defs: &[&str], s: &mut Map<String, Value>) {
    let small = |c: &mut Choices<'_>| json!(c.below(4));
    let (name, v) = match c.below(30) {
        0 => ("type", json!(*c.pick(&TYPES))),
        1 => {
            let types: Vec<&str> = (0..1 + c.below(3)).map(|_| *c.pick(&TYPES)).collect();
            let mut unique = types.clone();
            unique.sort_unstable();
            unique.dedup();
            ("type", json!(unique))
        }
        2 => (
            "enum",
            Value::Array((0..1 + c.below(3)).map(|_| value(c, 1)).collect()),
        ),
        3 => ("const", value(c, 1)),
        4 => ("minimum", number(c)),
        5 => ("maximum", number(c)),
        6 => ("exclusiveMinimum", number(c)),
        7 => ("exclusiveMaximum", number(c)),
        8 => ("multipleOf", json!(1 + c.below(3))),
        9 => ("minLength", small(c)),
        10 => ("maxLength", small(c)),
        11 => ("pattern", json!(*c.pick(&PATTERNS))),
        12 => ("minItems", small(c)),
        13 => ("maxItems", small(c)),
        14 => ("uniqueItems", json!(c.byte() & 1 == 1)),
        15 => ("items", sub(c, depth, defs)),
        16 => (
            "prefixItems",
            Value::Array((0..1 + c.below(2)).map(|_| sub(c, depth, defs)).collect()),
        ),
        17 => {
            s.insert("contains".into(), sub(c, depth, defs));
            if c.byte() & 1 == 1 {
                s.insert("minContains".into(), small(c));
            }
            ("maxContains", json!(1 + c.below(3)))
        }
        18 => ("minProperties", small(c)),
        19 => ("maxProperties", small(c)),
        20 => {
            let mut keys: Vec<&str> = (0..1 + c.below(2)).map(|_| *c.pick(&KEYS)).collect();
            keys.sort_unstable();
            keys.dedup();
            ("required", json!(keys))
        }
        21 => {
            let mut props = Map::new();
            for _ in 0..1 + c.below(2) {
                props.insert((*c.pick(&KEYS)).to_string(), sub(c, depth, defs));
            }
            ("properties", Value::Object(props))
        }
        22 => {
            let mut props = Map::new();
            props.insert((*c.pick(&PATTERNS)).to_string(), sub(c, depth, defs));
            ("patternProperties", Value::Object(props))
        }
        23 => match c.below(3) {
            0 => ("additionalProperties", json!(c.byte() & 1 == 1)),
            _ => ("additionalProperties", sub(c, depth, defs)),
        },
        24 => ("propertyNames", json!({"maxLength": c.below(3)})),
        25 => {
            let mut deps = Map::new();
            deps.insert((*c.pick(&KEYS)).to_string(), json!([*c.pick(&KEYS)]));
            ("dependentRequired", Value::Object(deps))
        }
        26 => {
            let mut deps = Map::new();
            deps.insert((*c.pick(&KEYS)).to_string(), sub(c, depth, defs));
            ("dependentSchemas", Value::Object(deps))
        }
        27 => {
            let name = *c.pick(&["allOf", "anyOf", "oneOf"]);
            let list = (0..1 + c.below(3)).map(|_| sub(c, depth, defs)).collect();
            (name, Value::Array(list))
        }
        28 => match c.below(2) {
            0 => ("not", sub(c, depth, defs)),
            _ => {
                s.insert("if".into(), sub(c, depth, defs));
                if c.byte() & 1 == 1 {
                    s.insert("then".into(), sub(c, depth, defs));
                }
                ("else", sub(c, depth, defs))
            }
        },
        _ => match defs.is_empty() {
            true => ("type", json!("object")),
            false => ("$ref", json!(format!("#/$defs/{}", c.pick(defs)))),
        },
    };
    s.insert(name.into(), v);
}

/// A root schema, with up to two `$defs` that hold no `$ref` of their own.
pub fn root(c: &mut Choices<'_>) -> Value {
    let names: Vec<&str> = ["d0", "d1"].into_iter().take(c.below(3)).collect();
    let mut defs = Map::new();
    for name in &names {
        defs.insert((*name).to_string(), schema(c, 1, &[]));
    }
    let mut root = schema(c, 2, &names);
    if let (Value::Object(map), false) = (&mut root, defs.is_empty()) {
        map.insert("$defs".into(), Value::Object(defs));
    }
    root
}
