//! Golden replay of real MCP 2026-07-28 recordings (the MCP Python SDK 2.3.0 and the
//! TypeScript SDK v2 2.4.0, server and client, no session, no handshake) through the core
//! engine: each release alone verifies, its lists come back with the gateway's cache hint,
//! the multi round-trip call completes even under `results: "enforce"`, the
//! `subscriptions/listen` stream's `list_changed` holds calls until the client lists again,
//! and the rug pull of release B is filtered and refused in answers the SDK clients accept.
//!
//! Golden files live in `tests/data/golden/`; `BLESS=1 cargo test` rewrites them. The same
//! files hold the `.wasm` (host-test) and the component (stdio guard) to the same records.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay, Replayed};

use crate::support::examples::transcript;
use crate::support::files::golden;

/// The real 2026-07-28 recordings of release A (the rug-pull server before the pull).
const RECORDINGS: [&str; 3] = [
    "python-sdk-2.3.0-rev1-json",
    "python-sdk-2.3.0-rev1-sse",
    "typescript-sdk-2.4.0-rev1",
];

/// Replays transcripts in order under one server id; returns one JSON line per decision and
/// what the client received of each exchange.
fn replay(
    config: &str,
    server: &str,
    names: &[&str],
    chunk: usize,
) -> (NativeReplay, Vec<String>, Vec<Replayed>) {
    let steps = names.iter().map(|name| (*name, transcript(name))).collect();
    replay_steps(config, server, steps, chunk)
}

/// Replays each step's exchanges (labelled with the step's transcript name) in order under
/// one server id; returns one JSON line per decision and what the client received.
fn replay_steps(
    config: &str,
    server: &str,
    steps: Vec<(&str, Vec<HttpExchange>)>,
    chunk: usize,
) -> (NativeReplay, Vec<String>, Vec<Replayed>) {
    let mut gw = NativeReplay::new(Config::parse(config.as_bytes()).unwrap());
    let (mut lines, mut seen) = (Vec::new(), Vec::new());
    for (name, exchanges) in steps {
        for ex in exchanges {
            let before = gw.out.decisions.len();
            seen.push(gw.exchange(server, &ex, chunk));
            for d in &gw.out.decisions[before..] {
                let mut v = d.to_json();
                let obj = v.as_object_mut().unwrap();
                obj.insert("transcript".into(), json!(name));
                obj.insert("seq".into(), json!(ex.seq));
                obj.remove("session");
                lines.push(v.to_string());
            }
        }
    }
    (gw, lines, seen)
}

fn record(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

/// The JSON-RPC messages a client received in a body (JSON or SSE).
fn messages(body: &[u8]) -> Vec<Value> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return vec![value];
    }
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

#[test]
fn each_recording_alone_verifies_with_the_gateways_cache_hint() {
    for name in RECORDINGS {
        for chunk in [1, 7, 4096] {
            let (gw, lines, seen) = replay("", name, &[name], chunk);
            let exchanges = transcript(name);
            let mut lists = 0;
            for line in &lines {
                let d = record(line);
                assert_ne!(d["decision"], "deny", "{name}: {line}");
                assert_eq!(d["error_code"], Value::Null, "{name}: {line}");
                assert_eq!(d["protocol_version"], "2026-07-28", "{name}: {line}");
                if d["method"] == "tools/list" && d["direction"] == "response" {
                    lists += 1;
                    assert_eq!(d["schema_status"], "verified", "{name}: {line}");
                    assert_eq!(d["tools_in"], d["tools_out"], "{name}: {line}");
                }
            }
            assert!(lists >= 1, "{name}");
            for (out, ex) in seen.iter().zip(&exchanges) {
                assert_eq!(out.local_reply, None, "{name} seq {}: forwarded", ex.seq);
                let sent = messages(&ex.response_body);
                let got = messages(&out.response_body);
                assert_eq!(got.len(), sent.len(), "{name} seq {}", ex.seq);
                for (g, s) in got.iter().zip(&sent) {
                    let hint = s["result"]["ttlMs"].as_u64();
                    if s["result"]["tools"].is_array() && hint > Some(60_000) {
                        // A verified list: the same tools, the gateway's lifetime.
                        let mut want = s.clone();
                        want["result"]["ttlMs"] = json!(60_000);
                        assert_eq!(g, &want, "{name} seq {}", ex.seq);
                    } else {
                        assert_eq!(g, s, "{name} seq {}: passes unchanged", ex.seq);
                    }
                }
            }
            let record = toolseal_core::state::load_record(&gw.store, name)
                .unwrap()
                .unwrap()
                .0;
            assert_eq!(record.status.as_str(), "verified", "{name}");
            if chunk == 7 {
                golden(name, &lines);
            }
        }
    }
}

#[test]
fn release_b_met_first_is_held_by_first_contact_screening() {
    let name = "python-sdk-2.3.0-rev2-json";
    let (gw, lines, seen) = replay("", name, &[name], 7);
    golden(name, &lines);
    let list = lines
        .iter()
        .map(|l| record(l))
        .find(|d| d["method"] == "tools/list" && d["direction"] == "response")
        .unwrap();
    assert_eq!(
        (&list["schema_status"], &list["tools_out"]),
        (&json!("pending"), &json!(0))
    );
    let pending = gw
        .out
        .audits
        .iter()
        .find(|a| a.event == "schema.pending")
        .unwrap();
    assert!(pending.detail.contains_key("findings"));
    for out in &seen[2..] {
        let reply: Value = serde_json::from_slice(&out.local_reply.as_ref().unwrap().body).unwrap();
        assert_eq!(
            reply["result"]["structuredContent"]["error_code"],
            "SCHEMA_PENDING"
        );
        assert_eq!(reply["result"]["resultType"], "complete");
    }
}

#[test]
fn the_listen_streams_list_changed_holds_until_the_client_lists_again() {
    let name = "python-sdk-2.3.0-rev1-json";
    let (_, lines, _) = replay("", name, &[name], 7);
    let methods: Vec<String> = lines
        .iter()
        .map(|l| record(l))
        .map(|d| format!("{} {} {}", d["direction"], d["method"], d["decision"]).replace('"', ""))
        .collect();
    let changed = methods
        .iter()
        .position(|m| m == "response notifications/tools/list_changed pass")
        .unwrap();
    // The stream's other events pass, then the list verifies again before the next call.
    let after: Vec<&str> = methods[changed + 1..].iter().map(String::as_str).collect();
    assert_eq!(
        after,
        [
            "request tools/list pass",
            "response tools/list rewrite",
            "request tools/call allow",
            "response tools/call pass",
        ]
    );
    // The held state was real: a call replayed right after the stream is refused.
    let mut exchanges = transcript(name);
    let listen = exchanges
        .iter()
        .position(|e| String::from_utf8_lossy(&e.request_body).contains("subscriptions/listen"))
        .unwrap();
    let call = exchanges.last().unwrap().clone();
    exchanges.truncate(listen + 1);
    exchanges.push(call);
    let mut gw = NativeReplay::new(Config::default());
    let outs: Vec<Replayed> = exchanges
        .iter()
        .map(|ex| gw.exchange(name, ex, 7))
        .collect();
    let refused: Value =
        serde_json::from_slice(&outs.last().unwrap().local_reply.as_ref().unwrap().body).unwrap();
    assert_eq!(
        refused["result"]["structuredContent"]["error_code"],
        "SCHEMA_UNVERIFIED"
    );
    assert_eq!(refused["result"]["resultType"], "complete");
}

#[test]
fn the_confirmation_round_completes_under_an_enforced_result_contract() {
    for name in [
        "python-sdk-2.3.0-rev1-json",
        "python-sdk-2.3.0-rev1-sse",
        "typescript-sdk-2.4.0-rev1",
    ] {
        let config = format!(r#"{{"servers": {{"{name}": {{"results": "enforce"}}}}}}"#);
        let (gw, lines, seen) = replay(&config, name, &[name], 7);
        assert!(
            !gw.out.audits.iter().any(|a| a.event == "result.mismatch"),
            "{name}: every final result holds to its contract"
        );
        assert!(
            lines.iter().all(|l| record(l)["decision"] != "deny"),
            "{name}"
        );
        let interim = seen
            .iter()
            .flat_map(|out| messages(&out.response_body))
            .filter(|m| m["result"]["resultType"] == "input_required")
            .count();
        assert_eq!(interim, 1, "{name}: the interim answer reached the client");
    }
}

#[test]
fn release_b_of_the_rug_pull_server_is_filtered_and_refused_in_the_revisions_shape() {
    let names = ["python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json"];
    let (gw, lines, seen) = replay("", "rugpull", &names, 13);
    golden("python-sdk-2.3.0-a-then-b", &lines);
    let b: Vec<Value> = lines
        .iter()
        .map(|l| record(l))
        .filter(|d| d["transcript"] == names[1])
        .collect();
    let list = b
        .iter()
        .find(|d| d["method"] == "tools/list" && d["direction"] == "response")
        .unwrap();
    assert_eq!(
        (
            &list["schema_status"],
            &list["decision"],
            &list["tools_out"]
        ),
        (&json!("changed"), &json!("rewrite"), &json!(0))
    );
    let calls: Vec<&Value> = b
        .iter()
        .filter(|d| d["method"] == "tools/call" && d["direction"] == "request")
        .collect();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(
            (&call["decision"], &call["error_code"]),
            (&json!("deny"), &json!("SCHEMA_CHANGED"))
        );
    }
    let b_seen = &seen[transcript(names[0]).len()..];
    let listed = messages(&b_seen[1].response_body);
    let result = &listed[0]["result"];
    assert_eq!(result["tools"], json!([]));
    assert_eq!(
        (
            &result["ttlMs"],
            &result["cacheScope"],
            &result["resultType"]
        ),
        (&json!(0), &json!("private"), &json!("complete"))
    );
    for out in &b_seen[2..] {
        let reply: Value = serde_json::from_slice(&out.local_reply.as_ref().unwrap().body).unwrap();
        assert_eq!(reply["result"]["resultType"], "complete");
        assert_eq!(
            reply["result"]["structuredContent"]["error_code"],
            "SCHEMA_CHANGED"
        );
    }
    assert!(gw.out.audits.iter().any(|a| a.event == "schema.changed"));
}

/// Release A, then release B, then the calls of release A again (an agent that keeps working
/// after the rug pull), under `config` for server `rugpull`: one JSON line per decision, and
/// what the client received.
pub fn a_then_b_then_calls(
    config: &str,
    chunk: usize,
) -> (NativeReplay, Vec<String>, Vec<Replayed>) {
    let a = "python-sdk-2.3.0-rev1-json";
    let b = "python-sdk-2.3.0-rev2-json";
    let calls: Vec<HttpExchange> = transcript(a)
        .into_iter()
        .filter(|ex| String::from_utf8_lossy(&ex.request_body).contains("\"tools/call\""))
        .collect();
    replay_steps(
        config,
        "rugpull",
        vec![(a, transcript(a)), (b, transcript(b)), (a, calls)],
        chunk,
    )
}

#[test]
fn under_tool_scope_the_rug_pull_withholds_the_changed_tools_and_the_others_keep_working() {
    let config = r#"{"servers": {"rugpull": {"drift_scope": "tool"}}}"#;
    let (gw, lines, seen) = a_then_b_then_calls(config, 13);
    golden("python-sdk-2.3.0-a-then-b-tool-scope", &lines);
    let records: Vec<Value> = lines.iter().map(|l| record(l)).collect();
    let a_len = transcript("python-sdk-2.3.0-rev1-json").len();
    let b_len = transcript("python-sdk-2.3.0-rev2-json").len();
    // Release B's list: changed, served in part (get_weather and deploy_preview withheld).
    let b_list = &seen[a_len + 1];
    let result = &messages(&b_list.response_body)[0]["result"];
    let served: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(served, ["add", "rollback_preview"]);
    assert_eq!(
        (
            &result["ttlMs"],
            &result["cacheScope"],
            &result["resultType"]
        ),
        (&json!(0), &json!("private"), &json!("complete"))
    );
    assert_eq!(result["_meta"]["io.toolseal/status"]["withheld"], 2);
    // Release B's calls go to the two changed tools: refused, never forwarded.
    for out in &seen[a_len + 2..a_len + b_len] {
        let reply: Value = serde_json::from_slice(&out.local_reply.as_ref().unwrap().body).unwrap();
        let structured = &reply["result"]["structuredContent"];
        assert_eq!(
            (
                &structured["error_code"],
                &structured["change"],
                &reply["result"]["resultType"]
            ),
            (
                &json!("TOOL_CHANGED"),
                &json!("changed"),
                &json!("complete")
            )
        );
    }
    // Then the agent's calls of release A: add and the MRTR rollback pass, get_weather not.
    let after: Vec<(&str, &str)> = records
        .iter()
        .skip_while(|r| r["transcript"] != "python-sdk-2.3.0-rev2-json")
        .skip_while(|r| r["transcript"] == "python-sdk-2.3.0-rev2-json")
        .filter(|r| r["direction"] == "request")
        .map(|r| (r["tool"].as_str().unwrap(), r["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(
        after,
        [
            ("add", "allow"),
            ("get_weather", "deny"),
            ("rollback_preview", "allow"),
            ("rollback_preview", "allow"),
            ("deploy_preview", "deny"),
        ]
    );
    let record = toolseal_core::state::load_record(&gw.store, "rugpull")
        .unwrap()
        .unwrap()
        .0;
    assert_eq!(record.status.as_str(), "changed");
}

/// The policy of the caller-scoped replays: only the ops group may roll back.
pub const OPS_ONLY_ROLLBACK: &str = r#"{"policy": {"rules": [
    {"action": "allow", "tool": "rollback_preview",
     "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": ["ops"]}},
    {"action": "deny", "tool": "rollback_preview"}]}}"#;

#[test]
fn a_caller_outside_the_group_is_not_listed_the_tool_it_may_not_call() {
    let name = "python-sdk-2.3.0-rev1-json";
    let (_, lines, seen) = replay(OPS_ONLY_ROLLBACK, "rugpull", &[name], 13);
    golden("python-sdk-2.3.0-rev1-caller-scoped", &lines);
    for list in [&seen[1], &seen[7]] {
        let result = &messages(&list.response_body)[0]["result"];
        let names: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["deploy_preview", "get_weather", "add"]);
        // The server said public for an hour: this caller's view is its own, for at most 60 s.
        assert_eq!(
            (
                &result["cacheScope"],
                &result["ttlMs"],
                &result["resultType"]
            ),
            (&json!("private"), &json!(60_000), &json!("complete"))
        );
        assert_eq!(result["_meta"]["io.toolseal/status"]["hidden_by_policy"], 1);
        assert_eq!(result["_meta"]["io.toolseal/status"].get("withheld"), None);
    }
    let denied: Vec<(String, String)> = lines
        .iter()
        .map(|l| record(l))
        .filter(|r| r["decision"] == "deny")
        .map(|r| (r["tool"].to_string(), r["error_code"].to_string()))
        .collect();
    let rollback = (
        r#""rollback_preview""#.to_string(),
        r#""POLICY_DENIED""#.to_string(),
    );
    assert_eq!(denied, [rollback.clone(), rollback]);

    // A caller whose verified token says ops is listed the tool and calls it.
    let mut gw = NativeReplay::new(Config::parse(OPS_ONLY_ROLLBACK.as_bytes()).unwrap());
    gw.metadata = json!({"envoy.filters.http.jwt_authn": {"payload": {"groups": ["ops"]}}})
        .as_object()
        .unwrap()
        .clone();
    let seen: Vec<Replayed> = transcript(name)
        .iter()
        .map(|ex| gw.exchange("rugpull", ex, 13))
        .collect();
    let result = &messages(&seen[1].response_body)[0]["result"];
    assert_eq!(result["tools"].as_array().unwrap().len(), 4);
    assert_eq!(result["cacheScope"], "public");
    assert!(gw.out.decisions.iter().all(|d| d.decision != "deny"));
}
