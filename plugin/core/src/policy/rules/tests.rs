//! Policy rules: config validation (exact error texts) and evaluation edge cases.
#![allow(clippy::type_complexity)]

use crate::policy::rules::{
    Action, CallFacts, CallerIdentity, Policy, PolicyDecision, UseFacts, UseKind,
};
use serde_json::{Value, json};

/// A metadata path the test caller cannot read (as when the host fails the property read).
const UNREADABLE: &str = "ns/unreadable";

/// A caller with fixed headers and metadata.
#[derive(Default)]
struct Caller {
    headers: Vec<(&'static str, &'static str)>,
    metadata: Vec<(&'static str, Value)>,
}

impl CallerIdentity for Caller {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| (*v).to_owned())
    }
    fn metadata(&self, path: &str) -> Result<Option<Value>, String> {
        if path == UNREADABLE {
            return Err("status 10".into());
        }
        Ok(self
            .metadata
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, v)| v.clone()))
    }
}

fn policy(v: Value) -> Policy {
    Policy::from_json(&v).unwrap_or_else(|e| panic!("config {v} refused: {e}"))
}

fn decide(
    p: &Policy,
    server: &str,
    tool: &str,
    annotations: Option<&Value>,
    arguments: Option<&Value>,
    caller: &Caller,
) -> PolicyDecision {
    p.evaluate(&CallFacts {
        server,
        tool,
        annotations,
        arguments,
        caller,
    })
}

/// Every bad config and the exact error the operator sees.
#[test]
fn bad_configs_are_refused_with_the_field_named() {
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "policy: expected an object"),
        (json!({"mode": "x"}), r#"policy: unknown key "mode""#),
        (
            json!({"default": "block"}),
            r#"policy.default: expected "allow" or "deny""#,
        ),
        (
            json!({"default": true}),
            r#"policy.default: expected "allow" or "deny""#,
        ),
        (
            json!({"rules": {}}),
            "policy.rules: expected an array of rules",
        ),
        (
            json!({"rules": ["deny"]}),
            "policy.rules[0]: expected an object",
        ),
        (
            json!({"rules": [{"tool": "x"}]}),
            r#"policy.rules[0].action: missing; expected "allow" or "deny""#,
        ),
        (
            json!({"rules": [{"action": "Deny"}]}),
            r#"policy.rules[0].action: expected "allow" or "deny""#,
        ),
        (
            json!({"rules": [{"action": "deny"}, {"action": "deny", "tools": "x"}]}),
            r#"policy.rules[1]: unknown condition "tools""#,
        ),
        (
            json!({"rules": [{"action": "deny", "tool": ""}]}),
            "policy.rules[0].tool: expected a non-empty glob string",
        ),
        (
            json!({"rules": [{"action": "deny", "server": 3}]}),
            "policy.rules[0].server: expected a non-empty glob string",
        ),
        (
            json!({"rules": [{"action": "deny", "annotations": [1]}]}),
            "policy.rules[0].annotations: expected an object",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": []}]}),
            "policy.rules[0].arguments: expected an object",
        ),
        (
            json!({"rules": [{"action": "allow"}, {"action": "allow"}, {"action": "deny", "arguments": {"/region": {"foo": 1}}}]}),
            r#"policy.rules[2].arguments./region: unknown predicate "foo""#,
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"region": {"in": ["a"]}}}]}),
            r#"policy.rules[0].arguments.region: invalid JSON pointer: it must be empty or start with "/""#,
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a~2b": {"in": ["a"]}}}]}),
            r#"policy.rules[0].arguments./a~2b: invalid JSON pointer: "~" must be followed by "0" or "1""#,
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a~": {"in": ["a"]}}}]}),
            r#"policy.rules[0].arguments./a~: invalid JSON pointer: "~" must be followed by "0" or "1""#,
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": "x"}}]}),
            "policy.rules[0].arguments./a: expected an object",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {}}}]}),
            "policy.rules[0].arguments./a: expected at least one of in, not_in, prefix, max_length",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {"in": []}}}]}),
            "policy.rules[0].arguments./a.in: expected a non-empty array of values",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {"not_in": "x"}}}]}),
            "policy.rules[0].arguments./a.not_in: expected a non-empty array of values",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {"prefix": 1}}}]}),
            "policy.rules[0].arguments./a.prefix: expected a string",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {"max_length": -1}}}]}),
            "policy.rules[0].arguments./a.max_length: expected a non-negative integer",
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/a": {"max_length": 2.5}}}]}),
            "policy.rules[0].arguments./a.max_length: expected a non-negative integer",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": "ops"}]}),
            "policy.rules[0].principal: expected an object",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"in": ["ops"]}}]}),
            r#"policy.rules[0].principal: expected exactly one of "header" or "metadata""#,
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "a", "metadata": "n/k", "in": ["ops"]}}]}),
            r#"policy.rules[0].principal: expected exactly one of "header" or "metadata""#,
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "x-group"}}]}),
            "policy.rules[0].principal.in: missing; expected a non-empty array of values",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "x-group", "in": []}}]}),
            "policy.rules[0].principal.in: expected a non-empty array of values",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "x-group", "in": ["a", 1]}}]}),
            "policy.rules[0].principal.in[1]: expected a string (header values are text)",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "x group", "in": ["a"]}}]}),
            "policy.rules[0].principal.header: expected an HTTP header name",
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"metadata": "jwt", "in": ["a"]}}]}),
            r#"policy.rules[0].principal.metadata: expected "NAMESPACE/key[/key...]", e.g. "envoy.filters.http.jwt_authn/payload/groups""#,
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"metadata": "jwt//groups", "in": ["a"]}}]}),
            r#"policy.rules[0].principal.metadata: expected "NAMESPACE/key[/key...]", e.g. "envoy.filters.http.jwt_authn/payload/groups""#,
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"header": "x-g", "in": ["a"], "of": 1}}]}),
            r#"policy.rules[0].principal: unknown key "of""#,
        ),
    ];
    for (config, expected) in cases {
        assert_eq!(
            Policy::from_json(&config).err().as_deref(),
            Some(expected),
            "config {config}"
        );
    }
}

#[test]
fn good_configs_load() {
    let spec_example = json!({"default": "allow", "rules": [
        {"action": "deny", "server": "*", "tool": "delete_*"},
        {"action": "deny", "annotations": {"destructiveHint": true}},
        {"action": "deny", "tool": "deploy_preview", "arguments": {"/region": {"not_in": ["us-east-preview"]}}},
        {"action": "allow", "tool": "admin_*", "principal": {"header": "x-user-group", "in": ["ops"]}},
        {"action": "deny", "tool": "admin_*"}
    ]});
    let cases: Vec<(Value, bool)> = vec![
        (json!({}), true),
        (json!({"default": "allow"}), true),
        (json!({"default": "allow", "rules": []}), true),
        (json!({"default": "deny"}), false),
        (json!({"rules": [{"action": "allow"}]}), false),
        (
            json!({"rules": [{"action": "deny", "arguments": {"": {"in": [{}]}, "/a~0b~1c/0": {"prefix": ""}}}]}),
            false,
        ),
        (
            json!({"rules": [{"action": "deny", "arguments": {"/t": {"max_length": 0, "prefix": "x", "in": [1], "not_in": [null]}}}]}),
            false,
        ),
        (
            json!({"rules": [{"action": "deny", "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": [1, "ops", true]}}]}),
            false,
        ),
        (spec_example, false),
    ];
    for (config, empty) in cases {
        let p = Policy::from_json(&config).unwrap_or_else(|e| panic!("{config}: {e}"));
        assert_eq!(p.is_empty(), empty, "is_empty of {config}");
    }
    assert!(Policy::default().is_empty());
    assert_eq!(Policy::default().default_action(), Action::Allow);
}

#[test]
fn spec_example_decisions_and_reasons() {
    let p = policy(json!({"default": "allow", "rules": [
        {"action": "deny", "server": "*", "tool": "delete_*"},
        {"action": "deny", "annotations": {"destructiveHint": true}},
        {"action": "deny", "tool": "deploy_preview", "arguments": {"/region": {"not_in": ["us-east-preview"]}}},
        {"action": "allow", "tool": "admin_*", "principal": {"header": "x-user-group", "in": ["ops"]}},
        {"action": "deny", "tool": "admin_*"}
    ]}));
    let nobody = Caller::default();
    let ops = Caller {
        headers: vec![("X-User-Group", "ops")],
        ..Caller::default()
    };
    let destructive = json!({"destructiveHint": true});
    let harmless = json!({"destructiveHint": false, "readOnlyHint": true});
    let east = json!({"region": "us-east-preview"});
    let west = json!({"region": "eu-west"});
    let cases: Vec<(
        &str,
        Option<&Value>,
        Option<&Value>,
        &Caller,
        Action,
        Option<usize>,
        &str,
    )> = vec![
        (
            "delete_file",
            None,
            None,
            &nobody,
            Action::Deny,
            Some(0),
            r#"rule 0 denies delete_file when tool matches "delete_*""#,
        ),
        (
            "wipe",
            Some(&destructive),
            None,
            &nobody,
            Action::Deny,
            Some(1),
            "rule 1 denies wipe when its annotation destructiveHint is true",
        ),
        (
            "wipe",
            Some(&harmless),
            None,
            &nobody,
            Action::Allow,
            None,
            "no policy rule matched wipe; the default is to allow",
        ),
        (
            "deploy_preview",
            None,
            Some(&west),
            &nobody,
            Action::Deny,
            Some(2),
            r#"rule 2 denies deploy_preview when /region is not one of ["us-east-preview"]"#,
        ),
        // not_in matches an absent argument.
        (
            "deploy_preview",
            None,
            None,
            &nobody,
            Action::Deny,
            Some(2),
            r#"rule 2 denies deploy_preview when /region is not one of ["us-east-preview"]"#,
        ),
        (
            "deploy_preview",
            None,
            Some(&east),
            &nobody,
            Action::Allow,
            None,
            "no policy rule matched deploy_preview; the default is to allow",
        ),
        (
            "admin_reset",
            None,
            None,
            &ops,
            Action::Allow,
            Some(3),
            r#"rule 3 allows admin_reset when tool matches "admin_*" and request header x-user-group is one of ["ops"]"#,
        ),
        (
            "admin_reset",
            None,
            None,
            &nobody,
            Action::Deny,
            Some(4),
            r#"rule 4 denies admin_reset when tool matches "admin_*""#,
        ),
    ];
    for (tool, annotations, arguments, caller, action, rule, reason) in cases {
        let d = decide(&p, "deploy", tool, annotations, arguments, caller);
        assert_eq!(
            d,
            PolicyDecision {
                action,
                rule_index: rule,
                reason: reason.to_owned()
            },
            "tool {tool} args {arguments:?}"
        );
    }
}

/// One deny rule `{"/<pointer>": predicates}` evaluated against arguments: (arguments, denied?).
#[test]
fn argument_predicates() {
    type Case = (&'static str, Value, Vec<(Option<Value>, bool)>);
    let cases: Vec<Case> = vec![
        (
            "/region",
            json!({"in": ["a", "b"]}),
            vec![
                (None, false),            // no arguments at all
                (Some(json!({})), false), // missing argument never matches `in`
                (Some(json!({"region": null})), false),
                (Some(json!({"region": "a"})), true),
                (Some(json!({"region": "A"})), false),
                (Some(json!({"region": ["a"]})), false),
            ],
        ),
        (
            "/region",
            json!({"not_in": ["a"]}),
            vec![
                (None, true),
                (Some(json!({})), true),
                (Some(json!({"region": "a"})), false),
                (Some(json!({"region": "b"})), true),
                (Some(json!({"region": 1})), true),
            ],
        ),
        (
            "/n",
            json!({"in": [1, 2.5]}),
            vec![
                (Some(json!({"n": 1})), true),
                (Some(json!({"n": 1.0})), true), // numbers compare by value
                (Some(json!({"n": 2.5})), true),
                (Some(json!({"n": "1"})), false),
                (Some(json!({"n": -1})), false),
                (Some(json!({"n": 18446744073709551615u64})), false),
            ],
        ),
        (
            "/path",
            json!({"prefix": "/etc/"}),
            vec![
                (Some(json!({"path": "/etc/passwd"})), true),
                (Some(json!({"path": "/etc/"})), true),
                (Some(json!({"path": "/etc"})), false),
                (Some(json!({"path": ["/etc/x"]})), false),
                (Some(json!({})), false),
            ],
        ),
        (
            "/msg",
            json!({"max_length": 3}),
            vec![
                (Some(json!({"msg": "abc"})), false),
                (Some(json!({"msg": "abcd"})), true),
                (Some(json!({"msg": "héé"})), false), // 3 characters, 5 bytes
                (Some(json!({"msg": "😀😀😀😀"})), true),
                (Some(json!({"msg": 12345})), false), // not a string
                (Some(json!({})), false),
            ],
        ),
        (
            "/msg",
            json!({"max_length": 0}),
            vec![
                (Some(json!({"msg": ""})), false),
                (Some(json!({"msg": "x"})), true),
            ],
        ),
        // Pointers into arrays and nested objects, with ~0 / ~1 escapes.
        (
            "/hosts/1/name",
            json!({"in": ["prod"]}),
            vec![
                (
                    Some(json!({"hosts": [{"name": "dev"}, {"name": "prod"}]})),
                    true,
                ),
                (Some(json!({"hosts": [{"name": "prod"}]})), false),
                (Some(json!({"hosts": {"1": {"name": "prod"}}})), true),
            ],
        ),
        (
            "/hosts/01",
            json!({"in": ["x"]}),
            vec![
                (Some(json!({"hosts": ["y", "x"]})), false), // leading zero is not an index
                (Some(json!({"hosts": {"01": "x"}})), true),
            ],
        ),
        (
            "/hosts/-",
            json!({"not_in": ["x"]}),
            vec![
                (Some(json!({"hosts": ["x"]})), true), // "-" never resolves: absent
            ],
        ),
        (
            "/a~1b/c~0d",
            json!({"in": [true]}),
            vec![
                (Some(json!({"a/b": {"c~d": true}})), true),
                (Some(json!({"a": {"b": {"c~d": true}}})), false),
            ],
        ),
        (
            "/",
            json!({"in": ["empty key"]}),
            vec![(Some(json!({"": "empty key"})), true)],
        ),
        (
            "",
            json!({"in": [{"a": [1]}]}),
            vec![
                (Some(json!({"a": [1.0]})), true),
                (Some(json!({"a": [1], "b": 2})), false),
            ],
        ),
        (
            "/mode",
            json!({"prefix": "rw", "max_length": 3}),
            vec![
                (Some(json!({"mode": "rwx"})), false), // every predicate must match
                (Some(json!({"mode": "rwxa"})), true),
                (Some(json!({"mode": "xrwx"})), false),
            ],
        ),
    ];
    let caller = Caller::default();
    for (pointer, predicates, calls) in cases {
        let p = policy(json!({"rules": [{"action": "deny", "arguments": {pointer: predicates}}]}));
        for (arguments, denied) in calls {
            let d = decide(&p, "s", "t", None, arguments.as_ref(), &caller);
            let expected = if denied { Action::Deny } else { Action::Allow };
            assert_eq!(
                d.action, expected,
                "{pointer} {predicates} on {arguments:?}"
            );
            assert_eq!(d.rule_index, denied.then_some(0));
        }
    }
}

#[test]
fn globs() {
    let cases: Vec<(&str, &str, bool)> = vec![
        ("*", "", true),
        ("*", "anything", true),
        ("delete_*", "delete_", true),
        ("delete_*", "delete_file", true),
        ("delete_*", "undelete_file", false),
        ("*_file", "read_file", true),
        ("*_file", "read_files", false),
        ("?", "a", true),
        ("?", "é", true),
        ("?", "", false),
        ("?", "ab", false),
        ("a*b*c", "abc", true),
        ("a*b*c", "aXbYbZc", true),
        ("a*b*c", "aXbYcZ", false),
        ("**x", "x", true),
        ("read_fi?e", "read_fiIe", true),
        ("read_file", "read_fiIe", false),
        ("Read", "read", false),
        ("x*", "", false),
    ];
    let caller = Caller::default();
    for (glob, tool, matches) in cases {
        let p = policy(json!({"rules": [{"action": "deny", "tool": glob}]}));
        assert_eq!(
            decide(&p, "srv", tool, None, None, &caller).action == Action::Deny,
            matches,
            "tool glob {glob:?} on {tool:?}"
        );
        let p = policy(json!({"rules": [{"action": "deny", "server": glob}]}));
        assert_eq!(
            decide(&p, tool, "t", None, None, &caller).action == Action::Deny,
            matches,
            "server glob {glob:?} on {tool:?}"
        );
    }
}

#[test]
fn annotations_need_the_exact_value() {
    let p = policy(
        json!({"rules": [{"action": "deny", "annotations": {"destructiveHint": true, "openWorldHint": true}}]}),
    );
    let caller = Caller::default();
    let cases: Vec<(Option<Value>, bool)> = vec![
        (None, false),
        (Some(json!({})), false),
        (Some(json!({"destructiveHint": true})), false),
        (
            Some(json!({"destructiveHint": true, "openWorldHint": true})),
            true,
        ),
        (
            Some(json!({"destructiveHint": "true", "openWorldHint": true})),
            false,
        ),
        (
            Some(json!({"destructiveHint": true, "openWorldHint": true, "title": "x"})),
            true,
        ),
        (Some(json!([true])), false),
    ];
    for (annotations, denied) in cases {
        let d = decide(&p, "s", "t", annotations.as_ref(), None, &caller);
        assert_eq!(d.action == Action::Deny, denied, "{annotations:?}");
    }
    let d = decide(
        &p,
        "s",
        "wipe",
        Some(&json!({"destructiveHint": true, "openWorldHint": true})),
        None,
        &caller,
    );
    assert_eq!(
        d.reason,
        "rule 0 denies wipe when its annotation destructiveHint is true and its annotation openWorldHint is true"
    );
}

#[test]
fn principals_from_header_and_metadata() {
    let p = policy(json!({"default": "deny", "rules": [
        {"action": "allow", "principal": {"header": "X-User-Group", "in": ["ops", "sre"]}},
        {"action": "allow", "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": ["admins", 7]}}
    ]}));
    let groups = "envoy.filters.http.jwt_authn/payload/groups";
    let cases: Vec<(Caller, Option<usize>)> = vec![
        (Caller::default(), None),
        (
            Caller {
                headers: vec![("x-user-group", "ops")],
                ..Caller::default()
            },
            Some(0),
        ),
        (
            Caller {
                headers: vec![("x-user-group", "OPS")],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                headers: vec![("x-user-group", "ops,dev")],
                ..Caller::default()
            },
            None,
        ),
        // The metadata rule does not read headers, nor the header rule metadata.
        (
            Caller {
                headers: vec![("groups", "admins")],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                metadata: vec![("x-user-group", json!("ops"))],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                metadata: vec![(groups, json!("admins"))],
                ..Caller::default()
            },
            Some(1),
        ),
        (
            Caller {
                metadata: vec![(groups, json!(["dev", "admins"]))],
                ..Caller::default()
            },
            Some(1),
        ),
        (
            Caller {
                metadata: vec![(groups, json!(["dev", "qa"]))],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                metadata: vec![(groups, json!([]))],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                metadata: vec![(groups, json!(7.0))],
                ..Caller::default()
            },
            Some(1),
        ),
        (
            Caller {
                metadata: vec![(groups, json!([["admins"]]))],
                ..Caller::default()
            },
            None,
        ),
        (
            Caller {
                metadata: vec![(groups, json!({"admins": true}))],
                ..Caller::default()
            },
            None,
        ),
    ];
    for (caller, rule) in cases {
        let d = decide(&p, "s", "t", None, None, &caller);
        let action = if rule.is_some() {
            Action::Allow
        } else {
            Action::Deny
        };
        assert_eq!(
            (d.action, d.rule_index),
            (action, rule),
            "headers {:?} metadata {:?}",
            caller.headers,
            caller.metadata
        );
    }
    let admin = Caller {
        metadata: vec![(groups, json!(["admins"]))],
        ..Caller::default()
    };
    assert_eq!(
        decide(&p, "s", "t", None, None, &admin).reason,
        r#"rule 1 allows t when caller metadata envoy.filters.http.jwt_authn/payload/groups holds one of ["admins",7]"#
    );
    assert_eq!(
        decide(&p, "s", "t", None, None, &Caller::default()).reason,
        "no policy rule matched t; the default is to deny"
    );
}

#[test]
fn first_matching_rule_decides_and_reasons_name_conditions() {
    let p = policy(json!({"rules": [
        {"action": "allow", "server": "docs", "tool": "read_?ile"},
        {"action": "deny", "server": "prod-*", "arguments": {"/path": {"prefix": "/etc"}, "/mode": {"in": ["w"]}}},
        {"action": "deny", "tool": "echo", "arguments": {"/text": {"max_length": 10}}},
        {"action": "deny"}
    ]}));
    let caller = Caller::default();
    let etc = json!({"path": "/etc/x", "mode": "w"});
    let long = json!({"text": "0123456789a"});
    let cases: Vec<(&str, &str, Option<&Value>, Option<usize>, &str)> = vec![
        (
            "docs",
            "read_file",
            Some(&etc),
            Some(0),
            r#"rule 0 allows read_file when server is "docs" and tool matches "read_?ile""#,
        ),
        (
            "prod-eu",
            "write",
            Some(&etc),
            Some(1),
            r#"rule 1 denies write when server matches "prod-*" and /mode is one of ["w"] and /path starts with "/etc""#,
        ),
        (
            "dev",
            "echo",
            Some(&long),
            Some(2),
            "rule 2 denies echo when /text is longer than 10 characters",
        ),
        (
            "dev",
            "other",
            None,
            Some(3),
            "rule 3 denies other (the rule applies to every call)",
        ),
    ];
    for (server, tool, arguments, rule, reason) in cases {
        let d = decide(&p, server, tool, None, arguments, &caller);
        assert_eq!(
            (d.rule_index, d.reason.as_str()),
            (rule, reason),
            "{server}/{tool}"
        );
    }
}

/// Deeply nested values are compared without unbounded recursion.
#[test]
fn deep_values_do_not_overflow() {
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let p =
        policy(json!({"rules": [{"action": "deny", "arguments": {"/v": {"in": [deep.clone()]}}}]}));
    let args = json!({"v": deep});
    // Past the comparison bound the values are treated as different: `in` does not match.
    assert_eq!(
        decide(&p, "s", "t", None, Some(&args), &Caller::default()).action,
        Action::Allow
    );
}

#[test]
fn a_rule_whose_caller_metadata_cannot_be_read_denies_the_call() {
    let rules = |action: &str| {
        policy(json!({"rules": [
            {"action": "allow", "tool": "status"},
            {"action": action, "tool": "deploy", "principal": {"metadata": UNREADABLE, "in": ["ops"]}},
            {"action": "allow", "tool": "*"}
        ]}))
    };
    for action in ["deny", "allow"] {
        let p = rules(action);
        let caller = Caller::default();
        // Whether the rule matches is unknown: the call cannot be decided either way.
        assert_eq!(
            decide(&p, "srv", "deploy", None, None, &caller),
            PolicyDecision {
                action: Action::Deny,
                rule_index: Some(1),
                reason: "rule 1 cannot be decided for deploy: caller metadata ns/unreadable could not be read (status 10)".into(),
            },
            "{action}"
        );
        // A rule decided before it, or one whose other conditions do not hold, reads nothing.
        assert_eq!(
            decide(&p, "srv", "status", None, None, &caller).action,
            Action::Allow
        );
        assert_eq!(
            decide(&p, "srv", "list", None, None, &caller).action,
            Action::Allow
        );
    }
}

/// The decision on a use of `item` (`None`: no rule is about it).
fn decide_use(p: &Policy, kind: UseKind, item: &str, caller: &Caller) -> Option<PolicyDecision> {
    p.evaluate_use(&UseFacts {
        server: "docs",
        kind,
        item,
        arguments: None,
        caller,
    })
}

#[test]
fn a_use_is_decided_by_the_first_rule_about_its_kind_and_by_no_other() {
    let p = policy(json!({"default": "deny", "rules": [
        {"action": "deny"},
        {"action": "deny", "resource": "file:///secrets/*"},
        {"action": "allow", "prompt": "summarize"},
        {"action": "deny", "prompt": "*"},
        {"action": "deny", "prompt": "gated", "principal": {"metadata": UNREADABLE, "in": ["ops"]}},
    ]}));
    let caller = Caller::default();
    // The rule without conditions and the default decide tool calls only.
    assert_eq!(
        decide_use(&p, UseKind::Resource, "file:///notes/a.md", &caller),
        None
    );
    let secret = decide_use(&p, UseKind::Resource, "file:///secrets/k", &caller).unwrap();
    assert_eq!((secret.action, secret.rule_index), (Action::Deny, Some(1)));
    assert_eq!(
        secret.reason,
        r#"rule 1 denies resource "file:///secrets/k" when resource matches "file:///secrets/*""#
    );
    let allowed = decide_use(&p, UseKind::Prompt, "summarize", &caller).unwrap();
    assert_eq!(
        (allowed.action, allowed.rule_index),
        (Action::Allow, Some(2))
    );
    assert_eq!(allowed.reason, r#"rule 2 allows prompt "summarize""#);
    let other = decide_use(&p, UseKind::Prompt, "file:///secrets/k", &caller).unwrap();
    assert_eq!(
        other.rule_index,
        Some(3),
        "a resource rule never decides a prompt"
    );
    // A tool call meets the rule without conditions first, never a rule about prompts.
    let call = decide(&p, "docs", "summarize", None, None, &caller);
    assert_eq!((call.action, call.rule_index), (Action::Deny, Some(0)));
}

#[test]
fn a_use_whose_rule_cannot_read_the_caller_is_refused() {
    let p = policy(json!({"rules": [
        {"action": "allow", "prompt": "gated", "principal": {"metadata": UNREADABLE, "in": ["ops"]}},
    ]}));
    let decision = decide_use(&p, UseKind::Prompt, "gated", &Caller::default()).unwrap();
    assert_eq!(decision.action, Action::Deny);
    assert!(
        decision
            .reason
            .starts_with(r#"rule 0 cannot be decided for prompt "gated": caller metadata"#),
        "{}",
        decision.reason
    );
    // Rules about prompts alone hide no tool from any list: no caller is read for one.
    assert!(!p.may_hide());
}

#[test]
fn a_prompt_or_resource_is_hidden_exactly_when_every_use_of_it_is_refused() {
    let p = policy(json!({"default": "deny", "rules": [
        {"action": "allow", "prompt": "triage_*", "principal": {"header": "x-group", "in": ["ops"]}},
        {"action": "deny", "prompt": "triage_*"},
        {"action": "deny", "prompt": "summarize", "arguments": {"/url": {"prefix": "http://"}}},
        {"action": "deny", "resource": "file:///secrets/*"},
    ]}));
    let ops = Caller {
        headers: vec![("x-group", "ops")],
        ..Caller::default()
    };
    let (anyone, ops) = (
        p.use_caller_view(&Caller::default()).unwrap(),
        p.use_caller_view(&ops).unwrap(),
    );
    assert!(p.hides_use(&anyone, "docs", UseKind::Prompt, "triage_issue"));
    assert!(!p.hides_use(&ops, "docs", UseKind::Prompt, "triage_issue"));
    // Refused for some arguments only, and named by no rule: listed (the default decides
    // tool calls only).
    assert!(!p.hides_use(&anyone, "docs", UseKind::Prompt, "summarize"));
    assert!(!p.hides_use(&anyone, "docs", UseKind::Prompt, "review"));
    assert!(p.hides_use(&anyone, "docs", UseKind::Resource, "file:///secrets/a"));
    assert!(!p.hides_use(&anyone, "docs", UseKind::Resource, "file:///notes/a"));
    // A rule about resources never hides a prompt of the same text.
    assert!(!p.hides_use(&anyone, "docs", UseKind::Prompt, "file:///secrets/a"));
    // Rules that can hide nothing read no caller.
    let quiet = policy(json!({"rules": [
        {"action": "allow", "prompt": "*"},
        {"action": "deny", "prompt": "summarize", "arguments": {"/url": {"prefix": "http://"}}},
    ]}));
    assert_eq!(quiet.use_caller_view(&Caller::default()), None);
}
