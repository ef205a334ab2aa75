//! What the official MCP conformance suite found when it ran through the gateway, one test
//! per finding: a 2026-07-28 request whose `params._meta` does not carry its revision is
//! malformed (`-32602`, HTTP 400), not a header mismatch (`-32020`, kept for values that
//! disagree); and an `application/json` response that goes on after its first JSON value
//! is refused the moment the next value starts, not when a stream that may never end ends.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::gateway::body::BodyVerdict;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::{BodyPlan, Exchange, RequestInfo, RequestVerdict};
use toolseal_core::state::audit::CollectedOutputs;
use toolseal_core::state::store::MemoryStore;
use toolseal_core::wire::revision::RoutingHeaders;

use crate::support::V2026;
use crate::support::host::NoCaller;

const SERVER: &str = "deploy";

/// A worker in the discovery posture, configured, with its store and outputs.
fn worker() -> (Engine, MemoryStore, CollectedOutputs) {
    let mut engine = Engine::new(Config::parse(b"{}").unwrap());
    let (mut store, mut out) = (MemoryStore::default(), CollectedOutputs::default());
    engine.configure(&mut store, &mut out, 1).unwrap();
    (engine, store, out)
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A client request sent with the headers of `version` (`Mcp-Method` its method); the
/// exchange when forwarded, or the local answer (HTTP status, body).
fn send(
    engine: &mut Engine,
    store: &mut MemoryStore,
    out: &mut CollectedOutputs,
    version: &str,
    body: &Value,
) -> Result<Exchange, (u16, Value)> {
    let caller = NoCaller;
    let info = RequestInfo {
        http_method: "POST",
        content_type: Some("application/json"),
        session: None,
        routing: RoutingHeaders {
            present: true,
            version: Some(version),
            method: body["method"].as_str(),
            name: body["params"]["name"].as_str(),
            repeated: false,
        },
        caller: &caller,
    };
    let mut exchange = Exchange::new(SERVER, None);
    let bytes = body.to_string().into_bytes();
    match engine.request_body(store, out, 2, &mut exchange, &info, &bytes) {
        RequestVerdict::Forward => Ok(exchange),
        RequestVerdict::Reply(reply) => {
            Err((reply.status, serde_json::from_slice(&reply.body).unwrap()))
        }
    }
}

// ---- a request without its revision in the body ----

#[test]
fn a_2026_request_without_its_revision_in_meta_is_invalid_params_not_a_header_mismatch() {
    let without_version = json!({
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}});
    let cases = [
        ("no params", json!(null), "must carry params._meta"),
        ("params without _meta", json!({}), "must carry params._meta"),
        (
            "_meta without the revision",
            json!({"_meta": without_version}),
            "must carry its revision in params._meta",
        ),
        (
            "a revision that is not a string",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728}}),
            "protocol version must be a string",
        ),
    ];
    for (what, params, reason) in cases {
        let (mut engine, mut store, mut out) = worker();
        let mut body = json!({"jsonrpc": "2.0", "id": 101, "method": "server/discover"});
        if !params.is_null() {
            body["params"] = params;
        }
        let (status, answer) = send(&mut engine, &mut store, &mut out, V2026, &body)
            .err()
            .unwrap_or_else(|| panic!("{what}: forwarded"));
        assert_eq!(status, 400, "{what}");
        assert_eq!(answer["id"], 101, "{what}: the request's id");
        assert_eq!(answer["error"]["code"], -32602, "{what}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("toolseal: ") && message.contains(reason),
            "{what}: {message}"
        );
        let rejected = out.audits.last().unwrap();
        assert_eq!(
            (rejected.event, &rejected.detail["http_status"]),
            ("request.rejected", &json!(400)),
            "{what}"
        );
        let record = out.decisions.last().unwrap().to_json();
        assert_eq!(record["protocol_version"], V2026, "{what}");
    }
}

#[test]
fn values_that_disagree_stay_a_header_mismatch() {
    let (mut engine, mut store, mut out) = worker();
    let mut other = meta();
    other["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover",
        "params": {"_meta": other}});
    let refused = send(&mut engine, &mut store, &mut out, V2026, &body);
    let (status, answer) = refused.err().unwrap();
    assert_eq!(
        (status, &answer["id"], &answer["error"]["code"]),
        (400, &json!(5), &json!(-32020))
    );
    // A request that carries its revision passes; the handshake era is not touched.
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover",
        "params": {"_meta": meta()}});
    assert!(send(&mut engine, &mut store, &mut out, V2026, &body).is_ok());
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    assert!(send(&mut engine, &mut store, &mut out, "2025-11-25", &body).is_ok());
}

// ---- a JSON body that holds more than one message ----

/// What one body callback decided and which offsets it read from.
struct Fed {
    verdict: BodyVerdict,
    reads: Vec<usize>,
}

/// Feeds `chunks` of an `application/json` answer to `exchange` as a proxy-wasm host does:
/// each callback sees everything held so far; `end` on the last chunk only if `ends`.
fn feed(
    engine: &mut Engine,
    store: &mut MemoryStore,
    out: &mut CollectedOutputs,
    exchange: &mut Exchange,
    chunks: &[&[u8]],
    ends: bool,
) -> Vec<Fed> {
    feed_declared(engine, store, out, exchange, None, chunks, ends)
}

/// [`feed`] with the response's `Content-Length` header (`length`).
fn feed_declared(
    engine: &mut Engine,
    store: &mut MemoryStore,
    out: &mut CollectedOutputs,
    exchange: &mut Exchange,
    length: Option<&str>,
    chunks: &[&[u8]],
    ends: bool,
) -> Vec<Fed> {
    assert_eq!(
        engine.response_headers(exchange, Some("application/json"), None),
        BodyPlan::Buffer
    );
    // As the proxy-wasm adapter does with the response headers, before it removes the
    // header (a body that may be rewritten leaves without it).
    assert!(exchange.wants_declared_length());
    exchange.declare_length(length);
    assert!(!exchange.wants_declared_length());
    let mut held = Vec::new();
    let mut fed = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        held.extend_from_slice(chunk);
        let end = ends && i + 1 == chunks.len();
        let mut reads = Vec::new();
        let mut read = |from: usize| {
            reads.push(from);
            held.get(from..).map(<[u8]>::to_vec)
        };
        let size = held.len();
        let verdict = engine.response_body(store, out, 3, exchange, size, end, &mut read);
        let stop = !matches!(verdict, BodyVerdict::Wait);
        fed.push(Fed { verdict, reads });
        if stop {
            break;
        }
    }
    fed
}

fn listen_request() -> Value {
    json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}})
}

fn listen_ack() -> String {
    json!({"jsonrpc": "2.0", "id": "listen-1",
        "result": {"resultType": "complete", "_meta": {}}})
    .to_string()
        + "\n"
}

fn list_changed() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {}}})
    .to_string()
        + "\n"
}

#[test]
fn a_subscriptions_listen_answered_as_newline_separated_json_does_not_leave_the_client_waiting() {
    let (mut engine, mut store, mut out) = worker();
    let mut exchange = send(&mut engine, &mut store, &mut out, V2026, &listen_request()).unwrap();
    let (ack, notification) = (listen_ack(), list_changed());
    // The first message arrives whole; the stream stays open; the next message starts.
    let (head, tail) = notification.as_bytes().split_at(1);
    let fed = feed(
        &mut engine,
        &mut store,
        &mut out,
        &mut exchange,
        &[ack.as_bytes(), head, tail],
        false,
    );
    let verdicts: Vec<&BodyVerdict> = fed.iter().map(|f| &f.verdict).collect();
    assert_eq!(verdicts, [&BodyVerdict::Wait, &BodyVerdict::Reset]);
    // Each byte was read once; the whole body once more, to decide on it.
    assert_eq!(fed[0].reads, [0]);
    assert_eq!(fed[1].reads, [ack.len(), 0]);
    // The request it was to answer is settled and audited as withheld.
    assert!(!exchange.awaits_answer());
    let withheld = out.audits.last().unwrap();
    assert_eq!(withheld.event, "response.withheld");
    assert!(
        withheld.reason.contains("more than one JSON value"),
        "{}",
        withheld.reason
    );
    let record = out.decisions.last().unwrap().to_json();
    assert_eq!(
        (&record["method"], &record["id"], &record["error_code"]),
        (
            &json!("subscriptions/listen"),
            &json!("listen-1"),
            &json!("UNINSPECTABLE_RESPONSE")
        )
    );
    // Whatever else the host delivers is dropped.
    let mut read = |_| Some(b"{}".to_vec());
    let rest = engine.response_body(&mut store, &mut out, 4, &mut exchange, 2, true, &mut read);
    assert_eq!(rest, BodyVerdict::Replace(Vec::new()));
}

#[test]
fn a_tool_list_followed_by_another_message_is_withheld_at_once_and_holds_the_server() {
    let (mut engine, mut store, mut out) = worker();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": meta()}});
    let mut exchange = send(&mut engine, &mut store, &mut out, V2026, &list).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete",
        "tools": [{"name": "deploy_preview", "inputSchema": {"type": "object"}}]}})
    .to_string();
    let body = format!("{answer}\r\n{}", list_changed());
    let (first, second) = body.as_bytes().split_at(answer.len() + 3);
    let fed = feed(
        &mut engine,
        &mut store,
        &mut out,
        &mut exchange,
        &[first, second],
        false,
    );
    assert_eq!(fed.last().unwrap().verdict, BodyVerdict::Reset);
    assert!(!exchange.awaits_tool_list());
    let record = out.decisions.last().unwrap().to_json();
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
    // The tools were never checked: a call waits for a list that verifies.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "deploy_preview", "arguments": {}, "_meta": meta()}});
    let (status, denied) = send(&mut engine, &mut store, &mut out, V2026, &call)
        .err()
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        denied["result"]["structuredContent"]["error_code"],
        "SCHEMA_UNVERIFIED"
    );
}

#[test]
fn one_json_value_cut_anywhere_waits_for_its_end_and_passes() {
    let body = listen_ack();
    for cut in 1..body.len() {
        let (mut engine, mut store, mut out) = worker();
        let mut exchange =
            send(&mut engine, &mut store, &mut out, V2026, &listen_request()).unwrap();
        let (head, tail) = body.as_bytes().split_at(cut);
        let fed = feed(
            &mut engine,
            &mut store,
            &mut out,
            &mut exchange,
            &[head, tail],
            true,
        );
        let verdicts: Vec<&BodyVerdict> = fed.iter().map(|f| &f.verdict).collect();
        assert_eq!(
            verdicts,
            [&BodyVerdict::Wait, &BodyVerdict::Forward],
            "cut at {cut}"
        );
        assert_eq!(fed[0].reads, [0], "cut at {cut}");
    }
}

#[test]
fn two_values_that_end_the_stream_together_get_the_json_rpc_error_as_before() {
    let (mut engine, mut store, mut out) = worker();
    let mut exchange = send(&mut engine, &mut store, &mut out, V2026, &listen_request()).unwrap();
    let body = listen_ack() + &list_changed();
    let fed = feed(
        &mut engine,
        &mut store,
        &mut out,
        &mut exchange,
        &[body.as_bytes()],
        true,
    );
    assert_listen_error(&fed[0].verdict);
}

/// A `subscriptions/listen` sent to a fresh worker and its answer fed in `chunks`, with the
/// `Content-Length` `length`: what each callback decided, and the worker's outputs.
fn listen_answered(
    length: Option<&str>,
    chunks: &[&[u8]],
    ends: bool,
) -> (Vec<Fed>, CollectedOutputs) {
    let (mut engine, mut store, mut out) = worker();
    let mut exchange = send(&mut engine, &mut store, &mut out, V2026, &listen_request()).unwrap();
    let fed = feed_declared(
        &mut engine,
        &mut store,
        &mut out,
        &mut exchange,
        length,
        chunks,
        ends,
    );
    (fed, out)
}

#[test]
fn a_body_of_declared_length_is_read_once_at_its_end() {
    let body = listen_ack();
    let length = body.len().to_string();
    let (head, tail) = body.as_bytes().split_at(body.len() / 2);
    let (head, middle) = head.split_at(head.len() / 2);
    let (fed, _) = listen_answered(Some(&length), &[head, middle, tail], true);
    let verdicts: Vec<&BodyVerdict> = fed.iter().map(|f| &f.verdict).collect();
    assert_eq!(
        verdicts,
        [
            &BodyVerdict::Wait,
            &BodyVerdict::Wait,
            &BodyVerdict::Forward
        ]
    );
    let reads: Vec<&[usize]> = fed.iter().map(|f| f.reads.as_slice()).collect();
    assert_eq!(reads, [&[][..], &[], &[0]]);
}

#[test]
fn two_values_in_a_body_of_declared_length_get_the_json_rpc_error_at_its_end() {
    let (ack, notification) = (listen_ack(), list_changed());
    let length = (ack.len() + notification.len()).to_string();
    let (head, tail) = notification.as_bytes().split_at(1);
    let (fed, _) = listen_answered(Some(&length), &[ack.as_bytes(), head, tail], true);
    assert_eq!(fed.len(), 3);
    assert_listen_error(&fed[2].verdict);
    assert!(fed[0].reads.is_empty() && fed[1].reads.is_empty());
}

#[test]
fn a_body_that_goes_on_past_its_declared_length_is_scanned_from_its_first_byte() {
    let (ack, notification) = (listen_ack(), list_changed());
    let length = ack.len().to_string();
    let (head, tail) = notification.as_bytes().split_at(1);
    let (fed, out) = listen_answered(Some(&length), &[ack.as_bytes(), head, tail], false);
    let verdicts: Vec<&BodyVerdict> = fed.iter().map(|f| &f.verdict).collect();
    assert_eq!(verdicts, [&BodyVerdict::Wait, &BodyVerdict::Reset]);
    assert!(fed[0].reads.is_empty());
    // Every byte held so far is scanned, then the whole body read to decide on it.
    assert_eq!(fed[1].reads, [0, 0]);
    assert_eq!(out.audits.last().unwrap().event, "response.withheld");
}

#[test]
fn a_length_that_is_not_a_plain_number_declares_nothing() {
    let (ack, notification) = (listen_ack(), list_changed());
    let total = ack.len() + notification.len();
    for length in [
        format!("{total}, {total}"),
        format!("+{total}"),
        format!("0x{total:x}"),
        String::new(),
        "99999999999999999999999".to_string(),
    ] {
        let (head, tail) = notification.as_bytes().split_at(1);
        let (fed, _) = listen_answered(Some(&length), &[ack.as_bytes(), head, tail], false);
        let verdicts: Vec<&BodyVerdict> = fed.iter().map(|f| &f.verdict).collect();
        assert_eq!(
            verdicts,
            [&BodyVerdict::Wait, &BodyVerdict::Reset],
            "{length:?}"
        );
        assert_eq!(fed[0].reads, [0], "{length:?}");
    }
}

/// The verdict a body gets delivered whole, in one callback that ends it.
fn whole_verdict(body: &[u8]) -> BodyVerdict {
    let (mut fed, _) = listen_answered(None, &[body], true);
    fed.remove(0).verdict
}

#[test]
fn a_body_cut_anywhere_gets_the_verdict_it_gets_whole_whatever_length_it_declares() {
    let (ack, notification) = (listen_ack(), list_changed());
    // Each body, and where its second value starts (if it has one).
    let bodies = [
        (ack.clone(), None),
        (format!("{ack}{notification}"), Some(ack.len())),
        (format!("{}  \r\n", ack.trim_end()), None),
        (ack.get(..ack.len() / 2).unwrap().to_string(), None),
    ];
    for (body, second) in &bodies {
        let whole = whole_verdict(body.as_bytes());
        let total = body.len();
        for declared in [None, Some(total), Some(total - 1), Some(total + 5)] {
            let length = declared.map(|n| n.to_string());
            for cut in 1..total {
                let (head, tail) = body.as_bytes().split_at(cut);
                let (fed, _) = listen_answered(length.as_deref(), &[head, tail], true);
                let case = format!("{body:?} declared {declared:?} cut at {cut}");
                // The first callback is scanned unless it is within the declared length; a
                // scan that sees the second value start resets the stream there.
                let scanned = declared.is_none_or(|n| cut > n);
                let resets = scanned && second.is_some_and(|at| cut > at);
                match fed.as_slice() {
                    [first] if resets => assert_eq!(first.verdict, BodyVerdict::Reset, "{case}"),
                    [first, last] if !resets => {
                        assert_eq!(first.verdict, BodyVerdict::Wait, "{case}");
                        assert_eq!(first.reads.is_empty(), !scanned, "{case}");
                        assert_eq!(last.verdict, whole, "{case}");
                    }
                    other => panic!("{case}: {} callbacks", other.len()),
                }
            }
        }
    }
}

/// `verdict` replaces the body with the JSON-RPC error answering `listen-1` (an answer that
/// cannot be checked).
fn assert_listen_error(verdict: &BodyVerdict) {
    let BodyVerdict::Replace(error) = verdict else {
        panic!("{verdict:?}");
    };
    let error: Value = serde_json::from_slice(error).unwrap();
    assert_eq!(
        (&error["id"], &error["error"]["code"]),
        (&json!("listen-1"), &json!(-32603))
    );
}
