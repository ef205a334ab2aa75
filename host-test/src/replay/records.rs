//! The plugin's observable contract, read from its log: `toolseal.audit {json}` lines (info)
//! and, at debug level, one `toolseal.decision {json}` line per MCP message; and the lines
//! `toolseal replay` prints for them.
//!
//! Main design decision: output lines are written by hand in a fixed key order
//! ([`DECISION_KEYS`], then any further fields of the record in sorted order) rather than
//! through a map type, so expectation files diff line by line and stay stable whatever
//! serde_json's map ordering.

use super::exchange::{ExchangeOutcome, Stop};
use crate::abi::state::LogEntry;
use serde_json::{Map, Value};
use toolseal_core::policy::fingerprint::sha256_hex;
use toolseal_core::state::audit::{AUDIT_LOG_PREFIX, DECISION_LOG_PREFIX};

/// The fields of a decision record, in output order (after `transcript` and `seq`).
pub const DECISION_KEYS: [&str; 10] = [
    "direction",
    "method",
    "id",
    "server",
    "session",
    "schema_status",
    "tools_in",
    "tools_out",
    "decision",
    "error_code",
];

/// One structured line of the plugin's log.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginRecord {
    /// A per-message decision record.
    Decision(Map<String, Value>),
    /// An audit event.
    Audit(Value),
}

/// A structured log line the replay could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// The offending line.
    pub line: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the plugin logged an unreadable record ({}): {}",
            self.why, self.line
        )
    }
}

impl std::error::Error for RecordError {}

/// Extracts the decision records and audit events from `logs`, in order; other lines are
/// ignored.
pub fn parse_logs(logs: &[LogEntry]) -> Result<Vec<PluginRecord>, RecordError> {
    let mut records = Vec::new();
    for entry in logs {
        let message = entry.message.as_str();
        let (json, is_decision) = if let Some(rest) = message.strip_prefix(DECISION_LOG_PREFIX) {
            (rest, true)
        } else if let Some(rest) = message.strip_prefix(AUDIT_LOG_PREFIX) {
            (rest, false)
        } else {
            continue;
        };
        let fail = |why: String| RecordError {
            line: message.to_owned(),
            why,
        };
        let value: Value =
            serde_json::from_str(json).map_err(|e| fail(format!("not JSON: {e}")))?;
        records.push(if is_decision {
            match value {
                Value::Object(map) => PluginRecord::Decision(map),
                _ => return Err(fail("a decision record must be a JSON object".into())),
            }
        } else {
            PluginRecord::Audit(value)
        });
    }
    Ok(records)
}

/// The `seq` value printed for an exchange: a number when the recording's label is one.
pub fn seq_value(seq: &str) -> Value {
    seq.parse::<u64>()
        .map_or_else(|_| Value::String(seq.to_owned()), Value::from)
}

/// One output line for a decision record.
pub fn decision_line(transcript: &str, seq: &Value, record: &Map<String, Value>) -> String {
    let transcript = Value::String(transcript.to_owned());
    let mut fields: Vec<(&str, &Value)> = vec![("transcript", &transcript), ("seq", seq)];
    for key in DECISION_KEYS {
        fields.push((key, record.get(key).unwrap_or(&Value::Null)));
    }
    for (key, value) in record {
        if !DECISION_KEYS.contains(&key.as_str()) {
            fields.push((key, value));
        }
    }
    write_object(&fields)
}

/// One output line for an audit event (`--audit`).
pub fn audit_line(transcript: &str, seq: &Value, event: &Value) -> String {
    let transcript = Value::String(transcript.to_owned());
    write_object(&[("transcript", &transcript), ("seq", seq), ("audit", event)])
}

/// Writes `{"k":v,...}` in the given order.
fn write_object(fields: &[(&str, &Value)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String((*key).to_owned()).to_string());
        out.push(':');
        out.push_str(&value.to_string());
    }
    out.push('}');
    out
}

/// One output line for the HTTP outcome of an exchange (`--http`): whether the upstream
/// was contacted, the status and the SHA-256 of the body the client got, and how the
/// exchange stopped early (`local_reply`, `reset`, `stalled`), if it did.
pub fn http_line(transcript: &str, seq: &Value, outcome: &ExchangeOutcome) -> String {
    let (status, body) = match (&outcome.local_response, &outcome.stop) {
        (Some(reply), Some(Stop::LocalResponse)) => {
            (Value::from(reply.status), reply.body.as_slice())
        }
        _ => {
            let status = outcome
                .response_headers
                .as_ref()
                .and_then(|h| h.get(b":status"))
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<u32>().ok());
            (
                status.map_or(Value::Null, Value::from),
                outcome.response_body.as_slice(),
            )
        }
    };
    let stop = match &outcome.stop {
        None => Value::Null,
        Some(Stop::LocalResponse) => Value::from("local_reply"),
        Some(Stop::Reset) => Value::from("reset"),
        Some(Stop::Stalled(_)) => Value::from("stalled"),
    };
    let http = serde_json::json!({
        "upstream": outcome.upstream_contacted,
        "status": status,
        "stop": stop,
        "body_sha256": sha256_hex(body),
    });
    let transcript = Value::String(transcript.to_owned());
    write_object(&[("transcript", &transcript), ("seq", seq), ("http", &http)])
}
