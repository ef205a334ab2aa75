//! Where `fingerprint`, `diff` and `pin` get a tool set: a `tools/list` result
//! (`{"tools": [...]}`, also inside a JSON-RPC response), a bare array of tools, or a
//! transcript, from which the `tools/list` answers are taken (JSON or SSE bodies) and the
//! pages of the last listing are concatenated across `nextCursor`.
//!
//! Main design decision: every file goes through the strict parser (duplicate keys and
//! excessive depth refused) and an incomplete listing (a last page that still has a
//! `nextCursor`) is refused rather than fingerprinted: a partial set would pin the wrong
//! baseline.

use crate::input_error::input_error;
use anyhow::Result;
use serde_json::Value;
use std::path::Path;
use toolseal_core::transcript::{HttpExchange, parse_transcript};
use toolseal_core::wire::json::parse_strict;
use toolseal_core::wire::sse::SseParser;

/// JSON nesting accepted in input files (the parser's own ceiling).
const MAX_DEPTH: usize = 128;

/// Largest SSE event read from a recorded body.
const MAX_EVENT_BYTES: usize = 64 << 20;

/// Reads the tools of `path`.
pub fn load_tools(path: &Path) -> Result<Vec<Value>> {
    let bytes = std::fs::read(path)
        .map_err(|e| input_error(format!("cannot read {}: {e}", path.display())))?;
    let value = parse_strict(&bytes, MAX_DEPTH)
        .map_err(|e| input_error(format!("{} is not usable JSON: {e}", path.display())))?;
    tools_of(&value, &bytes).map_err(|why| input_error(format!("{}: {why}", path.display())))
}

/// The exchanges of `path` when it is a recorded transcript (`None` for a tool list: it
/// carries no request, so nothing of the caller it was listed to).
pub fn transcript_exchanges(path: &Path) -> Result<Option<Vec<HttpExchange>>> {
    let bytes = std::fs::read(path)
        .map_err(|e| input_error(format!("cannot read {}: {e}", path.display())))?;
    let value = parse_strict(&bytes, MAX_DEPTH)
        .map_err(|e| input_error(format!("{} is not usable JSON: {e}", path.display())))?;
    if !is_transcript(&value) {
        return Ok(None);
    }
    parse_transcript(&bytes)
        .map(Some)
        .map_err(|why| input_error(format!("{}: {why}", path.display())))
}

/// The tools held by a parsed file (`bytes` is its text, for transcripts).
fn tools_of(value: &Value, bytes: &[u8]) -> Result<Vec<Value>, String> {
    if is_transcript(value) {
        let exchanges = parse_transcript(bytes)?;
        return tools_from_transcript(&exchanges);
    }
    if let Some(result) = value.get("result").filter(|r| r.get("tools").is_some()) {
        return tools_array(result);
    }
    match value {
        Value::Array(items) => Ok(items.clone()),
        Value::Object(_) => tools_array(value),
        _ => Err("expected a tools/list result, an array of tools or a transcript".into()),
    }
}

fn tools_array(result: &Value) -> Result<Vec<Value>, String> {
    match result.get("tools") {
        Some(Value::Array(tools)) => Ok(tools.clone()),
        _ => Err(
            "expected a `tools` array (a tools/list result), an array of tools or a transcript"
                .into(),
        ),
    }
}

/// A transcript is an object with `exchanges`/`entries`, or an array whose elements look
/// like HTTP exchanges.
fn is_transcript(value: &Value) -> bool {
    match value {
        Value::Object(obj) => obj.contains_key("exchanges") || obj.contains_key("entries"),
        Value::Array(items) => items.first().is_some_and(|first| {
            first.get("http_method").is_some() || first.get("response_body_raw").is_some()
        }),
        _ => false,
    }
}

/// The last complete listing of a transcript: a page requested without a cursor starts a
/// listing, a page requested with one continues it.
pub fn tools_from_transcript(exchanges: &[HttpExchange]) -> Result<Vec<Value>, String> {
    let mut listing: Vec<Value> = Vec::new();
    let mut found = false;
    let mut more_pages = false;
    for exchange in exchanges {
        for (id, continues) in list_requests(&exchange.request_body) {
            for result in responses_to(exchange, &id) {
                let tools =
                    tools_array(&result).map_err(|e| format!("exchange {}: {e}", exchange.seq))?;
                if !continues {
                    listing.clear();
                }
                listing.extend(tools);
                found = true;
                more_pages = result.get("nextCursor").is_some_and(|c| !c.is_null());
            }
        }
    }
    if !found {
        return Err("the transcript holds no tools/list answer".into());
    }
    if more_pages {
        return Err("the transcript's last tools/list ends with a nextCursor whose page was not recorded; record the whole listing".into());
    }
    Ok(listing)
}

/// The tools of every `tools/list` answer in one exchange (every page it holds), and
/// whether it holds a `tools/list` answer at all.
pub fn listed_tools(exchange: &HttpExchange) -> (Vec<Value>, bool) {
    let mut tools = Vec::new();
    let mut found = false;
    for (id, _) in list_requests(&exchange.request_body) {
        for result in responses_to(exchange, &id) {
            found = true;
            if let Some(Value::Array(page)) = result.get("tools") {
                tools.extend(page.iter().cloned());
            }
        }
    }
    (tools, found)
}

/// `(id, has cursor)` of each `tools/list` request in a request body.
fn list_requests(body: &[u8]) -> Vec<(Value, bool)> {
    let Ok(value) = parse_strict(body, MAX_DEPTH) else {
        return Vec::new();
    };
    let messages = match value {
        Value::Array(items) => items,
        single => vec![single],
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/list"))
        .filter_map(|m| {
            let cursor = m
                .get("params")
                .and_then(|p| p.get("cursor"))
                .is_some_and(|c| !c.is_null());
            m.get("id").cloned().map(|id| (id, cursor))
        })
        .collect()
}

/// The `result` of every response to `id` in the exchange's response body.
fn responses_to(exchange: &HttpExchange, id: &Value) -> Vec<Value> {
    let is_sse = exchange
        .response_header("content-type")
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
    let messages: Vec<Value> = if is_sse {
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut events = parser.push(&exchange.response_body).unwrap_or_default();
        events.extend(parser.close().unwrap_or_default());
        events
            .iter()
            .filter_map(|e| e.data.as_deref())
            .filter_map(|data| parse_strict(data.as_bytes(), MAX_DEPTH).ok())
            .flat_map(|v| match v {
                Value::Array(items) => items,
                single => vec![single],
            })
            .collect()
    } else {
        match parse_strict(&exchange.response_body, MAX_DEPTH) {
            Ok(Value::Array(items)) => items,
            Ok(single) => vec![single],
            Err(_) => Vec::new(),
        }
    };
    messages
        .into_iter()
        .filter(|m| m.get("id") == Some(id))
        .filter_map(|m| m.get("result").cloned())
        .collect()
}
