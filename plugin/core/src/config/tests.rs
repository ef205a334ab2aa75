//! Config parse → validate: good configs normalize as expected, and every
//! bad one is refused with a message that names the field to fix.

use crate::config::{Config, IdentitySource, ListChanged, Pin, ResultsMode, ServerIdSource};
use crate::policy::fingerprint::{FingerprintField, FingerprintFields, digest_tools};
use crate::policy::status::Posture;
use crate::state::snapshot_key::SnapshotSource;
use serde_json::{Value, json};

fn parse(v: &Value) -> Result<Config, String> {
    Config::parse(v.to_string().as_bytes()).map_err(|e| e.to_string())
}

fn tool() -> Value {
    json!({"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}})
}

fn lock_fp() -> String {
    digest_tools(&json!([tool()]), &FingerprintFields::default())
        .unwrap()
        .fingerprint()
}

#[test]
fn empty_config_gives_the_documented_defaults() {
    let c = Config::parse(b"  \n").unwrap();
    assert_eq!(c.posture, Posture::Discovery);
    assert_eq!(c.server_id, ServerIdSource::Route);
    assert_eq!(c.limits.max_request_bytes, 1 << 20);
    assert_eq!(c.limits.max_response_bytes, 8 << 20);
    assert_eq!(c.limits.max_depth, 64);
    assert_eq!(c.admin.prefix, "/toolseal/");
    assert!(
        c.admin.token_sha256.is_empty(),
        "admin API off without a token"
    );
    assert!(!c.audit.call_allowed);
    assert_eq!(c.limits.max_list_ttl_ms, 60_000);
    assert_eq!(c.snapshot_key, vec![SnapshotSource::Session]);
    assert_eq!(c, Config::parse(b"{}").unwrap());
}

#[test]
fn snapshot_key_sources_and_the_list_ttl_cap_parse_in_order() {
    let c = parse(&json!({
        "snapshots": {"key": [
            {"header": "X-Agent-ID"},
            {"metadata": "envoy.filters.http.jwt_authn/payload/sub"},
            "session"
        ]},
        "limits": {"max_list_ttl_ms": 5000}
    }))
    .unwrap();
    assert_eq!(
        c.snapshot_key,
        vec![
            SnapshotSource::Header("x-agent-id".into()),
            SnapshotSource::Metadata("envoy.filters.http.jwt_authn/payload/sub".into()),
            SnapshotSource::Session,
        ]
    );
    let labels: Vec<String> = c.snapshot_key.iter().map(SnapshotSource::label).collect();
    assert_eq!(
        labels,
        [
            "header:x-agent-id",
            "metadata:envoy.filters.http.jwt_authn/payload/sub",
            "session"
        ]
    );
    assert_eq!(c.limits.max_list_ttl_ms, 5000);
    let defaulted = parse(&json!({"snapshots": {}})).unwrap();
    assert_eq!(defaulted.snapshot_key, vec![SnapshotSource::Session]);
}

#[test]
fn the_spec_example_shape_parses() {
    let config = json!({
        "posture": "discovery",
        "server_id": {"from": "header", "name": "X-MCP-Server"},
        "servers": {
            "deploy": {"posture": "strict", "lock": {"fingerprint": lock_fp(), "tools": [tool()]},
                       "allow_subset": true, "list_changed": "observe", "quarantine": "held", "results": "enforce"},
            "other": {"pin": lock_fp()}
        },
        "policy": {"default": "allow", "rules": [
            {"action": "deny", "server": "*", "tool": "delete_*"},
            {"action": "deny", "annotations": {"destructiveHint": true}},
            {"action": "deny", "tool": "deploy_preview", "arguments": {"/region": {"not_in": ["us-east-preview"]}}},
            {"action": "allow", "tool": "admin_*", "principal": {"header": "x-user-group", "in": ["ops"]}},
            {"action": "deny", "tool": "admin_*"}
        ]},
        "limits": {"max_request_bytes": 1048576, "max_response_bytes": 8388608, "max_depth": 64},
        "fingerprint": {"fields": ["name", "description", "inputSchema", "title"]},
        "admin": {"prefix": "/gate/", "token_sha256": "a".repeat(64)},
        "audit": {"call_allowed": true}
    });
    let c = parse(&config).unwrap();
    assert_eq!(c.server_id, ServerIdSource::Header("x-mcp-server".into()));
    let deploy = c.server("deploy");
    assert_eq!(deploy.posture, Some(Posture::Strict));
    assert!(
        matches!(&deploy.pin, Some(Pin::Lock { fingerprint, tools, .. }) if *fingerprint == lock_fp() && tools.len() == 1)
    );
    assert!(deploy.allow_subset);
    assert_eq!(deploy.list_changed, ListChanged::Observe);
    assert_eq!(deploy.quarantine.as_deref(), Some("held"));
    assert_eq!(deploy.results, ResultsMode::Enforce);
    assert_eq!(c.server("other").pin, Some(Pin::Fingerprint(lock_fp())));
    assert_eq!(c.posture_of("deploy"), Posture::Strict);
    assert_eq!(c.posture_of("unlisted"), Posture::Discovery);
    assert!(c.fingerprint.contains(FingerprintField::Title));
    assert_eq!(c.admin.prefix, "/gate/");
    assert_eq!(c.admin.token_sha256, vec![[0xaa; 32]]);
    assert_eq!(c.admin.identity, None);
    assert!(c.audit.call_allowed);
}

#[test]
fn bad_configs_name_the_field_to_fix() {
    let wrong_fp = format!("sha256:{}", "0".repeat(64));
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "invalid toolseal config: expected a JSON object"),
        (
            json!({"postur": "strict"}),
            "field `postur`: unknown key; expected one of: posture, server_id, servers, policy",
        ),
        (
            json!({"posture": "lenient"}),
            "field `posture`: unknown posture \"lenient\"; expected \"discovery\" or \"strict\"",
        ),
        (json!({"posture": 1}), "field `posture`: expected a string"),
        (
            json!({"server_id": {"from": "header"}}),
            "field `server_id.name`: required when server_id.from is \"header\"",
        ),
        (
            json!({"server_id": {"from": "sni"}}),
            "field `server_id.from`: unknown source \"sni\"; expected \"route\", \"cluster\" or \"header\"",
        ),
        (
            json!({"server_id": {"from": "header", "name": "bad header"}}),
            "field `server_id.name`: not a valid HTTP header name",
        ),
        (
            json!({"servers": {"d": {"pin": "md5:abc"}}}),
            "field `servers.d.pin`: expected \"sha256:\" followed by 64 lowercase hex digits",
        ),
        (
            json!({"servers": {"d": {"pin": lock_fp(), "lock": {}}}}),
            "field `servers.d`: a server has at most one of `pin` and `lock`",
        ),
        (
            json!({"servers": {"d": {"lock": {"fingerprint": wrong_fp, "tools": [tool()]}}}}),
            "does not match the locked tools",
        ),
        (
            json!({"servers": {"d": {"lock": {"fingerprint": lock_fp(), "tools": [tool(), tool()]}}}}),
            "field `servers.d.lock.tools`:",
        ),
        (
            json!({"servers": {"d": {"list_changed": "ignore"}}}),
            "field `servers.d.list_changed`: unknown mode \"ignore\"",
        ),
        (
            json!({"servers": {"d": {"results": "strict"}}}),
            "field `servers.d.results`: unknown mode \"strict\"",
        ),
        (
            json!({"servers": {"d": {"allow_subset": "yes"}}}),
            "field `servers.d.allow_subset`: expected true or false",
        ),
        (
            json!({"servers": {"d": {"colour": "red"}}}),
            "field `servers.d.colour`: unknown key",
        ),
        (
            json!({"limits": {"max_depth": 0}}),
            "field `limits.max_depth`: expected a whole number from 1 to 128",
        ),
        (
            json!({"limits": {"max_request_bytes": -1}}),
            "field `limits.max_request_bytes`: expected a whole number",
        ),
        (
            json!({"fingerprint": {"fields": ["name", "colour"]}}),
            "field `fingerprint.fields`:",
        ),
        (
            json!({"admin": {"prefix": "toolseal"}}),
            "field `admin.prefix`: must start and end with '/'",
        ),
        (
            json!({"admin": {"token_sha256": []}}),
            "field `admin.token_sha256`: expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)",
        ),
        (
            json!({"admin": {"token_sha256": vec!["a".repeat(64); 9]}}),
            "field `admin.token_sha256`: expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)",
        ),
        (
            json!({"admin": {"token_sha256": ["a".repeat(64), "abc"]}}),
            "field `admin.token_sha256`: expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)",
        ),
        (
            json!({"admin": {"token_sha256": ["a".repeat(64), "A".repeat(64)]}}),
            "field `admin.token_sha256`: expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)",
        ),
        (
            json!({"admin": {"token_sha256": 7}}),
            "field `admin.token_sha256`: expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)",
        ),
        (
            json!({"admin": {"identity": "alice"}}),
            "field `admin.identity`: expected a JSON object",
        ),
        (
            json!({"admin": {"identity": {"cookie": "user"}}}),
            "field `admin.identity.cookie`: unknown key; expected one of: header, metadata",
        ),
        (
            json!({"admin": {"identity": {}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"identity": {"header": "x-user", "metadata": "a/b"}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"identity": {"header": "Authorization"}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"identity": {"header": "x user"}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"identity": {"header": 7}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"identity": {"metadata": "envoy.filters.http.jwt_authn"}}}),
            "field `admin.identity`: expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
        ),
        (
            json!({"admin": {"tokens": ["x"]}}),
            "field `admin.tokens`: unknown key; expected one of: prefix, token_sha256, identity",
        ),
        (
            json!({"audit": {"call_allowed": 1}}),
            "field `audit.call_allowed`: expected true or false",
        ),
        (
            json!({"policy": {"rules": [{"action": "deny", "tool": "x", "arguments": {"/a": {"foo": 1}}}]}}),
            "field `policy.rules[0]",
        ),
        (
            json!({"limits": {"max_list_ttl_ms": 0}}),
            "field `limits.max_list_ttl_ms`: expected a whole number from 1 to 86400000",
        ),
        (
            json!({"limits": {"max_list_ttl_ms": 86_400_001}}),
            "field `limits.max_list_ttl_ms`: expected a whole number from 1 to 86400000",
        ),
        (
            json!({"limits": {"max_list_ttl_ms": "60s"}}),
            "field `limits.max_list_ttl_ms`: expected a whole number",
        ),
        (
            json!({"snapshots": {"keys": ["session"]}}),
            "field `snapshots.keys`: unknown key; expected one of: key",
        ),
        (
            json!({"snapshots": []}),
            "field `snapshots`: expected a JSON object",
        ),
        (
            json!({"snapshots": {"key": []}}),
            "field `snapshots.key`: expected a list of 1 to 8 sources",
        ),
        (
            json!({"snapshots": {"key": "session"}}),
            "field `snapshots.key`: expected a list of 1 to 8 sources",
        ),
        (
            json!({"snapshots": {"key": vec!["session"; 9]}}),
            "field `snapshots.key`: expected a list of 1 to 8 sources",
        ),
        (
            json!({"snapshots": {"key": ["session", "cookie"]}}),
            "field `snapshots.key[1]`: expected \"session\", {\"header\": NAME} or {\"metadata\": \"NAMESPACE/key/…\"}",
        ),
        (
            json!({"snapshots": {"key": [{"header": "bad header"}]}}),
            "field `snapshots.key[0]`: expected \"session\"",
        ),
        (
            json!({"snapshots": {"key": [{"header": "x-agent-id", "in": ["a"]}]}}),
            "field `snapshots.key[0]`: expected \"session\"",
        ),
        (
            json!({"snapshots": {"key": [{"metadata": "envoy.filters.http.jwt_authn"}]}}),
            "field `snapshots.key[0]`: expected \"session\"",
        ),
        (
            json!({"snapshots": {"key": [{"query": "agent"}]}}),
            "field `snapshots.key[0]`: expected \"session\"",
        ),
    ];
    for (config, want) in cases {
        let got = parse(&config).expect_err(&format!("{config} should be refused"));
        assert!(
            got.contains(want),
            "config {config}\n  got:  {got}\n  want: …{want}…"
        );
    }
}

#[test]
fn fingerprint_fields_may_only_add_to_the_default_fields() {
    let refused = [
        (json!(["name", "inputSchema"]), "add description"),
        (json!(["name", "description"]), "add inputSchema"),
        (json!(["description", "inputSchema", "title"]), "add name"),
        (json!(["title"]), "add name, description, inputSchema"),
        (json!([]), "add name, description, inputSchema"),
    ];
    for (fields, missing) in refused {
        let config = json!({"fingerprint": {"fields": fields}});
        let got = parse(&config).expect_err(&format!("{config} should be refused"));
        assert_eq!(
            got,
            format!(
                "invalid toolseal config: field `fingerprint.fields`: must keep the default fields name, description and inputSchema (it may only add fields); {missing}"
            )
        );
    }
    for fields in [
        json!(["name", "description", "inputSchema"]),
        json!([
            "inputSchema",
            "icons",
            "name",
            "description",
            "annotations",
            "outputSchema"
        ]),
    ] {
        let config = json!({"fingerprint": {"fields": fields}});
        assert!(parse(&config).is_ok(), "{config} should be accepted");
    }
}

#[test]
fn duplicate_keys_and_invalid_json_are_refused() {
    let err = Config::parse(br#"{"posture":"strict","posture":"discovery"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not valid JSON") && err.contains("posture"),
        "{err}"
    );
    assert!(Config::parse(b"{").is_err());
}

#[test]
fn admin_token_hashes_are_one_or_a_list_and_identity_names_a_header_or_metadata() {
    let one = parse(&json!({"admin": {"token_sha256": "ab".repeat(32)}})).unwrap();
    assert_eq!(one.admin.token_sha256, vec![[0xab; 32]]);
    let rotating = parse(&json!({"admin": {
        "token_sha256": ["ab".repeat(32), "CD".repeat(32)],
        "identity": {"header": "X-Approver"}
    }}))
    .unwrap();
    assert_eq!(rotating.admin.token_sha256, vec![[0xab; 32], [0xcd; 32]]);
    assert_eq!(
        rotating.admin.identity,
        Some(IdentitySource::Header("x-approver".into()))
    );
    let jwt = parse(&json!({"admin": {
        "token_sha256": ["ab".repeat(32)],
        "identity": {"metadata": "envoy.filters.http.jwt_authn/payload/sub"}
    }}))
    .unwrap();
    assert_eq!(
        jwt.admin.identity,
        Some(IdentitySource::Metadata(
            "envoy.filters.http.jwt_authn/payload/sub".into()
        ))
    );
}
