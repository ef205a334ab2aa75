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

/// Asserts that a worker that remembers and one that remembers nothing (the two gateways of a
/// property test, over stores of the same history) decided the step `at` alike: the same
/// answers (`answers`: one per gateway, or none), the same bytes under the store key `key`,
/// the same audit trail and the same decision records.
pub fn assert_decided_alike(
    at: &str,
    (remembering, forgetting): (&NativeReplay, &NativeReplay),
    answers: &[toolseal_core::transcript::Replayed],
    key: &str,
) {
    use toolseal_core::state::store::StateStore;
    if let [a, b] = answers {
        assert_eq!(
            String::from_utf8_lossy(&a.response_body),
            String::from_utf8_lossy(&b.response_body),
            "{at}"
        );
        assert_eq!(a.local_reply, b.local_reply, "{at}");
    }
    let stored = |gw: &NativeReplay| gw.store.get(key).unwrap().map(|(bytes, _)| bytes);
    assert_eq!(stored(remembering), stored(forgetting), "{at}");
    let trail = |gw: &NativeReplay| -> Vec<(String, String)> {
        let audits = gw.out.audits.iter();
        audits
            .map(|a| (a.event.to_string(), a.reason.clone()))
            .collect()
    };
    assert_eq!(trail(remembering), trail(forgetting), "{at}");
    let decisions = |gw: &NativeReplay| -> Vec<String> {
        let decisions = gw.out.decisions.iter();
        decisions.map(|d| d.to_json().to_string()).collect()
    };
    assert_eq!(decisions(remembering), decisions(forgetting), "{at}");
}

/// `event` applied to `server`'s record by another worker of the same store (discovery
/// posture, the default bound of views).
pub fn apply_elsewhere(
    gw: &mut NativeReplay,
    server: &str,
    event: &toolseal_core::policy::status::Event,
) -> Result<toolseal_core::state::Updated, toolseal_core::state::StateError> {
    let mut records = toolseal_core::state::parse_cache::ParseCache::new(4);
    let posture = toolseal_core::policy::status::Posture::Discovery;
    let at = gw.now_ms;
    toolseal_core::state::update_record(&mut gw.store, &mut records, server, event, posture, at, 64)
}
