//! Audit events: one JSON object per decision or transition (docs/telemetry.md).
//!
//! Main design decision: events are built by the engine and handed to the host through the
//! [`Outputs`] sink (Envoy: a log line with a stable prefix; wasmtime hosts: an import), and
//! the engine also keeps the most recent ones in a bounded ring in the state store so that
//! `GET {prefix}audit` can serve them from any worker.

use crate::policy::status::SchemaStatus;
use crate::wire::json::put;
use serde_json::{Map, Value};

/// The stable prefix of audit lines in a host log.
pub const AUDIT_LOG_PREFIX: &str = "toolseal.audit ";
/// The stable prefix of per-message decision records in a host log (debug level).
pub const DECISION_LOG_PREFIX: &str = "toolseal.decision ";

/// `error_code` of a request refused before any check could run (HTTP 415, 400, 413, a
/// header that contradicts the body, a request the host could not hand over).
pub const REQUEST_REJECTED: &str = "REQUEST_REJECTED";

/// `error_code` of a batch element that was not forwarded because another element of the
/// batch was refused (the batch is answered locally as a whole).
pub const BATCH_REFUSED: &str = "BATCH_REFUSED";

/// One audit event.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// Event name, e.g. `schema.changed`, `call.denied`.
    pub event: &'static str,
    /// Milliseconds since the epoch.
    pub time_ms: u64,
    /// Server id.
    pub server: String,
    /// `Mcp-Session-Id`, when known.
    pub session: Option<String>,
    /// Status before.
    pub status_before: Option<SchemaStatus>,
    /// Status after.
    pub status_after: Option<SchemaStatus>,
    /// Baseline fingerprint after the event.
    pub baseline: Option<String>,
    /// Live (candidate) fingerprint after the event.
    pub live: Option<String>,
    /// Why, in words.
    pub reason: String,
    /// Event-specific fields (tool, decision, error_code, args_sha256, arguments, diff, ...).
    pub detail: Map<String, Value>,
}

impl AuditEvent {
    /// The event as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        put(&mut obj, "event", Value::from(self.event));
        put(&mut obj, "time_ms", Value::from(self.time_ms));
        put(&mut obj, "server", Value::from(self.server.as_str()));
        put(&mut obj, "session", Value::from(self.session.clone()));
        put(
            &mut obj,
            "status_before",
            Value::from(self.status_before.map(SchemaStatus::as_str)),
        );
        put(
            &mut obj,
            "status_after",
            Value::from(self.status_after.map(SchemaStatus::as_str)),
        );
        put(&mut obj, "baseline", Value::from(self.baseline.clone()));
        put(&mut obj, "live", Value::from(self.live.clone()));
        put(&mut obj, "reason", Value::from(self.reason.as_str()));
        for (k, v) in &self.detail {
            obj.insert(k.clone(), v.clone());
        }
        Value::Object(obj)
    }
}

/// What happened to one MCP message: the record `toolseal replay` prints and the access log
/// carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `request` (client → server) or `response` (server → client).
    pub direction: &'static str,
    /// JSON-RPC method (for responses: the method of the request they answer, when known);
    /// empty when unknown (a request refused before its body was read), written as null.
    pub method: String,
    /// JSON-RPC id as JSON text, or null for notifications.
    pub id: Option<String>,
    /// Server id.
    pub server: String,
    /// `Mcp-Session-Id`, when known.
    pub session: Option<String>,
    /// Server status after the message.
    pub schema_status: SchemaStatus,
    /// Tools in a `tools/list` result as the server sent it.
    pub tools_in: Option<usize>,
    /// Tools in it as forwarded to the client.
    pub tools_out: Option<usize>,
    /// Tool name of a `tools/call`.
    pub tool: Option<String>,
    /// `allow`, `deny`, `rewrite` or `pass`.
    pub decision: &'static str,
    /// Structured error code of a denial.
    pub error_code: Option<&'static str>,
    /// The stateless revision the message was decided under (MCP 2026-07-28 or later);
    /// `None` for the handshake era.
    pub protocol_version: Option<String>,
}

impl Decision {
    /// The record as one JSON object with a stable key order.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        put(&mut obj, "direction", Value::from(self.direction));
        let method = Some(self.method.as_str()).filter(|m| !m.is_empty());
        put(&mut obj, "method", Value::from(method));
        let id = self
            .id
            .as_deref()
            // From bytes, as every other parse in the core: a second reader type (`from_str`)
            // compiles serde_json's whole number parser again into the `.wasm`.
            .and_then(|t| serde_json::from_slice::<Value>(t.as_bytes()).ok())
            .unwrap_or(Value::Null);
        put(&mut obj, "id", id);
        put(&mut obj, "server", Value::from(self.server.as_str()));
        put(&mut obj, "session", Value::from(self.session.clone()));
        put(
            &mut obj,
            "schema_status",
            Value::from(self.schema_status.as_str()),
        );
        put(
            &mut obj,
            "tools_in",
            Value::from(self.tools_in.map(|n| n as u64)),
        );
        put(
            &mut obj,
            "tools_out",
            Value::from(self.tools_out.map(|n| n as u64)),
        );
        put(&mut obj, "tool", Value::from(self.tool.clone()));
        put(&mut obj, "decision", Value::from(self.decision));
        put(&mut obj, "error_code", Value::from(self.error_code));
        if let Some(version) = &self.protocol_version {
            put(&mut obj, "protocol_version", Value::from(version.as_str()));
        }
        Value::Object(obj)
    }
}

/// Counters the host exposes (Envoy: `wasmcustom.toolseal_*` in `/stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// A `tools/list` result that verified.
    ListsVerified,
    /// A `tools/list` result that showed drift.
    ListsChanged,
    /// A `tools/list` result whose tools were removed (closed server), or withheld in part (a
    /// drift contained to some tools).
    ListsFiltered,
    /// A `tools/list` result from which policy hid tools its caller may never call.
    ListsScoped,
    /// An allowed `tools/call`.
    CallsAllowed,
    /// A denied `tools/call` (also counted per error code).
    CallsDenied,
    /// A request refused before any MCP check (parse error, size, content type).
    RequestsRejected,
    /// A `tools/call` result that broke the approved `outputSchema`.
    ResultMismatches,
    /// An admin API request refused (also counted per HTTP status).
    AdminRefused,
    /// A round trip to the fleet store (etcd).
    StoreRoundTrips,
    /// A fleet store write that lost to another writer (decided again from what won).
    StoreConflicts,
    /// A fleet store call that got no usable answer (unreachable, timed out, refused).
    StoreFailures,
    /// A server message dropped rather than forwarded (per reason: `unsolicited`).
    ResponsesDropped,
    /// A `prompts/get` or `resources/read` refused (also counted per error code).
    UsesDenied,
    /// A `resources/list` answer from which screening withheld items.
    ResourcesWithheld,
}

impl Counter {
    /// The metric name (without the host's prefix).
    pub fn name(self) -> &'static str {
        match self {
            Counter::ListsVerified => "toolseal_lists_verified",
            Counter::ListsChanged => "toolseal_lists_changed",
            Counter::ListsFiltered => "toolseal_lists_filtered",
            Counter::ListsScoped => "toolseal_lists_scoped",
            Counter::CallsAllowed => "toolseal_calls_allowed",
            Counter::CallsDenied => "toolseal_calls_denied",
            Counter::RequestsRejected => "toolseal_requests_rejected",
            Counter::ResultMismatches => "toolseal_result_mismatches",
            Counter::AdminRefused => "toolseal_admin_refused",
            Counter::StoreRoundTrips => "toolseal_store_round_trips",
            Counter::StoreConflicts => "toolseal_store_conflicts",
            Counter::StoreFailures => "toolseal_store_failures",
            Counter::ResponsesDropped => "toolseal_responses_dropped",
            Counter::UsesDenied => "toolseal_uses_denied",
            Counter::ResourcesWithheld => "toolseal_resources_withheld",
        }
    }

    /// Every counter, so hosts can define them up front.
    pub const ALL: [Counter; 15] = [
        Counter::ListsVerified,
        Counter::ListsChanged,
        Counter::ListsFiltered,
        Counter::ListsScoped,
        Counter::CallsAllowed,
        Counter::CallsDenied,
        Counter::RequestsRejected,
        Counter::ResultMismatches,
        Counter::AdminRefused,
        Counter::StoreRoundTrips,
        Counter::StoreConflicts,
        Counter::StoreFailures,
        Counter::ResponsesDropped,
        Counter::UsesDenied,
        Counter::ResourcesWithheld,
    ];
}

/// Where the engine sends what it decided. Implemented by each host adapter.
pub trait Outputs {
    /// An audit event (always written).
    fn audit(&mut self, event: &AuditEvent);
    /// A per-message decision record (hosts may drop these unless debugging or replaying).
    fn decision(&mut self, decision: &Decision);
    /// Increments a counter; `detail` names a sub-counter (e.g. the error code of a denial).
    fn count(&mut self, counter: Counter, detail: Option<&str>);
}

/// An [`Outputs`] that keeps everything in memory (tests, replay, the native command).
#[derive(Debug, Default, Clone)]
pub struct CollectedOutputs {
    /// Audit events in order.
    pub audits: Vec<AuditEvent>,
    /// Decision records in order.
    pub decisions: Vec<Decision>,
    /// Counter increments in order.
    pub counts: Vec<(Counter, Option<String>)>,
}

impl Outputs for CollectedOutputs {
    fn audit(&mut self, event: &AuditEvent) {
        self.audits.push(event.clone());
    }
    fn decision(&mut self, decision: &Decision) {
        self.decisions.push(decision.clone());
    }
    fn count(&mut self, counter: Counter, detail: Option<&str>) {
        self.counts.push((counter, detail.map(str::to_string)));
    }
}
