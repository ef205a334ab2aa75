//! The JSON Schema subset: table-driven validation cases with exact
//! violations, the refusal of unsupported features, the regex engine, resource bounds, and
//! every real schema of the recorded transcripts.

use crate::policy::schema::{SchemaError, Violation, compile};
use serde_json::{Value, json};
use std::time::Instant;

/// `tests/data/{name}`, the oracles and recorded lists the crate's tests share.
fn data(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn load(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data(name)).unwrap()).unwrap()
}

/// Validates and returns the violations as `(path, message)` pairs (empty when valid).
fn run(schema: &Value, instance: &Value) -> Vec<(String, String)> {
    let compiled = compile(schema).unwrap_or_else(|e| panic!("{schema} did not compile: {e}"));
    match compiled.validate(instance) {
        Ok(()) => {
            assert!(compiled.is_valid(instance));
            Vec::new()
        }
        Err(violations) => {
            assert!(!compiled.is_valid(instance));
            violations
                .into_iter()
                .map(
                    |Violation {
                         instance_path,
                         message,
                     }| (instance_path, message),
                )
                .collect()
        }
    }
}

fn v(path: &str, message: &str) -> (String, String) {
    (path.to_owned(), message.to_owned())
}

const ZOD_EMAIL: &str = r"^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$";

fn zod_email() -> Value {
    json!({"type": "string", "format": "email", "pattern": ZOD_EMAIL})
}

/// `(schema, instance, expected violations)`; an empty list means valid.
type Case = (Value, Value, Vec<(String, String)>);

fn cases() -> Vec<Case> {
    let deploy = json!({
        "type": "object",
        "properties": {
            "branch": {"type": "string"},
            "region": {"type": "string", "enum": ["us-east-preview", "eu-preview"]}
        },
        "required": ["branch", "region"],
        "additionalProperties": false
    });
    vec![
        (
            deploy.clone(),
            json!({"branch": "fix-login", "region": "eu-preview"}),
            vec![],
        ),
        (
            deploy.clone(),
            json!({"branch": "fix-login"}),
            vec![v("", "required property 'region' is missing")],
        ),
        (
            deploy.clone(),
            json!({"branch": 7, "region": "mars", "force": true}),
            vec![
                v("/branch", "expected string, got integer"),
                v(
                    "/force",
                    "property 'force' is not allowed; allowed properties: branch, region",
                ),
                v(
                    "/region",
                    "value \"mars\" is not one of the allowed values: \"us-east-preview\", \"eu-preview\"",
                ),
            ],
        ),
        (deploy, json!([]), vec![v("", "expected object, got array")]),
        // type
        (json!({"type": "integer"}), json!(1.0), vec![]),
        (
            json!({"type": "integer"}),
            json!(1.5),
            vec![v("", "expected integer, got number")],
        ),
        (json!({"type": ["string", "null"]}), json!(null), vec![]),
        (
            json!({"type": ["string", "null"]}),
            json!(3),
            vec![v("", "expected null or string, got integer")],
        ),
        (json!({"type": "number"}), json!(3), vec![]),
        (
            json!({"type": "boolean"}),
            json!("true"),
            vec![v("", "expected boolean, got string")],
        ),
        // enum / const with numeric equality
        (json!({"enum": [1, "a", {"k": [1]}]}), json!(1.0), vec![]),
        (
            json!({"enum": [1, "a", {"k": [1]}]}),
            json!({"k": [1.0]}),
            vec![],
        ),
        (json!({"const": {"a": 1}}), json!({"a": 1.0}), vec![]),
        (
            json!({"const": {"a": 1}}),
            json!({"a": 2}),
            vec![v("", "value must be {\"a\":1}")],
        ),
        // numbers
        (json!({"minimum": 1, "maximum": 100}), json!(1), vec![]),
        (
            json!({"minimum": 1, "maximum": 100}),
            json!(0.5),
            vec![v("", "value must be >= 1, got 0.5")],
        ),
        (
            json!({"minimum": 1, "maximum": 100}),
            json!(101),
            vec![v("", "value must be <= 100, got 101")],
        ),
        (
            json!({"exclusiveMinimum": 0}),
            json!(0),
            vec![v("", "value must be > 0, got 0")],
        ),
        (json!({"exclusiveMaximum": 10}), json!(9.99), vec![]),
        (
            json!({"minimum": 5, "exclusiveMinimum": true}),
            json!(5),
            vec![v("", "value must be > 5, got 5")],
        ),
        (
            json!({"maximum": 5, "exclusiveMaximum": false}),
            json!(5),
            vec![],
        ),
        (
            json!({"maximum": 9007199254740992u64}),
            json!(9007199254740993u64),
            vec![v(
                "",
                "value must be <= 9007199254740992, got 9007199254740993",
            )],
        ),
        (
            json!({"maximum": 9007199254740992.0}),
            json!(9007199254740993u64),
            vec![v(
                "",
                "value must be <= 9007199254740992.0, got 9007199254740993",
            )],
        ),
        (json!({"multipleOf": 0.1}), json!(0.3), vec![]),
        (json!({"multipleOf": 0.01}), json!(19.99), vec![]),
        (
            json!({"multipleOf": 5}),
            json!(12),
            vec![v("", "12 is not a multiple of 5")],
        ),
        (json!({"multipleOf": 2}), json!(4.0), vec![]),
        (json!({"minimum": 3}), json!("text"), vec![]),
        // strings
        (
            json!({"minLength": 2, "maxLength": 3}),
            json!("日本語"),
            vec![],
        ),
        (
            json!({"maxLength": 3}),
            json!("日本語x"),
            vec![v("", "string has 4 characters; at most 3 are allowed")],
        ),
        (
            json!({"minLength": 1}),
            json!(""),
            vec![v("", "string has 0 characters; at least 1 are required")],
        ),
        (
            json!({"pattern": "^[a-z]+(-[a-z]+)*$"}),
            json!("fix-login"),
            vec![],
        ),
        (
            json!({"pattern": "^[a-z]+(-[a-z]+)*$"}),
            json!("Fix-login"),
            vec![v(
                "",
                "string does not match the pattern \"^[a-z]+(-[a-z]+)*$\"",
            )],
        ),
        (json!({"pattern": "vie"}), json!("preview"), vec![]),
        (
            json!({"pattern": "es"}),
            json!("preview"),
            vec![v("", "string does not match the pattern \"es\"")],
        ),
        (json!({"format": "email"}), json!("not an email"), vec![]),
        // The e-mail pattern zod-based servers emit (lookaheads included).
        (
            zod_email(),
            json!("first.last+tag@mail.example.org"),
            vec![],
        ),
        (
            zod_email(),
            json!("first..last@example.org"),
            vec![v(
                "",
                &format!("string does not match the pattern {:?}", ZOD_EMAIL),
            )],
        ),
        // arrays
        (
            json!({"items": {"type": "integer"}, "minItems": 1, "maxItems": 2}),
            json!([1, 2]),
            vec![],
        ),
        (
            json!({"items": {"type": "integer"}, "maxItems": 2}),
            json!([1, "x", 3]),
            vec![
                v("", "array has 3 items; at most 2 are allowed"),
                v("/1", "expected integer, got string"),
            ],
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, {"a": 2}, 1.0]),
            vec![v("", "items 0 and 2 are equal; items must be unique")],
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, {"a": 2}, {"a": 3}]),
            vec![],
        ),
        (
            json!({"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}),
            json!(["a", 1]),
            vec![],
        ),
        (
            json!({"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}),
            json!(["a", 1, null]),
            vec![v("/2", "no value is allowed here")],
        ),
        (
            json!({"items": [{"type": "string"}], "additionalItems": {"type": "boolean"}}),
            json!(["a", true, false]),
            vec![],
        ),
        (
            json!({"items": [{"type": "string"}], "additionalItems": {"type": "boolean"}}),
            json!([1, true, 0]),
            vec![
                v("/0", "expected string, got integer"),
                v("/2", "expected boolean, got integer"),
            ],
        ),
        (
            json!({"contains": {"const": "x"}}),
            json!(["a", "x"]),
            vec![],
        ),
        (
            json!({"contains": {"const": "x"}}),
            json!(["a"]),
            vec![v(
                "",
                "array has 0 items matching the `contains` schema; at least 1 are required",
            )],
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}),
            json!([1, "a", 2]),
            vec![],
        ),
        (
            json!({"contains": {"type": "integer"}, "maxContains": 1}),
            json!([1, 2]),
            vec![v(
                "",
                "array has 2 items matching the `contains` schema; at most 1 are allowed",
            )],
        ),
        // objects
        (
            json!({"minProperties": 1}),
            json!({}),
            vec![v("", "object has 0 properties; at least 1 are required")],
        ),
        (
            json!({"maxProperties": 1}),
            json!({"a": 1, "b": 2}),
            vec![v("", "object has 2 properties; at most 1 are allowed")],
        ),
        (
            json!({"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}),
            json!({"x-a": "1", "y": 2}),
            vec![v("/y", "property 'y' is not allowed")],
        ),
        (
            json!({"patternProperties": {"^x-": {"type": "string"}}}),
            json!({"x-a": 1}),
            vec![v("/x-a", "expected string, got integer")],
        ),
        (
            json!({"additionalProperties": {"type": "string", "format": "uri"}}),
            json!({"a/b": 3}),
            vec![v("/a~1b", "expected string, got integer")],
        ),
        (
            json!({"propertyNames": {"maxLength": 3}}),
            json!({"abcd": 1}),
            vec![v(
                "",
                "property name 'abcd' is not allowed: string has 4 characters; at most 3 are allowed",
            )],
        ),
        (
            json!({"dependentRequired": {"card": ["cvv"]}}),
            json!({"card": "1"}),
            vec![v("", "property 'cvv' is required when 'card' is present")],
        ),
        (
            json!({"dependentRequired": {"card": ["cvv"]}}),
            json!({"cvv": "1"}),
            vec![],
        ),
        (
            json!({"dependentSchemas": {"card": {"required": ["zip"]}}}),
            json!({"card": 1}),
            vec![v("", "required property 'zip' is missing")],
        ),
        (
            json!({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
            json!({"a": 1, "c": 2}),
            vec![
                v("", "property 'b' is required when 'a' is present"),
                v("", "required property 'd' is missing"),
            ],
        ),
        // combinators
        (
            json!({"allOf": [{"type": "string"}, {"minLength": 2}]}),
            json!("a"),
            vec![v("", "string has 1 characters; at least 2 are required")],
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!(null),
            vec![],
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!(5),
            vec![v(
                "",
                "value matches none of the 2 alternatives of anyOf: [0] expected string, got integer; [1] expected null, got integer",
            )],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(1),
            vec![],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            json!(3),
            vec![v(
                "",
                "value matches alternatives 0 and 1 of oneOf; it must match exactly one",
            )],
        ),
        (
            json!({"not": {"const": "prod"}}),
            json!("prod"),
            vec![v("", "value must not match the schema under 'not'")],
        ),
        (json!({"not": {"const": "prod"}}), json!("dev"), vec![]),
        (
            json!({"if": {"properties": {"env": {"const": "prod"}}}, "then": {"required": ["ticket"]}, "else": {"maxProperties": 1}}),
            json!({"env": "prod"}),
            vec![v("", "required property 'ticket' is missing")],
        ),
        (
            json!({"if": {"properties": {"env": {"const": "prod"}}}, "then": {"required": ["ticket"]}, "else": {"maxProperties": 1}}),
            json!({"env": "dev", "x": 1}),
            vec![v("", "object has 2 properties; at most 1 are allowed")],
        ),
        // $ref, $defs, definitions, recursion, boolean schemas
        (
            json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}}, "$ref": "#/$defs/node"}),
            json!({"v": 1, "next": {"v": 2, "next": {"v": "three"}}}),
            vec![v("/next/next/v", "expected integer, got string")],
        ),
        (
            json!({"definitions": {"a~b/c": {"type": "string"}}, "properties": {"x": {"$ref": "#/definitions/a~0b~1c"}}}),
            json!({"x": 1}),
            vec![v("/x", "expected string, got integer")],
        ),
        (
            json!({"$defs": {"My Type": {"type": "string"}}, "$ref": "#/$defs/My%20Type"}),
            json!("ok"),
            vec![],
        ),
        (
            json!({"type": ["object", "integer"], "properties": {"child": {"$ref": "#"}}}),
            json!({"child": {"child": 1}}),
            vec![],
        ),
        (json!(true), json!({"anything": [1]}), vec![]),
        (
            json!(false),
            json!(null),
            vec![v("", "no value is allowed here")],
        ),
        (json!({}), json!("x"), vec![]),
    ]
}

#[test]
fn validation_table() {
    for (schema, instance, expected) in cases() {
        assert_eq!(
            run(&schema, &instance),
            expected,
            "schema {schema} instance {instance}"
        );
    }
}

#[test]
fn violations_are_capped_at_ten() {
    let schema = json!({"additionalProperties": {"type": "string"}});
    let instance: Value = (0..30)
        .map(|i| (format!("k{i:02}"), json!(i)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let violations = compile(&schema).unwrap().validate(&instance).unwrap_err();
    assert_eq!(violations.len(), 10);
    assert_eq!(violations[0].instance_path, "/k00");
    assert_eq!(violations[9].instance_path, "/k09");
}

fn expect_unsupported(schema: Value, keyword: &str, path: &str) {
    match compile(&schema) {
        Err(SchemaError::Unsupported {
            keyword: k,
            path: p,
        }) => {
            assert_eq!((k.as_str(), p.as_str()), (keyword, path), "schema {schema}");
        }
        other => panic!("{schema}: expected Unsupported, got {other:?}"),
    }
}

#[test]
fn unsupported_features_fail_to_compile() {
    expect_unsupported(
        json!({"unevaluatedProperties": false}),
        "unevaluatedProperties",
        "/unevaluatedProperties",
    );
    expect_unsupported(
        json!({"properties": {"a": {"x_nullable": true}}}),
        "x_nullable",
        "/properties/a/x_nullable",
    );
    expect_unsupported(json!({"$anchor": "x"}), "$anchor", "/$anchor");
    expect_unsupported(json!({"$dynamicRef": "#x"}), "$dynamicRef", "/$dynamicRef");
    expect_unsupported(
        json!({"items": {"$id": "inner"}}),
        "$id (inside a subschema)",
        "/items/$id",
    );
    expect_unsupported(
        json!({"$defs": {"a": {"bogus": 1}}}),
        "bogus",
        "/$defs/a/bogus",
    );
    expect_unsupported(
        json!({"$ref": "https://example.com/s.json"}),
        "$ref to 'https://example.com/s.json' (only local #… references)",
        "/$ref",
    );
    expect_unsupported(
        json!({"$ref": "#/properties/a", "properties": {"a": {}}}),
        "$ref to '#/properties/a' (only #, #/$defs/… and #/definitions/…)",
        "/$ref",
    );
    let regexes = [
        (r"(a)\1", "pattern: backreference \\1-\\9"),
        (r"(?<!a)b", "pattern: lookbehind (?<= or (?<!"),
        (r"\p{L}", "pattern: Unicode property escape \\p / \\P"),
        (
            r"\Aabc\Z",
            "pattern: escape \\A (not defined by ECMAScript)",
        ),
        (r"(?<n>a)\k<n>", "pattern: named backreference \\k"),
        ("a{2000}", "pattern: repetition count above 1000"),
        (
            "(a{1000}){1000}",
            "pattern: pattern expands to more than 20000 instructions (reduce counted repetition)",
        ),
    ];
    for (source, keyword) in regexes {
        expect_unsupported(json!({"pattern": source}), keyword, "/pattern");
    }
    expect_unsupported(
        json!({"patternProperties": {"(?<=x)": {}}}),
        "pattern: lookbehind (?<= or (?<!",
        "/patternProperties/(?<=x)",
    );
}

#[test]
fn malformed_schemas_are_invalid() {
    let bad = [
        (json!({"type": "strnig"}), "/type"),
        (json!({"minLength": -1}), "/minLength"),
        (json!({"minLength": "3"}), "/minLength"),
        (json!({"required": "a"}), "/required"),
        (json!({"properties": []}), "/properties"),
        (json!({"anyOf": []}), "/anyOf"),
        (json!({"multipleOf": 0}), "/multipleOf"),
        (json!({"pattern": "(a"}), "/pattern"),
        (json!({"pattern": "a**"}), "/pattern"),
        (json!({"pattern": "[z-a]"}), "/pattern"),
        (json!({"$ref": "#/$defs/missing"}), "/$ref"),
        (json!({"items": [{}], "prefixItems": [{}]}), "/items"),
        (json!({"properties": {"a": 5}}), "/properties/a"),
        (json!(7), ""),
    ];
    for (schema, path) in bad {
        match compile(&schema) {
            Err(SchemaError::Invalid { path: p, .. }) => assert_eq!(p, path, "{schema}"),
            other => panic!("{schema}: expected Invalid, got {other:?}"),
        }
    }
}

#[test]
fn deep_schemas_and_values_are_bounded() {
    let mut schema = json!({"type": "object"});
    for _ in 0..100 {
        schema = json!({"properties": {"a": schema}});
    }
    assert_eq!(compile(&schema).unwrap_err(), SchemaError::TooDeep);

    let mut instance = json!(1);
    for _ in 0..200 {
        instance = json!([instance]);
    }
    let err = compile(&json!({}))
        .unwrap()
        .validate(&instance)
        .unwrap_err();
    assert_eq!(
        err[0].message,
        "value nests deeper than 128 levels; flatten it"
    );
}

#[test]
fn self_referencing_schemas_terminate_and_fail_closed() {
    // A $ref loop that never descends into the value must not hang or overflow.
    let looping = json!({"$ref": "#"});
    let err = compile(&looping).unwrap().validate(&json!(1)).unwrap_err();
    assert_eq!(err.len(), 1);
    assert_eq!(
        err[0].message,
        "schema recursion deeper than 256 levels; value refused"
    );

    // Exponential fan-out is cut by the work budget, and an abort under `not` is not a pass.
    let fan = json!({"$defs": {"x": {"anyOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/x"}]}}, "not": {"$ref": "#/$defs/x"}});
    let err = compile(&fan).unwrap().validate(&json!(1)).unwrap_err();
    assert_eq!(err.len(), 1);
    assert!(
        err[0].message.contains("schema recursion") || err[0].message.contains("work budget"),
        "{}",
        err[0].message
    );
}

#[test]
fn hostile_patterns_cannot_hang() {
    let schema = json!({"pattern": "^(a+)+$"});
    let compiled = compile(&schema).unwrap();
    let text = format!("{}!", "a".repeat(5000));
    let start = Instant::now();
    let result = compiled.validate(&json!(text));
    assert!(start.elapsed().as_secs() < 5);
    assert_eq!(
        result.unwrap_err()[0].message,
        "string does not match the pattern \"^(a+)+$\""
    );

    // A lookahead re-run at every position is quadratic: the budget stops it.
    let quadratic = compile(&json!({"pattern": "(?=.*x)a"})).unwrap();
    let start = Instant::now();
    let err = quadratic.validate(&json!("a".repeat(100_000))).unwrap_err();
    assert!(start.elapsed().as_secs() < 5);
    assert!(
        err[0].message.contains("exceeded the work budget"),
        "{}",
        err[0].message
    );

    // A value long enough to exceed the work budget is refused, not passed.
    let heavy = compile(&json!({"not": {"pattern": "(x|y|z|a{0,100}){1,10}b"}})).unwrap();
    let err = heavy.validate(&json!("a".repeat(200_000))).unwrap_err();
    assert_eq!(err.len(), 1);
    assert!(
        err[0].message.contains("exceeded the work budget"),
        "{}",
        err[0].message
    );
}

/// `(pattern, text, matches)`: ECMAScript semantics, unanchored search.
#[test]
fn regex_table() {
    let table = [
        ("abc", "xxabcxx", true),
        ("^abc", "xabc", false),
        ("abc$", "abc\n", false),
        ("^$", "", true),
        ("a.c", "a\nc", false),
        ("a.c", "a-c", true),
        (r"\d{3}-\d{4}", "call 555-1234", true),
        (r"^\d+$", "١٢٣", false),
        (r"^\w+$", "snake_case9", true),
        (r"^\w+$", "é", false),
        (r"^\s$", "\u{a0}", true),
        (r"^\S+$", "a b", false),
        (r"^[^a-c]+$", "xyz", true),
        (r"^[^a-c]+$", "xbz", false),
        (r"^[\w.-]+@[\w-]+\.[a-z]{2,}$", "a.b-c@ex-ample.org", true),
        (r"^[\d\s]+$", "1 2 3", true),
        (r"^[a\-z]$", "-", true),
        (r"^[-a]$", "-", true),
        (r"^[\]]$", "]", true),
        ("^(?:ab|cd)+$", "abcdab", true),
        ("^(?:ab|cd)+$", "abc", false),
        ("^a{2,3}$", "aaaa", false),
        ("^a{2,}$", "aaaa", true),
        ("^a{2}$", "aa", true),
        ("^a+?b*?$", "aab", true),
        ("^x{,2}$", "x{,2}", true),
        ("^a|b$", "zb", true),
        (r"\bword\b", "a word here", true),
        (r"\bword\b", "swordfish", false),
        (r"\Bor\B", "word", true),
        (r"^\u00e9\x41\u{1F600}$", "éA😀", true),
        (r"^\uD83D\uDE00$", "😀", true),
        (r"^\$\.\*\+\?\(\)\[\]\{\}\|\/\\$", r"$.*+?()[]{}|/\", true),
        (r"^\cJ$", "\n", true),
        ("^(?<year>[0-9]{4})-[0-9]{2}$", "2026-11", true),
        ("^.{3}$", "日本語", true),
        ("^(a|)+$", "aaa", true),
        ("(a*)*b", "aaaa", false),
        ("[]", "anything", false),
        ("^[^]$", "\n", true),
        ("}", "}", true),
        // lookahead
        ("^(?=.*[0-9])(?=.*[a-z]).{6,}$", "abc123", true),
        ("^(?=.*[0-9])(?=.*[a-z]).{6,}$", "abcdef", false),
        ("^(?!\\.)(?!.*\\.\\.)[a-z.]+@x$", "a.b@x", true),
        ("^(?!\\.)(?!.*\\.\\.)[a-z.]+@x$", ".ab@x", false),
        ("^(?!\\.)(?!.*\\.\\.)[a-z.]+@x$", "a..b@x", false),
        ("foo(?!bar)", "foobar foobaz", true),
        ("foo(?!bar)", "foobar", false),
        ("(?=a)b", "ab", false),
        ("x(?=$)", "ax", true),
        ("(?=(?!a))b", "b", true),
    ];
    for (pattern, text, expected) in table {
        let compiled =
            compile(&json!({"pattern": pattern})).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        assert_eq!(
            compiled.is_valid(&json!(text)),
            expected,
            "pattern {pattern:?} on {text:?}"
        );
    }
}

#[test]
fn error_messages_tell_the_operator_what_to_do() {
    let e = compile(&json!({"unevaluatedProperties": false})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "schema uses `unevaluatedProperties` at '/unevaluatedProperties', which toolseal's validator does not support; calls to this tool are refused. Rewrite the schema with supported keywords (see the schema module docs) or ask the server to publish one"
    );
    assert_eq!(
        SchemaError::TooDeep.to_string(),
        "schema nests deeper than 64 levels; calls to this tool are refused. Flatten the schema (use $defs and $ref)"
    );
}

fn transcript_tools() -> Vec<(String, Value)> {
    let mut tools = Vec::new();
    for file in [
        "drift/everything-2025.11.25.tools_list.json",
        "drift/everything-2026.1.26.tools_list.json",
        "schema/fastmcp-4.2.3.tools_list.json",
        "schema/fastmcp-4.2.3-paginated.tools_list.json",
    ] {
        for tool in load(file)["tools"].as_array().unwrap() {
            tools.push((file.to_owned(), tool.clone()));
        }
    }
    tools
}

#[test]
fn every_recorded_schema_compiles() {
    let mut compiled = 0;
    for (file, tool) in transcript_tools() {
        for field in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool.get(field) {
                compile(schema).unwrap_or_else(|e| panic!("{file} {} {field}: {e}", tool["name"]));
                compiled += 1;
            }
        }
    }
    // 11 + 13 + 4 + 4 input schemas, 1 + 1 + 4 + 4 output schemas.
    assert_eq!(compiled, 42);
}

#[test]
fn recorded_schemas_check_recorded_calls() {
    let tools = load("drift/everything-2025.11.25.tools_list.json");
    let find = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let get_ref = compile(&find("getResourceReference")["inputSchema"]).unwrap();
    assert_eq!(get_ref.validate(&json!({"resourceId": 5})), Ok(()));
    assert_eq!(
        run(
            &find("getResourceReference")["inputSchema"],
            &json!({"resourceId": 0, "extra": 1})
        ),
        vec![
            v(
                "/extra",
                "property 'extra' is not allowed; allowed properties: resourceId"
            ),
            v("/resourceId", "value must be >= 1, got 0"),
        ]
    );
    let weather = find("structuredContent");
    assert_eq!(
        run(
            &weather["outputSchema"],
            &json!({"temperature": 22.5, "conditions": "Cloudy", "humidity": 65})
        ),
        vec![]
    );
    assert_eq!(
        run(
            &weather["outputSchema"],
            &json!({"temperature": "22.5", "conditions": "Cloudy"})
        ),
        vec![
            v("", "required property 'humidity' is missing"),
            v("/temperature", "expected number, got string"),
        ]
    );
}

/// Rough native cost of compiling and validating the recorded schemas (printed with
/// `--nocapture`; asserted only loosely so that slow CI machines do not flake).
#[test]
fn compile_and_validate_cost() {
    let tools = transcript_tools();
    let schemas: Vec<&Value> = tools
        .iter()
        .filter_map(|(_, t)| t.get("inputSchema"))
        .collect();
    let rounds = 200;
    let start = Instant::now();
    for _ in 0..rounds {
        for s in &schemas {
            compile(s).unwrap();
        }
    }
    let compile_each = start.elapsed() / (rounds * schemas.len() as u32);
    let compiled: Vec<_> = schemas.iter().map(|s| compile(s).unwrap()).collect();
    let instance = json!({"message": "hello", "a": 1, "b": 2, "text": "abc", "location": "Paris"});
    let start = Instant::now();
    for _ in 0..rounds {
        for c in &compiled {
            let _ = c.validate(&instance);
        }
    }
    let validate_each = start.elapsed() / (rounds * compiled.len() as u32);
    println!("compile: {compile_each:?} per schema; validate: {validate_each:?} per call");
    assert!(compile_each.as_millis() < 50 && validate_each.as_millis() < 50);
}

/// A small deterministic generator (no extra dependency) for the no-panic sweeps below.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len())]
    }

    fn value(&mut self, depth: usize) -> Value {
        match self.next(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.next(2) == 0),
            2 => json!(self.next(7) as i64 - 3),
            3 => json!(self.next(100) as f64 / 8.0),
            4 => json!(self.pick(&["", "a", "ab", "x-y", "日本", "A1_"])),
            5 => Value::Array((0..self.next(4)).map(|_| self.value(depth - 1)).collect()),
            _ => {
                let keys = ["a", "b", "x-y"];
                (0..self.next(4))
                    .map(|_| (self.pick(&keys).to_owned(), self.value(depth - 1)))
                    .collect::<serde_json::Map<_, _>>()
                    .into()
            }
        }
    }

    fn schema(&mut self, depth: usize) -> Value {
        if depth == 0 || self.next(6) == 0 {
            return json!(self.next(2) == 0);
        }
        let keywords = [
            "type",
            "enum",
            "const",
            "minimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "pattern",
            "items",
            "prefixItems",
            "contains",
            "uniqueItems",
            "required",
            "properties",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "then",
            "else",
            "$ref",
            "$defs",
            "dependentRequired",
            "minProperties",
            "bogus",
        ];
        let mut map = serde_json::Map::new();
        for _ in 0..self.next(4) {
            let key = self.pick(&keywords);
            let value = match key {
                "type" => json!(self.pick(&[
                    "string", "integer", "number", "object", "array", "null", "boolean"
                ])),
                "enum" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => {
                    if matches!(key, "enum") {
                        Value::Array((0..self.next(3)).map(|_| self.value(2)).collect())
                    } else {
                        Value::Array(
                            (0..1 + self.next(2))
                                .map(|_| self.schema(depth - 1))
                                .collect(),
                        )
                    }
                }
                "const" => self.value(2),
                "minimum" | "exclusiveMaximum" | "multipleOf" => json!(1 + self.next(4)),
                "minLength" | "minProperties" => json!(self.next(3)),
                "pattern" => json!(self.pick(&["^a", "b$", "(a|b)+", "[^x]", "\\d"])),
                "uniqueItems" => json!(true),
                "required" => json!(["a"]),
                "dependentRequired" => json!({"a": ["b"]}),
                "properties" | "patternProperties" | "$defs" => {
                    json!({"a": self.schema(depth - 1)})
                }
                "$ref" => json!(self.pick(&["#", "#/$defs/a"])),
                _ => self.schema(depth - 1),
            };
            map.insert(key.to_owned(), value);
        }
        Value::Object(map)
    }
}

#[test]
fn random_schemas_and_values_never_panic() {
    let mut rng = Lcg(7);
    let (mut compiled, mut refused) = (0, 0);
    for _ in 0..3000 {
        let schema = rng.schema(4);
        match compile(&schema) {
            Ok(c) => {
                compiled += 1;
                for _ in 0..5 {
                    let instance = rng.value(3);
                    let full = c.validate(&instance);
                    assert_eq!(full.is_ok(), c.is_valid(&instance), "{schema} / {instance}");
                    if let Err(v) = full {
                        assert!(!v.is_empty() && v.len() <= 10);
                    }
                }
            }
            Err(_) => refused += 1,
        }
    }
    // Both outcomes must be exercised for the sweep to mean anything.
    assert!(
        compiled > 500 && refused > 100,
        "compiled {compiled}, refused {refused}"
    );
}

#[test]
fn random_patterns_never_panic() {
    let mut rng = Lcg(11);
    let alphabet = [
        "a", "b", "(", ")", "[", "]", "{", "}", "|", "*", "+", "?", "^", "$", "\\", ".", "-", ",",
        "0", "2", "d", "w", "s", "b", "B", "u", "x", "k", "<", ">", "=", "!", ":", "日",
    ];
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..5000 {
        let pattern: String = (0..rng.next(10)).map(|_| rng.pick(&alphabet)).collect();
        match compile(&json!({"pattern": pattern})) {
            Ok(c) => {
                ok += 1;
                for _ in 0..3 {
                    let text: String = (0..rng.next(12))
                        .map(|_| rng.pick(&["a", "b", "-", "0", "日", "\n"]))
                        .collect();
                    let _ = c.is_valid(&json!(text));
                }
            }
            Err(SchemaError::Unsupported { .. } | SchemaError::Invalid { .. }) => refused += 1,
            Err(SchemaError::TooDeep) => panic!("a flat pattern cannot be too deep"),
        }
    }
    assert!(ok > 500 && refused > 500, "ok {ok}, refused {refused}");
}

/// Replays `data/schema/regex_cases.json`: patterns and answers from the JavaScript
/// engine's `RegExp` with the `u` flag (written by `gen_regex_cases.mjs`). Every pattern
/// must compile here and give the same answer on every text.
#[test]
fn regex_agrees_with_javascript() {
    let cases = load("schema/regex_cases.json");
    let (mut checked, mut matched) = (0, 0);
    for case in cases.as_array().unwrap() {
        let pattern = case["pattern"].as_str().unwrap();
        let compiled = compile(&json!({ "pattern": pattern }))
            .unwrap_or_else(|e| panic!("{pattern:?} compiles in JavaScript but not here: {e}"));
        for pair in case["texts"].as_array().unwrap() {
            let (text, expected) = (&pair[0], pair[1].as_bool().unwrap());
            assert_eq!(
                compiled.is_valid(text),
                expected,
                "pattern {pattern:?} on {text}"
            );
            checked += 1;
            matched += usize::from(expected);
        }
    }
    assert_eq!(checked, 6000);
    assert!(matched > 600, "only {matched} positive answers");
}

/// The work budget grows with the value: a 1 MB base64 argument with an ordinary pattern is
/// checked, not refused.
#[test]
fn long_values_with_ordinary_patterns_are_checked() {
    let compiled =
        compile(&json!({"type": "string", "pattern": "^[A-Za-z0-9+/]*={0,2}$"})).unwrap();
    let value = "QUJD".repeat(250_000);
    assert_eq!(compiled.validate(&json!(value)), Ok(()));
    let err = compiled.validate(&json!(format!("{value}!"))).unwrap_err();
    assert_eq!(err.len(), 1);
    assert_eq!(
        err[0].message,
        "string does not match the pattern \"^[A-Za-z0-9+/]*={0,2}$\""
    );
}

/// Replays `data/schema/schema_cases.json` (2020-12) and `schema_cases_draft7.json`:
/// random schemas over the supported keywords with verdicts from the Python `jsonschema`
/// package (written by `gen_schema_cases.py`). Every schema must compile and every verdict
/// must agree.
#[test]
fn validation_agrees_with_reference() {
    for (file, expected_checks) in [
        ("schema/schema_cases.json", 3600),
        ("schema/schema_cases_draft7.json", 1200),
    ] {
        let (mut checked, mut valid) = (0, 0);
        for case in load(file).as_array().unwrap() {
            let schema = &case["schema"];
            let compiled = compile(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
            for pair in case["instances"].as_array().unwrap() {
                let (instance, expected) = (&pair[0], pair[1].as_bool().unwrap());
                let verdict = compiled.validate(instance);
                assert_eq!(
                    verdict.is_ok(),
                    expected,
                    "{file}\nschema {schema}\ninstance {instance}\n{verdict:?}"
                );
                checked += 1;
                valid += usize::from(expected);
            }
        }
        assert_eq!(checked, expected_checks, "{file}");
        assert!(
            valid > checked / 4 && valid < checked * 3 / 4,
            "{file}: {valid} valid of {checked}"
        );
    }
}

#[test]
fn hostile_keys_are_cut_in_messages() {
    let key = "k".repeat(10_000);
    let instance = json!({ key.clone(): 1 });
    let err = compile(&json!({"additionalProperties": false}))
        .unwrap()
        .validate(&instance)
        .unwrap_err();
    let shown = format!("{}…", "k".repeat(128));
    assert_eq!(err[0].instance_path, format!("/{shown}"));
    assert_eq!(err[0].message, format!("property '{shown}' is not allowed"));
}

/// Vendor hints that can only narrow what passes are accepted: `nullable` is ignored (a null
/// is refused unless `type` allows it), `discriminator` and `enumNames` change nothing.
#[test]
fn vendor_hints_never_widen_what_passes() {
    let schema = compile(&json!({"type": "object", "properties": {
        "a": {"type": "string", "nullable": true, "enum": ["x", "y"], "enumNames": ["X", "Y"]},
        "b": {"oneOf": [{"type": "integer"}, {"type": "string"}], "discriminator": {"propertyName": "kind"}}
    }}))
    .unwrap();
    assert!(schema.is_valid(&json!({"a": "x", "b": 3})));
    assert!(
        !schema.is_valid(&json!({"a": null})),
        "nullable does not admit null"
    );
    assert!(!schema.is_valid(&json!({"a": "z"})));
    assert!(!schema.is_valid(&json!({"b": 1.5})));
}
