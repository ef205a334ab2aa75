//! Structured denials: the tool execution error an agent can repair from (SPEC section 4).
//!
//! Main design decision: a denial is a JSON-RPC *result* with `isError: true` (HTTP 200), not
//! a protocol error, because models see tool errors and can act on them; the machine-readable
//! part lives in `structuredContent` with a fixed vocabulary of codes and actions.

use crate::status::SchemaStatus;
use serde_json::{Value, json};

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The server's tool set drifted from its baseline.
    SchemaChanged,
    /// The server awaits approval.
    SchemaPending,
    /// An admin holds the server.
    ServerQuarantined,
    /// No live list has verified yet (first use, fingerprint pin, list_changed hold).
    SchemaUnverified,
    /// The tool is not in the approved baseline.
    ToolNotApproved,
    /// The client's view of the tool is older than the approved definition.
    StaleToolSchema,
    /// Arguments do not satisfy the approved `inputSchema`.
    InvalidArguments,
    /// A policy rule refused the call.
    PolicyDenied,
    /// A result broke the approved `outputSchema` (enforce mode).
    ResultContractChanged,
}

impl ErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SchemaChanged => "SCHEMA_CHANGED",
            ErrorCode::SchemaPending => "SCHEMA_PENDING",
            ErrorCode::ServerQuarantined => "SERVER_QUARANTINED",
            ErrorCode::SchemaUnverified => "SCHEMA_UNVERIFIED",
            ErrorCode::ToolNotApproved => "TOOL_NOT_APPROVED",
            ErrorCode::StaleToolSchema => "STALE_TOOL_SCHEMA",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::ResultContractChanged => "RESULT_CONTRACT_CHANGED",
        }
    }

    /// What the agent should do next.
    pub fn required_action(self) -> &'static str {
        match self {
            ErrorCode::SchemaChanged
            | ErrorCode::SchemaPending
            | ErrorCode::ServerQuarantined
            | ErrorCode::ResultContractChanged => "admin_review",
            ErrorCode::SchemaUnverified
            | ErrorCode::StaleToolSchema
            | ErrorCode::ToolNotApproved => "refresh_tools",
            ErrorCode::InvalidArguments => "fix_arguments",
            ErrorCode::PolicyDenied => "none",
        }
    }

    /// The denial for a closed status, if the status is closed.
    pub fn for_closed(status: SchemaStatus) -> Option<ErrorCode> {
        match status {
            SchemaStatus::Changed => Some(ErrorCode::SchemaChanged),
            SchemaStatus::Pending => Some(ErrorCode::SchemaPending),
            SchemaStatus::Quarantined => Some(ErrorCode::ServerQuarantined),
            SchemaStatus::Unbaselined | SchemaStatus::Verified => None,
        }
    }
}

/// A refused call, with everything the structured error carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    /// The code.
    pub code: ErrorCode,
    /// Server id.
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// Server status at the time.
    pub status: SchemaStatus,
    /// Approved fingerprint, if any.
    pub fingerprint: Option<String>,
    /// The sentence the model reads.
    pub message: String,
    /// `refresh_tools`, `fix_arguments`, `admin_review` or `none` (usually the code's own).
    pub required_action: &'static str,
    /// Extra machine-readable fields (violations, rule index, ...).
    pub extra: serde_json::Map<String, Value>,
}

impl Denial {
    /// Whether the upstream ran the call (only result-contract errors happen after it did).
    pub fn side_effect_started(&self) -> bool {
        self.code == ErrorCode::ResultContractChanged
    }

    /// The `result` object of the JSON-RPC response.
    pub fn result(&self) -> Value {
        let mut structured = serde_json::Map::new();
        structured.insert("error_code".into(), json!(self.code.as_str()));
        structured.insert("server".into(), json!(self.server));
        structured.insert("tool".into(), json!(self.tool));
        structured.insert("schema_status".into(), json!(self.status.as_str()));
        structured.insert("required_action".into(), json!(self.required_action));
        structured.insert(
            "side_effect_started".into(),
            json!(self.side_effect_started()),
        );
        structured.insert("current_fingerprint".into(), json!(self.fingerprint));
        for (k, v) in &self.extra {
            structured.insert(k.clone(), v.clone());
        }
        json!({
            "isError": true,
            "content": [{"type": "text", "text": self.message}],
            "structuredContent": Value::Object(structured),
        })
    }

    /// The whole JSON-RPC response answering request `id`.
    pub fn response(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": self.result()})
    }
}

/// The sentence for a denial: what happened, what to do, and that nothing ran.
pub fn denial_message(code: ErrorCode, tool: &str, detail: &str) -> String {
    let what = match code {
        ErrorCode::SchemaChanged => "the server's tool definitions changed and await admin review",
        ErrorCode::SchemaPending => "the server's tools await admin approval",
        ErrorCode::ServerQuarantined => "the server is quarantined by an administrator",
        ErrorCode::SchemaUnverified => "the server's tool list has not been verified yet",
        ErrorCode::ToolNotApproved => "it is not an approved tool of this server",
        ErrorCode::StaleToolSchema => "its input contract changed",
        ErrorCode::InvalidArguments => "its arguments do not match the approved input schema",
        ErrorCode::PolicyDenied => "a policy rule refuses this call",
        ErrorCode::ResultContractChanged => "its result does not match the approved output schema",
    };
    let next = match code.required_action() {
        "refresh_tools" => " Refresh tools before retrying.",
        "fix_arguments" => " Fix the arguments and retry.",
        "admin_review" => " An administrator must review the server before it can be used.",
        _ => "",
    };
    let effect = if code == ErrorCode::ResultContractChanged {
        " The tool did run."
    } else {
        " No side effect was started."
    };
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    };
    format!("{tool} was refused: {what}{detail}.{next}{effect}")
}
