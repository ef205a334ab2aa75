//! Containment through the component: `drift_scope: "tool"` gives the native engine's golden
//! decisions on a real release drift, and a tool list is cut for its caller by a `header`
//! principal (a component host has headers, no Envoy metadata).
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

struct Guard {
    policy: Policy,
    sink: SharedCollected,
}

/// What one exchange gave: the decision records, and the response body the client received
/// (`None` when the request was answered locally).
struct Seen {
    decisions: Vec<Value>,
    received: Option<Vec<u8>>,
    local: Option<Value>,
}

impl Guard {
    fn new(runtime: &Runtime, config: &str) -> Self {
        let sink = SharedCollected::default();
        let mut policy = runtime
            .instantiate(HostState::new(MemoryStore::new(), Box::new(sink.clone())))
            .unwrap();
        policy.configure(config).unwrap().unwrap();
        Guard { policy, sink }
    }

    /// One exchange, with `extra` request headers.
    fn exchange(&mut self, server: &str, ex: &HttpExchange, extra: &[(&str, &str)]) -> Seen {
        let before = self.sink.0.lock().unwrap().decisions.len();
        let session = ex.request_header("mcp-session-id").map(str::to_string);
        let mut headers = ex.request_headers.clone();
        headers.push((":method".into(), ex.http_method.clone()));
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let request = MessageContext {
            server_id: server.into(),
            session_id: session.clone(),
            transport: Transport::Http,
            headers,
        };
        let mut local = None;
        if !ex.request_body.is_empty()
            && let Verdict::Reply(reply) = self
                .policy
                .client_message(&request, &ex.request_body)
                .unwrap()
        {
            local = Some(serde_json::from_slice(&reply.body).unwrap());
        }
        let received = match local {
            Some(_) => None,
            None => {
                let response = MessageContext {
                    server_id: server.into(),
                    session_id: session,
                    transport: Transport::Http,
                    headers: ex.response_headers.clone(),
                };
                match self
                    .policy
                    .server_message(&response, &ex.response_body)
                    .unwrap()
                {
                    Verdict::Pass => Some(ex.response_body.clone()),
                    Verdict::Rewrite(bytes) => Some(bytes),
                    Verdict::Reply(_) => panic!("a response answered locally"),
                }
            }
        };
        let collected = self.sink.0.lock().unwrap();
        let decisions = collected.decisions[before..]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        Seen {
            decisions,
            received,
            local,
        }
    }
}

#[test]
fn under_tool_scope_a_release_drift_matches_the_native_golden_decisions() {
    let runtime = Runtime::new().unwrap();
    let mut guard = Guard::new(
        &runtime,
        r#"{"servers": {"everything": {"drift_scope": "tool"}}}"#,
    );
    let mut lines = Vec::new();
    for name in ["everything-2025.11.25", "everything-2026.1.26"] {
        for ex in transcript(name) {
            for mut decision in guard.exchange("everything", &ex, &[]).decisions {
                let obj = decision.as_object_mut().unwrap();
                obj.insert("transcript".into(), json!(name));
                obj.insert("seq".into(), json!(ex.seq));
                obj.remove("session");
                lines.push(decision.to_string());
            }
        }
    }
    assert_eq!(lines, golden("everything-a-then-b-tool-scope"));
    let view = guard
        .policy
        .admin_status(Some("everything"))
        .unwrap()
        .unwrap();
    let view: Value = serde_json::from_str(&view).unwrap();
    assert_eq!(
        (&view["schema_status"], &view["drift_scope"]),
        (&json!("changed"), &json!("tool"))
    );
    assert!(!view["withheld_tools"].as_array().unwrap().is_empty());
}

/// Only the ops team (a request header) may roll a preview back.
const OPS_ONLY_ROLLBACK: &str = r#"{"policy": {"rules": [
    {"action": "allow", "tool": "rollback_preview", "principal": {"header": "x-team", "in": ["ops"]}},
    {"action": "deny", "tool": "rollback_preview"}]}}"#;

/// The list result the client received, and every call's error code (`FORWARDED` when the
/// call went to the server), for one caller's run of the transcript.
fn run_as(headers: &[(&str, &str)]) -> (Value, Vec<(String, String)>) {
    let runtime = Runtime::new().unwrap();
    let mut guard = Guard::new(&runtime, OPS_ONLY_ROLLBACK);
    let mut listed = None;
    let mut calls = Vec::new();
    for ex in transcript("python-sdk-2.3.0-rev1-json") {
        let request: Value = match serde_json::from_slice(&ex.request_body) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let seen = guard.exchange("rugpull", &ex, headers);
        match request["method"].as_str() {
            Some("tools/list") if listed.is_none() => {
                let body: Value = serde_json::from_slice(&seen.received.unwrap()).unwrap();
                listed = Some(body["result"].clone());
            }
            Some("tools/call") => {
                let tool = request["params"]["name"].as_str().unwrap().to_string();
                let code = seen
                    .local
                    .as_ref()
                    .map_or("FORWARDED".to_string(), |reply| {
                        reply["result"]["structuredContent"]["error_code"]
                            .as_str()
                            .unwrap()
                            .to_string()
                    });
                calls.push((tool, code));
            }
            _ => {}
        }
    }
    (listed.unwrap(), calls)
}

fn names(result: &Value) -> Vec<&str> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_caller_is_listed_only_what_its_header_lets_it_call() {
    let (anyone, calls) = run_as(&[]);
    assert_eq!(names(&anyone), ["deploy_preview", "get_weather", "add"]);
    assert_eq!(
        (&anyone["cacheScope"], &anyone["ttlMs"]),
        (&json!("private"), &json!(60_000))
    );
    assert_eq!(anyone["_meta"]["io.toolseal/status"]["hidden_by_policy"], 1);
    assert!(
        calls
            .iter()
            .any(|(tool, code)| tool == "rollback_preview" && code == "POLICY_DENIED")
    );
    assert!(
        calls
            .iter()
            .all(|(tool, code)| (tool == "rollback_preview") == (code == "POLICY_DENIED"))
    );

    let (ops, calls) = run_as(&[("x-team", "ops")]);
    assert_eq!(
        names(&ops),
        ["deploy_preview", "get_weather", "add", "rollback_preview"]
    );
    assert_eq!(ops["cacheScope"], "public");
    assert_eq!(ops["_meta"].get("io.toolseal/status"), None);
    assert!(calls.iter().all(|(_, code)| code == "FORWARDED"));
}
