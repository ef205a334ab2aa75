//! Strict parser tests: everything a lenient parser would let through.

use serde_json::json;
use toolseal_core::wire::json::{JsonError, PARSER_DEPTH_CEILING, parse_strict};

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

#[test]
fn mutated_documents_never_panic_and_canonical_text_is_stable() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fastmcp-4.2.3-json.tools.json");
    let original = std::fs::read(path).unwrap();
    let fields = toolseal_core::policy::fingerprint::FingerprintFields::default();
    let tokens: &[&[u8]] = &[
        b"{", b"}", b"[", b"]", b",", b":", b"\"", b"\\u", b"\xff", b"1e9", b"-0", b" ",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..5_000 {
        let mut doc = original.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % doc.len() as u64) as usize;
            let token = tokens[(next() % tokens.len() as u64) as usize];
            match next() % 3 {
                0 => drop(doc.splice(at..at, token.iter().copied())),
                1 => drop(doc.remove(at)),
                _ => doc[at] = token[0],
            }
        }
        match parse_strict(&doc, 64) {
            Ok(value) => {
                accepted += 1;
                let text = toolseal_core::wire::canonical::to_canonical_string(&value);
                let again = parse_strict(text.as_bytes(), 64).unwrap();
                assert_eq!(
                    toolseal_core::wire::canonical::to_canonical_string(&again),
                    text
                );
                let _ = toolseal_core::policy::fingerprint::digest_tools(&value["tools"], &fields);
            }
            Err(_) => refused += 1,
        }
    }
    // Both outcomes are exercised (the exact split depends only on the fixed seed).
    assert!(
        accepted > 100 && refused > 100,
        "{accepted} accepted, {refused} refused"
    );
}
