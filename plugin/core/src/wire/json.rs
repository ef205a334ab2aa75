//! Strict JSON parsing: the one parser every untrusted byte goes through.
//!
//! Main design decision: serde_json does the lexing (with its own recursion limit of 128
//! left on, so no input can overflow the stack), and a custom [`DeserializeSeed`] builds the
//! [`Value`] so that it can refuse what a lenient parser would silently accept and what a
//! second parser might read differently (parser-differential attacks): duplicate object keys
//! at any depth and nesting deeper than a limit. serde_json itself refuses invalid UTF-8,
//! lone surrogate escapes (`"\ud800"`) and trailing bytes; a leading UTF-8 BOM is refused
//! here before parsing.
//!
//! Numbers: integers that fit `u64`/`i64` stay integers; larger ones become `f64` (they are
//! hashed as the `f64` they denote, see [`crate::wire::canonical`]). A number whose magnitude
//! overflows `f64` (`1e400`) is refused as a syntax error ("number out of range"), never
//! turned into infinity.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// Adds `key: value` to `object`. Out of line on purpose: the builders of audit events,
/// decision records and denials call it dozens of times, and an inlined insert costs the
/// `.wasm` about a hundred bytes per call.
#[inline(never)]
pub fn put(object: &mut Map<String, Value>, key: &str, value: Value) {
    object.insert(key.to_owned(), value);
}

/// The bytes of `value`, written straight into a buffer (a `to_string` goes through the
/// formatter's writer, a call per token, a large share of a rewritten list's cost).
/// Writing a [`Value`] into memory cannot fail; if it ever did, the answer would be empty,
/// which a client reads as nothing served, never as the server's unchecked bytes.
pub fn encode(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// The nesting that serde_json's own recursion guard lets through: a document nested 128
/// levels deep is refused by serde_json whatever `max_depth` says.
pub const PARSER_DEPTH_CEILING: usize = 127;

/// Longest duplicate key kept verbatim in [`JsonError::DuplicateKey`] (bytes); longer keys
/// are cut so that an error message stays loggable.
const MAX_KEY_IN_ERROR: usize = 128;

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not valid JSON (syntax, invalid UTF-8, lone surrogate escape, trailing data, a leading
    /// byte order mark, a number out of `f64` range...). The text says what and where.
    Syntax(String),
    /// An object has the same key twice (at any depth); holds the key (cut after 128 bytes).
    DuplicateKey(String),
    /// Nesting deeper than the configured limit; holds the limit that was exceeded.
    TooDeep(usize),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax(msg) => write!(f, "invalid JSON: {msg}"),
            JsonError::DuplicateKey(key) => write!(
                f,
                "duplicate object key {key:?}: each key may appear once per object \
                 (two parsers could read different values)"
            ),
            JsonError::TooDeep(limit) => write!(
                f,
                "JSON nested deeper than {limit} arrays/objects (limits.max_depth)"
            ),
        }
    }
}

impl std::error::Error for JsonError {}

/// Parses `bytes` as one JSON value with the rules above. `max_depth` counts nested
/// arrays/objects (a scalar has depth 0, `[]` depth 1, `[[]]` depth 2). Whatever `max_depth`
/// says, nesting beyond [`PARSER_DEPTH_CEILING`] is refused too (as [`JsonError::TooDeep`]).
///
/// Never panics, never recurses deeper than about 128 levels.
pub fn parse_strict(bytes: &[u8], max_depth: usize) -> Result<Value, JsonError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(JsonError::Syntax(
            "leading UTF-8 byte order mark (BOM); send JSON without it".into(),
        ));
    }
    let refusal = RefCell::new(None);
    let seed = StrictSeed {
        depth: 0,
        max_depth,
        refusal: &refusal,
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match parsed {
        Ok(value) => Ok(value),
        Err(err) => Err(refusal
            .into_inner()
            .unwrap_or_else(|| classify_serde_error(&err, max_depth))),
    }
}

/// Turns a serde_json error that our seed did not raise into a [`JsonError`].
fn classify_serde_error(err: &serde_json::Error, max_depth: usize) -> JsonError {
    let msg = err.to_string();
    if msg.starts_with("recursion limit exceeded") {
        JsonError::TooDeep(max_depth.min(PARSER_DEPTH_CEILING))
    } else {
        JsonError::Syntax(msg)
    }
}

/// Builds one [`Value`] at a given nesting depth, refusing repeats and excess depth.
/// The precise refusal is parked in `refusal`: serde's error type only carries text.
#[derive(Clone, Copy)]
struct StrictSeed<'r> {
    depth: usize,
    max_depth: usize,
    refusal: &'r RefCell<Option<JsonError>>,
}

impl StrictSeed<'_> {
    /// Records `why` (the first refusal wins) and returns serde's error to unwind with.
    fn refuse<E: de::Error>(&self, why: JsonError) -> E {
        let msg = why.to_string();
        let mut slot = self.refusal.borrow_mut();
        if slot.is_none() {
            *slot = Some(why);
        }
        E::custom(msg)
    }

    /// The seed for the members of a container opened at this depth.
    fn enter<E: de::Error>(&self) -> Result<Self, E> {
        let depth = self.depth.saturating_add(1);
        if depth > self.max_depth {
            return Err(self.refuse(JsonError::TooDeep(self.max_depth)));
        }
        Ok(StrictSeed { depth, ..*self })
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(self.refuse(JsonError::DuplicateKey(shorten(key))));
            }
            let value = map.next_value_seed(inner)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// Cuts `key` to at most [`MAX_KEY_IN_ERROR`] bytes on a character boundary.
fn shorten(mut key: String) -> String {
    if key.len() > MAX_KEY_IN_ERROR {
        let mut cut = MAX_KEY_IN_ERROR;
        while !key.is_char_boundary(cut) {
            cut -= 1;
        }
        key.truncate(cut);
        key.push('…');
    }
    key
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests {
    //! Strict parser tests: everything a lenient parser would let through.

    use crate::wire::json::{JsonError, PARSER_DEPTH_CEILING, parse_strict};
    use serde_json::json;

    fn nested(depth: usize) -> Vec<u8> {
        let mut text = vec![b'['; depth];
        text.extend(std::iter::repeat_n(b']', depth));
        text
    }

    fn syntax_message(bytes: &[u8]) -> String {
        match parse_strict(bytes, 64) {
            Err(JsonError::Syntax(msg)) => msg,
            other => panic!("expected a syntax error for {bytes:?}, got {other:?}"),
        }
    }

    #[test]
    fn accepts_plain_documents() {
        let v = parse_strict(br#" {"a":[1,2.5,"x",null,true],"b":{"c":-3}} "#, 64).unwrap();
        assert_eq!(v, json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}}));
        assert_eq!(parse_strict(b"\"\\ud83d\\ude00\"", 0).unwrap(), json!("😀"));
        assert_eq!(parse_strict(b"7", 0).unwrap(), json!(7));
    }

    #[test]
    fn duplicate_key_at_depth_one() {
        assert_eq!(
            parse_strict(br#"{"a":1,"b":2,"a":3}"#, 64),
            Err(JsonError::DuplicateKey("a".into()))
        );
    }

    #[test]
    fn duplicate_key_with_equal_values() {
        assert_eq!(
            parse_strict(br#"{"a":1,"a":1}"#, 64),
            Err(JsonError::DuplicateKey("a".into()))
        );
    }

    #[test]
    fn duplicate_key_at_depth_five() {
        let body = br#"{"jsonrpc":"2.0","params":{"arguments":{"x":[{"deep":{"k":1,"k":2}}]}}}"#;
        assert_eq!(
            parse_strict(body, 64),
            Err(JsonError::DuplicateKey("k".into()))
        );
    }

    #[test]
    fn duplicate_key_spelled_with_escapes() {
        // "a" and "\u0061" are the same key once decoded.
        assert_eq!(
            parse_strict(br#"{"a":1,"\u0061":2}"#, 64),
            Err(JsonError::DuplicateKey("a".into()))
        );
    }

    #[test]
    fn same_key_in_sibling_objects_is_fine() {
        assert!(parse_strict(br#"[{"a":1},{"a":2}]"#, 64).is_ok());
    }

    #[test]
    fn depth_exactly_at_the_limit_passes_and_one_over_fails() {
        assert!(parse_strict(&nested(64), 64).is_ok());
        assert_eq!(parse_strict(&nested(65), 64), Err(JsonError::TooDeep(64)));
        assert!(parse_strict(br#"{"a":{"b":[1]}}"#, 3).is_ok());
        assert_eq!(
            parse_strict(br#"{"a":{"b":[1]}}"#, 2),
            Err(JsonError::TooDeep(2))
        );
        assert!(parse_strict(b"1", 0).is_ok());
        assert_eq!(parse_strict(b"[]", 0), Err(JsonError::TooDeep(0)));
    }

    #[test]
    fn serde_json_ceiling_applies_whatever_the_limit() {
        assert!(parse_strict(&nested(PARSER_DEPTH_CEILING), 10_000).is_ok());
        assert_eq!(
            parse_strict(&nested(PARSER_DEPTH_CEILING + 1), 10_000),
            Err(JsonError::TooDeep(PARSER_DEPTH_CEILING))
        );
    }

    #[test]
    fn hundred_thousand_brackets_do_not_crash() {
        let mut open = vec![b'['; 100_000];
        assert_eq!(
            parse_strict(&open, usize::MAX),
            Err(JsonError::TooDeep(PARSER_DEPTH_CEILING))
        );
        assert_eq!(parse_strict(&open, 64), Err(JsonError::TooDeep(64)));
        open.fill(b'{');
        assert!(parse_strict(&open, usize::MAX).is_err());
        let balanced = nested(100_000);
        assert_eq!(parse_strict(&balanced, 64), Err(JsonError::TooDeep(64)));
    }

    #[test]
    fn invalid_utf8_is_refused() {
        let msg = syntax_message(b"{\"a\":\"\xff\"}");
        assert_eq!(msg, "invalid unicode code point at line 1 column 7");
        syntax_message(b"{\"\xc3\x28\":1}");
        syntax_message(b"\"\xed\xa0\x80\""); // an encoded surrogate is not UTF-8
    }

    #[test]
    fn lone_surrogate_escapes_are_refused() {
        // serde_json wants a low surrogate escape to follow, and says so.
        let msg = syntax_message(br#"{"a":"\ud800"}"#);
        assert_eq!(msg, "unexpected end of hex escape at line 1 column 13");
        let msg = syntax_message(br#""\ud800\u0041""#);
        assert!(
            msg.starts_with("lone leading surrogate in hex escape"),
            "{msg}"
        );
        syntax_message(br#""\udc00""#);
        syntax_message(br#""\ud800x""#);
        syntax_message(br#"{"\ud800":1}"#);
    }

    #[test]
    fn byte_order_mark_is_refused() {
        let msg = syntax_message(b"\xEF\xBB\xBF{}");
        assert!(msg.contains("BOM"), "{msg}");
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let msg = syntax_message(b"{} x");
        assert!(msg.contains("trailing"), "{msg}");
        syntax_message(b"{}{}");
        syntax_message(b"[1],");
        assert!(parse_strict(b"{} \r\n\t", 64).is_ok());
    }

    #[test]
    fn out_of_range_numbers_are_refused() {
        let msg = syntax_message(b"1e400");
        assert!(msg.contains("out of range"), "{msg}");
        syntax_message(b"[-1e400]");
        syntax_message(b"NaN");
        syntax_message(b"Infinity");
    }

    #[test]
    fn large_integers_become_floats() {
        assert_eq!(
            parse_strict(b"18446744073709551615", 0).unwrap(),
            json!(u64::MAX)
        );
        assert_eq!(
            parse_strict(b"-9223372036854775808", 0).unwrap(),
            json!(i64::MIN)
        );
        assert_eq!(
            parse_strict(b"18446744073709551616", 0).unwrap(),
            json!(18446744073709551616.0)
        );
    }

    #[test]
    fn empty_and_broken_inputs_are_syntax_errors() {
        for bad in [
            &b""[..],
            b" ",
            b"{",
            b"[1,]",
            b"{\"a\"}",
            b"'a'",
            b"{a:1}",
            b"01",
            b"\x00",
        ] {
            syntax_message(bad);
        }
    }

    #[test]
    fn errors_explain_themselves() {
        assert_eq!(
            JsonError::TooDeep(64).to_string(),
            "JSON nested deeper than 64 arrays/objects (limits.max_depth)"
        );
        assert!(
            JsonError::DuplicateKey("k".into())
                .to_string()
                .starts_with("duplicate object key \"k\"")
        );
        let long = format!(r#"{{"{0}":1,"{0}":2}}"#, "é".repeat(100));
        match parse_strict(long.as_bytes(), 4) {
            Err(JsonError::DuplicateKey(k)) => assert_eq!(k, format!("{}…", "é".repeat(64))),
            other => panic!("{other:?}"),
        }
    }
}
