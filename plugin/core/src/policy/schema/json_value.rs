//! JSON value helpers shared by validation and drift: equality where `1 == 1.0`, a
//! canonical key for set comparisons, and an iterative depth measure.
//!
//! Every walk here is bounded: equality and keys stop at [`MAX_VALUE_DEPTH`] (a deeper pair
//! compares unequal, a deeper key is refused), and depth is measured with an explicit stack,
//! so no JSON value can overflow the stack.

use super::number;
use serde_json::Value;
use std::fmt::Write as _;

/// Deepest value the helpers walk.
pub(crate) const MAX_VALUE_DEPTH: usize = 128;

/// JSON equality: same type and content, numbers by value (`1 == 1.0`), objects by key set.
/// Values nested deeper than [`MAX_VALUE_DEPTH`] compare unequal.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    eq_at(a, b, 0)
}

fn eq_at(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_VALUE_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => number::equal(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq_at(p, q, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| eq_at(v, w, depth + 1)))
        }
        _ => false,
    }
}

/// A text that is equal for two values exactly when [`json_eq`] holds: sorted keys, numbers
/// in one form per value. `None` when the value nests deeper than [`MAX_VALUE_DEPTH`].
pub(crate) fn canonical_key(value: &Value) -> Option<String> {
    let mut out = String::new();
    write_key(value, &mut out, 0)?;
    Some(out)
}

fn write_key(value: &Value, out: &mut String, depth: usize) -> Option<()> {
    if depth > MAX_VALUE_DEPTH {
        return None;
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_key(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_key(v, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Some(())
}

fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() == 0.0 && f.abs() < 1.7e38 {
            #[allow(clippy::cast_possible_truncation)] // integral and in range
            let whole = f as i128;
            let _ = write!(out, "{whole}");
        } else {
            let _ = write!(out, "{f:?}");
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// How deeply `value` nests (a scalar is 0, `[]` is 1), measured without recursion. Stops
/// counting once past `limit` and returns `limit + 1`.
pub(crate) fn depth(value: &Value, limit: usize) -> usize {
    measure(value, limit).depth
}

/// Depth and size of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Nesting depth (a scalar is 0), or `limit + 1` when deeper than the limit.
    pub(crate) depth: usize,
    /// Values plus the bytes of every string and key: a rough measure of the work a value
    /// can ask for.
    pub(crate) size: u64,
}

/// Measures `value` with an explicit stack; stops once deeper than `limit`.
pub(crate) fn measure(value: &Value, limit: usize) -> Extent {
    let mut extent = Extent { depth: 0, size: 0 };
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        extent.size = extent.size.saturating_add(1);
        let here = d + 1;
        match v {
            Value::String(s) => extent.size = extent.size.saturating_add(s.len() as u64),
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, here))),
            Value::Object(map) => {
                let keys: usize = map.keys().map(String::len).sum();
                extent.size = extent.size.saturating_add(keys as u64);
                stack.extend(map.values().map(|c| (c, here)));
            }
            _ => continue,
        }
        if matches!(v, Value::Array(_) | Value::Object(_)) {
            extent.depth = extent.depth.max(here);
        }
        if extent.depth > limit {
            extent.depth = limit + 1;
            return extent;
        }
    }
    extent
}

/// Short JSON text of `value` for messages (cut at `max` characters).
pub(crate) fn preview(value: &Value, max: usize) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}
