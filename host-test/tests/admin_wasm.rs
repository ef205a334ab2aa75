//! The admin plane through the built proxy-wasm `.wasm` on wasmtime (host-test's replay):
//! the approver's name read from dynamic metadata as the Envoy adapter reads it, token lists,
//! refused admin requests answered locally and audited, a server's stored tool set served
//! (and any other fingerprint refused), and the admin prefix refused (404) by an instance
//! without an `admin` block. Assertions are on what left the gateway and on the
//! audit records the module logged.
//!
//! Needs the module: `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm`
//! (or `TOOLSEAL_WASM=path`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs
)]

use serde_json::{Value, json};
use toolseal::abi::types::LogLevel;
use toolseal::cli::replay_cmd::default_wasm_path;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, Transcript};
use toolseal_core::policy::fingerprint::sha256_hex;
use toolseal_core::transcript::HttpExchange;

const SERVER: &str = "demo";
const OLD: &str = "old-token";
const NEW: &str = "new-token";
const SUB: &str = "envoy.filters.http.jwt_authn/payload/sub";

fn replay(config: &Value, metadata: Value) -> Replay {
    let wasm = default_wasm_path();
    assert!(
        wasm.exists(),
        "build the plugin first: cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm (or set TOOLSEAL_WASM); missing {}",
        wasm.display()
    );
    Replay::start(ReplayOptions {
        wasm_path: wasm,
        plugin_configuration: config.to_string().into_bytes(),
        server: Some(SERVER.into()),
        chunk: 0,
        log_level: LogLevel::Info,
        dynamic_metadata: metadata.as_object().cloned().unwrap_or_default(),
        cache_dir: Some(std::env::temp_dir().join("toolseal-admin-wasm-cache")),
        faults: Vec::new(),
        store: None,
        callouts: None,
    })
    .unwrap()
}

fn echo_tools() -> Value {
    json!([{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}])
}

fn list() -> HttpExchange {
    let tools = echo_tools();
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![("content-type".into(), "application/json".into())],
        request_body: br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
        status: 200,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
            .to_string()
            .into_bytes(),
    }
}

fn admin(method: &str, path: &str, token: Option<&str>, body: &[u8]) -> HttpExchange {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(token) = token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    HttpExchange {
        seq: "a".into(),
        http_method: method.into(),
        path: format!("/toolseal/{path}"),
        request_headers: headers,
        request_body: body.to_vec(),
        status: 200,
        response_headers: vec![],
        response_body: vec![],
    }
}

fn run(replay: &mut Replay, exchanges: Vec<HttpExchange>) -> Vec<ExchangeReport> {
    replay
        .run(&Transcript {
            name: "admin".into(),
            exchanges,
        })
        .unwrap()
}

/// The local answer's status and JSON body; the upstream never saw the request.
fn local(report: &ExchangeReport) -> (u32, Value) {
    assert!(!report.outcome.upstream_contacted);
    let reply = report
        .outcome
        .local_response
        .as_ref()
        .expect("no local reply");
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

fn audits(reports: &[ExchangeReport]) -> Vec<&Value> {
    reports
        .iter()
        .flat_map(|r| &r.records)
        .filter_map(|r| match r {
            PluginRecord::Audit(a) if a["event"] != "config.loaded" => Some(a),
            _ => None,
        })
        .collect()
}

fn admin_config() -> Value {
    json!({"admin": {
        "token_sha256": [sha256_hex(OLD.as_bytes()), sha256_hex(NEW.as_bytes())],
        "identity": {"metadata": SUB}
    }})
}

#[test]
fn a_metadata_claim_names_the_approver_and_either_listed_token_works() {
    let metadata =
        json!({"envoy.filters.http.jwt_authn": {"payload": {"sub": "alice@example.com"}}});
    let mut replay = replay(&admin_config(), metadata);
    let reports = run(
        &mut replay,
        vec![
            list(),
            admin(
                "POST",
                "servers/demo/quarantine",
                Some(NEW),
                br#"{"reason":"drill"}"#,
            ),
            admin("POST", "servers/demo/release", Some(OLD), b""),
            admin("GET", "servers/demo", Some("guess"), b""),
        ],
    );
    assert_eq!(local(&reports[1]).0, 200);
    assert_eq!(local(&reports[2]).1["schema_status"], "verified");
    assert_eq!(
        local(&reports[3]),
        (
            401,
            json!({"error": "the bearer token is not one that admin.token_sha256 accepts"})
        )
    );
    let events: Vec<(&str, &Value, Option<&Value>)> = audits(&reports)
        .iter()
        .map(|a| (a["event"].as_str().unwrap(), &a["by"], a.get("token_index")))
        .filter(|(e, ..)| *e != "schema.baselined")
        .collect();
    let alice = json!("alice@example.com");
    assert_eq!(
        events,
        [
            ("server.quarantined", &alice, Some(&json!(1))),
            ("server.released", &alice, Some(&json!(0))),
            ("admin.refused", &alice, None),
        ]
    );
    let refused = audits(&reports)[3];
    assert_eq!(
        (
            &refused["http_status"],
            &refused["method"],
            &refused["path"]
        ),
        (&json!(401), &json!("GET"), &json!("/toolseal/servers/demo"))
    );
    for token in [OLD, NEW, "guess"] {
        assert!(!refused.to_string().contains(token));
    }
}

#[test]
fn a_claim_that_is_a_list_or_absent_is_refused_403() {
    for metadata in [
        json!({"envoy.filters.http.jwt_authn": {"payload": {"sub": ["alice", "bob"]}}}),
        json!({}),
    ] {
        let mut replay = replay(&admin_config(), metadata.clone());
        let reports = run(
            &mut replay,
            vec![
                list(),
                admin("POST", "servers/demo/quarantine", Some(NEW), b"{}"),
            ],
        );
        assert_eq!(
            local(&reports[1]),
            (
                403,
                json!({"error": format!("admin requests must say who makes them: metadata {SUB} is missing or not one name (admin.identity)")})
            ),
            "{metadata}"
        );
        assert_eq!(
            audits(&reports)
                .iter()
                .map(|a| a["event"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["schema.baselined", "admin.refused"]
        );
    }
}

#[test]
fn without_an_admin_block_the_prefix_is_refused_404_and_never_forwarded() {
    let mut replay = replay(&json!({"posture": "discovery"}), json!({}));
    let reports = run(
        &mut replay,
        vec![
            list(),
            admin("GET", "servers", Some(NEW), b""),
            admin(
                "POST",
                "servers/demo/quarantine",
                Some(NEW),
                br#"{"reason":"x"}"#,
            ),
        ],
    );
    for report in &reports[1..] {
        assert_eq!(
            local(report),
            (
                404,
                json!({"error": "the toolseal admin API is off on this listener (its config has no admin.token_sha256)"})
            )
        );
    }
    let refused: Vec<(&Value, &Value)> = audits(&reports)
        .iter()
        .filter(|a| a["event"] == "admin.refused")
        .map(|a| (&a["http_status"], &a["server"]))
        .collect();
    assert_eq!(
        refused,
        [(&json!(404), &json!("")), (&json!(404), &json!("demo"))]
    );
}

#[test]
fn an_admin_body_over_the_cap_is_refused_413() {
    let mut replay = replay(
        &admin_config(),
        json!({"envoy.filters.http.jwt_authn": {"payload": {"sub": "ops"}}}),
    );
    let big = vec![b' '; 64 * 1024 + 1];
    let reports = run(
        &mut replay,
        vec![
            list(),
            admin("POST", "servers/demo/quarantine", Some(NEW), &big),
        ],
    );
    assert_eq!(
        local(&reports[1]),
        (
            413,
            json!({"error": "admin request bodies are at most 65536 bytes"})
        )
    );
}

#[test]
fn a_servers_stored_tool_set_is_served_and_a_foreign_fingerprint_is_not() {
    let mut replay = replay(
        &admin_config(),
        json!({"envoy.filters.http.jwt_authn": {"payload": {"sub": "ops"}}}),
    );
    let fingerprint = toolseal_core::policy::fingerprint::digest_tools(
        &echo_tools(),
        &toolseal_core::policy::fingerprint::FingerprintFields::default(),
    )
    .unwrap()
    .fingerprint();
    let foreign = format!("sha256:{}", "0".repeat(64));
    let reports = run(
        &mut replay,
        vec![
            list(),
            admin(
                "GET",
                &format!("servers/demo/tools/{fingerprint}"),
                Some(NEW),
                b"",
            ),
            admin(
                "GET",
                &format!("servers/demo/tools/{foreign}"),
                Some(NEW),
                b"",
            ),
            admin(
                "GET",
                &format!("servers/demo/tools/{fingerprint}"),
                None,
                b"",
            ),
        ],
    );
    assert_eq!(
        local(&reports[1]),
        (
            200,
            json!({"fingerprint": fingerprint, "tools": echo_tools()})
        )
    );
    assert_eq!(
        local(&reports[2]),
        (
            404,
            json!({"error": "not a stored tool set of this server: only its baseline, previous baseline and live candidate are served, once listed"})
        )
    );
    assert_eq!(
        local(&reports[3]),
        (401, json!({"error": "missing bearer token"}))
    );
    let refused: Vec<(&Value, &Value)> = audits(&reports)
        .iter()
        .filter(|a| a["event"] == "admin.refused")
        .map(|a| (&a["http_status"], &a["path"]))
        .collect();
    assert_eq!(
        refused,
        [
            (
                &json!(404),
                &json!(format!("/toolseal/servers/demo/tools/{foreign}"))
            ),
            (
                &json!(401),
                &json!(format!("/toolseal/servers/demo/tools/{fingerprint}"))
            ),
        ]
    );
}
