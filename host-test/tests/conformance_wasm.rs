//! What the official MCP conformance suite found, through the built plugin `.wasm` on
//! wasmtime with Envoy's buffering model: a 2026-07-28 request whose `params._meta` lacks its
//! revision is answered `-32602` with HTTP 400 before the upstream; an `application/json`
//! answer that goes on after its first JSON value resets the stream at the chunk where the
//! next value starts (the rest is never delivered, nothing unchecked reaches the client),
//! while one value cut into the same chunks passes byte for byte.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use serde_json::{Map, Value, json};
use toolseal::replay::exchange::Stop;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, Transcript};
use toolseal_core::transcript::HttpExchange;

const V2026: &str = "2026-07-28";
/// Small chunks: every body below arrives in several callbacks.
const CHUNK: usize = 16;

fn replay(exchanges: Vec<HttpExchange>) -> Vec<ExchangeReport> {
    let mut replay =
        Replay::start(common::replay_options(Some("conformance"), &[], CHUNK)).unwrap();
    let transcript = Transcript {
        name: "conformance".into(),
        exchanges,
    };
    replay.run(&transcript).unwrap()
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A 2026-07-28 `tools/list` request with this id.
fn list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta()}})
}

/// The answer to [`list`] `id`: one tool, `echo`, described by `description`.
fn answer(id: u64, description: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
        "tools": [{"name": "echo", "description": description,
            "inputSchema": {"type": "object"}}]}})
    .to_string()
}

/// A 2026-07-28 POST of `body` answered `application/json` with `response`.
fn exchange(seq: usize, body: &Value, response: &[u8]) -> HttpExchange {
    HttpExchange {
        seq: seq.to_string(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("mcp-protocol-version".into(), V2026.into()),
            ("mcp-method".into(), body["method"].as_str().unwrap().into()),
        ],
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: response.to_vec(),
    }
}

fn last_decision(report: &ExchangeReport) -> &Map<String, Value> {
    report
        .records
        .iter()
        .rev()
        .find_map(|r| match r {
            PluginRecord::Decision(d) => Some(d),
            PluginRecord::Audit(_) => None,
        })
        .unwrap()
}

fn local(report: &ExchangeReport) -> (u32, Value) {
    let reply = report.outcome.local_response.as_ref().unwrap();
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

#[test]
fn a_2026_request_without_its_revision_in_meta_is_invalid_params_before_the_upstream() {
    let without_version = json!({"_meta": {
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}}});
    let mut disagreeing = meta();
    disagreeing["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 102, "method": "server/discover", "params": without_version}),
        json!({"jsonrpc": "2.0", "id": 103, "method": "server/discover",
            "params": {"_meta": disagreeing}}),
    ];
    let exchanges = requests
        .iter()
        .enumerate()
        .map(|(i, r)| exchange(i, r, b"{}"))
        .collect();
    let reports = replay(exchanges);
    let answers: Vec<(u32, Value, Value, bool)> = reports
        .iter()
        .map(|r| {
            let (status, body) = local(r);
            let contacted = r.outcome.upstream_contacted;
            (
                status,
                body["id"].clone(),
                body["error"]["code"].clone(),
                contacted,
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            (400, json!(101), json!(-32602), false),
            (400, json!(102), json!(-32602), false),
            (400, json!(103), json!(-32020), false),
        ]
    );
}

fn listen() -> Value {
    json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}})
}

fn ack() -> String {
    json!({"jsonrpc": "2.0", "id": "listen-1", "result": {"resultType": "complete"}}).to_string()
        + "\n"
}

fn list_changed() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string() + "\n"
}

#[test]
fn a_subscriptions_listen_answered_as_newline_separated_json_resets_before_the_stream_ends() {
    // Two messages and more after them: the stream is reset where the second one starts.
    let tail = list_changed().repeat(8);
    let several = format!("{}{tail}", ack());
    let one = ack();
    let reports = replay(vec![
        exchange(0, &listen(), several.as_bytes()),
        exchange(1, &listen(), one.as_bytes()),
    ]);
    let cut = &reports[0];
    assert_eq!(cut.outcome.stop, Some(Stop::Reset));
    assert!(
        cut.outcome.response_body.is_empty(),
        "nothing of it reached the client: {:?}",
        String::from_utf8_lossy(&cut.outcome.response_body)
    );
    let record = last_decision(cut);
    assert_eq!(
        (&record["method"], &record["id"], &record["error_code"]),
        (
            &json!("subscriptions/listen"),
            &json!("listen-1"),
            &json!("UNINSPECTABLE_RESPONSE")
        )
    );
    // The callbacks stopped at the chunk where the second value starts, long before the end.
    let withheld = cut
        .records
        .iter()
        .find_map(|r| match r {
            PluginRecord::Audit(a) if a["event"] == "response.withheld" => Some(a),
            _ => None,
        })
        .unwrap();
    assert!(
        withheld["reason"]
            .as_str()
            .unwrap()
            .contains("more than one JSON value"),
        "{withheld}"
    );
    // One value in the same chunks passes unchanged.
    let whole = &reports[1];
    assert_eq!(whole.outcome.stop, None);
    assert_eq!(whole.outcome.response_body, one.as_bytes());
}

#[test]
fn a_tool_list_followed_by_another_message_is_withheld_and_calls_wait() {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": meta()}});
    let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete",
        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}});
    let body = format!("{answer}\n{}", list_changed().repeat(4));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": meta()}});
    let mut call_exchange = exchange(1, &call, b"{}");
    call_exchange
        .request_headers
        .push(("mcp-name".into(), "echo".into()));
    let reports = replay(vec![exchange(0, &list, body.as_bytes()), call_exchange]);
    assert_eq!(reports[0].outcome.stop, Some(Stop::Reset));
    assert!(reports[0].outcome.response_body.is_empty());
    let record = last_decision(&reports[0]);
    assert_eq!(
        (
            &record["method"],
            &record["tools_out"],
            &record["error_code"]
        ),
        (
            &json!("tools/list"),
            &json!(0),
            &json!("UNINSPECTABLE_RESPONSE")
        )
    );
    let (status, denied) = local(&reports[1]);
    assert_eq!(status, 200);
    assert_eq!(
        denied["result"]["structuredContent"]["error_code"],
        "SCHEMA_UNVERIFIED"
    );
    assert!(!reports[1].outcome.upstream_contacted);
}

#[test]
fn a_tool_list_the_worker_remembers_is_scanned_as_any_body_however_its_repeat_ends() {
    // The list is answered once whole (verified, remembered by this worker), then again: its
    // `result` bytes are compared instead of scanned while the body repeats them, and the
    // answer must be what a scan of every byte gives.
    let honest = "Echo the \"text\" back: {\\ [x]} \u{e9}";
    let first = answer(1, honest);
    let again = answer(2, honest);
    let followed = format!("{}\n{}", answer(3, honest), list_changed());
    // The same list with one byte changed inside its `result`, then another message.
    let changed = format!(
        "{}\n{}",
        answer(4, "Echo the \"text\" back: {\\ [y]} \u{e9}"),
        list_changed()
    );
    // A `result` that begins as the remembered one and ends early, then another message: the
    // first value ends where the remembered bytes go on.
    let short = json!({"jsonrpc": "2.0", "id": 6, "result": {"resultType": "complete"}});
    let cut_short = format!("{short}\n{}", list_changed().repeat(8));
    let last = answer(5, honest);
    let reports = replay(vec![
        exchange(0, &list(1), first.as_bytes()),
        exchange(1, &list(2), again.as_bytes()),
        exchange(2, &list(3), followed.as_bytes()),
        exchange(3, &list(4), changed.as_bytes()),
        exchange(4, &list(5), last.as_bytes()),
        exchange(5, &list(6), cut_short.as_bytes()),
    ]);
    for (report, body) in [
        (&reports[0], &first),
        (&reports[1], &again),
        (&reports[4], &last),
    ] {
        assert_eq!(report.outcome.stop, None);
        assert_eq!(report.outcome.response_body, body.as_bytes());
        assert_eq!(last_decision(report)["tools_out"], json!(1));
    }
    for report in [&reports[2], &reports[3], &reports[5]] {
        assert_eq!(
            report.outcome.stop,
            Some(Stop::Reset),
            "{:?}",
            report.outcome
        );
        assert!(report.outcome.response_body.is_empty());
        assert_eq!(
            last_decision(report)["error_code"],
            json!("UNINSPECTABLE_RESPONSE")
        );
    }
}

#[test]
fn a_remembered_list_changed_in_the_callback_that_ends_it_is_read_as_changed() {
    // While held, the body repeats the remembered `result` bytes; the byte that differs
    // arrives with the end of the stream, where only the bytes not compared yet are compared.
    let padded = |id: u64, pad: usize, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
            "tools": [{"description": "x".repeat(pad), "inputSchema": {"type": "object"},
                "name": name}]}})
        .to_string()
    };
    // A description whose length puts the tool's name in the last chunk, with bytes of the
    // same `result` before it in that chunk.
    let pad = (1..=CHUNK)
        .find(|pad| {
            let body = padded(2, *pad, "echo");
            let last = (body.len() - 1) / CHUNK * CHUNK;
            body.len() - last == CHUNK && body.rfind("echo").unwrap() > last
        })
        .unwrap();
    let first = padded(1, pad, "echo");
    let renamed = padded(2, pad, "exec");
    let reports = replay(vec![
        exchange(0, &list(1), first.as_bytes()),
        exchange(1, &list(2), renamed.as_bytes()),
    ]);
    assert_eq!(reports[0].outcome.response_body, first.as_bytes());
    let report = &reports[1];
    assert_eq!(report.outcome.stop, None, "{:?}", report.outcome);
    assert_ne!(report.outcome.response_body, renamed.as_bytes());
    assert_eq!(last_decision(report)["tools_out"], json!(0));
    assert!(
        report.records.iter().any(|r| matches!(r,
            PluginRecord::Audit(a) if a["event"] == "schema.changed")),
        "{:?}",
        report.records
    );
}

#[test]
fn a_remembered_list_delivered_whole_is_told_from_one_changed_anywhere_in_it() {
    // A body in one callback is compared with the remembered `result` bytes 64 at a time, as
    // four 16-byte SIMD lanes in the `.wasm`: a byte changed in any lane of any block, or in the
    // tail, is a list that was not seen before.
    let honest = "a".repeat(300);
    let whole = |exchanges| {
        let mut replay =
            Replay::start(common::replay_options(Some("conformance"), &[], 0)).unwrap();
        let transcript = Transcript {
            name: "conformance".into(),
            exchanges,
        };
        replay.run(&transcript).unwrap()
    };
    let again: Vec<String> = (1..=3).map(|id| answer(id, &honest)).collect();
    let reports = whole(
        again
            .iter()
            .enumerate()
            .map(|(i, body)| exchange(i, &list(i as u64 + 1), body.as_bytes()))
            .collect(),
    );
    for (report, body) in reports.iter().zip(&again) {
        assert_eq!(report.outcome.response_body, body.as_bytes());
        assert_eq!(last_decision(report)["tools_out"], json!(1));
    }
    for at in [0, 1, 15, 16, 17, 31, 32, 47, 48, 63, 64, 150, 255, 299] {
        let mut changed = honest.clone().into_bytes();
        changed[at] = b'b';
        let changed = answer(2, std::str::from_utf8(&changed).unwrap());
        let first = answer(1, &honest);
        let reports = whole(vec![
            exchange(0, &list(1), first.as_bytes()),
            exchange(1, &list(2), changed.as_bytes()),
        ]);
        assert_eq!(last_decision(&reports[0])["tools_out"], json!(1), "{at}");
        assert_eq!(last_decision(&reports[1])["tools_out"], json!(0), "{at}");
        assert!(
            reports[1].records.iter().any(|r| matches!(r,
                PluginRecord::Audit(a) if a["event"] == "schema.changed")),
            "a change at {at} was not seen"
        );
    }
}

/// [`exchange`] whose answer declares `length` in `Content-Length`.
fn declared(seq: usize, body: &Value, response: &[u8], length: usize) -> HttpExchange {
    let mut exchange = exchange(seq, body, response);
    exchange
        .response_headers
        .push(("content-length".into(), length.to_string()));
    exchange
}

#[test]
fn a_body_of_declared_length_is_decided_at_its_end_and_one_that_goes_past_it_at_once() {
    let several = format!("{}{}", ack(), list_changed());
    let going_on = format!("{}{}", ack(), list_changed().repeat(8));
    let one = ack();
    let reports = replay(vec![
        // Two values within the declared length: the JSON-RPC error, at the end.
        declared(0, &listen(), several.as_bytes(), several.len()),
        // A body that goes on past its declared length: reset where the second value starts.
        declared(1, &listen(), going_on.as_bytes(), ack().len()),
        // One value of its declared length passes unchanged.
        declared(2, &listen(), one.as_bytes(), one.len()),
    ]);
    let answered = &reports[0];
    assert_eq!(answered.outcome.stop, None);
    let error: Value = serde_json::from_slice(&answered.outcome.response_body).unwrap();
    assert_eq!(
        (&error["id"], &error["error"]["code"]),
        (&json!("listen-1"), &json!(-32603))
    );
    let cut = &reports[1];
    assert_eq!(cut.outcome.stop, Some(Stop::Reset));
    assert!(cut.outcome.response_body.is_empty());
    assert_eq!(
        last_decision(cut)["error_code"],
        json!("UNINSPECTABLE_RESPONSE")
    );
    let whole = &reports[2];
    assert_eq!(whole.outcome.stop, None);
    assert_eq!(whole.outcome.response_body, one.as_bytes());
}
