//! RFC 8785 (JCS) canonical serialization.

use serde_json::Value;
use std::cmp::Ordering;

/// Appends the JCS form of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    let _ = (value, out);
}

/// Compares two strings by UTF-16 code units (JCS key order).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}
