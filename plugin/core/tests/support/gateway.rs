//! A gateway over an in-memory store with the admin API on, and the 2025-11-25 exchanges
//! (SSE answers) the stories send through it for the server `deploy`.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

use super::admin::TOKEN;

/// Views by revision, the admin API on [`TOKEN`], and `extra`'s top-level keys over them.
pub fn config_with(extra: Value) -> Config {
    let hash = toolseal_core::policy::fingerprint::sha256_hex(TOKEN.as_bytes());
    // The sessions here skip the handshake, so their capabilities are never known: views are
    // told by revision alone (lists/views.rs tests the capabilities source).
    let mut config = json!({"views": ["revision"], "admin": {"token_sha256": hash}});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    Config::parse(config.to_string().as_bytes()).unwrap()
}

/// [`config_with`] and nothing more.
pub fn config() -> Config {
    config_with(json!({}))
}

/// A gateway configured by [`config_with`].
pub fn gateway(extra: Value) -> NativeReplay {
    NativeReplay::new(config_with(extra))
}

/// A POST to `/mcp` in `session`, answered with `response` as one SSE event (lines ended by
/// CRLF); no response at all when `None`.
pub fn post(session: &str, body: Value, response: Option<Value>) -> HttpExchange {
    sse_post(session, body, response, "\r\n")
}

/// [`post`] with bare LF line ends, the other framing servers use.
pub fn post_lf(session: &str, body: Value, response: Option<Value>) -> HttpExchange {
    sse_post(session, body, response, "\n")
}

fn sse_post(session: &str, body: Value, response: Option<Value>, eol: &str) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), session.into()),
        ],
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), "text/event-stream".into())],
        response_body: response.map_or_else(Vec::new, |r| {
            format!("event: message{eol}data: {r}{eol}{eol}").into_bytes()
        }),
    }
}

/// The `error_code` of a call's local answer, or `FORWARDED` when it had none.
pub fn code(answer: &Option<Value>) -> &str {
    answer
        .as_ref()
        .and_then(|a| a["result"]["structuredContent"]["error_code"].as_str())
        .unwrap_or("FORWARDED")
}
