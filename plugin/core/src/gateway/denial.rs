//! Structured denials: the tool execution error an agent can repair from (a code, the rule
//! that refused, and what to do next).
//!
//! Main design decision: a denial is a JSON-RPC *result* with `isError: true` (HTTP 200), not
//! a protocol error, because models see tool errors and can act on them; the machine-readable
//! part lives in `structuredContent` with a fixed vocabulary of codes and actions.

use crate::policy::status::SchemaStatus;
use crate::wire::json::put;
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
    /// The prompt is not in the approved catalogue (the server seals its prompts).
    PromptNotApproved,
    /// The tool is new, changed or gone since the approved baseline, and withheld until an
    /// admin reviews the drift (`drift_scope: "tool"`: the server's other tools serve on).
    ToolChanged,
    /// The client's view of the tool is older than the approved definition.
    StaleToolSchema,
    /// Arguments do not satisfy the approved `inputSchema`.
    InvalidArguments,
    /// A policy rule refused the call.
    PolicyDenied,
    /// A result broke the approved `outputSchema` (enforce mode).
    ResultContractChanged,
    /// A `resources/read` names a URI the gateway never lists: it climbs out of its root, or
    /// names this machine, a link-local or a cloud metadata address.
    ResourceNotListed,
    /// A `resources/read` of a server whose reads are limited to what it listed
    /// (`resources: "listed"`) names a URI it did not list through this gateway and no
    /// approved resource template names.
    ResourceNotApproved,
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
            ErrorCode::PromptNotApproved => "PROMPT_NOT_APPROVED",
            ErrorCode::ToolChanged => "TOOL_CHANGED",
            ErrorCode::StaleToolSchema => "STALE_TOOL_SCHEMA",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::ResultContractChanged => "RESULT_CONTRACT_CHANGED",
            ErrorCode::ResourceNotListed => "RESOURCE_NOT_LISTED",
            ErrorCode::ResourceNotApproved => "RESOURCE_NOT_APPROVED",
        }
    }

    /// What the agent should do next.
    pub fn required_action(self) -> &'static str {
        match self {
            ErrorCode::SchemaChanged
            | ErrorCode::SchemaPending
            | ErrorCode::ServerQuarantined
            | ErrorCode::ToolChanged
            | ErrorCode::ResultContractChanged => "admin_review",
            ErrorCode::SchemaUnverified
            | ErrorCode::StaleToolSchema
            | ErrorCode::ToolNotApproved => "refresh_tools",
            ErrorCode::PromptNotApproved => "refresh_prompts",
            ErrorCode::ResourceNotApproved => "refresh_resources",
            ErrorCode::InvalidArguments => "fix_arguments",
            ErrorCode::PolicyDenied | ErrorCode::ResourceNotListed => "none",
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

/// The JSON-RPC error code of a refused use of a prompt or resource (in the range the MCP
/// revisions leave to servers, below the codes 2026-07-28 reserves).
pub const USE_REFUSED: i64 = -32003;

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

    /// The machine-readable fields of the denial; `item` names the member that holds what was
    /// refused (`tool`, `prompt`, `resource`).
    fn structured(&self, item: &str) -> serde_json::Map<String, Value> {
        let mut structured = serde_json::Map::new();
        put(
            &mut structured,
            "error_code",
            Value::from(self.code.as_str()),
        );
        put(&mut structured, "server", Value::from(self.server.as_str()));
        put(&mut structured, item, Value::from(self.tool.as_str()));
        put(
            &mut structured,
            "schema_status",
            Value::from(self.status.as_str()),
        );
        put(
            &mut structured,
            "required_action",
            Value::from(self.required_action),
        );
        put(
            &mut structured,
            "side_effect_started",
            Value::from(self.side_effect_started()),
        );
        put(
            &mut structured,
            "current_fingerprint",
            Value::from(self.fingerprint.clone()),
        );
        for (k, v) in &self.extra {
            structured.insert(k.clone(), v.clone());
        }
        structured
    }

    /// The JSON-RPC error answering request `id` that used a prompt or resource (`item`:
    /// `prompt` or `resource`, the member of `data` naming it): the denial's fields in `data`,
    /// its sentence as the message.
    pub fn use_error(&self, id: &Value, item: &str) -> Value {
        let mut error = serde_json::Map::new();
        put(&mut error, "code", Value::from(USE_REFUSED));
        put(&mut error, "message", Value::from(self.message.as_str()));
        let mut data = self.structured(item);
        if item == "resource" {
            // Where a client looks for the URI of a read that found nothing (SEP-2164).
            put(&mut data, "uri", Value::from(self.tool.as_str()));
        }
        put(&mut error, "data", Value::Object(data));
        let mut response = serde_json::Map::new();
        put(&mut response, "jsonrpc", Value::from("2.0"));
        put(&mut response, "id", id.clone());
        put(&mut response, "error", Value::Object(error));
        Value::Object(response)
    }

    /// The `result` object of the JSON-RPC response; `stateless`: answering a request made
    /// under MCP 2026-07-28 or later, where it carries `"resultType": "complete"`.
    pub fn result(&self, stateless: bool) -> Value {
        let structured = self.structured("tool");
        let mut text = serde_json::Map::new();
        put(&mut text, "type", Value::from("text"));
        put(&mut text, "text", Value::from(self.message.as_str()));
        let mut result = serde_json::Map::new();
        put(&mut result, "isError", Value::from(true));
        put(
            &mut result,
            "content",
            Value::from(vec![Value::Object(text)]),
        );
        put(&mut result, "structuredContent", Value::Object(structured));
        if stateless {
            // MCP 2026-07-28 requires every result to say what it is; a denial is final.
            put(&mut result, "resultType", Value::from("complete"));
        }
        Value::Object(result)
    }

    /// The whole JSON-RPC response answering request `id` (`stateless`: see
    /// [`Denial::result`]).
    pub fn response(&self, id: &Value, stateless: bool) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": self.result(stateless)})
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
        ErrorCode::PromptNotApproved => "it is not an approved prompt of this server",
        ErrorCode::ToolChanged => {
            "its definition differs from the approved baseline and awaits admin review"
        }
        ErrorCode::StaleToolSchema => "its input contract changed",
        ErrorCode::InvalidArguments => "its arguments do not match the approved input schema",
        ErrorCode::PolicyDenied => "a policy rule refuses this call",
        ErrorCode::ResultContractChanged => "its result does not match the approved output schema",
        ErrorCode::ResourceNotListed => {
            "its URI is one the gateway never lists: it climbs out of its root or names this machine, a link-local or a metadata address"
        }
        ErrorCode::ResourceNotApproved => {
            "its URI was not listed by this server and no approved resource template names it"
        }
    };
    let next = match code.required_action() {
        "refresh_tools" => " Refresh tools before retrying.",
        "refresh_prompts" => " List prompts again before retrying.",
        "refresh_resources" => " List resources again before retrying.",
        "fix_arguments" => " Fix the arguments and retry.",
        "admin_review" if code == ErrorCode::ToolChanged => {
            " An administrator must review the change before it can be used."
        }
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
