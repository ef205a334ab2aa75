//! Result contracts and the audit of call arguments,
//! told through the engine with synthetic exchanges: a `structuredContent` that breaks the
//! approved `outputSchema` is audited and passed (observe) or replaced by a tool error
//! (enforce), for JSON and SSE responses alike; a matching result passes byte for byte;
//! denials carry the SHA-256 of the raw arguments and the canonical ones; duplicate keys in
//! arguments never reach the server.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::policy::fingerprint::sha256_hex;
use toolseal_core::transcript::{HttpExchange, NativeReplay, Replayed};

fn weather() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"], "additionalProperties": false},
        "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
            "required": ["temperature", "conditions"]}})
}

fn gateway(results: &str) -> NativeReplay {
    let config = json!({"views": ["revision"], "servers": {"weather": {"results": results}},
        "policy": {"rules": [{"action": "deny", "tool": "get_weather", "arguments": {"/city": {"in": ["Atlantis"]}}}]}});
    let mut gw = NativeReplay::new(Config::parse(config.to_string().as_bytes()).unwrap());
    let list = exchange(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        "application/json",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [weather()]}})
            .to_string()
            .as_bytes(),
    );
    let out = gw.exchange("weather", &list, 64);
    assert!(out.local_reply.is_none());
    assert!(
        String::from_utf8(out.response_body)
            .unwrap()
            .contains("get_weather")
    );
    gw
}

fn exchange(request: &[u8], content_type: &str, response: &[u8]) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "s1".into()),
        ],
        request_body: request.to_vec(),
        status: 200,
        response_headers: vec![("content-type".into(), content_type.into())],
        response_body: response.to_vec(),
    }
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#;

/// The server's answer to `CALL`, as raw JSON text (formatting kept on purpose).
fn answer(structured: &str) -> String {
    format!(
        "{{ \"result\" : {{\"content\":[{{\"type\":\"text\",\"text\":\"forecast\"}}], \"structuredContent\": {structured} }}, \"jsonrpc\":\"2.0\", \"id\":7 }}"
    )
}

fn sse(data: &str) -> Vec<u8> {
    format!(": keepalive\n\nevent: message\nid: 4\ndata: {data}\n\n").into_bytes()
}

/// Sends `CALL` and returns what the client received (JSON or the SSE data line).
fn call(gw: &mut NativeReplay, content_type: &str, body: &[u8]) -> Replayed {
    let out = gw.exchange("weather", &exchange(CALL, content_type, body), 5);
    assert!(out.local_reply.is_none(), "the call itself is allowed");
    out
}

fn mismatches(gw: &NativeReplay) -> Vec<Value> {
    gw.out
        .audits
        .iter()
        .filter(|a| a.event == "result.mismatch")
        .map(|a| a.to_json())
        .collect()
}

const BAD: &str = r#"{"temperature": "warm", "conditions": "sunny"}"#;
const PROBLEM: &str = "/temperature: expected number, got string";

fn data_line(body: &[u8]) -> Value {
    let text = String::from_utf8(body.to_vec()).unwrap();
    serde_json::from_str(text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap()
}

fn assert_replaced(forwarded: &Value) {
    assert_eq!(forwarded["id"], 7);
    let result = &forwarded["result"];
    assert_eq!(result["isError"], true);
    let sc = &result["structuredContent"];
    assert_eq!(sc["error_code"], "RESULT_CONTRACT_CHANGED");
    assert_eq!(sc["side_effect_started"], true);
    assert_eq!(sc["required_action"], "admin_review");
    assert_eq!(sc["tool"], "get_weather");
    assert_eq!(sc["server"], "weather");
    assert_eq!(
        result["content"][0]["text"],
        format!(
            "get_weather was refused: its result does not match the approved output schema ({PROBLEM}). \
             An administrator must review the server before it can be used. The tool did run."
        )
    );
    assert!(
        !forwarded.to_string().contains("warm"),
        "the mismatching result must not reach the client"
    );
}

#[test]
fn observe_mode_audits_a_mismatch_and_passes_the_result_unchanged() {
    for content_type in ["application/json", "text/event-stream"] {
        let mut gw = gateway("observe");
        let body = if content_type == "application/json" {
            answer(BAD).into_bytes()
        } else {
            sse(&answer(BAD))
        };
        let out = call(&mut gw, content_type, &body);
        assert_eq!(
            out.response_body, body,
            "{content_type}: passed byte for byte"
        );
        let events = mismatches(&gw);
        assert_eq!(events.len(), 1, "{content_type}");
        assert_eq!(events[0]["tool"], "get_weather");
        assert_eq!(events[0]["problem"], PROBLEM);
        assert_eq!(events[0]["reason"], PROBLEM);
        assert_eq!(events[0]["server"], "weather");
        assert_eq!(events[0]["session"], "s1");
    }
}

#[test]
fn enforce_mode_replaces_a_mismatching_result_with_a_tool_error() {
    let mut gw = gateway("enforce");
    let out = call(&mut gw, "application/json", answer(BAD).as_bytes());
    assert_replaced(&serde_json::from_slice(&out.response_body).unwrap());
    assert_eq!(mismatches(&gw).len(), 1);

    let mut gw = gateway("enforce");
    let out = call(&mut gw, "text/event-stream", &sse(&answer(BAD)));
    let text = String::from_utf8(out.response_body.clone()).unwrap();
    assert!(
        text.starts_with(": keepalive\n\n"),
        "other events pass untouched: {text:?}"
    );
    assert!(
        text.contains("\nid: 4\n"),
        "the event keeps its id: {text:?}"
    );
    assert_replaced(&data_line(&out.response_body));
    assert_eq!(mismatches(&gw).len(), 1);
    let rewrite = gw
        .out
        .decisions
        .iter()
        .find(|d| d.decision == "rewrite")
        .unwrap();
    assert_eq!(rewrite.error_code, Some("RESULT_CONTRACT_CHANGED"));
}

#[test]
fn a_missing_structured_content_breaks_the_contract_too() {
    let body = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}"#;
    let mut gw = gateway("enforce");
    let out = call(&mut gw, "application/json", body);
    let forwarded: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert_eq!(
        forwarded["result"]["structuredContent"]["error_code"],
        "RESULT_CONTRACT_CHANGED"
    );
    assert_eq!(
        mismatches(&gw)[0]["problem"],
        "the result has no structuredContent although the tool declares an outputSchema"
    );
}

#[test]
fn a_matching_result_or_a_tool_error_passes_byte_for_byte_in_both_modes() {
    let good = answer(r#"{ "conditions":"sunny",  "temperature": 21.5 }"#);
    let tool_error = r#"{"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[{"type":"text","text":"no such city"}]}}"#;
    for mode in ["observe", "enforce"] {
        for body in [good.as_str(), tool_error] {
            let mut gw = gateway(mode);
            let json_out = call(&mut gw, "application/json", body.as_bytes());
            assert_eq!(json_out.response_body, body.as_bytes(), "{mode}: {body}");
            let stream = sse(body);
            let sse_out = call(&mut gw, "text/event-stream", &stream);
            assert_eq!(sse_out.response_body, stream, "{mode}: {body}");
            assert_eq!(mismatches(&gw), Vec::<Value>::new(), "{mode}: {body}");
        }
    }
}

#[test]
fn a_denied_call_is_audited_with_its_raw_arguments_hash_and_the_canonical_arguments() {
    let mut gw = gateway("observe");
    let raw = "{ \"jsonrpc\":\"2.0\", \"id\":9, \"method\":\"tools/call\",\n  \"params\":{\"name\":\"get_weather\",\"arguments\":{ \"days\": 3.0, \"city\": \"Atlantis\" }} }";
    let ex = exchange(raw.as_bytes(), "application/json", b"");
    let reply = gw.exchange("weather", &ex, 8).local_reply.unwrap();
    assert_eq!(reply.status, 200);
    let answer: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["error_code"],
        "POLICY_DENIED"
    );
    let denied: Vec<Value> = gw
        .out
        .audits
        .iter()
        .filter(|a| a.event == "call.denied")
        .map(|a| a.to_json())
        .collect();
    assert_eq!(denied.len(), 1);
    // SHA-256 of the `arguments` bytes exactly as sent, `{ "days": 3.0, "city": "Atlantis" }`
    // (computed with Python's hashlib), not of the whole body.
    assert_eq!(
        denied[0]["args_sha256"],
        "477b854b91b6185a2d4de60c27a5b4932231f8800220ded03d8ec7aaf1d2dcf1"
    );
    assert_ne!(denied[0]["args_sha256"], sha256_hex(raw.as_bytes()));
    assert_eq!(denied[0]["arguments"], r#"{"city":"Atlantis","days":3}"#);
    assert_eq!(denied[0]["tool"], "get_weather");
    assert_eq!(denied[0]["decision"], "deny");
    assert_eq!(denied[0]["error_code"], "POLICY_DENIED");

    // A schema violation is audited the same way.
    let raw = r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo","extra":true}}}"#;
    let reply = gw
        .exchange(
            "weather",
            &exchange(raw.as_bytes(), "application/json", b""),
            8,
        )
        .local_reply
        .unwrap();
    let answer: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["error_code"],
        "INVALID_ARGUMENTS"
    );
    let last = gw
        .out
        .audits
        .iter()
        .rev()
        .find(|a| a.event == "call.denied")
        .unwrap()
        .to_json();
    // SHA-256 of `{"city":"Oslo","extra":true}` (hashlib).
    assert_eq!(
        last["args_sha256"],
        "dcfc9191c40e36f4268542e525b2da7d58a01fda0679c9bd059a49491d9cf130"
    );
    assert_eq!(last["arguments"], r#"{"city":"Oslo","extra":true}"#);
}

#[test]
fn duplicate_keys_inside_arguments_are_refused_before_the_server() {
    let mut gw = gateway("observe");
    let raw = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo","city":"/etc/passwd"}}}"#;
    let audits_before = gw.out.audits.len();
    let reply = gw
        .exchange("weather", &exchange(raw, "application/json", b""), 8)
        .local_reply
        .unwrap();
    assert_eq!(reply.status, 400);
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate object key \"city\""),
        "{body}"
    );
    let new: Vec<&str> = gw.out.audits[audits_before..]
        .iter()
        .map(|a| a.event)
        .collect();
    assert_eq!(new, vec!["request.rejected"]);
    assert!(
        gw.out.audits[audits_before]
            .reason
            .contains("duplicate object key \"city\"")
    );
}

// Enforce-mode bypasses found while writing these tests: a result under a numerically equal
// id (JS and Python clients read 7.0 as 7), a compressed result, and a result whose duplicate
// keys a lenient client would read differently (still open for SSE: ignored test below).

#[test]
fn enforce_mode_is_not_bypassed_by_a_numerically_equal_id() {
    let mut gw = gateway("enforce");
    let body = answer(BAD).replace("\"id\":7", "\"id\":7.0");
    let out = call(&mut gw, "application/json", body.as_bytes());
    assert!(!String::from_utf8_lossy(&out.response_body).contains("warm"));
    assert_eq!(mismatches(&gw).len(), 1);
}

#[test]
fn enforce_mode_does_not_pass_a_compressed_result_unread() {
    let mut gw = gateway("enforce");
    let mut ex = exchange(CALL, "application/json", answer(BAD).as_bytes());
    ex.response_headers
        .push(("content-encoding".into(), "gzip".into()));
    let out = gw.exchange("weather", &ex, 5);
    assert!(!String::from_utf8_lossy(&out.response_body).contains("warm"));
}

/// A result whose `structuredContent` has `temperature` twice: strict parsing refuses it;
/// a last-wins client would read "warm".
fn smuggled() -> String {
    answer(r#"{"temperature": 1, "conditions": "sunny", "temperature": "warm"}"#)
}

#[test]
fn enforce_mode_does_not_pass_a_json_result_with_duplicate_keys_unread() {
    let mut gw = gateway("enforce");
    let out = call(&mut gw, "application/json", smuggled().as_bytes());
    let text = String::from_utf8_lossy(&out.response_body).to_string();
    assert!(!text.contains("warm"), "{text}");
}

#[test]
fn enforce_mode_does_not_pass_an_sse_result_with_duplicate_keys_unread() {
    let mut gw = gateway("enforce");
    let out = call(&mut gw, "text/event-stream", &sse(&smuggled()));
    let text = String::from_utf8_lossy(&out.response_body).to_string();
    assert!(!text.contains("warm"), "{text}");
}

/// A GET of session `session` (a resumed event stream) answered with `events`.
fn resumed_get(session: &str, events: &[u8]) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "GET".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("mcp-session-id".into(), session.into()),
            ("last-event-id".into(), "4".into()),
        ],
        request_body: Vec::new(),
        status: 200,
        response_headers: vec![("content-type".into(), "text/event-stream".into())],
        response_body: events.to_vec(),
    }
}

#[test]
fn a_result_delivered_on_a_resumed_get_stream_is_held_to_the_contract() {
    // The server closes the POST stream after a priming event (SSE polling) and answers on
    // the GET stream the client reopens with Last-Event-ID.
    let mut gw = gateway("enforce");
    let out = call(&mut gw, "text/event-stream", b"id: 4\ndata: \n\n");
    assert_eq!(out.response_body, b"id: 4\ndata: \n\n");
    let resumed = gw.exchange("weather", &resumed_get("s1", &sse(&answer(BAD))), 5);
    assert!(resumed.local_reply.is_none());
    assert_replaced(&data_line(&resumed.response_body));
    assert_eq!(mismatches(&gw).len(), 1);

    // Observe mode audits it and passes it; another session's GET knows nothing of the call,
    // so the answer there answers nothing and is dropped.
    let mut gw = gateway("observe");
    call(&mut gw, "text/event-stream", b"id: 4\ndata: \n\n");
    let body = sse(&answer(BAD));
    let other = gw.exchange("weather", &resumed_get("s2", &body), 5);
    assert_eq!(other.response_body, b": keepalive\n\n");
    assert!(mismatches(&gw).is_empty());
    let unsolicited = gw
        .out
        .audits
        .iter()
        .filter(|a| a.event == "response.unsolicited");
    assert_eq!(unsolicited.count(), 1);
    let resumed = gw.exchange("weather", &resumed_get("s1", &body), 5);
    assert_eq!(resumed.response_body, body);
    assert_eq!(mismatches(&gw)[0]["problem"], PROBLEM);
}
