//! Exact comparisons of JSON numbers, whatever their representation.
//!
//! serde_json keeps a number as u64, i64 or f64. Converting everything to f64 would be wrong
//! above 2^53 (`9007199254740993 > 9007199254740992.0` must hold), so integers are compared
//! as i128 and an integer against a float by its integral and fractional parts. `multipleOf`
//! works on exact decimals (the shortest text of each float), so `0.3` is a multiple of
//! `0.1`, falling back to float division only when the decimals do not fit in i128.

use serde_json::Number;
use std::cmp::Ordering;

/// A number split by representation.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn split(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// The exact order of `a` and `b`; `None` only for a NaN (which JSON cannot carry).
pub(crate) fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (split(a), split(b)) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
        (Num::Int(x), Num::Float(y)) => compare_int_float(x, y),
        (Num::Float(x), Num::Int(y)) => compare_int_float(y, x).map(Ordering::reverse),
    }
}

/// Whether `a` and `b` are the same number (`1` equals `1.0`).
pub(crate) fn equal(a: &Number, b: &Number) -> bool {
    compare(a, b) == Some(Ordering::Equal)
}

/// Orders an integer against a float without losing precision.
fn compare_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // Beyond ±1.7e38 no i128 can reach the float.
    if f >= 1.7e38 {
        return Some(Ordering::Less);
    }
    if f <= -1.7e38 {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    #[allow(clippy::cast_possible_truncation)] // in range: checked above
    let whole_int = whole as i128;
    Some(match i.cmp(&whole_int) {
        Ordering::Equal if f > whole => Ordering::Less,
        Ordering::Equal if f < whole => Ordering::Greater,
        other => other,
    })
}

/// Whether the number is an integer in value (`1.0` is).
pub(crate) fn is_integer(n: &Number) -> bool {
    match split(n) {
        Num::Int(_) => true,
        Num::Float(f) => f.is_finite() && f.fract() == 0.0,
    }
}

/// Whether the number is strictly positive.
pub(crate) fn is_positive(n: &Number) -> bool {
    match split(n) {
        Num::Int(i) => i > 0,
        Num::Float(f) => f > 0.0,
    }
}

/// Whether `value` is an integer multiple of `divisor` (`divisor` > 0).
pub(crate) fn is_multiple_of(value: &Number, divisor: &Number) -> bool {
    if let (Some((v, vs)), Some((d, ds))) = (decimal(value), decimal(divisor)) {
        let scale = vs.max(ds);
        let scaled_v = rescale(v, scale - vs);
        let scaled_d = rescale(d, scale - ds);
        if let (Some(v), Some(d)) = (scaled_v, scaled_d) {
            return d != 0 && v.checked_rem(d) == Some(0);
        }
    }
    let (Some(v), Some(d)) = (value.as_f64(), divisor.as_f64()) else {
        return false;
    };
    let quotient = v / d;
    quotient.is_finite() && quotient.fract() == 0.0
}

fn rescale(mantissa: i128, by: u32) -> Option<i128> {
    10i128
        .checked_pow(by)
        .and_then(|factor| mantissa.checked_mul(factor))
}

/// The number as `mantissa / 10^scale`, if it fits.
fn decimal(n: &Number) -> Option<(i128, u32)> {
    match split(n) {
        Num::Int(i) => Some((i, 0)),
        Num::Float(f) if f.is_finite() => parse_decimal(&format!("{f}")),
        Num::Float(_) => None,
    }
}

/// Parses Rust's plain float text (`-12.5`, never an exponent).
fn parse_decimal(text: &str) -> Option<(i128, u32)> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let frac = frac.trim_end_matches('0');
    let mut mantissa: i128 = 0;
    for c in whole.chars().chain(frac.chars()) {
        let d = i128::from(c.to_digit(10)?);
        mantissa = mantissa.checked_mul(10)?.checked_add(d)?;
    }
    let scale = u32::try_from(frac.len()).ok()?;
    Some((if negative { -mantissa } else { mantissa }, scale))
}
