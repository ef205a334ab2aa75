//! Lists a server's tools over MCP Streamable HTTP (`initialize`, `tools/list` page by page),
//! to obtain the definitions an approval pins as a lock.
//!
//! Main design decision: the admin API reports fingerprints and a classified diff, not the
//! candidate's definitions, so the console lists the server itself and trusts the result only
//! after its fingerprint equals the one every Envoy reported (the caller checks it): what is
//! locked is by construction what the fleet saw. Every answer goes through the strict parser,
//! an error or an incomplete listing is an error, and the page count is bounded.

use super::http_client::{self, HttpUrl, Response};
use serde_json::{Value, json};
use std::time::Duration;
use toolseal_core::wire::json::parse_strict;
use toolseal_core::wire::sse::SseParser;

/// Most `tools/list` pages followed.
const MAX_PAGES: usize = 100;

/// The revision the console asks for (the server may answer an older one).
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Largest SSE event read.
const MAX_EVENT_BYTES: usize = http_client::MAX_RESPONSE_BYTES;

/// One MCP session against one server.
struct Session<'a> {
    url: &'a HttpUrl,
    timeout: Duration,
    session_id: Option<String>,
    protocol: Option<String>,
    next_id: u64,
}

impl Session<'_> {
    fn post(&mut self, message: &Value) -> Result<Response, String> {
        let body = message.to_string();
        let mut headers: Vec<(&str, &str)> = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(id) = &self.session_id {
            headers.push(("Mcp-Session-Id", id));
        }
        if let Some(version) = &self.protocol {
            headers.push(("MCP-Protocol-Version", version));
        }
        http_client::request(
            self.url,
            "POST",
            &self.url.path,
            &headers,
            body.as_bytes(),
            self.timeout,
        )
    }

    /// Sends a request and returns its `result` (a JSON-RPC error is an error).
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let response =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        if response.status != 200 {
            return Err(format!(
                "{method}: HTTP {} from {}",
                response.status,
                self.url.display()
            ));
        }
        if let Some(session) = response.header("mcp-session-id") {
            self.session_id = Some(session.to_owned());
        }
        let message = answer_to(&response, id).map_err(|e| format!("{method}: {e}"))?;
        if let Some(error) = message.get("error") {
            return Err(format!("{method}: the server answered an error: {error}"));
        }
        message
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method}: the answer has no result"))
    }
}

/// The JSON-RPC message answering `id` in a JSON or SSE response body.
fn answer_to(response: &Response, id: u64) -> Result<Value, String> {
    let is_sse = response
        .header("content-type")
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
    let messages: Vec<Value> = if is_sse {
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut events = parser
            .push(&response.body)
            .map_err(|e| format!("unreadable event stream: {e}"))?;
        events.extend(
            parser
                .close()
                .map_err(|e| format!("unreadable event stream: {e}"))?,
        );
        events
            .iter()
            .filter_map(|e| e.data.as_deref())
            .filter(|data| !data.trim().is_empty())
            .map(|data| {
                parse_strict(data.as_bytes(), 128).map_err(|e| format!("unreadable event: {e}"))
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![parse_strict(&response.body, 128).map_err(|e| format!("unreadable answer: {e}"))?]
    };
    messages
        .into_iter()
        .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
        .ok_or_else(|| "no answer to the request in the response".to_owned())
}

/// Every tool the server at `url` lists (all pages, in order).
pub fn list_tools(url: &HttpUrl, timeout: Duration) -> Result<Vec<Value>, String> {
    let mut session = Session {
        url,
        timeout,
        session_id: None,
        protocol: None,
        next_id: 0,
    };
    let init = session.call(
        "initialize",
        json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
               "clientInfo": {"name": "toolseal-console", "version": env!("CARGO_PKG_VERSION")}}),
    )?;
    session.protocol = init
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let initialized =
        session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    if !(200..300).contains(&initialized.status) {
        return Err(format!(
            "notifications/initialized: HTTP {} from {}",
            initialized.status,
            url.display()
        ));
    }
    let listed = list_pages(&mut session);
    if let Some(id) = session.session_id.clone() {
        // Ending the session is a courtesy; its failure changes nothing about the listing.
        let _ = http_client::request(
            url,
            "DELETE",
            &url.path,
            &[("Mcp-Session-Id", &id)],
            b"",
            timeout,
        );
    }
    listed
}

fn list_pages(session: &mut Session<'_>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = session.call("tools/list", params)?;
        match result.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => return Err("tools/list: the result has no `tools` array".into()),
        }
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(format!(
        "tools/list: still more pages after {MAX_PAGES}; refusing a partial set"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn response(content_type: &str, body: &str) -> Response {
        Response {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_answer_is_found_in_json_and_in_sse_bodies() {
        let json_body = response(
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
        );
        assert_eq!(
            answer_to(&json_body, 2).unwrap()["result"],
            json!({"tools": []})
        );
        let sse = response(
            "text/event-stream",
            "id: 1\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[{\"name\":\"a\"}]}}\n\n",
        );
        assert_eq!(
            answer_to(&sse, 3).unwrap()["result"]["tools"][0]["name"],
            "a"
        );
        assert!(answer_to(&sse, 4).unwrap_err().contains("no answer"));
        let dup = response("application/json", r#"{"id":2,"id":2}"#);
        assert!(answer_to(&dup, 2).unwrap_err().contains("unreadable"));
    }
}
