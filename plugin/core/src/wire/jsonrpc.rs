//! JSON-RPC 2.0 frames as MCP uses them: requests, notifications, responses, batches.
//!
//! Main design decision: a frame is accepted only when it is unambiguous. Bytes go through
//! the strict parser ([`crate::wire::json::parse_strict`]: no duplicate keys, bounded depth), then
//! each message must have exactly the shape JSON-RPC 2.0 prescribes (`"jsonrpc": "2.0"`, a
//! string `method`, structured `params`, exactly one of `result`/`error`); anything else is
//! refused rather than guessed at, because the plugin must read a message exactly as the
//! upstream server will. Ids keep their JSON value: the string `"1"` and the number `1` are
//! different ids. A batch (MCP 2025-03-26) is refused as a whole when any element is invalid.

use crate::wire::json::{self, JsonError};
use serde_json::{Map, Value, json};
use std::fmt;

/// JSON-RPC error code: the body is not valid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC error code: valid JSON, but not a valid JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC error code: the method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC error code: the method's parameters are invalid.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC error code: the server (here: the plugin) failed internally.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28 error code: the request's HTTP headers do not match its body (answered
/// with HTTP 400).
pub const HEADER_MISMATCH: i64 = -32020;

/// The largest batch accepted. A batch is answered locally as a whole when one element is
/// denied, so its size bounds the work per request; real clients send a handful.
pub const MAX_BATCH: usize = 256;

/// One JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call that expects a response (`id` is a string or a number).
    Request {
        /// The request id, as sent.
        id: Value,
        /// The method name, e.g. `tools/call`.
        method: String,
        /// `params` (an object or an array) when present.
        params: Option<Value>,
    },
    /// A call without `id`: no response follows.
    Notification {
        /// The method name, e.g. `notifications/tools/list_changed`.
        method: String,
        /// `params` (an object or an array) when present.
        params: Option<Value>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers (a string or a number).
        id: Value,
        /// The `result` member.
        result: Value,
    },
    /// An error response.
    Error {
        /// The id of the request it answers; `null` when the request could not be read.
        id: Value,
        /// The `error` member: an object with an integer `code` and a string `message`.
        error: Value,
    },
}

impl Message {
    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } | Message::Error { .. } => None,
        }
    }

    /// The id of a request or response (`None` for a notification).
    pub fn id(&self) -> Option<&Value> {
        match self {
            Message::Request { id, .. }
            | Message::Response { id, .. }
            | Message::Error { id, .. } => Some(id),
            Message::Notification { .. } => None,
        }
    }

    /// The message as a JSON object (`jsonrpc` first is not guaranteed: key order is the
    /// serializer's).
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Message::Request { id, method, params } => {
                obj.insert("id".into(), id.clone());
                obj.insert("method".into(), Value::from(method.as_str()));
                if let Some(params) = params {
                    obj.insert("params".into(), params.clone());
                }
            }
            Message::Notification { method, params } => {
                obj.insert("method".into(), Value::from(method.as_str()));
                if let Some(params) = params {
                    obj.insert("params".into(), params.clone());
                }
            }
            Message::Response { id, result } => {
                obj.insert("id".into(), id.clone());
                obj.insert("result".into(), result.clone());
            }
            Message::Error { id, error } => {
                obj.insert("id".into(), id.clone());
                obj.insert("error".into(), error.clone());
            }
        }
        Value::Object(obj)
    }
}

/// A whole HTTP body: one message, or a batch (array) of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A single message.
    Single(Message),
    /// A JSON-RPC batch of 1 to [`MAX_BATCH`] messages.
    Batch(Vec<Message>),
}

impl Payload {
    /// The messages of the payload, in order.
    pub fn messages(&self) -> &[Message] {
        match self {
            Payload::Single(message) => std::slice::from_ref(message),
            Payload::Batch(messages) => messages,
        }
    }
}

/// Why a body is not an acceptable JSON-RPC payload.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameError {
    /// The body is not strict JSON (answer with [`PARSE_ERROR`]).
    Json(JsonError),
    /// Valid JSON, but not a JSON-RPC 2.0 message; the text says what is wrong (answer with
    /// [`INVALID_REQUEST`]).
    NotJsonRpc(String),
    /// The body is an empty array.
    EmptyBatch,
    /// The batch has more than [`MAX_BATCH`] elements.
    BatchTooLarge,
    /// A method's `params` are not what it requires, e.g. a `tools/call` without a string
    /// `name` (answer with [`INVALID_PARAMS`]).
    InvalidParams(String),
}

impl FrameError {
    /// The JSON-RPC error code that answers this error.
    pub fn code(&self) -> i64 {
        match self {
            FrameError::Json(_) => PARSE_ERROR,
            FrameError::InvalidParams(_) => INVALID_PARAMS,
            FrameError::NotJsonRpc(_) | FrameError::EmptyBatch | FrameError::BatchTooLarge => {
                INVALID_REQUEST
            }
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Json(err) => write!(f, "the body is not valid JSON: {err}"),
            FrameError::NotJsonRpc(why) => write!(f, "not a JSON-RPC 2.0 message: {why}"),
            FrameError::EmptyBatch => write!(f, "an empty JSON-RPC batch is invalid"),
            FrameError::BatchTooLarge => write!(
                f,
                "a JSON-RPC batch may hold at most {MAX_BATCH} messages; send smaller batches"
            ),
            FrameError::InvalidParams(why) => write!(f, "invalid params: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Parses an HTTP body (request or response) as a JSON-RPC payload, strictly
/// (`max_depth`: nesting limit of [`crate::wire::json::parse_strict`]).
pub fn parse_payload(bytes: &[u8], max_depth: usize) -> Result<Payload, FrameError> {
    match json::parse_strict(bytes, max_depth).map_err(FrameError::Json)? {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(FrameError::EmptyBatch);
            }
            if items.len() > MAX_BATCH {
                return Err(FrameError::BatchTooLarge);
            }
            let mut messages = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                let message = message_from_value(item).map_err(|err| match err {
                    FrameError::NotJsonRpc(why) => {
                        FrameError::NotJsonRpc(format!("batch element {index}: {why}"))
                    }
                    other => other,
                })?;
                messages.push(message);
            }
            Ok(Payload::Batch(messages))
        }
        value => message_from_value(value).map(Payload::Single),
    }
}

/// Reads one JSON-RPC 2.0 message from a parsed value. Members other than `jsonrpc`, `id`,
/// `method`, `params`, `result` and `error` are ignored.
pub fn message_from_value(value: Value) -> Result<Message, FrameError> {
    let Value::Object(mut obj) = value else {
        return Err(not_rpc("expected an object"));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(not_rpc(r#""jsonrpc" must be "2.0""#));
    }
    let id = obj.remove("id");
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return Err(not_rpc(r#""method" must be a string"#));
        };
        if obj.contains_key("result") || obj.contains_key("error") {
            return Err(not_rpc(r#"a request cannot have "result" or "error""#));
        }
        let params = match obj.remove("params") {
            None => None,
            Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
            Some(_) => return Err(not_rpc(r#""params" must be an object or an array"#)),
        };
        return Ok(match id {
            None => Message::Notification { method, params },
            Some(id) => Message::Request {
                id: check_id(id)?,
                method,
                params,
            },
        });
    }
    let Some(id) = id else {
        return Err(not_rpc(r#"expected "method" (request) or "id" (response)"#));
    };
    match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) => Ok(Message::Response {
            id: check_id(id)?,
            result,
        }),
        (None, Some(error)) => {
            check_error_object(&error)?;
            let id = if id.is_null() { id } else { check_id(id)? };
            Ok(Message::Error { id, error })
        }
        (Some(_), Some(_)) => Err(not_rpc(
            r#"a response cannot have both "result" and "error""#,
        )),
        (None, None) => Err(not_rpc(r#"a response needs "result" or "error""#)),
    }
}

fn not_rpc(why: &str) -> FrameError {
    FrameError::NotJsonRpc(why.to_owned())
}

/// Ids are strings or numbers (MCP forbids `null` except on error responses).
fn check_id(id: Value) -> Result<Value, FrameError> {
    match id {
        Value::String(_) | Value::Number(_) => Ok(id),
        _ => Err(not_rpc(r#""id" must be a string or a number"#)),
    }
}

fn check_error_object(error: &Value) -> Result<(), FrameError> {
    let code_ok = error.get("code").is_some_and(|c| c.is_i64() || c.is_u64());
    let message_ok = error.get("message").is_some_and(Value::is_string);
    if error.is_object() && code_ok && message_ok {
        Ok(())
    } else {
        Err(not_rpc(
            r#""error" must be an object with an integer "code" and a string "message""#,
        ))
    }
}

/// A JSON-RPC error response: `{"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}}`.
pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A JSON-RPC response carrying `result` for request `id`.
pub fn answer(id: &Value, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Whether a response id answers a request id the way a JSON-RPC client matches them: equal
/// values, numbers of equal value (`7` and `7.0`), or a number and the decimal integer
/// string a server echoed for it (the TypeScript SDK looks an answer up under `Number(id)`,
/// so `"7"` answers request `7` for it). An id that matches nothing is dropped as an answer
/// to no request, so a looser spelling a client might also accept (`"0x7"`) is never passed
/// on unchecked: at worst its client waits.
pub fn same_id(request: &Value, response: &Value) -> bool {
    if request == response {
        return true;
    }
    match (id_number(request), id_number(response)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The value of a number id, or of a string id that spells a decimal integer (surrounding
/// whitespace allowed).
fn id_number(id: &Value) -> Option<f64> {
    match id {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<i64>().ok().map(|n| n as f64),
        _ => None,
    }
}

/// The target of a `tools/call`: the tool name and its arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolCall<'a> {
    /// `params.name`.
    pub name: &'a str,
    /// `params.arguments` (an object) when present.
    pub arguments: Option<&'a Value>,
}

/// Reads the `params` of a `tools/call` request. Invalid: no params, params that are not an
/// object, a missing or non-string `name`, or `arguments` that is present but not an object
/// (`null` included).
pub fn tool_call(params: Option<&Value>) -> Result<ToolCall<'_>, FrameError> {
    let Some(Value::Object(params)) = params else {
        return Err(FrameError::InvalidParams(
            "tools/call needs a params object".to_owned(),
        ));
    };
    let Some(Value::String(name)) = params.get("name") else {
        return Err(FrameError::InvalidParams(
            "tools/call needs a string params.name".to_owned(),
        ));
    };
    let arguments = match params.get("arguments") {
        None => None,
        Some(args @ Value::Object(_)) => Some(args),
        Some(_) => {
            return Err(FrameError::InvalidParams(
                "tools/call params.arguments must be an object".to_owned(),
            ));
        }
    };
    Ok(ToolCall { name, arguments })
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
