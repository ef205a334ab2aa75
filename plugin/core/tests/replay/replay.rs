//! Golden replay of the real recorded transcripts through the core engine, and the
//! lifecycle stories told with real recorded traffic.
//!
//! Golden files live in `tests/data/golden/`; `BLESS=1 cargo test` rewrites them.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay, parse_transcript};

use crate::support::files::{data, golden};

fn transcript(name: &str) -> Vec<HttpExchange> {
    let bytes = std::fs::read(data(&format!("transcripts/{name}.json"))).unwrap();
    parse_transcript(&bytes).unwrap()
}

const TRANSCRIPTS: [&str; 4] = [
    "everything-2025.11.25",
    "everything-2026.1.26",
    "fastmcp-4.2.3-json",
    "fastmcp-4.2.3-paginated",
];

/// Replays transcripts in order under one server id; returns one JSON line per decision.
fn replay(config: &str, server: &str, names: &[&str], chunk: usize) -> (NativeReplay, Vec<String>) {
    let mut gw = NativeReplay::new(Config::parse(config.as_bytes()).unwrap());
    let mut lines = Vec::new();
    for name in names {
        for ex in transcript(name) {
            let before = gw.out.decisions.len();
            gw.exchange(server, &ex, chunk);
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
    (gw, lines)
}

fn field(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

#[test]
fn each_transcript_alone_verifies_without_false_drift() {
    for name in TRANSCRIPTS {
        for chunk in [1, 7, 4096] {
            let (gw, lines) = replay("", name, &[name], chunk);
            assert!(!lines.is_empty(), "{name}: no decisions");
            for line in &lines {
                let d = field(line);
                assert_ne!(d["decision"], "deny", "{name}: {line}");
                assert_ne!(d["decision"], "rewrite", "{name}: {line}");
                assert_eq!(d["tools_in"], d["tools_out"], "{name}: {line}");
            }
            let record = toolseal_core::state::load_record(&gw.store, name)
                .unwrap()
                .unwrap()
                .0;
            assert_eq!(record.status.as_str(), "verified", "{name}");
            assert!(
                gw.out.audits.iter().any(|a| a.event == "schema.baselined"),
                "{name}"
            );
            assert!(
                !gw.out.audits.iter().any(|a| a.event == "schema.changed"),
                "{name}"
            );
            if chunk == 7 {
                golden(name, &lines);
            }
        }
    }
}

#[test]
fn release_a_then_release_b_drifts_filters_and_refuses() {
    let (gw, lines) = replay(
        "",
        "everything",
        &["everything-2025.11.25", "everything-2026.1.26"],
        13,
    );
    golden("everything-a-then-b", &lines);
    let b: Vec<Value> = lines
        .iter()
        .map(|l| field(l))
        .filter(|d| d["transcript"] == "everything-2026.1.26")
        .collect();
    let list = b
        .iter()
        .find(|d| d["method"] == "tools/list" && d["direction"] == "response")
        .unwrap();
    assert_eq!(list["schema_status"], "changed");
    assert_eq!(list["decision"], "rewrite");
    assert_eq!(list["tools_out"], 0);
    assert!(list["tools_in"].as_u64().unwrap() > 0);
    let calls: Vec<&Value> = b
        .iter()
        .filter(|d| d["method"] == "tools/call" && d["direction"] == "request")
        .collect();
    assert!(!calls.is_empty());
    for call in calls {
        assert_eq!(call["decision"], "deny");
        assert_eq!(call["error_code"], "SCHEMA_CHANGED");
    }
    let changed = gw
        .out
        .audits
        .iter()
        .find(|a| a.event == "schema.changed")
        .unwrap();
    assert!(
        changed.detail.contains_key("diff"),
        "schema.changed carries the diff summary"
    );
}

#[test]
fn release_b_under_tool_scope_withholds_each_tool_it_renamed_or_changed() {
    let config = r#"{"servers": {"everything": {"drift_scope": "tool"}}}"#;
    let names = ["everything-2025.11.25", "everything-2026.1.26"];
    let (mut gw, lines) = replay(config, "everything", &names, 13);
    golden("everything-a-then-b-tool-scope", &lines);
    let b: Vec<Value> = lines
        .iter()
        .map(|l| field(l))
        .filter(|d| d["transcript"] == names[1])
        .collect();
    let list = b
        .iter()
        .find(|d| d["method"] == "tools/list" && d["direction"] == "response")
        .unwrap();
    let view = gw.engine.admin_view(&gw.store, Some("everything")).unwrap();
    let withheld = view["withheld_tools"].as_array().unwrap();
    let (tools_in, tools_out) = (
        list["tools_in"].as_u64().unwrap(),
        list["tools_out"].as_u64().unwrap(),
    );
    let added_or_changed = withheld.iter().filter(|w| w["change"] != "removed").count() as u64;
    assert_eq!(
        (&list["schema_status"], &list["decision"]),
        (&json!("changed"), &json!("rewrite"))
    );
    // That release renamed every tool but `echo`, which it changed: nothing is left to serve.
    assert_eq!((tools_in, added_or_changed, tools_out), (13, 13, 0));
    // Every kind of change the real release made is withheld, each with its reason.
    let changes: std::collections::BTreeSet<&str> = withheld
        .iter()
        .map(|w| w["change"].as_str().unwrap())
        .collect();
    assert_eq!(
        changes.into_iter().collect::<Vec<_>>(),
        ["added", "changed", "removed"]
    );
    // The call release B's client made goes to `echo`, which changed.
    let echo = withheld.iter().find(|w| w["tool"] == "echo").unwrap();
    assert_eq!(echo["change"], "changed");
    let call = b
        .iter()
        .find(|d| d["method"] == "tools/call" && d["direction"] == "request")
        .unwrap();
    assert_eq!(
        (&call["decision"], &call["error_code"], &call["tool"]),
        (&json!("deny"), &json!("TOOL_CHANGED"), &json!("echo"))
    );
}
