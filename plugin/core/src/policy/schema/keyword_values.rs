//! Reading keyword values: each keyword's value is checked for the right JSON kind and
//! turned into its compiled form, with an error that names the keyword's path.

use super::SchemaError;
use super::compiler::{invalid, unsupported};
use super::json_value::{self, MAX_VALUE_DEPTH};
use super::keywords::{Bound, Pattern, TypeSet};
use super::regex::{Regex, RegexError};
use serde_json::Value;

pub(super) fn type_set(value: &Value, at: &str) -> Result<TypeSet, SchemaError> {
    let names: Vec<&Value> = match value {
        Value::String(_) => vec![value],
        Value::Array(list) if !list.is_empty() => list.iter().collect(),
        _ => {
            return Err(invalid(
                at,
                "type must be a type name or a non-empty array of them",
            ));
        }
    };
    let mut set = TypeSet::empty();
    for name in names {
        let known = name.as_str().is_some_and(|n| set.insert(n));
        if !known {
            return Err(invalid(
                at,
                format!(
                    "unknown type {}; use {}",
                    json_value::preview(name, 40),
                    TypeSet::NAMES.join(", ")
                ),
            ));
        }
    }
    Ok(set)
}

pub(super) fn data_value<'v>(value: &'v Value, at: &str) -> Result<&'v Value, SchemaError> {
    if json_value::depth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH {
        return Err(invalid(
            at,
            format!("value nests deeper than {MAX_VALUE_DEPTH} levels"),
        ));
    }
    Ok(value)
}

pub(super) fn enum_values(value: &Value, at: &str) -> Result<Vec<Value>, SchemaError> {
    match data_value(value, at)? {
        Value::Array(list) => Ok(list.clone()),
        _ => Err(invalid(at, "enum must be an array")),
    }
}

pub(super) fn not_number(value: &Value) -> String {
    format!(
        "expected a number, found {}",
        json_value::preview(value, 40)
    )
}

pub(super) fn bound(
    value: &Value,
    exclusive: Option<&Value>,
    at: &str,
) -> Result<Bound, SchemaError> {
    let limit = value
        .as_number()
        .ok_or_else(|| invalid(at, not_number(value)))?
        .clone();
    let exclusive = matches!(exclusive, Some(Value::Bool(true)));
    Ok(Bound { limit, exclusive })
}

pub(super) fn count(value: &Value, at: &str) -> Result<u64, SchemaError> {
    let as_whole_float = || {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
            .map(|f| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked
                let n = f as u64;
                n
            })
    };
    value
        .as_u64()
        .or_else(as_whole_float)
        .ok_or_else(|| invalid(at, "must be a non-negative integer"))
}

pub(super) fn string_list(value: &Value, at: &str) -> Result<Vec<String>, SchemaError> {
    let list = value
        .as_array()
        .ok_or_else(|| invalid(at, "must be an array of strings"))?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(at, "must be an array of strings"))
        })
        .collect()
}

pub(super) fn compile_regex(source: &str, at: &str) -> Result<Regex, SchemaError> {
    Regex::new(source).map_err(|e| match e {
        RegexError::Unsupported(what) => unsupported(at, format!("pattern: {what}")),
        RegexError::Syntax(why) => invalid(at, format!("pattern {source:?}: {why}")),
    })
}

pub(super) fn pattern(value: &Value, at: &str) -> Result<Pattern, SchemaError> {
    let source = value
        .as_str()
        .ok_or_else(|| invalid(at, "pattern must be a string"))?;
    Ok(Pattern {
        source: source.to_owned(),
        regex: compile_regex(source, at)?,
    })
}

/// Decodes `%XX` escapes of a URI fragment.
pub(super) fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
