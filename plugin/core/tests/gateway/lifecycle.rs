//! The gateway's stories told through the engine with synthetic
//! Streamable HTTP exchanges: rug pull, approve bound to the reviewed fingerprint, stale
//! calls, strict posture, quarantine, list_changed hold, invalid sets, batches, and the
//! request-side refusals.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay, Replayed};

use crate::support::admin::{TOKEN, schema_status};
use crate::support::gateway::{code, gateway, post};
use crate::support::tools::{deploy_v1, fp, weather};

fn deploy_v2() -> Value {
    json!({"name": "deploy_preview", "description": "Deploy the current branch to a preview environment.",
        "inputSchema": {"type": "object", "properties": {"branch": {"type": "string"},
        "region": {"type": "string", "enum": ["us-east-preview", "eu-preview"]}},
        "required": ["branch", "region"], "additionalProperties": false}})
}

/// A `tools/list` round trip; returns the tools the client received.
fn list(gw: &mut NativeReplay, session: &str, tools: &[Value]) -> Vec<Value> {
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})),
    );
    let out = gw.exchange("deploy", &ex, 5);
    assert!(out.local_reply.is_none());
    let text = String::from_utf8(out.response_body).unwrap();
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    v["result"]["tools"].as_array().unwrap().clone()
}

/// A `tools/call`; returns `None` when it was forwarded, or the local answer.
fn call(gw: &mut NativeReplay, session: &str, tool: &str, args: Value) -> Option<Value> {
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
        Some(
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        ),
    );
    let out: Replayed = gw.exchange("deploy", &ex, 64);
    out.local_reply.map(|r| {
        assert_eq!(r.status, 200);
        serde_json::from_slice(&r.body).unwrap()
    })
}

fn admin(
    gw: &mut NativeReplay,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(t) = token {
        headers.push(("authorization".into(), format!("Bearer {t}")));
    }
    let ex = HttpExchange {
        seq: "a".into(),
        http_method: method.into(),
        path: format!("/toolseal/{path}"),
        request_headers: headers,
        request_body: if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
        status: 200,
        response_headers: vec![],
        response_body: vec![],
    };
    let reply = gw.exchange("deploy", &ex, 64).local_reply.unwrap();
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

fn status(gw: &mut NativeReplay) -> String {
    schema_status(gw, "deploy")
}

#[test]
fn rug_pull_is_filtered_and_refused_until_the_reviewed_fingerprint_is_approved() {
    let mut gw = gateway(json!({}));
    assert_eq!(list(&mut gw, "s1", &[deploy_v1(), weather()]).len(), 2);
    assert_eq!(status(&mut gw), "verified");
    assert_eq!(
        code(&call(
            &mut gw,
            "s1",
            "deploy_preview",
            json!({"branch": "main"})
        )),
        "FORWARDED"
    );

    // The server redeploys with a changed schema: the next list is emptied, calls refused.
    assert_eq!(list(&mut gw, "s2", &[deploy_v2(), weather()]).len(), 0);
    assert_eq!(status(&mut gw), "changed");
    let denied = call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}));
    assert_eq!(code(&denied), "SCHEMA_CHANGED");
    let sc = &denied.as_ref().unwrap()["result"]["structuredContent"];
    assert_eq!(sc["required_action"], "admin_review");
    assert_eq!(sc["side_effect_started"], false);
    assert_eq!(denied.as_ref().unwrap()["result"]["isError"], true);

    // Sticky: the old set again does not reopen the server.
    assert_eq!(list(&mut gw, "s3", &[deploy_v1(), weather()]).len(), 0);
    assert_eq!(status(&mut gw), "changed");

    // Approval is bound to the reviewed fingerprint: the current candidate is the old set.
    let candidate = fp(&[deploy_v1(), weather()]);
    let reviewed_v2 = fp(&[deploy_v2(), weather()]);
    let (c, _) = admin(
        &mut gw,
        "POST",
        "servers/deploy/approve",
        Some(TOKEN),
        json!({"fingerprint": reviewed_v2}),
    );
    assert_eq!(c, 409);
    assert_eq!(status(&mut gw), "changed");
    assert_eq!(list(&mut gw, "s4", &[deploy_v2(), weather()]).len(), 0);
    let (c, view) = admin(
        &mut gw,
        "POST",
        "servers/deploy/approve",
        Some(TOKEN),
        json!({"fingerprint": reviewed_v2}),
    );
    assert_eq!(c, 200, "{view}");
    assert_eq!(view["schema_status"], "verified");
    assert_eq!(view["baseline_fingerprint"], json!(reviewed_v2));
    let _ = candidate;

    // Session s1 last saw revision 1: its call is stale. After a refresh it works.
    assert_eq!(
        code(&call(
            &mut gw,
            "s1",
            "deploy_preview",
            json!({"branch": "main"})
        )),
        "STALE_TOOL_SCHEMA"
    );
    assert_eq!(list(&mut gw, "s1", &[deploy_v2(), weather()]).len(), 2);
    assert_eq!(
        code(&call(
            &mut gw,
            "s1",
            "deploy_preview",
            json!({"branch": "main"})
        )),
        "INVALID_ARGUMENTS"
    );
    let ok = call(
        &mut gw,
        "s1",
        "deploy_preview",
        json!({"branch": "main", "region": "eu-preview"}),
    );
    assert_eq!(code(&ok), "FORWARDED");
    // get_weather did not change: s1's older snapshot is not stale for it.
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "FORWARDED"
    );

    let events: Vec<&str> = gw.out.audits.iter().map(|a| a.event).collect();
    for expected in [
        "schema.baselined",
        "schema.changed",
        "list.filtered",
        "call.denied",
        "schema.approved",
    ] {
        assert!(
            events.contains(&expected),
            "missing {expected} in {events:?}"
        );
    }
}

#[test]
fn admin_requires_the_token_and_changes_nothing_without_it() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    for token in [None, Some("wrong")] {
        let (c, _) = admin(
            &mut gw,
            "POST",
            "servers/deploy/quarantine",
            token,
            json!({"reason": "x"}),
        );
        assert_eq!(c, 401);
    }
    assert_eq!(status(&mut gw), "verified");
    let mut off = NativeReplay::new(Config::default());
    let ex = post("s", json!({}), None);
    let mut ex = ex;
    ex.path = "/toolseal/servers".into();
    ex.http_method = "GET".into();
    assert_eq!(
        off.exchange("deploy", &ex, 8).local_reply.unwrap().status,
        404
    );
}

#[test]
fn quarantine_refuses_calls_and_release_reevaluates() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    let (c, _) = admin(
        &mut gw,
        "POST",
        "servers/deploy/quarantine",
        Some(TOKEN),
        json!({"reason": "suspicious"}),
    );
    assert_eq!(c, 200);
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "SERVER_QUARANTINED"
    );
    assert_eq!(list(&mut gw, "s1", &[weather()]).len(), 0);
    let (c, view) = admin(
        &mut gw,
        "POST",
        "servers/deploy/release",
        Some(TOKEN),
        Value::Null,
    );
    assert_eq!(c, 200);
    assert_eq!(view["schema_status"], "verified");
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "FORWARDED"
    );
    let (c, _) = admin(
        &mut gw,
        "POST",
        "servers/deploy/release",
        Some(TOKEN),
        Value::Null,
    );
    assert_eq!(
        c, 409,
        "releasing a server that is not quarantined is a conflict"
    );
}

#[test]
fn strict_posture_holds_pending_until_approved() {
    let mut gw = gateway(json!({"posture": "strict"}));
    assert_eq!(list(&mut gw, "s1", &[weather()]).len(), 0);
    assert_eq!(status(&mut gw), "pending");
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "SCHEMA_PENDING"
    );
    let (c, _) = admin(
        &mut gw,
        "POST",
        "servers/deploy/approve",
        Some(TOKEN),
        json!({"fingerprint": fp(&[weather()])}),
    );
    assert_eq!(c, 200);
    assert_eq!(list(&mut gw, "s1", &[weather()]).len(), 1);
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "FORWARDED"
    );
}

#[test]
fn a_lock_in_config_checks_calls_at_once_and_a_fingerprint_pin_waits_for_a_live_list() {
    let tools = vec![weather()];
    let lock = json!({"fingerprint": fp(&tools), "tools": tools});
    let mut locked = gateway(json!({"posture": "strict", "servers": {"deploy": {"lock": lock}}}));
    assert_eq!(
        code(&call(
            &mut locked,
            "s1",
            "get_weather",
            json!({"city": "Oslo"})
        )),
        "FORWARDED"
    );
    assert_eq!(
        code(&call(&mut locked, "s1", "get_weather", json!({}))),
        "INVALID_ARGUMENTS"
    );

    let mut pinned =
        gateway(json!({"posture": "strict", "servers": {"deploy": {"pin": fp(&tools)}}}));
    assert_eq!(
        code(&call(
            &mut pinned,
            "s1",
            "get_weather",
            json!({"city": "Oslo"})
        )),
        "SCHEMA_UNVERIFIED"
    );
    assert_eq!(list(&mut pinned, "s1", &tools).len(), 1);
    assert_eq!(
        code(&call(
            &mut pinned,
            "s1",
            "get_weather",
            json!({"city": "Oslo"})
        )),
        "FORWARDED"
    );
    assert_eq!(
        list(&mut pinned, "s2", &[deploy_v1()]).len(),
        0,
        "a set other than the pin is drift"
    );
}

#[test]
fn list_changed_holds_calls_until_a_fresh_list_verifies() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    let mut ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        None,
    );
    ex.response_body =
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n".to_vec();
    gw.exchange("deploy", &ex, 3);
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "SCHEMA_UNVERIFIED"
    );
    list(&mut gw, "s1", &[weather()]);
    assert_eq!(
        code(&call(&mut gw, "s1", "get_weather", json!({"city": "Oslo"}))),
        "FORWARDED"
    );
}

#[test]
fn unknown_tools_and_invalid_sets_are_refused() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    assert_eq!(
        code(&call(&mut gw, "s1", "exfiltrate", json!({}))),
        "TOOL_NOT_APPROVED"
    );
    assert_eq!(
        list(&mut gw, "s1", &[weather(), weather()]).len(),
        0,
        "duplicate names are an invalid set"
    );
    assert_eq!(status(&mut gw), "changed");
}

#[test]
fn a_batch_with_one_denied_call_is_answered_locally_as_a_whole() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rm_rf", "arguments": {}}}
    ]);
    let reply = gw
        .exchange("deploy", &post("s1", batch, None), 8)
        .local_reply
        .unwrap();
    let answers: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 2);
    assert_eq!(answers[0]["id"], 1);
    assert!(
        answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not forwarded")
    );
    assert_eq!(
        answers[1]["result"]["structuredContent"]["error_code"],
        "TOOL_NOT_APPROVED"
    );
}

#[test]
fn requests_that_cannot_be_read_never_reach_the_server() {
    let mut gw = gateway(json!({}));
    list(&mut gw, "s1", &[weather()]);
    let mut plain = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_weather"}}),
        None,
    );
    plain.request_headers[0].1 = "text/plain".into();
    assert_eq!(
        gw.exchange("deploy", &plain, 8).local_reply.unwrap().status,
        415
    );

    let mut dup = post("s1", json!({}), None);
    dup.request_body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo","city":"/etc/passwd"}}}"#.to_vec();
    let reply = gw.exchange("deploy", &dup, 8).local_reply.unwrap();
    assert_eq!(reply.status, 400);
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32700);
    assert!(gw.out.audits.iter().any(|a| a.event == "request.rejected"));

    let mut mismatch = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_weather", "arguments": {"city": "x"}}}),
        None,
    );
    mismatch
        .request_headers
        .push(("mcp-method".into(), "tools/list".into()));
    assert_eq!(
        gw.exchange("deploy", &mismatch, 8)
            .local_reply
            .unwrap()
            .status,
        400
    );
}

#[test]
fn a_list_response_that_cannot_be_inspected_fails_closed() {
    let mut gw = gateway(json!({}));
    let mut ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        None,
    );
    ex.response_headers = vec![
        ("content-type".into(), "application/json".into()),
        ("content-encoding".into(), "gzip".into()),
    ];
    ex.response_body = vec![0x1f, 0x8b, 8, 0, 0, 0];
    let out = gw.exchange("deploy", &ex, 8);
    let body: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert_eq!(body["id"], 1);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fail closed")
    );

    let mut malformed = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        None,
    );
    malformed.response_headers = vec![("content-type".into(), "application/json".into())];
    malformed.response_body =
        br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[],"tools":[{"name":"evil"}]}}"#.to_vec();
    let out = gw.exchange("deploy", &malformed, 8);
    let body: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert!(
        body.get("result").is_none(),
        "duplicate-key tools/list must not pass: {body}"
    );
}

#[test]
fn a_string_id_that_spells_a_numeric_list_request_is_checked_as_its_answer() {
    let mut gw = gateway(json!({"posture": "strict"}));
    // The client asked tools/list with id 1; the server answers id "1" with tools, which a
    // TypeScript client files under Number("1"): it is checked as that list's answer.
    let ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        Some(json!({"jsonrpc": "2.0", "id": "1", "result": {"tools": [weather()]}})),
    );
    let out = gw.exchange("deploy", &ex, 4);
    let text = String::from_utf8(out.response_body).unwrap();
    assert!(
        text.contains("\"tools\":[]"),
        "withheld under strict: {text}"
    );
    assert_eq!(unsolicited(&gw), 0);
    // An id that spells no number of a waiting request answers nothing.
    let ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        Some(json!({"jsonrpc": "2.0", "id": "0x2", "result": {"tools": [weather()]}})),
    );
    let out = gw.exchange("deploy", &ex, 4);
    assert!(
        out.response_body.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.response_body)
    );
    assert_eq!(unsolicited(&gw), 1);
}

#[test]
fn admin_addresses_a_server_id_holding_a_slash_percent_encoded() {
    let mut gw = gateway(json!({}));
    let ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [weather()]}})),
    );
    gw.exchange("httproute/ns/name/rule/0", &ex, 64);
    let (c, view) = admin(
        &mut gw,
        "GET",
        "servers/httproute%2Fns%2Fname%2Frule%2F0",
        Some(TOKEN),
        Value::Null,
    );
    assert_eq!(c, 200, "{view}");
    assert_eq!(view["server"], "httproute/ns/name/rule/0");
    let (c, _) = admin(&mut gw, "GET", "servers/bad%zz", Some(TOKEN), Value::Null);
    assert_eq!(c, 400);
}

fn unsolicited(gw: &NativeReplay) -> usize {
    gw.out
        .audits
        .iter()
        .filter(|a| a.event == "response.unsolicited")
        .count()
}

/// The data lines of an event stream, parsed.
fn events(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn a_second_answer_to_one_id_on_a_stream_is_dropped() {
    let mut gw = gateway(json!({}));
    assert_eq!(list(&mut gw, "s1", &[weather()]).len(), 1);
    // A ping answered twice: the second answer would be read as the answer to whatever
    // the client sends next under that id.
    let first = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    let second = json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": [deploy_v2()]}});
    let mut ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        None,
    );
    ex.response_body = format!("data: {first}\n\ndata: {second}\n\n").into_bytes();
    let out = gw.exchange("deploy", &ex, 7);
    assert_eq!(events(&out.response_body), vec![first]);
    assert_eq!(unsolicited(&gw), 1);
    let dropped = gw
        .out
        .decisions
        .iter()
        .find(|d| d.decision == "drop")
        .unwrap();
    assert_eq!(dropped.error_code, Some("UNSOLICITED_RESPONSE"));
}

#[test]
fn a_json_answer_to_an_id_never_sent_is_dropped_and_the_request_answered_with_an_error() {
    let mut gw = gateway(json!({}));
    assert_eq!(list(&mut gw, "s1", &[weather()]).len(), 1);
    let mut ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"}),
        None,
    );
    ex.response_headers = vec![("content-type".into(), "application/json".into())];
    ex.response_body = json!({"jsonrpc": "2.0", "id": 2, "result": {"prompts": []}})
        .to_string()
        .into_bytes();
    let out = gw.exchange("deploy", &ex, 64);
    let answer: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("answered none")
    );
    assert_eq!(unsolicited(&gw), 1);

    // A batch keeps the answers that answer something.
    let mut ex = post(
        "s1",
        json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"jsonrpc": "2.0", "id": 4, "method": "ping"}]),
        None,
    );
    ex.response_headers = vec![("content-type".into(), "application/json".into())];
    ex.response_body = json!([{"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32000, "message": "x"}}])
    .to_string()
    .into_bytes();
    let out = gw.exchange("deploy", &ex, 64);
    let answer: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert_eq!(answer, json!([{"jsonrpc": "2.0", "id": 3, "result": {}}]));
    assert_eq!(unsolicited(&gw), 2);
}

#[test]
fn an_error_without_an_id_passes_only_while_a_request_waits() {
    let mut gw = gateway(json!({}));
    let error =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
    let ex = post(
        "s1",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        Some(error.clone()),
    );
    let out = gw.exchange("deploy", &ex, 64);
    assert_eq!(events(&out.response_body), vec![error.clone()]);
    assert_eq!(unsolicited(&gw), 0);
    // The same error on a stream that answers no request (a GET of a session that waits for
    // nothing) answers nothing.
    let mut ex = post("s2", json!({}), Some(error));
    ex.http_method = "GET".into();
    ex.request_body = Vec::new();
    let out = gw.exchange("deploy", &ex, 64);
    assert!(events(&out.response_body).is_empty());
    assert_eq!(unsolicited(&gw), 1);
}

#[test]
fn a_request_a_server_makes_of_the_client_passes() {
    let mut gw = gateway(json!({}));
    let request = json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"});
    let mut ex = post("s1", json!({}), Some(request.clone()));
    ex.http_method = "GET".into();
    ex.request_body = Vec::new();
    let out = gw.exchange("deploy", &ex, 64);
    assert_eq!(events(&out.response_body), vec![request]);
    assert_eq!(unsolicited(&gw), 0);
}
