//! The adversarial suite through the built proxy-wasm `.wasm` on wasmtime, with Envoy's
//! buffering model (host-test's replay): the transcripts in examples/adversarial/ (one per
//! attack, written by make_transcripts.py there) plus the cases a transcript cannot carry
//! (invalid UTF-8 bytes, approvals with computed fingerprints, a server flipping 200 times).
//! Assertions are on the decision records and on what left the gateway.
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

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use toolseal::abi::types::LogLevel;
use toolseal::cli::replay_cmd::default_wasm_path;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, Transcript, load_transcript};
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};
use toolseal_core::transcript::HttpExchange;

const SERVER: &str = "adv";
const TOKEN: &str = "adversary-token";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/adversarial")
}

fn start(chunk: usize) -> Replay {
    let wasm = default_wasm_path();
    assert!(
        wasm.exists(),
        "build the plugin first: cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm (or set TOOLSEAL_WASM); missing {}",
        wasm.display()
    );
    Replay::start(ReplayOptions {
        wasm_path: wasm,
        plugin_configuration: std::fs::read(examples().join("config.json")).unwrap(),
        server: Some(SERVER.into()),
        chunk,
        log_level: LogLevel::Debug,
        dynamic_metadata: Map::new(),
        // Compiled once, then deserialized: compiling the module per case is slow in debug.
        cache_dir: Some(std::env::temp_dir().join("toolseal-adversarial-wasm-cache")),
        faults: Vec::new(),
        store: None,
        callouts: None,
    })
    .unwrap()
}

fn replay_case(name: &str, chunk: usize) -> Vec<ExchangeReport> {
    let transcript = load_transcript(&examples().join(format!("{name}.json"))).unwrap();
    start(chunk).run(&transcript).unwrap()
}

fn decisions(report: &ExchangeReport) -> Vec<&Map<String, Value>> {
    report
        .records
        .iter()
        .filter_map(|r| match r {
            PluginRecord::Decision(d) => Some(d),
            PluginRecord::Audit(_) => None,
        })
        .collect()
}

fn audits<'a>(reports: &'a [ExchangeReport], event: &str) -> Vec<&'a Value> {
    reports
        .iter()
        .flat_map(|r| &r.records)
        .filter_map(|r| match r {
            PluginRecord::Audit(a) if a["event"] == event => Some(a),
            _ => None,
        })
        .collect()
}

/// The baseline list (exchange 0) was served whole.
fn assert_baseline_served(reports: &[ExchangeReport]) {
    let d = decisions(&reports[0]);
    assert_eq!(d.last().unwrap()["decision"], "pass", "{d:?}");
    assert_eq!(d.last().unwrap()["tools_out"], 2);
}

/// The exchange was answered locally with `status`; the upstream never saw it.
fn assert_local(report: &ExchangeReport, status: u32) -> Value {
    assert!(
        !report.outcome.upstream_contacted,
        "the upstream was contacted"
    );
    let reply = report
        .outcome
        .local_response
        .as_ref()
        .expect("no local response");
    assert_eq!(
        reply.status,
        status,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    serde_json::from_slice(&reply.body).unwrap()
}

/// Tools the client can read in what was forwarded (JSON or each SSE event's data).
fn client_tools(report: &ExchangeReport) -> Vec<Value> {
    let body = String::from_utf8_lossy(&report.outcome.response_body).into_owned();
    let datas: Vec<String> = if body.contains("data:") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.trim().to_string())
            .collect()
    } else {
        vec![body]
    };
    datas
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|m| m["result"]["tools"].as_array().cloned())
        .flatten()
        .collect()
}

/// The attack exchange's tools/list answer was withheld (fail closed).
fn assert_list_withheld(report: &ExchangeReport, error_code: Option<&str>) {
    assert!(
        client_tools(report).is_empty(),
        "tools reached the client: {}",
        String::from_utf8_lossy(&report.outcome.response_body)
    );
    let d = decisions(report);
    let list = d
        .iter()
        .find(|d| d["method"] == "tools/list" && d["direction"] == "response")
        .unwrap_or_else(|| panic!("no tools/list decision: {d:?}"));
    assert_eq!(list["decision"], "rewrite");
    assert_eq!(list["tools_out"], 0);
    if let Some(code) = error_code {
        assert_eq!(list["error_code"], code);
    }
}

// ---- Transcript cases (examples/adversarial/<name>.json) ----

#[test]
fn duplicate_key_tools_call_is_refused() {
    let r = replay_case("duplicate-key-tools-call", 0);
    assert_baseline_served(&r);
    assert_eq!(assert_local(&r[1], 400)["error"]["code"], -32700);
    assert_eq!(audits(&r, "request.rejected").len(), 1);
}

#[test]
fn duplicate_key_tools_list_response_fails_closed() {
    let r = replay_case("duplicate-key-tools-list-response", 0);
    assert_baseline_served(&r);
    assert_list_withheld(&r[1], Some("UNINSPECTABLE_RESPONSE"));
}

#[test]
fn parser_differentials_in_requests_are_refused() {
    for name in [
        "deep-nesting-request",
        "number-1e400",
        "lone-surrogate",
        "byte-order-mark",
    ] {
        let r = replay_case(name, 0);
        assert_baseline_served(&r);
        let body = assert_local(&r[1], 400);
        assert_eq!(body["error"]["code"], -32700, "{name}: {body}");
    }
}

#[test]
fn crlf_sse_split_at_every_chunk_size_is_checked_the_same() {
    let raw = load_transcript(&examples().join("crlf-split-sse-verified.json")).unwrap();
    let len = raw.exchanges[1].response_body.len();
    let mut drift_bodies = Vec::new();
    // Every byte boundary is covered natively; here a spread of sizes, the whole body included.
    for chunk in [1, 2, 3, 4, 5, 7, 11, 16, 31, 64, len / 2, len, 0] {
        let ok = replay_case("crlf-split-sse-verified", chunk);
        assert_eq!(
            ok[1].outcome.response_body, raw.exchanges[1].response_body,
            "chunk {chunk}: unchanged list not byte-identical"
        );
        let bad = replay_case("crlf-split-sse-drift", chunk);
        assert_list_withheld(&bad[1], None);
        drift_bodies.push(bad[1].outcome.response_body.clone());
    }
    assert!(
        drift_bodies.windows(2).all(|w| w[0] == w[1]),
        "the rewrite depends on the chunking"
    );
}

#[test]
fn id_type_confusion_is_checked() {
    let r = replay_case("id-type-confusion", 3);
    assert_list_withheld(&r[1], None);
    assert!(
        decisions(&r[1])
            .iter()
            .any(|d| d["direction"] == "response" && d["schema_status"] == "changed")
    );
}

#[test]
fn pagination_drift_on_page_two_is_caught() {
    let r = replay_case("pagination-drift-page-two", 5);
    assert_eq!(client_tools(&r[0]).len(), 1);
    assert_eq!(client_tools(&r[1]).len(), 1);
    assert_eq!(
        client_tools(&r[2]).len(),
        1,
        "page 1 of release 2 is unchanged"
    );
    assert_list_withheld(&r[3], None);
    let call = assert_local(&r[4], 200);
    assert_eq!(
        call["result"]["structuredContent"]["error_code"],
        "SCHEMA_CHANGED"
    );
}

#[test]
fn duplicate_tool_names_are_an_invalid_set() {
    let r = replay_case("duplicate-tool-names", 0);
    assert_list_withheld(&r[1], None);
    assert!(
        audits(&r, "schema.changed")[0]["reason"]
            .as_str()
            .unwrap()
            .contains("INVALID_TOOL_SET")
    );
    assert_eq!(
        assert_local(&r[2], 200)["result"]["structuredContent"]["error_code"],
        "SCHEMA_CHANGED"
    );
}

#[test]
fn text_plain_tools_call_is_refused_415() {
    let r = replay_case("text-plain-tools-call", 0);
    assert_local(&r[1], 415);
}

#[test]
fn gzip_tools_list_fails_closed() {
    let r = replay_case("gzip-tools-list", 0);
    assert_list_withheld(&r[1], Some("UNINSPECTABLE_RESPONSE"));
    let body: Value = serde_json::from_slice(&r[1].outcome.response_body).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("compressed")
    );
}

#[test]
fn batch_with_a_denied_call_is_answered_locally() {
    let r = replay_case("batch-allowed-and-denied", 0);
    let body = assert_local(&r[1], 200);
    assert_eq!(body[0]["error"]["code"], -32600);
    assert_eq!(
        body[1]["result"]["structuredContent"]["error_code"],
        "TOOL_NOT_APPROVED"
    );
    // Neither element was forwarded, so neither record says `allow`.
    let records: Vec<(Value, Value, Value)> = decisions(&r[1])
        .iter()
        .map(|d| {
            (
                d["id"].clone(),
                d["decision"].clone(),
                d["error_code"].clone(),
            )
        })
        .collect();
    assert_eq!(
        records,
        [
            (json!(1), json!("deny"), json!("BATCH_REFUSED")),
            (json!(2), json!("deny"), json!("TOOL_NOT_APPROVED")),
        ]
    );
    assert!(audits(&r, "call.allowed").is_empty());
    // One denial each, with the SHA-256 of that element's own `arguments` bytes
    // (`{"message":"hi"}` and `{"path":"/"}`, computed with Python's hashlib).
    let denied: Vec<(Value, Value)> = audits(&r, "call.denied")
        .iter()
        .map(|a| (a["error_code"].clone(), a["args_sha256"].clone()))
        .collect();
    assert_eq!(
        denied,
        [
            (
                json!("BATCH_REFUSED"),
                json!("adbd982b8fe0bbd8477f09262028d3ac264001dc36e3c7579905e72c0b718755")
            ),
            (
                json!("TOOL_NOT_APPROVED"),
                json!("fdf6f57e150ea5cc949277a40f1c2b8fb53f108bd4c6af4b4f65f566507e6351")
            ),
        ]
    );
}

#[test]
fn mcp_method_header_mismatch_is_refused() {
    let r = replay_case("mcp-method-mismatch", 0);
    assert_eq!(assert_local(&r[1], 400)["error"]["code"], -32600);
}

#[test]
fn tools_list_over_the_limit_fails_closed() {
    let r = replay_case("tools-list-over-limit", 0);
    assert_list_withheld(&r[0], Some("UNINSPECTABLE_RESPONSE"));
}

#[test]
fn notification_that_looks_like_a_response_fails_closed() {
    let r = replay_case("notification-looks-like-response", 4);
    assert_list_withheld(&r[1], Some("UNINSPECTABLE_RESPONSE"));
}

#[test]
fn confusable_tool_name_is_drift_and_not_callable() {
    let r = replay_case("confusable-tool-name", 0);
    assert_list_withheld(&r[1], None);
    assert_eq!(
        assert_local(&r[2], 200)["result"]["structuredContent"]["error_code"],
        "SCHEMA_CHANGED"
    );
}

#[test]
fn smuggled_list_on_a_ping_is_checked() {
    let r = replay_case("smuggled-list-on-ping", 0);
    assert!(r[1].outcome.upstream_contacted);
    assert!(
        client_tools(&r[1]).is_empty(),
        "{}",
        String::from_utf8_lossy(&r[1].outcome.response_body)
    );
    let body: Value = serde_json::from_slice(&r[1].outcome.response_body).unwrap();
    assert!(
        body.get("result").is_none() || body["result"]["tools"] == json!([]),
        "{body}"
    );
}

#[test]
fn tools_call_as_notification_is_refused() {
    let r = replay_case("tools-call-notification", 0);
    assert_eq!(assert_local(&r[1], 400)["error"]["code"], -32600);
}

// ---- Cases built in code ----

fn post(body: &[u8], response: &[u8], ctype: &str) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "s1".into()),
        ],
        request_body: body.to_vec(),
        status: 200,
        response_headers: vec![("content-type".into(), ctype.into())],
        response_body: response.to_vec(),
    }
}

fn admin_approve(fingerprint: &str) -> HttpExchange {
    HttpExchange {
        path: format!("/toolseal/servers/{SERVER}/approve"),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {TOKEN}")),
        ],
        ..post(
            json!({"fingerprint": fingerprint}).to_string().as_bytes(),
            b"",
            "application/json",
        )
    }
}

fn tools(description: &str, extra: bool) -> Value {
    let mut t = vec![
        json!({"name": "echo", "description": description, "inputSchema": {"type": "object"}}),
    ];
    if extra {
        t.push(json!({"name": "delete_file", "description": "Delete.", "inputSchema": {"type": "object"}}));
    }
    Value::Array(t)
}

fn list_exchange(tools: &Value) -> HttpExchange {
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).to_string();
    post(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        response.as_bytes(),
        "application/json",
    )
}

fn run(replay: &mut Replay, exchanges: Vec<HttpExchange>) -> Vec<ExchangeReport> {
    replay
        .run(&Transcript {
            name: "coded".into(),
            exchanges,
        })
        .unwrap()
}

#[test]
fn invalid_utf8_request_and_list_event_are_refused() {
    let mut replay = start(0);
    let base = tools("Echo.", false);
    let mut bad_request = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"m":""#.to_vec();
    bad_request.extend_from_slice(b"\xff\xfe\"}}}");
    let mut bad_event = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"ec\xc0ho\"}]}}\n\n".to_vec();
    bad_event.splice(0..0, b": hi\n\n".iter().copied());
    let r = run(
        &mut replay,
        vec![
            list_exchange(&base),
            post(&bad_request, b"", "application/json"),
            post(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                &bad_event,
                "text/event-stream",
            ),
        ],
    );
    assert_eq!(assert_local(&r[1], 400)["error"]["code"], -32700);
    assert_list_withheld(&r[2], Some("UNINSPECTABLE_RESPONSE"));
}

#[test]
fn approval_racing_a_new_drift_is_a_conflict() {
    let mut replay = start(0);
    let fields = FingerprintFields::default();
    let reviewed = digest_tools(&tools("Echo v2.", false), &fields)
        .unwrap()
        .fingerprint();
    let current = digest_tools(&tools("Echo v2.", true), &fields)
        .unwrap()
        .fingerprint();
    let r = run(&mut replay, vec![
        list_exchange(&tools("Echo.", false)),
        list_exchange(&tools("Echo v2.", false)),
        list_exchange(&tools("Echo v2.", true)),
        admin_approve(&reviewed),
        post(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_file"}}"#, b"", "application/json"),
        admin_approve(&current),
    ]);
    assert_eq!(r[3].outcome.local_response.as_ref().unwrap().status, 409);
    assert_eq!(
        assert_local(&r[4], 200)["result"]["structuredContent"]["error_code"],
        "SCHEMA_CHANGED"
    );
    assert_eq!(r[5].outcome.local_response.as_ref().unwrap().status, 200);
    assert_eq!(audits(&r, "schema.approved").len(), 1);
}

#[test]
fn flipping_server_stays_changed_with_bounded_shared_data() {
    let mut replay = start(0);
    let (a, b) = (tools("Echo.", false), tools("Echo, flipped.", false));
    run(&mut replay, vec![list_exchange(&a)]);
    let flips = |n: usize| {
        (0..n)
            .map(|i| list_exchange(if i % 2 == 0 { &b } else { &a }))
            .collect::<Vec<_>>()
    };
    let first = run(&mut replay, flips(300));
    assert!(
        first.iter().all(|r| client_tools(r).is_empty()),
        "a flip served tools"
    );
    // Bytes are bounded natively (plugin/core/tests/adversarial); the host exposes key counts.
    let keys = replay.vm().host().vm.shared_data.len();
    let second = run(&mut replay, flips(300));
    assert!(second.iter().all(|r| client_tools(r).is_empty()));
    assert!(
        decisions(second.last().unwrap())
            .iter()
            .all(|d| d["schema_status"] == "changed")
    );
    assert_eq!(
        replay.vm().host().vm.shared_data.len(),
        keys,
        "shared data keys grow with flips"
    );
}
