//! What an exchange amounted to, in a form two runs can compare: what reached the upstream,
//! what the client got, what the plugin decided and audited, without what only says *when*
//! (`time_ms`, `drift_at_ms`, `updated_ms`...). And the lifecycle records a run leaves in
//! shared data, in the same form.
//!
//! Main design decision: a multi-worker run is judged against single-worker runs of the
//! same exchanges, so a signature keeps everything a worker decides and nothing the clock
//! or the worker's identity decides: two runs that decided the same have equal signatures.
//! It is taken per phase (request, response): the grain at which a single worker
//! interleaves streams in the reference.

use crate::abi::shared_store::SharedStore;
use crate::cli::tool_source::listed_tools;
use crate::replay::exchange::{ExchangeOutcome, Stop};
use crate::replay::records::{PluginRecord, parse_logs};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use toolseal_core::policy::fingerprint::{FingerprintFields, sha256_hex, tool_digest};
use toolseal_core::transcript::HttpExchange;
use toolseal_core::wire::json::parse_strict;

/// Prefix of the shared-data keys holding server records.
pub const RECORD_PREFIX: &str = "ts/v1/srv/";

/// The comparable form of one exchange's outcome, phase by phase (JSON texts, keys sorted).
///
/// The request and the response of one exchange are decided in separate callbacks, and
/// another stream may run in between, on another worker or on the same one: a list
/// requested while the server was `verified` may be answered after an admin quarantined
/// it. So each phase is compared on its own.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// The request phase: its decisions and audit events, whether the request reached the
    /// upstream, and the local answer if the plugin gave one then.
    pub request: String,
    /// The response phase and the end of the stream: its decisions and audit events, and
    /// what the client got.
    pub response: String,
}

/// The signature of one exchange (`outcome` may be a pending exchange's: then only its
/// `request` is meaningful). An exchange whose request the plugin logged no MCP decision
/// for (an admin API request) is compared without its body: that answer is a view of the
/// record read after the action, which another worker may already have moved on (the
/// action itself is in the audit events).
pub fn exchange_signature(outcome: &ExchangeOutcome) -> Signature {
    let split = outcome.request_log_count.min(outcome.logs.len());
    let (request_logs, response_logs) = outcome.logs.split_at(split);
    let request_records = parse_logs(request_logs).unwrap_or_default();
    let response_records = parse_logs(response_logs).unwrap_or_default();
    let mcp = request_records
        .iter()
        .any(|r| matches!(r, PluginRecord::Decision(_)));
    let answered_early = !outcome.upstream_contacted;
    let answer = http_summary(outcome, mcp);
    let request = phase_json(
        &request_records,
        json!({
            "upstream": outcome.upstream_contacted,
            "answer": if answered_early { answer.clone() } else { Value::Null },
        }),
    );
    let response = phase_json(
        &response_records,
        json!({"answer": if answered_early { Value::Null } else { answer }}),
    );
    Signature { request, response }
}

/// One phase's records (times stripped) beside `http`, as a JSON text.
fn phase_json(records: &[PluginRecord], http: Value) -> String {
    let (decisions, audits): (Vec<&PluginRecord>, Vec<&PluginRecord>) = records
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
        "http": http,
        "decisions": values(decisions),
        "audit": values(audits),
    })
    .to_string()
}

/// The status and (`with_body`) the body the client got (a JSON body without its times),
/// and how the exchange stopped early.
fn http_summary(outcome: &ExchangeOutcome, with_body: bool) -> Value {
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
        _ if !with_body => Value::Null,
        Ok(value) => Value::from(sha256_hex(strip_times(&value).to_string().as_bytes())),
        Err(_) => Value::from(sha256_hex(body)),
    };
    let stop = match &outcome.stop {
        None => Value::Null,
        Some(Stop::LocalResponse) => Value::from("local_reply"),
        Some(Stop::Reset) => Value::from("reset"),
        Some(Stop::Stalled(_)) => Value::from("stalled"),
    };
    json!({
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
    outcome: &ExchangeOutcome,
    fields: &FingerprintFields,
) -> Option<Vec<(String, String)>> {
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
