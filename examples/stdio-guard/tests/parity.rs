//! Parity: the shared real transcripts of both MCP eras, replayed through the component (HTTP transport,
//! one `client-message` per request body, one `server-message` per response body), give the
//! very decision records the native engine gives (the golden files of toolseal-core, which
//! the proxy-wasm module is held to as well).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod support;

use serde_json::{Value, json};
use support::files::{golden, transcript};
use toolseal_core::state::store::MemoryStore;
use toolseal_core::transcript::HttpExchange;
use toolseal_stdio::audit_sink::SharedCollected;
use toolseal_stdio::host_state::HostState;
use toolseal_stdio::policy::{Policy, Runtime};
use toolseal_stdio::{MessageContext, Transport, Verdict};

struct Replay {
    policy: Policy,
    sink: SharedCollected,
}

impl Replay {
    fn new(runtime: &Runtime) -> Self {
        let sink = SharedCollected::default();
        let mut policy = runtime
            .instantiate(HostState::new(MemoryStore::new(), Box::new(sink.clone())))
            .unwrap();
        policy.configure("").unwrap().unwrap();
        Replay { policy, sink }
    }

    /// One exchange; returns the decision records it produced.
    fn exchange(&mut self, server: &str, ex: &HttpExchange) -> Vec<Value> {
        let before = self.sink.0.lock().unwrap().decisions.len();
        let session = ex.request_header("mcp-session-id").map(str::to_string);
        let mut headers = ex.request_headers.clone();
        headers.push((":method".into(), ex.http_method.clone()));
        let request = MessageContext {
            server_id: server.into(),
            session_id: session.clone(),
            transport: Transport::Http,
            headers,
        };
        let answered_locally = !ex.request_body.is_empty()
            && matches!(
                self.policy
                    .client_message(&request, &ex.request_body)
                    .unwrap(),
                Verdict::Reply(_)
            );
        if !answered_locally {
            let response = MessageContext {
                server_id: server.into(),
                session_id: session,
                transport: Transport::Http,
                headers: ex.response_headers.clone(),
            };
            self.policy
                .server_message(&response, &ex.response_body)
                .unwrap();
        }
        let collected = self.sink.0.lock().unwrap();
        collected.decisions[before..]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

/// Decision lines in the golden files' form.
fn replay(runtime: &Runtime, server: &str, names: &[&str]) -> Vec<String> {
    let mut replay = Replay::new(runtime);
    let mut lines = Vec::new();
    for name in names {
        for ex in transcript(name) {
            for mut decision in replay.exchange(server, &ex) {
                let obj = decision.as_object_mut().unwrap();
                obj.insert("transcript".into(), json!(name));
                obj.insert("seq".into(), json!(ex.seq));
                obj.remove("session");
                lines.push(decision.to_string());
            }
        }
    }
    lines
}

#[test]
fn each_transcript_alone_matches_the_native_golden_decisions() {
    let runtime = Runtime::new().unwrap();
    for name in [
        "everything-2025.11.25",
        "everything-2026.1.26",
        "fastmcp-4.2.3-json",
        "fastmcp-4.2.3-paginated",
        "python-sdk-2.3.0-rev1-json",
        "python-sdk-2.3.0-rev1-sse",
        "python-sdk-2.3.0-rev2-json",
        "typescript-sdk-2.4.0-rev1",
    ] {
        let lines = replay(&runtime, name, &[name]);
        assert!(!lines.is_empty(), "{name}: no decisions");
        assert_eq!(lines, golden(name), "{name}");
    }
}

#[test]
fn release_a_then_b_drift_matches_the_native_golden_decisions() {
    let runtime = Runtime::new().unwrap();
    let lines = replay(
        &runtime,
        "everything",
        &["everything-2025.11.25", "everything-2026.1.26"],
    );
    assert_eq!(lines, golden("everything-a-then-b"));
    let last = serde_json::from_str::<Value>(lines.last().unwrap()).unwrap();
    assert_eq!(last["error_code"], "SCHEMA_CHANGED");
}

#[test]
fn mcp_2026_07_28_release_a_then_b_matches_the_native_golden_decisions() {
    let runtime = Runtime::new().unwrap();
    let names = ["python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json"];
    let lines = replay(&runtime, "rugpull", &names);
    assert_eq!(lines, golden("python-sdk-2.3.0-a-then-b"));
    let last = serde_json::from_str::<Value>(lines.last().unwrap()).unwrap();
    assert_eq!(last["error_code"], "SCHEMA_CHANGED");
    assert_eq!(last["protocol_version"], "2026-07-28");
}

#[test]
fn over_stdio_the_revision_is_read_from_meta_alone() {
    let runtime = Runtime::new().unwrap();
    let mut replay = Replay::new(&runtime);
    let ctx = MessageContext {
        server_id: "fs".into(),
        session_id: Some("connection-1".into()),
        transport: Transport::Stdio,
        headers: Vec::new(),
    };
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let list =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let policy = &mut replay.policy;
    assert!(matches!(
        policy
            .client_message(&ctx, list.to_string().as_bytes())
            .unwrap(),
        Verdict::Pass
    ));
    let tools = json!([{"name": "read_file", "description": "Read a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools, "ttlMs": 3_600_000,
        "cacheScope": "public", "resultType": "complete"}});
    let Verdict::Rewrite(bytes) = policy
        .server_message(&ctx, answer.to_string().as_bytes())
        .unwrap()
    else {
        panic!("the one-hour hint is lowered")
    };
    let served: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(served["result"]["ttlMs"], 60_000);
    // No routing headers on stdio: a call is checked, and refused in the revision's shape.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {}, "_meta": meta}});
    let Verdict::Reply(reply) = policy
        .client_message(&ctx, call.to_string().as_bytes())
        .unwrap()
    else {
        panic!("an unknown tool is refused")
    };
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(
        body["result"]["structuredContent"]["error_code"],
        "TOOL_NOT_APPROVED"
    );
    let decisions = replay.sink.0.lock().unwrap().decisions.clone();
    let last: Value = serde_json::from_str(decisions.last().unwrap()).unwrap();
    assert_eq!(last["protocol_version"], "2026-07-28");
}

#[test]
fn over_stdio_a_2025_handshake_gives_the_session_its_view() {
    // The default views read the capabilities a 2025 session's initialize declared; over
    // stdio the session is the process, so its first list is trusted, not withheld as a view
    // that cannot be told.
    let runtime = Runtime::new().unwrap();
    let mut replay = Replay::new(&runtime);
    let ctx = MessageContext {
        server_id: "fs".into(),
        session_id: Some("stdio-1".into()),
        transport: Transport::Stdio,
        headers: Vec::new(),
    };
    let policy = &mut replay.policy;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "fs", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let tools = json!([{"name": "read_file", "description": "Read a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
    for (request, response) in [(initialize, initialized), (list, answer)] {
        let forwarded = policy
            .client_message(&ctx, request.to_string().as_bytes())
            .unwrap();
        assert!(matches!(forwarded, Verdict::Pass));
        let served = match policy
            .server_message(&ctx, response.to_string().as_bytes())
            .unwrap()
        {
            Verdict::Rewrite(bytes) => serde_json::from_slice(&bytes).unwrap(),
            _ => response,
        };
        if served["id"] == 1 {
            assert_eq!(
                served["result"]["tools"].as_array().unwrap().len(),
                1,
                "{served}"
            );
        } else {
            // The client ends its handshake before it lists (a list made before would be
            // checked against the catalogue alone).
            let forwarded = policy
                .client_message(&ctx, notification.to_string().as_bytes())
                .unwrap();
            assert!(matches!(forwarded, Verdict::Pass));
        }
    }
    let collected = replay.sink.0.lock().unwrap();
    let events: Vec<Value> = collected
        .decisions
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(
        events.last().unwrap()["schema_status"],
        "verified",
        "{events:?}"
    );
}
