//! Fingerprint known-answer tests (docs/fingerprint.md).
//!
//! Expected values come from outside this crate: `data/fingerprint.json` (the shared
//! vectors), `data/extra_vectors.json` and `data/transcripts.expected.json`, both written by
//! `data/gen_vectors.py`, an independent Python reference checked against RFC 8785's own
//! examples. Regenerate with `cd plugin/core/tests/data && python3 gen_vectors.py`.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolseal_core::policy::fingerprint::{
    FingerprintField, FingerprintFields, ToolDigests, ToolSetError, canonical_tool_view,
    digest_tools, normalized_tool_view, server_fingerprint, sha256_hex, to_hex, tool_digest,
};
use toolseal_core::wire::canonical::{
    self, CanonicalSink, Plain, cmp_utf16, to_canonical_string, write_canonical,
};
use toolseal_core::wire::json::parse_strict;

use crate::support::files::data;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn load(name: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(data(name))?;
    Ok(parse_strict(&bytes, 127)?)
}

fn fields_of(case: &Value) -> Result<FingerprintFields, String> {
    let names: Vec<&str> = case["fields"]
        .as_array()
        .ok_or("fields")?
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    FingerprintFields::parse(&names)
}

/// Checks one vector case; returns its fingerprint.
fn check_case(case: &Value) -> Result<String, Box<dyn std::error::Error>> {
    let name = case["name"].as_str().unwrap();
    let fields = fields_of(case)?;
    let tools = &case["tools"];
    for (i, tool) in tools.as_array().unwrap().iter().enumerate() {
        let text = canonical_tool_view(tool, &fields)?;
        assert_eq!(
            String::from_utf8(text.clone())?,
            case["canonical"][i].as_str().unwrap(),
            "{name}: canonical text of tool {i}"
        );
        let tool_name = tool["name"].as_str().unwrap();
        let digest = tool_digest(tool, &fields)?;
        assert_eq!(
            digest,
            case["digests"][tool_name].as_str().unwrap(),
            "{name}: {tool_name}"
        );
        assert_eq!(
            digest,
            to_hex(&Sha256::digest(&text)),
            "{name}: streamed digest"
        );
    }
    let digests = digest_tools(tools, &fields)?;
    assert_eq!(digests.len(), case["digests"].as_object().unwrap().len());
    for (tool_name, digest) in case["digests"].as_object().unwrap() {
        assert_eq!(
            digests.get(tool_name),
            digest.as_str(),
            "{name}: get({tool_name})"
        );
    }
    let fingerprint = digests.fingerprint();
    assert_eq!(
        fingerprint,
        case["fingerprint"].as_str().unwrap(),
        "{name}: fingerprint"
    );
    Ok(fingerprint)
}

#[test]
fn shared_vectors_match_exactly() -> TestResult {
    let vectors = load("fingerprint.json")?;
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    for case in cases {
        check_case(case)?;
    }
    Ok(())
}

#[test]
fn own_vectors_match_the_python_reference() -> TestResult {
    let vectors = load("extra_vectors.json")?;
    let cases = vectors["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut by_name = std::collections::BTreeMap::new();
    for case in cases {
        by_name.insert(case["name"].as_str().unwrap(), check_case(case)?);
    }
    assert_eq!(relations_hold(cases, &by_name), (4, 10));
    Ok(())
}

/// Checks every case's `same_as` / `differs_from` relation against the fingerprints computed
/// for the cases (`by_name`); returns how many of each it checked.
pub(crate) fn relations_hold(
    cases: &[Value],
    by_name: &std::collections::BTreeMap<&str, String>,
) -> (usize, usize) {
    let (mut same, mut differ) = (0, 0);
    for case in cases {
        let mine = &by_name[case["name"].as_str().unwrap()];
        if let Some(other) = case["same_as"].as_str() {
            assert_eq!(mine, &by_name[other], "{} same as {other}", case["name"]);
            same += 1;
        }
        if let Some(other) = case["differs_from"].as_str() {
            assert_ne!(
                mine, &by_name[other],
                "{} differs from {other}",
                case["name"]
            );
            differ += 1;
        }
    }
    (same, differ)
}

#[test]
fn numbers_follow_ecmascript() -> TestResult {
    let vectors = load("extra_vectors.json")?;
    let numbers = vectors["numbers"].as_array().unwrap();
    assert!(numbers.len() > 3000);
    for n in numbers {
        let text = n["json"].as_str().unwrap();
        let value = parse_strict(text.as_bytes(), 1)?;
        assert_eq!(
            to_canonical_string(&value),
            n["canonical"].as_str().unwrap(),
            "{text}"
        );
    }
    Ok(())
}

#[test]
fn numbers_known_forms() -> TestResult {
    let cases = [
        ("1.0", "1"),
        ("1e21", "1e+21"),
        ("1e-7", "1e-7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0.1", "0.1"),
        ("5e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("9007199254740992", "9007199254740992"),
        ("9007199254740993", "9007199254740992"),
        ("18446744073709551615", "18446744073709552000"),
        ("-9223372036854775808", "-9223372036854776000"),
        ("123456789012345680000", "123456789012345680000"),
        ("0.000001", "0.000001"),
        ("1e20", "100000000000000000000"),
    ];
    for (text, want) in cases {
        let value = parse_strict(text.as_bytes(), 1)?;
        assert_eq!(to_canonical_string(&value), want, "{text}");
    }
    Ok(())
}

#[test]
fn strings_are_minimally_escaped() -> TestResult {
    let vectors = load("extra_vectors.json")?;
    let strings = vectors["strings"].as_array().unwrap();
    assert_eq!(strings.len(), 9);
    for s in strings {
        let mut out = Vec::new();
        canonical::write_string(s["value"].as_str().unwrap(), &mut out);
        assert_eq!(String::from_utf8(out)?, s["canonical"].as_str().unwrap());
    }
    Ok(())
}

#[test]
fn rfc8785_example_text() -> TestResult {
    // RFC 8785 section 3.2.2, input and output as printed in the RFC.
    let input = r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"#;
    let want = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
    assert_eq!(
        to_canonical_string(&parse_strict(input.as_bytes(), 4)?),
        want
    );
    let vectors = load("extra_vectors.json")?;
    assert_eq!(vectors["rfc8785_example"]["canonical"], want);
    Ok(())
}

#[test]
fn rfc8785_key_order() -> TestResult {
    let input = r#"{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}"#;
    let want = "{\"\\r\":2,\"1\":4,\"\u{80}\":6,\"ö\":7,\"€\":1,\"😀\":5,\"\u{fb33}\":3}";
    assert_eq!(
        to_canonical_string(&parse_strict(input.as_bytes(), 4)?),
        want
    );
    Ok(())
}

#[test]
fn cmp_utf16_agrees_with_encode_utf16() {
    let samples = [
        "",
        "a",
        "ab",
        "b",
        "Z",
        "\u{7f}",
        "\u{80}",
        "é",
        "\u{7ff}",
        "\u{800}",
        "\u{d7ff}",
        "\u{e000}",
        "\u{fb33}",
        "\u{ffff}",
        "\u{10000}",
        "😀",
        "\u{10ffff}",
        "a\u{e000}",
        "a😀",
        "a😀b",
        "a\u{ffff}",
        "😀\u{e000}",
        "\u{e000}😀",
    ];
    for a in samples {
        for b in samples {
            assert_eq!(
                cmp_utf16(a, b),
                a.encode_utf16().cmp(b.encode_utf16()),
                "{a:?} vs {b:?}"
            );
        }
    }
}

fn transcript_tools(name: &str) -> Result<Value, Box<dyn std::error::Error>> {
    Ok(load(&format!("{name}.tools.json"))?["tools"].take())
}

#[test]
fn transcripts_match_the_python_reference() -> TestResult {
    let expected = load("transcripts.expected.json")?;
    let transcripts = expected["transcripts"].as_object().unwrap();
    assert_eq!(transcripts.len(), 4);
    for (name, want) in transcripts {
        let tools = transcript_tools(name)?;
        for label in ["default", "all"] {
            let names: Vec<&str> = expected["fields"][label]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let digests = digest_tools(&tools, &FingerprintFields::parse(&names)?)?;
            let want = &want[label];
            assert_eq!(
                digests.fingerprint(),
                want["fingerprint"].as_str().unwrap(),
                "{name} {label}"
            );
            let want_digests = want["digests"].as_object().unwrap();
            assert_eq!(digests.len(), want_digests.len());
            for (tool, digest) in want_digests {
                assert_eq!(digests.get(tool), digest.as_str(), "{name} {label} {tool}");
            }
        }
    }
    Ok(())
}

#[test]
fn paginated_transcript_accumulates_page_by_page() -> TestResult {
    let file = load("fastmcp-4.2.3-paginated.tools.json")?;
    let fields = FingerprintFields::default();
    let whole = digest_tools(&file["tools"], &fields)?;
    let pages = file["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2);
    let mut pairs = Vec::new();
    for page in pages.iter().rev() {
        pairs.extend(digest_tools(&page["tools"], &fields)?.entries);
    }
    assert_eq!(pairs.len(), 4);
    let accumulated = server_fingerprint(pairs.iter().map(|(n, d)| (n.as_str(), d.as_str())));
    assert_eq!(accumulated, whole.fingerprint());
    let merged = ToolDigests::from_entries(pairs.clone())?;
    assert_eq!(merged, whole);
    pairs.push(pairs[0].clone());
    assert_eq!(
        ToolDigests::from_entries(pairs.clone()),
        Err(ToolSetError::DuplicateName(pairs[0].0.clone()))
    );
    let expected = load("transcripts.expected.json")?;
    assert_eq!(
        accumulated,
        expected["transcripts"]["fastmcp-4.2.3-paginated"]["default"]["fingerprint"]
    );
    Ok(())
}

#[test]
fn invalid_tool_sets_are_refused() {
    let f = FingerprintFields::default();
    assert_eq!(
        digest_tools(&json!({"tools": []}), &f),
        Err(ToolSetError::NotAnArray)
    );
    assert_eq!(
        digest_tools(&json!([{"name": "a"}, "b"]), &f),
        Err(ToolSetError::NotAnObject { index: 1 })
    );
    assert_eq!(
        digest_tools(&json!([{"name": "a"}, {"description": "x"}]), &f),
        Err(ToolSetError::MissingName { index: 1 })
    );
    assert_eq!(
        digest_tools(&json!([{"name": 7}]), &f),
        Err(ToolSetError::MissingName { index: 0 })
    );
    assert_eq!(
        digest_tools(
            &json!([{"name": "b"}, {"name": "a"}, {"name": "b", "description": "2"}]),
            &f
        ),
        Err(ToolSetError::DuplicateName("b".into()))
    );
    assert_eq!(
        tool_digest(&json!([]), &f),
        Err(ToolSetError::NotAnObject { index: 0 })
    );
    assert_eq!(
        ToolSetError::DuplicateName("b".into()).to_string(),
        "invalid tool set: two tools are named \"b\"; names must be unique"
    );
    let empty = digest_tools(&json!([]), &f).unwrap();
    assert!(empty.is_empty());
    // The JCS text of an empty array is `[]`.
    assert_eq!(
        empty.fingerprint(),
        format!("sha256:{}", to_hex(&Sha256::digest(b"[]")))
    );
}

#[test]
fn fields_parse_and_default() {
    let default = FingerprintFields::default();
    let listed: Vec<_> = default.iter().collect();
    assert_eq!(
        listed,
        [
            FingerprintField::Name,
            FingerprintField::Description,
            FingerprintField::InputSchema
        ]
    );
    assert_eq!(
        FingerprintFields::parse(&["description", "inputSchema"]),
        Ok(default)
    );
    let extended = FingerprintFields::parse(&["title", "icons", "title"]).unwrap();
    assert!(extended.contains(FingerprintField::Name));
    assert!(extended.contains(FingerprintField::Icons));
    assert!(!extended.contains(FingerprintField::Description));
    let err = FingerprintFields::parse(&["name", "inputschema"]).unwrap_err();
    assert!(
        err.starts_with("unknown fingerprint field \"inputschema\""),
        "{err}"
    );
    for f in FingerprintField::ALL {
        assert_eq!(FingerprintField::from_str(f.as_str()), Some(f));
    }
    assert_eq!(FingerprintField::from_str("_meta"), None);
}

#[test]
fn sha256_sink_matches_buffered_text() -> TestResult {
    let tools = transcript_tools("everything-2026.1.26")?;
    let mut text = Vec::new();
    write_canonical(&tools, &mut text);
    let mut hasher = Sha256::new();
    canonical::write_value(&tools, Plain, &mut hasher);
    assert_eq!(
        hasher.finalize().as_slice(),
        Sha256::digest(&text).as_slice()
    );
    let mut via_trait: Vec<u8> = Vec::new();
    CanonicalSink::put(&mut via_trait, b"x");
    assert_eq!(via_trait, b"x");
    Ok(())
}

#[test]
fn writer_survives_values_nested_far_beyond_any_parser() {
    let depth = 100_000;
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    let mut out = Vec::new();
    write_canonical(&value, &mut out);
    assert_eq!(out.len(), 2 * depth + 1);
    assert_eq!(out[depth], b'1');
    // Dropping a value this deep recurses in serde_json; leak it instead.
    std::mem::forget(value);
}

#[test]
fn string_escaping_matches_serde_json_on_random_text() {
    // serde_json's string escaping happens to be JCS's (short escapes, lowercase \u00xx,
    // everything else raw), which makes it an oracle for the word-at-a-time scanner.
    let alphabet = [
        'a', 'Z', ' ', '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é', '€', '😀', '\u{2028}',
        '/',
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 0..400 {
        let mut s = String::new();
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            s.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        let mut out = Vec::new();
        canonical::write_string(&s, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(&s).unwrap(),
            "{s:?}"
        );
    }
}

#[test]
fn normalized_view_reads_back_the_canonical_bytes() -> TestResult {
    let vectors = load("extra_vectors.json")?;
    let fields = FingerprintFields::default();
    let by_name = |name: &str| {
        vectors["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
    };
    let nested = &by_name("nested")["tools"][0];
    let flipped = &by_name("nested-flipped")["tools"][0];
    let view = normalized_tool_view(flipped, &fields).unwrap();
    assert_eq!(view, normalized_tool_view(nested, &fields).unwrap());
    assert_eq!(view["inputSchema"]["required"], json!(["list", "tuple"]));
    assert_eq!(
        view["inputSchema"]["properties"]["data"]["default"],
        json!(["b", "a"])
    );
    assert_eq!(
        to_canonical_string(&view),
        by_name("nested")["canonical"][0].as_str().unwrap()
    );
    assert_eq!(normalized_tool_view(&json!({"title": "x"}), &fields), None);
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    Ok(())
}
