//! The per-worker caches never serve stale state: a server record or session snapshot
//! changed by another worker (another `Engine` on the same store) is read fresh. (The parse
//! cache's own re-parse and bound are unit tests in `src/state/parse_cache.rs`.)

use serde_json::{Value, json};
use toolseal_core::gateway::engine::Engine;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

use crate::support;
use crate::support::gateway::config;
use crate::support::tools::fp;

/// Worker A (the replay's own engine) and a second worker B on the same store.
struct Workers {
    gw: NativeReplay,
    other: Engine,
}

impl Workers {
    fn new() -> Self {
        Workers {
            gw: NativeReplay::new(config()),
            other: Engine::new(config()),
        }
    }

    /// Runs `f` on worker B: its engine, the shared store and clock.
    fn on_b<T>(&mut self, f: impl FnOnce(&mut NativeReplay) -> T) -> T {
        std::mem::swap(&mut self.gw.engine, &mut self.other);
        let result = f(&mut self.gw);
        std::mem::swap(&mut self.gw.engine, &mut self.other);
        result
    }
}

fn deploy(version: u32) -> Value {
    let mut properties = json!({"branch": {"type": "string"}});
    let mut required = vec!["branch"];
    if version > 1 {
        properties["region"] = json!({"type": "string"});
        required.push("region");
    }
    json!({"name": "deploy_preview", "description": "Deploy the branch to a preview.",
        "inputSchema": {"type": "object", "properties": properties, "required": required,
        "additionalProperties": false}})
}

fn weather() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

fn post(session: &str, body: Value, response: Vec<u8>, content_type: &str) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), session.into()),
        ],
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), content_type.into())],
        response_body: response,
    }
}

/// A `tools/list` answered (as JSON) with `tools`; returns the tools the client received.
fn list(gw: &mut NativeReplay, session: &str, tools: &[Value]) -> Vec<Value> {
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        answer.to_string().into_bytes(),
        "application/json",
    );
    let out = gw.exchange("deploy", &ex, 64);
    assert!(out.local_reply.is_none());
    let v: Value = serde_json::from_slice(&out.response_body).unwrap();
    v["result"]["tools"].as_array().unwrap().clone()
}

/// A `tools/call`: `FORWARDED`, or the error code of the local refusal.
fn call(gw: &mut NativeReplay, session: &str, tool: &str, args: Value) -> String {
    let result = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}});
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        result.to_string().into_bytes(),
        "application/json",
    );
    match gw.exchange("deploy", &ex, 64).local_reply {
        None => "FORWARDED".into(),
        Some(reply) => {
            let v: Value = serde_json::from_slice(&reply.body).unwrap();
            v["result"]["structuredContent"]["error_code"]
                .as_str()
                .unwrap()
                .to_string()
        }
    }
}

/// A POST to the admin API: its status.
fn admin(gw: &mut NativeReplay, path: &str, body: Value) -> u16 {
    support::admin::admin(gw, "deploy", "POST", path, body).0
}

#[test]
fn a_record_changed_by_another_worker_is_read_fresh() {
    let mut w = Workers::new();
    let v1 = [deploy(1), weather()];
    assert_eq!(list(&mut w.gw, "s1", &v1).len(), 2);
    // Worker A has parsed (and cached) the verified record.
    assert_eq!(
        call(&mut w.gw, "s1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );
    // Worker B sees the drift: the record it writes closes the server for A too.
    let drifted = w.on_b(|gw| list(gw, "s2", &[deploy(2), weather()]).len());
    assert_eq!(drifted, 0);
    assert_eq!(
        call(&mut w.gw, "s1", "get_weather", json!({"city": "Oslo"})),
        "SCHEMA_CHANGED"
    );
    assert_eq!(list(&mut w.gw, "s1", &v1).len(), 0);
    // B approves the candidate: A serves and allows again.
    let approved = w.on_b(|gw| {
        list(gw, "s2", &[deploy(2), weather()]);
        admin(
            gw,
            "servers/deploy/approve",
            json!({"fingerprint": fp(&[deploy(2), weather()])}),
        )
    });
    assert_eq!(approved, 200);
    assert_eq!(
        call(&mut w.gw, "s3", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );
    // B quarantines: A refuses at once.
    let quarantined = w.on_b(|gw| {
        admin(
            gw,
            "servers/deploy/quarantine",
            json!({"reason": "incident"}),
        )
    });
    assert_eq!(quarantined, 200);
    assert_eq!(
        call(&mut w.gw, "s3", "get_weather", json!({"city": "Oslo"})),
        "SERVER_QUARANTINED"
    );
}

#[test]
fn a_session_snapshot_changed_by_another_worker_is_read_fresh() {
    let mut w = Workers::new();
    let v2 = [deploy(2), weather()];
    assert_eq!(list(&mut w.gw, "s1", &[deploy(1), weather()]).len(), 2);
    let approved = w.on_b(|gw| {
        assert_eq!(list(gw, "s2", &v2).len(), 0);
        admin(
            gw,
            "servers/deploy/approve",
            json!({"fingerprint": fp(&v2)}),
        )
    });
    assert_eq!(approved, 200);
    // s1 last saw revision 1 (A parses and caches that snapshot).
    let args = json!({"branch": "main", "region": "eu"});
    assert_eq!(
        call(&mut w.gw, "s1", "deploy_preview", args.clone()),
        "STALE_TOOL_SCHEMA"
    );
    // s1 refreshes on worker B: A must see the new snapshot.
    assert_eq!(w.on_b(|gw| list(gw, "s1", &v2).len()), 2);
    assert_eq!(call(&mut w.gw, "s1", "deploy_preview", args), "FORWARDED");
}
