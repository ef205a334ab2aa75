//! Decision records and audit events that tell the truth: every message gets a record, also
//! the requests refused before any check; the elements of a batch answered locally never say
//! `allow`; each call's audit hash is that call's own raw `arguments` bytes; a list whose
//! event stream ends mid-event is answered with an error.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::state::audit::Counter;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

use crate::support::tools::weather;

const SERVER: &str = "weather";

fn gateway(mut config: Value) -> NativeReplay {
    // The sessions here skip the handshake, so their capabilities are never known: views are
    // told by revision alone (lists/views.rs tests the capabilities source).
    if let Some(c) = config.as_object_mut() {
        c.entry("views").or_insert(json!(["revision"]));
    }
    NativeReplay::new(Config::parse(config.to_string().as_bytes()).unwrap())
}

fn post(body: &[u8], response: &[u8]) -> HttpExchange {
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
        response_headers: vec![("content-type".into(), "text/event-stream".into())],
        response_body: response.to_vec(),
    }
}

/// A gateway that has served (and baselined, in discovery posture) `get_weather`.
fn listed(config: Value) -> NativeReplay {
    let mut gw = gateway(config);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [weather()]}});
    let ex = post(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        format!("event: message\ndata: {answer}\n\n").as_bytes(),
    );
    assert!(gw.exchange(SERVER, &ex, 16).local_reply.is_none());
    gw.out = Default::default();
    gw
}

/// (direction, method, id, decision, error_code) of every record since the last reset.
fn records(gw: &NativeReplay) -> Vec<Value> {
    gw.out
        .decisions
        .iter()
        .map(|d| {
            let j = d.to_json();
            json!([
                j["direction"],
                j["method"],
                j["id"],
                j["decision"],
                j["error_code"]
            ])
        })
        .collect()
}

fn audits(gw: &NativeReplay, event: &str) -> Vec<Value> {
    gw.out
        .audits
        .iter()
        .filter(|a| a.event == event)
        .map(|a| a.to_json())
        .collect()
}

#[test]
fn requests_refused_before_any_check_get_a_deny_record_each() {
    let mut gw = listed(json!({"limits": {"max_request_bytes": 200}}));
    let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#;
    // 415: the body is never read, so the record names no method and no id.
    let mut plain = post(call, b"");
    plain.request_headers[0].1 = "text/plain".into();
    assert_eq!(
        gw.exchange(SERVER, &plain, 8).local_reply.unwrap().status,
        415
    );
    // 413.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"get_weather","arguments":{{"city":"{}"}}}}}}"#,
        "x".repeat(300)
    );
    let reply = gw.exchange(SERVER, &post(big.as_bytes(), b""), 8);
    assert_eq!(reply.local_reply.unwrap().status, 413);
    // 400: not JSON.
    let reply = gw.exchange(SERVER, &post(b"{\"jsonrpc\":", b""), 8);
    assert_eq!(reply.local_reply.unwrap().status, 400);
    // 400: a header that contradicts the body; the body was read, so its message is named.
    let mut mismatch = post(call, b"");
    mismatch
        .request_headers
        .push(("mcp-method".into(), "tools/list".into()));
    assert_eq!(
        gw.exchange(SERVER, &mismatch, 8)
            .local_reply
            .unwrap()
            .status,
        400
    );
    // 400: a call sent as a notification.
    let note = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_weather"}}"#;
    assert_eq!(
        gw.exchange(SERVER, &post(note, b""), 8)
            .local_reply
            .unwrap()
            .status,
        400
    );
    assert_eq!(
        records(&gw),
        [
            json!(["request", null, null, "deny", "REQUEST_REJECTED"]),
            json!(["request", null, null, "deny", "REQUEST_REJECTED"]),
            json!(["request", null, null, "deny", "REQUEST_REJECTED"]),
            json!(["request", "tools/call", 5, "deny", "REQUEST_REJECTED"]),
            json!(["request", "tools/call", null, "deny", "REQUEST_REJECTED"]),
        ]
    );
    let statuses: Vec<Value> = audits(&gw, "request.rejected")
        .iter()
        .map(|a| a["http_status"].clone())
        .collect();
    assert_eq!(
        statuses,
        [json!(415), json!(413), json!(400), json!(400), json!(400)]
    );
}

#[test]
fn a_batch_answered_locally_records_no_allow_and_audits_no_allowed_call() {
    let mut gw = listed(json!({"audit": {"call_allowed": true}}));
    let batch = br#"[
        {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}},
        {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}},
        {"jsonrpc":"2.0","id":3,"method":"tools/list"},
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}
    ]"#;
    let reply = gw
        .exchange(SERVER, &post(batch, b""), 8)
        .local_reply
        .unwrap();
    let answers: Value = serde_json::from_slice(&reply.body).unwrap();
    let ids: Vec<&Value> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)]);
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert_eq!(
        answers[1]["result"]["structuredContent"]["error_code"],
        "TOOL_NOT_APPROVED"
    );
    assert_eq!(answers[2]["error"]["code"], -32600);
    assert_eq!(
        records(&gw),
        [
            json!(["request", "tools/call", 1, "deny", "BATCH_REFUSED"]),
            json!(["request", "tools/call", 2, "deny", "TOOL_NOT_APPROVED"]),
            json!(["request", "tools/list", 3, "deny", "BATCH_REFUSED"]),
            json!([
                "request",
                "notifications/progress",
                null,
                "deny",
                "BATCH_REFUSED"
            ]),
        ]
    );
    assert!(audits(&gw, "call.allowed").is_empty());
    let denied: Vec<(Value, Value)> = audits(&gw, "call.denied")
        .iter()
        .map(|a| (a["tool"].clone(), a["error_code"].clone()))
        .collect();
    assert_eq!(
        denied,
        [
            (json!("get_weather"), json!("BATCH_REFUSED")),
            (json!("rm_rf"), json!("TOOL_NOT_APPROVED")),
        ]
    );
    assert!(
        !gw.out
            .counts
            .iter()
            .any(|(c, _)| *c == Counter::CallsAllowed)
    );
    assert!(
        gw.out
            .counts
            .contains(&(Counter::CallsDenied, Some("BATCH_REFUSED".into())))
    );
}

#[test]
fn args_sha256_is_each_calls_own_raw_arguments() {
    let mut gw = listed(json!({"audit": {"call_allowed": true}}));
    // Spacing, key order and escapes as the client sent them; the second element spells its
    // member name with an escape.
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments": {"city" : "Oslo"} }},
        {"params":{"\u0061rguments":{"city":"Bergen\u00e6"},"name":"get_weather"},"jsonrpc":"2.0","id":2,"method":"tools/call"}]"#;
    assert!(
        gw.exchange(SERVER, &post(batch, b""), 8)
            .local_reply
            .is_none()
    );
    let single =
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather"}}"#;
    assert!(
        gw.exchange(SERVER, &post(single, b""), 8)
            .local_reply
            .is_some()
    );
    let hashes: Vec<(Value, Value, Value)> = gw
        .out
        .audits
        .iter()
        .filter(|a| a.event.starts_with("call."))
        .map(|a| {
            let j = a.to_json();
            (
                j["event"].clone(),
                j["args_sha256"].clone(),
                j["arguments"].clone(),
            )
        })
        .collect();
    // Expected digests computed with Python's hashlib over the exact bytes:
    // `{"city" : "Oslo"}` and `{"city":"Bergen\u00e6"}` (the escape as sent, 6 bytes).
    assert_eq!(
        hashes,
        [
            (
                json!("call.allowed"),
                json!("006ede948ae626a2355ca18280b68480ebb2f4e7dd4c3441cded49b1fedc5cb1"),
                json!(r#"{"city":"Oslo"}"#)
            ),
            (
                json!("call.allowed"),
                json!("fdcb70974a736f984432981e6fa251bd69350abacc4e3eefa939154a3ea35321"),
                json!("{\"city\":\"Bergenæ\"}")
            ),
            // No `arguments` member: nothing was sent to hash.
            (json!("call.denied"), Value::Null, json!("")),
        ]
    );
}

#[test]
fn a_list_stream_that_ends_mid_event_answers_the_list_with_an_error() {
    let mut gw = listed(json!({}));
    let list = br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
    let answer = json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [weather()]}});
    // The answer's event never ends (no blank line): clients discard it.
    let cut = format!(": ping\n\nevent: message\ndata: {answer}\n");
    let out = gw.exchange(SERVER, &post(list, cut.as_bytes()), 7);
    let text = String::from_utf8(out.response_body).unwrap();
    assert!(text.starts_with(": ping\n\n"), "{text}");
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(data.len(), 1, "{text}");
    assert_eq!(data[0]["id"], 4);
    assert_eq!(data[0]["error"]["code"], -32603);
    assert!(
        data[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ended in the middle of an event")
    );
    assert!(!text.contains("get_weather"));
    assert_eq!(
        records(&gw).last().unwrap(),
        &json!([
            "response",
            "tools/list",
            4,
            "rewrite",
            "UNINSPECTABLE_RESPONSE"
        ])
    );

    // A stream that ends between events leaves the list to a resumed stream: no error added.
    let clean = ": ping\n\n";
    let out = gw.exchange(SERVER, &post(list, clean.as_bytes()), 7);
    assert_eq!(out.response_body, clean.as_bytes());
}
