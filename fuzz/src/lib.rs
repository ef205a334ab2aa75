//! Oracles shared by toolseal's fuzz targets.
//!
//! Main design decision: every target checks a property against an independent reading of
//! the same bytes, not only "no panic": a lossless JSON tree built by serde_json (which keeps
//! every duplicate key, so the strict parser's refusals can be checked), numeric equality for
//! canonical re-parsing, a lenient "what would a client or server read" view of what the
//! engine forwards, and other engines (the `regex` crate, the `jsonschema` crate) for the
//! pattern matcher and the schema validator.

pub mod bytes;
pub mod lenient;
pub mod lossless;
pub mod regex_gen;
pub mod scenario;
pub mod schema_gen;

use serde_json::Value;

/// Whether two values are equal when every number is compared as the `f64` it denotes
/// (canonical JSON prints integers beyond 2^53 and `1.0` in ECMAScript form).
pub fn numeric_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| numeric_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| numeric_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Splits `data` at `cuts` (positions taken modulo the length, sorted, deduplicated):
/// the pieces concatenate back to `data`.
pub fn split_at_cuts<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| if data.is_empty() { 0 } else { c % (data.len() + 1) })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        if let Some(piece) = data.get(start..p) {
            pieces.push(piece);
            start = p;
        }
    }
    pieces.push(data.get(start..).unwrap_or_default());
    pieces
}
