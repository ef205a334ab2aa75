//! What the official MCP conformance suite found when it ran through the gateway: a
//! 2026-07-28 request whose `params._meta` does not carry its revision is malformed
//! (`-32602`, HTTP 400), not a header mismatch (`-32020`, kept for values that disagree).
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::gateway::engine::{Engine, Exchange, RequestInfo, RequestVerdict};
use toolseal_core::policy::rules::CallerIdentity;
use toolseal_core::state::audit::CollectedOutputs;
use toolseal_core::state::store::MemoryStore;
use toolseal_core::wire::revision::RoutingHeaders;

const V2026: &str = "2026-07-28";
const SERVER: &str = "deploy";

struct NoCaller;

impl CallerIdentity for NoCaller {
    fn header(&self, _name: &str) -> Option<String> {
        None
    }
    fn metadata(&self, _path: &str) -> Result<Option<Value>, String> {
        Ok(None)
    }
}

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
