//! The built plugin `.wasm` on wasmtime against real recorded MCP traffic: no false drift
//! on any recording, and the real release-to-release drift of server-everything caught.
//! Assertions read the plugin's decision records and the HTTP outcome, never log text.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::replay_options as options;

use serde_json::{Map, Value};
use toolseal::replay::exchange::Stop;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, load_transcript};
use toolseal_core::wire::sse::SseParser;

fn replay(options: ReplayOptions, names: &[&str]) -> Vec<ExchangeReport> {
    let mut replay = Replay::start(options).unwrap();
    let mut reports = Vec::new();
    for name in names {
        reports.extend(
            replay
                .run(&load_transcript(&common::transcript(name)).unwrap())
                .unwrap(),
        );
    }
    reports
}

fn decisions(report: &ExchangeReport) -> Vec<&Map<String, Value>> {
    report
        .records
        .iter()
        .filter_map(|r| match r {
            PluginRecord::Decision(d) => Some(d),
            PluginRecord::Audit(_) => None,
        })
        .collect()
}

fn field<'a>(record: &'a Map<String, Value>, key: &str) -> &'a Value {
    record.get(key).unwrap_or(&Value::Null)
}

/// Tools in the recorded `tools/list` listing of a transcript.
fn recorded_tool_count(name: &str) -> usize {
    toolseal::cli::tool_source::load_tools(&common::transcript(name))
        .unwrap()
        .len()
}

/// The JSON-RPC messages of a delivered body (SSE or JSON).
fn messages(body: &[u8]) -> Vec<Value> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return vec![value];
    }
    let mut parser = SseParser::new(1 << 24);
    let mut events = parser.push(body).unwrap();
    events.extend(parser.close().unwrap());
    events
        .iter()
        .filter_map(|e| e.data.as_deref())
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

#[test]
fn every_recording_replays_under_discovery_without_false_drift() {
    for name in common::TRANSCRIPTS {
        for chunk in [0, 7, 61] {
            let transcript = load_transcript(&common::transcript(name)).unwrap();
            let reports = replay(options(None, b"", chunk), &[name]);
            assert_eq!(reports.len(), transcript.exchanges.len(), "{name}");
            let (mut listed, mut calls, mut statuses) = (0, 0, Vec::new());
            for (report, recorded) in reports.iter().zip(&transcript.exchanges) {
                let at = format!("{name} seq {} chunk {chunk}", recorded.seq);
                assert_eq!(report.outcome.stop, None, "{at}: the exchange must pass");
                assert!(report.outcome.upstream_contacted, "{at}");
                assert_eq!(
                    report.outcome.forwarded_request_body, recorded.request_body,
                    "{at}: request bytes"
                );
                for d in decisions(report) {
                    assert_eq!(field(d, "server"), &Value::from(name), "{at}");
                    assert_eq!(field(d, "error_code"), &Value::Null, "{at}: {d:?}");
                    assert_ne!(field(d, "decision"), "deny", "{at}: {d:?}");
                    match field(d, "method").as_str() {
                        Some("tools/list") if field(d, "direction") == "response" => {
                            statuses.push(field(d, "schema_status").clone());
                            assert_eq!(
                                field(d, "tools_in"),
                                field(d, "tools_out"),
                                "{at}: no tool removed"
                            );
                            listed += field(d, "tools_in").as_u64().unwrap();
                        }
                        Some("tools/call") if field(d, "direction") == "request" => {
                            assert_eq!(field(d, "decision"), "allow", "{at}");
                            calls += 1;
                        }
                        _ => {}
                    }
                }
                let rewritten = decisions(report)
                    .iter()
                    .any(|d| field(d, "decision") == "rewrite");
                if !rewritten {
                    assert_eq!(
                        report.outcome.response_body, recorded.response_body,
                        "{at}: response bytes pass unchanged"
                    );
                }
            }
            // Pages before the last leave the first listing unbaselined; the last verifies it.
            let (last, pages) = statuses.split_last().unwrap();
            assert_eq!(last, "verified", "{name} chunk {chunk}");
            assert!(
                pages.iter().all(|s| s == "unbaselined"),
                "{name} chunk {chunk}: {pages:?}"
            );
            assert_eq!(
                listed as usize,
                recorded_tool_count(name),
                "{name}: every listed tool reached the client"
            );
            assert!(calls >= 1, "{name}: the recording has tools/call requests");
        }
    }
}

/// The first `tools/list` response record among `reports`, with its exchange.
fn list_record<'a>(reports: &[&'a ExchangeReport]) -> (&'a ExchangeReport, &'a Map<String, Value>) {
    reports
        .iter()
        .flat_map(|r| decisions(r).into_iter().map(move |d| (*r, d)))
        .find(|(_, d)| field(d, "method") == "tools/list" && field(d, "direction") == "response")
        .unwrap()
}

#[test]
fn the_next_release_of_one_server_is_caught_as_drift() {
    let reports = replay(
        options(Some("everything"), b"", 61),
        &["everything-2025.11.25", "everything-2026.1.26"],
    );
    let (old, new): (Vec<_>, Vec<_>) = reports
        .iter()
        .partition(|r| r.transcript == "everything-2025.11.25");
    let (_, baseline) = list_record(&old);
    assert_eq!(field(baseline, "schema_status"), "verified");
    assert_eq!(
        field(baseline, "tools_out").as_u64(),
        Some(recorded_tool_count("everything-2025.11.25") as u64)
    );

    let (list_report, drifted) = list_record(&new);
    assert_eq!(field(drifted, "schema_status"), "changed");
    assert_eq!(
        field(drifted, "tools_in").as_u64(),
        Some(recorded_tool_count("everything-2026.1.26") as u64)
    );
    assert_eq!(field(drifted, "tools_out").as_u64(), Some(0));
    assert_eq!(field(drifted, "decision"), "rewrite");
    let served: Vec<Value> = messages(&list_report.outcome.response_body)
        .into_iter()
        .filter_map(|m| m.pointer("/result/tools").cloned())
        .collect();
    assert_eq!(
        served,
        vec![Value::Array(vec![])],
        "the client is served no tools"
    );

    let call = new
        .iter()
        .find(|r| {
            decisions(r)
                .iter()
                .any(|d| field(d, "method") == "tools/call" && field(d, "direction") == "request")
        })
        .unwrap();
    let denial = decisions(call)
        .into_iter()
        .find(|d| field(d, "method") == "tools/call" && field(d, "direction") == "request")
        .unwrap();
    assert_eq!(field(denial, "decision"), "deny");
    assert_eq!(field(denial, "error_code"), "SCHEMA_CHANGED");
    assert_eq!(call.outcome.stop, Some(Stop::LocalResponse));
    assert!(
        !call.outcome.upstream_contacted,
        "a refused call never reaches the server"
    );
    let reply = call.outcome.local_response.as_ref().unwrap();
    assert_eq!(reply.status, 200, "a denial is a tool execution error");
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body.pointer("/result/isError"), Some(&Value::Bool(true)));
    assert_eq!(
        body.pointer("/result/structuredContent/error_code"),
        Some(&Value::from("SCHEMA_CHANGED"))
    );
    assert_eq!(
        body.pointer("/result/structuredContent/side_effect_started"),
        Some(&Value::Bool(false))
    );
}

#[test]
fn a_metadata_principal_is_read_from_envoy_dynamic_metadata() {
    let config = serde_json::json!({"policy": {"default": "allow", "rules": [
        {"action": "allow", "tool": "echo", "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": ["ops"]}},
        {"action": "deny", "tool": "echo"}
    ]}});
    let call_verdict = |groups: Value| {
        let mut options = options(None, config.to_string().as_bytes(), 61);
        let payload = serde_json::json!({"payload": {"sub": "agent-7", "groups": groups}});
        options
            .dynamic_metadata
            .insert("envoy.filters.http.jwt_authn".into(), payload);
        let reports = replay(options, &["everything-2025.11.25"]);
        reports
            .iter()
            .flat_map(|r| decisions(r).into_iter().cloned())
            .find(|d| field(d, "method") == "tools/call" && field(d, "direction") == "request")
            .map(|d| {
                (
                    field(&d, "decision").clone(),
                    field(&d, "error_code").clone(),
                )
            })
            .unwrap()
    };
    assert_eq!(
        call_verdict(serde_json::json!(["dev", "ops"])),
        (Value::from("allow"), Value::Null)
    );
    assert_eq!(
        call_verdict(serde_json::json!(["dev"])),
        (Value::from("deny"), Value::from("POLICY_DENIED"))
    );
}

#[test]
fn under_tool_scope_the_next_release_gives_the_core_golden_records() {
    let config = br#"{"servers": {"everything": {"drift_scope": "tool"}}}"#;
    let reports = replay(
        options(Some("everything"), config, 13),
        &["everything-2025.11.25", "everything-2026.1.26"],
    );
    let records: Vec<Value> = reports
        .iter()
        .flat_map(|report| {
            decisions(report).into_iter().map(move |d| {
                let mut d = d.clone();
                d.remove("session");
                d.insert("transcript".into(), Value::from(report.transcript.as_str()));
                // The core's records carry the recording's seq as text.
                let seq = match &report.seq {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                d.insert("seq".into(), Value::from(seq));
                Value::Object(d)
            })
        })
        .collect();
    let golden = std::fs::read_to_string(
        common::workspace()
            .join("plugin/core/tests/data/golden/everything-a-then-b-tool-scope.jsonl"),
    )
    .unwrap();
    let golden: Vec<Value> = golden
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records, golden);
    // Release B renamed or changed every tool: each is withheld, and its call refused
    // locally with TOOL_CHANGED.
    let call = reports
        .iter()
        .filter(|r| r.transcript == "everything-2026.1.26")
        .find(|r| r.outcome.local_response.is_some())
        .unwrap();
    assert!(!call.outcome.upstream_contacted);
    let body: Value =
        serde_json::from_slice(&call.outcome.local_response.as_ref().unwrap().body).unwrap();
    assert_eq!(
        body.pointer("/result/structuredContent/error_code"),
        Some(&Value::from("TOOL_CHANGED"))
    );
}

/// Audit events of `reports` other than the configuration's.
fn audit_events(reports: &[ExchangeReport]) -> Vec<String> {
    reports
        .iter()
        .flat_map(|r| &r.records)
        .filter_map(|r| match r {
            PluginRecord::Audit(a) => a["event"].as_str().map(str::to_owned),
            PluginRecord::Decision(_) => None,
        })
        .filter(|e| e != "config.loaded")
        .collect()
}

/// The golden of "never closes an honest server" on a server with every section: the
/// surface recordings of one release (a client without capabilities, one with roots,
/// sampling and elicitation, the SDK 2.x client falling back from a refused
/// `server/discover`), each listing tools, prompts, templates and resources twice, replayed
/// as one server through the `.wasm`. Two views of the tools, one catalogue: every byte of
/// every answer reaches its client unchanged, nothing is denied, withheld, dropped or
/// closed.
#[test]
fn an_honest_server_with_every_section_is_never_closed_across_clients() {
    for release in ["2026.8.31", "2025.11.25"] {
        let names: Vec<String> = ["no-capabilities", "capabilities", "sdk2-auto"]
            .iter()
            .map(|who| format!("everything-{release}-surface-{who}"))
            .collect();
        for chunk in [0, 61] {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let reports = replay(options(Some("everything"), b"", chunk), &names);
            let recorded: Vec<_> = names
                .iter()
                .flat_map(|n| load_transcript(&common::transcript(n)).unwrap().exchanges)
                .collect();
            assert_eq!(reports.len(), recorded.len(), "{release}");
            let mut methods = std::collections::BTreeSet::new();
            for (report, exchange) in reports.iter().zip(&recorded) {
                let at = format!("{release} chunk {chunk} seq {}", exchange.seq);
                assert_eq!(report.outcome.stop, None, "{at}");
                assert_eq!(report.outcome.response_body, exchange.response_body, "{at}");
                for d in decisions(report) {
                    assert_eq!(field(d, "error_code"), &Value::Null, "{at}: {d:?}");
                    assert_eq!(field(d, "decision"), "pass", "{at}: {d:?}");
                    if let Some(method) = field(d, "method").as_str() {
                        methods.insert(method.to_owned());
                    }
                    if field(d, "method") == "tools/list" && field(d, "direction") == "response" {
                        assert_eq!(field(d, "tools_in"), field(d, "tools_out"), "{at}");
                    }
                }
            }
            for method in [
                "initialize",
                "tools/list",
                "prompts/list",
                "resources/list",
                "resources/templates/list",
            ] {
                assert!(
                    methods.contains(method),
                    "{release}: the recordings list {method}"
                );
            }
            let closing = [
                "schema.changed",
                "surface.withheld",
                "resource.withheld",
                "response.unsolicited",
                "view.limit",
            ];
            let events = audit_events(&reports);
            assert!(
                !events.iter().any(|e| closing.contains(&e.as_str())),
                "{release} chunk {chunk}: {events:?}"
            );
            // The second client's capabilities made a second view of one catalogue.
            assert!(
                events.iter().any(|e| e == "view.baselined"),
                "{release}: {events:?}"
            );
        }
    }
}
