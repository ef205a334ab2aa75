//! What an exchange amounted to, in a form two runs can compare: what reached the upstream,
//! what the client got, what the plugin decided and audited, without what only says *when*
//! (`time_ms`, `drift_at_ms`, `updated_ms`...). And the lifecycle records a run leaves in
//! shared data, in the same form.
//!
//! Main design decision: a multi-worker run is judged against single-worker runs of the
//! same exchanges, so a signature keeps everything a worker decides and nothing the clock
//! or the worker's identity decides: two runs that decided the same have equal signatures.

use crate::abi::shared_store::SharedStore;
use crate::cli::tool_source::listed_tools;
use crate::replay::ExchangeReport;
use crate::replay::exchange::Stop;
use crate::replay::records::PluginRecord;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use toolseal_core::policy::fingerprint::{FingerprintFields, sha256_hex, tool_digest};
use toolseal_core::transcript::HttpExchange;
use toolseal_core::wire::json::parse_strict;

/// Prefix of the shared-data keys holding server records.
pub const RECORD_PREFIX: &str = "ts/v1/srv/";

/// The comparable form of one exchange's outcome (a JSON text, keys sorted).
pub fn exchange_signature(report: &ExchangeReport) -> String {
    let (decisions, audits): (Vec<&PluginRecord>, Vec<&PluginRecord>) = report
        .records
        .iter()
        .partition(|r| matches!(r, PluginRecord::Decision(_)));
    let values = |records: Vec<&PluginRecord>| -> Vec<Value> {
        records
            .into_iter()
            .map(|r| match r {
                PluginRecord::Decision(fields) => strip_times(&Value::Object(fields.clone())),
                PluginRecord::Audit(event) => strip_times(event),
            })
            .collect()
    };
    json!({
        "http": http_summary(report),
        "decisions": values(decisions),
        "audit": values(audits),
    })
    .to_string()
}

/// Whether the request reached the upstream, the status and body the client got (a JSON
/// body without its times), how the exchange stopped early.
fn http_summary(report: &ExchangeReport) -> Value {
    let outcome = &report.outcome;
    let (status, body) = match (&outcome.local_response, &outcome.stop) {
        (Some(reply), Some(Stop::LocalResponse)) => (Some(reply.status), reply.body.as_slice()),
        _ => (
            outcome
                .response_headers
                .as_ref()
                .and_then(|h| h.get(b":status"))
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<u32>().ok()),
            outcome.response_body.as_slice(),
        ),
    };
    let body = match parse_strict(body, 128) {
        Ok(value) => sha256_hex(strip_times(&value).to_string().as_bytes()),
        Err(_) => sha256_hex(body),
    };
    let stop = match &outcome.stop {
        None => Value::Null,
        Some(Stop::LocalResponse) => Value::from("local_reply"),
        Some(Stop::Reset) => Value::from("reset"),
        Some(Stop::Stalled(_)) => Value::from("stalled"),
    };
    json!({
        "upstream": outcome.upstream_contacted,
        "status": status,
        "stop": stop,
        "body": body,
    })
}

/// `value` without any member named `time_ms` or ending in `_ms` (times, not decisions).
pub fn strip_times(value: &Value) -> Value {
    match value {
        Value::Object(obj) => Value::Object(
            obj.iter()
                .filter(|(k, _)| !k.ends_with("_ms"))
                .map(|(k, v)| (k.clone(), strip_times(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_times).collect()),
        other => other.clone(),
    }
}

/// The `(name, digest)` of every tool the client received in `tools/list` answers of this
/// exchange (`recorded` gives the request the answers belong to); `None` when the client
/// got no `tools/list` answer.
pub fn delivered_tools(
    recorded: &HttpExchange,
    report: &ExchangeReport,
    fields: &FingerprintFields,
) -> Option<Vec<(String, String)>> {
    let outcome = &report.outcome;
    let (body, headers) = match (&outcome.local_response, &outcome.stop) {
        (Some(reply), Some(Stop::LocalResponse)) => (reply.body.clone(), Vec::new()),
        _ => (
            outcome.response_body.clone(),
            outcome
                .response_headers
                .as_ref()
                .and_then(|h| h.get(b"content-type"))
                .map(|t| {
                    vec![(
                        "content-type".to_owned(),
                        String::from_utf8_lossy(t).into_owned(),
                    )]
                })
                .unwrap_or_default(),
        ),
    };
    let seen = HttpExchange {
        response_body: body,
        response_headers: headers,
        ..recorded.clone()
    };
    let (tools, found) = listed_tools(&seen);
    found.then(|| {
        tools
            .iter()
            .map(|tool| {
                let name = tool
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let digest = tool_digest(tool, fields).unwrap_or_else(|e| format!("invalid: {e}"));
                (name, digest)
            })
            .collect()
    })
}

/// Every server record in `store`, by server id, without its times.
pub fn records(store: &SharedStore) -> BTreeMap<String, Value> {
    store
        .entries()
        .into_iter()
        .filter_map(|(key, value)| {
            let key = String::from_utf8(key).ok()?;
            let server = key.strip_prefix(RECORD_PREFIX)?.to_owned();
            let record = parse_strict(&value, 128).ok()?;
            Some((server, strip_times(&record)))
        })
        .collect()
}

/// The comparable form of the records a run ends with.
pub fn final_state(store: &SharedStore) -> String {
    Value::Object(records(store).into_iter().collect()).to_string()
}
