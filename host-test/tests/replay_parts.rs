//! Pure parts of the replay: chunk cuts, decision-line layout, expectation diffs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::{Value, json};
use toolseal::abi::state::LogEntry;
use toolseal::abi::types::LogLevel;
use toolseal::replay::chunks::split;
use toolseal::replay::expect::line_diff;
use toolseal::replay::records::{PluginRecord, audit_line, decision_line, parse_logs, seq_value};

#[test]
fn chunks_cut_between_cr_and_lf_and_inside_utf8() {
    let body = "data: é\r\n\r\n".as_bytes();
    let chunks = split(body, 4);
    assert_eq!(chunks.concat(), body);
    let cuts: Vec<usize> = chunks
        .iter()
        .scan(0, |at, c| {
            *at += c.len();
            Some(*at)
        })
        .collect();
    // "data: " is bytes 0..6, "é" 6..8, then \r\n\r\n at 8..12: cuts every 4 bytes (4, 8),
    // inside "é" (7), between each \r and \n (9, 11), and the end (12).
    assert_eq!(cuts, vec![4, 7, 8, 9, 11, 12]);
    assert!(chunks.iter().any(|c| *c == b"\r"));
    assert_eq!(split(body, 0), vec![body]);
    assert!(split(b"", 4).is_empty());
}

#[test]
fn decision_lines_have_a_fixed_key_order() {
    let record = json!({"tool": "echo", "error_code": "SCHEMA_CHANGED", "decision": "deny", "method": "tools/call",
        "direction": "request", "id": 3, "server": "s", "session": null, "schema_status": "changed"});
    let Value::Object(fields) = record else {
        panic!()
    };
    assert_eq!(
        decision_line("t", &seq_value("4"), &fields),
        r#"{"transcript":"t","seq":4,"direction":"request","method":"tools/call","id":3,"server":"s","session":null,"schema_status":"changed","tools_in":null,"tools_out":null,"decision":"deny","error_code":"SCHEMA_CHANGED","tool":"echo"}"#
    );
    assert_eq!(seq_value("p1"), json!("p1"));
    assert_eq!(
        audit_line("t", &Value::Null, &json!({"event": "config.loaded"})),
        r#"{"transcript":"t","seq":null,"audit":{"event":"config.loaded"}}"#
    );
}

#[test]
fn log_records_are_parsed_and_garbage_refused() {
    let entry = |m: &str| LogEntry {
        level: LogLevel::Info,
        message: m.into(),
    };
    let logs = [
        entry("toolseal.audit {\"event\":\"x\"}"),
        entry("unrelated"),
        entry("toolseal.decision {\"decision\":\"pass\"}"),
    ];
    let records = parse_logs(&logs).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0], PluginRecord::Audit(json!({"event": "x"})));
    assert!(
        matches!(&records[1], PluginRecord::Decision(m) if m.get("decision") == Some(&json!("pass")))
    );
    let err = parse_logs(&[entry("toolseal.decision [1]")]).unwrap_err();
    assert_eq!(err.why, "a decision record must be a JSON object");
    assert!(parse_logs(&[entry("toolseal.audit {")]).is_err());
}

#[test]
fn line_diff_marks_removed_and_added_lines() {
    let expected = ["a", "b", "c", "d"];
    let actual = ["a", "x", "c", "d", "e"];
    assert_eq!(
        line_diff(&expected, &actual),
        "@@ first difference at line 2 @@\n-b\n+x\n c\n d\n+e\n"
    );
}
