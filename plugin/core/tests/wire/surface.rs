//! Surface fingerprint known-answer tests (docs/fingerprint.md, "The surface fingerprint").
//!
//! Expected values come from `data/surface_vectors.json`, written by `data/gen_vectors.py`, the
//! independent Python reference (regenerate with `cd plugin/core/tests/data && python3
//! gen_vectors.py`).

use serde_json::Value;
use std::collections::BTreeMap;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};
use toolseal_core::policy::section::{Section, Surface};
use toolseal_core::wire::json::parse_strict;

use crate::support::files::data;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn fields_of(case: &Value) -> Result<FingerprintFields, String> {
    let names: Vec<&str> = case["fields"]
        .as_array()
        .ok_or("fields")?
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    FingerprintFields::parse(&names)
}

#[test]
fn surface_vectors_match_the_python_reference() -> TestResult {
    let vectors = parse_strict(&std::fs::read(data("surface_vectors.json"))?, 127)?;
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 19);
    let mut by_name = BTreeMap::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let fields = fields_of(case)?;
        let seal = case["seal_resources"].as_bool().unwrap();
        let surface = Surface::of_document(&case["surface"], &fields, seal)?;
        let expected = case["sections"].as_object().unwrap();
        for section in Section::ALL {
            let digests = surface.section(section);
            match expected.get(section.name()) {
                None => assert!(digests.is_empty(), "{name}: {section} has items"),
                Some(want) => {
                    let want_digests = want["digests"].as_object().unwrap();
                    assert_eq!(digests.len(), want_digests.len(), "{name}: {section}");
                    for (key, digest) in want_digests {
                        assert_eq!(digests.get(key), digest.as_str(), "{name}: {section} {key}");
                    }
                    assert_eq!(
                        digests.fingerprint(),
                        want["fingerprint"].as_str().unwrap(),
                        "{name}: {section} fingerprint"
                    );
                }
            }
        }
        let tools = case["surface"]
            .get("tools")
            .cloned()
            .unwrap_or(Value::Array(vec![]));
        assert_eq!(
            digest_tools(&tools, &fields)?.fingerprint(),
            case["tool_fingerprint"].as_str().unwrap(),
            "{name}: the tool fingerprint of section 1"
        );
        let fingerprint = surface.fingerprint();
        assert_eq!(fingerprint, case["fingerprint"].as_str().unwrap(), "{name}");
        by_name.insert(name, fingerprint);
    }
    assert_eq!(super::fingerprint::relations_hold(cases, &by_name), (6, 8));
    // What keeps every baseline made before the other sections were sealed valid.
    for name in ["tools-only", "nothing"] {
        let case = cases.iter().find(|c| c["name"] == name).unwrap();
        assert_eq!(case["fingerprint"], case["tool_fingerprint"], "{name}");
    }
    Ok(())
}

#[test]
fn invalid_sections_say_what_is_wrong() {
    let fields = FingerprintFields::default();
    let cases = [
        (r#"{"prompts": {}}"#, "`prompts` must be a JSON array"),
        (r#"{"instructions": 7}"#, "`instructions` must be a string"),
        (r#"{"prompts": [7]}"#, "prompts[0] is not a JSON object"),
        (
            r#"{"resourceTemplates": [{"name": "x"}]}"#,
            "resourceTemplates[0] has no string `uriTemplate`",
        ),
        (
            r#"{"prompts": [{"name": "a"}, {"name": "a"}]}"#,
            "two prompts have the key \"a\"",
        ),
        (
            r#"{"tools": [{"name": "a"}, {"name": "a"}]}"#,
            "two tools are named \"a\"",
        ),
    ];
    for (document, expected) in cases {
        let document: Value = serde_json::from_str(document).unwrap();
        let error = Surface::of_document(&document, &fields, true).unwrap_err();
        assert!(error.to_string().contains(expected), "{error} / {expected}");
    }
    // Resources that are not sealed are not read at all.
    let document: Value = serde_json::from_str(r#"{"resources": 7}"#).unwrap();
    assert!(Surface::of_document(&document, &fields, false).is_ok());
}
