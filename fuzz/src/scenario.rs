//! The engine fuzz target's input format and its two safety invariants.
//!
//! Input: segments separated by `0xFF 0xFF`. Segment 0 picks one of six gateway configs
//! (its first byte). Then each exchange is two segments: `[ctl1, ctl2, request body...]`
//! and the response body. `ctl1`: bits 0-1 HTTP method (POST, POST, GET, DELETE), bits 2-3
//! request content type (JSON, JSON with parameters, text/plain, none), bits 4-5 response
//! (JSON, SSE, gzip SSE, gzip JSON), bit 6 session `s1`/`s2`, bit 7 an admin request instead
//! (bits 0-1: approve the live candidate, approve the previous baseline, quarantine,
//! release). `ctl2`: bits 0-5 response chunk size - 1, bit 6 `Mcp-Method: tools/list`,
//! bit 7 `Mcp-Name: echo`.
//!
//! Invariants, judged with a lenient peer's eyes ([`crate::lenient`]):
//! 1. A `tools/call` that reaches the server was sent while the server was `verified`, not
//!    awaiting verification, and the tool is in its approved baseline (under
//!    `drift_scope: "tool"`, also while `changed` by a drift its record confines to items
//!    other than that tool).
//! 2. A response that a client would file under one of its outstanding `tools/list` ids
//!    carries only tools whose digest is in the approved baseline (trust on first use
//!    aside: discovery posture, no baseline before the exchange).

use crate::lenient;
use serde_json::{Value, json};
use std::collections::HashSet;
use toolseal_core::config::Config;
use toolseal_core::policy::containment::{self, Serving};
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools, tool_digest};
use toolseal_core::policy::status::{Posture, SchemaStatus, ServerRecord};
use toolseal_core::state;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

/// The server id every exchange is for.
pub const SERVER: &str = "srv";
/// The admin token of every config.
pub const TOKEN: &str = "fuzz-token";
/// Segment separator (never valid UTF-8, so rare inside real bodies).
pub const SEP: &[u8] = b"\xff\xff";
/// Most exchanges read from one input.
pub const MAX_EXCHANGES: usize = 12;

/// The tools of the config lock.
pub fn locked_tools() -> Value {
    json!([
        {"name": "echo", "description": "Echo the message.",
         "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
        {"name": "delete_file", "description": "Delete a file.", "annotations": {"destructiveHint": true},
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 64}}, "required": ["path"],
          "additionalProperties": false}}
    ])
}

/// The six gateway configs the first byte chooses from.
pub fn config(selector: u8) -> Config {
    let tools = locked_tools();
    let fp = digest_tools(&tools, &FingerprintFields::default())
        .map(|d| d.fingerprint())
        .unwrap_or_default();
    let admin =
        json!({"token_sha256": toolseal_core::policy::fingerprint::sha256_hex(TOKEN.as_bytes())});
    let doc = match selector % 6 {
        0 => json!({"admin": admin}),
        1 => json!({"posture": "strict", "admin": admin,
            "servers": {SERVER: {"lock": {"fingerprint": fp, "tools": tools}}},
            "policy": {"rules": [{"action": "deny", "tool": "delete_*"}]}}),
        2 => json!({"admin": admin,
            "servers": {SERVER: {"allow_subset": true, "list_changed": "observe", "results": "enforce"}},
            "limits": {"max_request_bytes": 2048, "max_response_bytes": 4096, "max_depth": 12, "session_slots": 2},
            "policy": {"rules": [{"action": "deny", "annotations": {"destructiveHint": true}},
                {"action": "deny", "tool": "echo", "arguments": {"/message": {"max_length": 8}}}]}}),
        3 => json!({"posture": "strict", "admin": admin, "servers": {SERVER: {"pin": fp}}}),
        // Every section sealed, prompts and instructions possibly before any tool list; rules
        // about prompts and resources refuse uses and cut lists, by name, URI and session.
        4 => json!({"admin": admin, "servers": {SERVER: {"seal": SEALED, "resources": "seal"}},
            "policy": {"rules": [{"action": "deny", "prompt": "ex*"},
                {"action": "deny", "resource": "file:///*"}]}}),
        _ => json!({"admin": admin, "servers": {SERVER: {"seal": SEALED, "resources": "seal",
            "drift_scope": "tool"}},
            "policy": {"rules": [
                {"action": "allow", "prompt": "*", "principal": {"header": "mcp-session-id", "in": ["s1"]}},
                {"action": "deny", "prompt": "*", "arguments": {"/text": {"max_length": 4}}},
                {"action": "deny", "prompt": "*"}]}}),
    };
    Config::parse(doc.to_string().as_bytes()).unwrap_or_default()
}

/// The sections configs 4 and 5 seal beyond tools.
const SEALED: [&str; 4] = ["tool-fields", "instructions", "prompts", "resource-templates"];

/// One decoded exchange.
pub struct Step {
    /// The HTTP exchange.
    pub exchange: HttpExchange,
    /// Response chunk size.
    pub chunk: usize,
}

/// Splits `data` into the config selector and the exchanges.
pub fn decode(data: &[u8]) -> (u8, Vec<(u8, u8, Vec<u8>, Vec<u8>)>) {
    let mut segments = split(data);
    let selector = segments
        .first()
        .and_then(|s| s.first())
        .copied()
        .unwrap_or(0);
    if !segments.is_empty() {
        segments.remove(0);
    }
    let mut steps = Vec::new();
    for pair in segments.chunks(2).take(MAX_EXCHANGES) {
        let head = pair.first().copied().unwrap_or_default();
        let ctl1 = head.first().copied().unwrap_or(0);
        let ctl2 = head.get(1).copied().unwrap_or(0);
        let request = head.get(2..).unwrap_or_default().to_vec();
        let response = pair.get(1).copied().unwrap_or_default().to_vec();
        steps.push((ctl1, ctl2, request, response));
    }
    (selector, steps)
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(pos) = rest.windows(2).position(|w| w == SEP) {
        out.push(rest.get(..pos).unwrap_or_default());
        rest = rest.get(pos + 2..).unwrap_or_default();
    }
    out.push(rest);
    out
}

/// Builds the HTTP exchange for one decoded step (`record`: the server's state before).
pub fn build(
    ctl1: u8,
    ctl2: u8,
    request: Vec<u8>,
    response: Vec<u8>,
    record: Option<&ServerRecord>,
) -> Step {
    let chunk = usize::from(ctl2 & 0x3f) + 1;
    let session = if ctl1 & 0x40 == 0 { "s1" } else { "s2" };
    if ctl1 & 0x80 != 0 {
        let (action, body) = match ctl1 & 3 {
            0 => (
                "approve",
                json!({"fingerprint": record.and_then(|r| r.live.clone())}),
            ),
            1 => (
                "approve",
                json!({"fingerprint": record.and_then(|r| r.previous.clone().or(r.baseline.clone()))}),
            ),
            2 => ("quarantine", json!({"reason": "fuzz"})),
            _ => ("release", json!({})),
        };
        let exchange = HttpExchange {
            seq: "admin".into(),
            http_method: "POST".into(),
            path: format!("/toolseal/servers/{SERVER}/{action}"),
            request_headers: vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), format!("Bearer {TOKEN}")),
            ],
            request_body: body.to_string().into_bytes(),
            status: 200,
            response_headers: Vec::new(),
            response_body: Vec::new(),
        };
        return Step { exchange, chunk };
    }
    let method = ["POST", "POST", "GET", "DELETE"][usize::from(ctl1 & 3)];
    let mut request_headers = vec![("mcp-session-id".to_string(), session.to_string())];
    match (ctl1 >> 2) & 3 {
        0 => request_headers.push(("content-type".into(), "application/json".into())),
        1 => request_headers.push((
            "content-type".into(),
            "Application/JSON; charset=utf-8".into(),
        )),
        2 => request_headers.push(("content-type".into(), "text/plain".into())),
        _ => {}
    }
    if ctl2 & 0x40 != 0 {
        request_headers.push(("mcp-method".into(), "tools/list".into()));
    }
    if ctl2 & 0x80 != 0 {
        request_headers.push(("mcp-name".into(), "echo".into()));
    }
    let (ctype, gzip) = match (ctl1 >> 4) & 3 {
        0 => ("application/json", false),
        1 => ("text/event-stream", false),
        2 => ("text/event-stream", true),
        _ => ("application/json", true),
    };
    let mut response_headers = vec![("content-type".to_string(), ctype.to_string())];
    if gzip {
        response_headers.push(("content-encoding".into(), "gzip".into()));
    }
    let exchange = HttpExchange {
        seq: "0".into(),
        http_method: method.into(),
        path: "/mcp".into(),
        request_headers,
        request_body: request,
        status: 200,
        response_headers,
        response_body: response,
    };
    Step { exchange, chunk }
}

/// The client's view across exchanges: `tools/list` ids still awaiting an answer.
#[derive(Default)]
pub struct Client {
    outstanding_lists: HashSet<String>,
}

/// Runs a whole input; panics (a fuzz finding) when an invariant breaks.
pub fn run(data: &[u8]) {
    let (selector, steps) = decode(data);
    let config = config(selector);
    let posture = config.posture_of(SERVER);
    let mut gw = NativeReplay::new(config);
    let mut client = Client::default();
    for (ctl1, ctl2, request, response) in steps {
        let before = record(&gw);
        let step = build(ctl1, ctl2, request, response, before.as_ref());
        let out = gw.exchange(SERVER, &step.exchange, step.chunk);
        if ctl1 & 0x80 != 0 || out.local_reply.is_some() {
            continue;
        }
        let after = record(&gw);
        check_calls(&gw, &step.exchange, before.as_ref());
        for (method, id, _) in lenient::requests(&step.exchange.request_body) {
            if method == "tools/list" {
                if let Some(key) = id.as_ref().and_then(lenient::id_key) {
                    client.outstanding_lists.insert(key);
                }
            }
        }
        let ctype = step.exchange.response_header("content-type").unwrap_or("");
        for message in lenient::response_messages(ctype, &out.response_body) {
            let Some(key) = message.get("id").and_then(lenient::id_key) else {
                continue;
            };
            if !client.outstanding_lists.remove(&key) {
                continue;
            }
            let tools = message.get("result").and_then(|r| r.get("tools"));
            if let Some(Value::Array(tools)) = tools {
                let tofu = posture == Posture::Discovery
                    && before.as_ref().is_none_or(|r| r.baseline.is_none());
                if !tofu {
                    check_served(&gw, tools, before.as_ref(), after.as_ref(), &message);
                }
            }
        }
    }
}

/// The server's record in the gateway's state.
pub fn record(gw: &NativeReplay) -> Option<ServerRecord> {
    state::load_record(&gw.store, SERVER)
        .ok()
        .flatten()
        .map(|(r, _)| r)
}

fn baseline_digest(gw: &NativeReplay, baseline: Option<&str>, name: &str) -> Option<String> {
    let tools = state::get_tool_set(&gw.store, SERVER, baseline?)
        .ok()
        .flatten()?;
    let fields = gw.engine.config.fingerprint.clone();
    tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|t| tool_digest(t, &fields).ok())
}

fn check_calls(gw: &NativeReplay, exchange: &HttpExchange, before: Option<&ServerRecord>) {
    for (method, _, params) in lenient::requests(&exchange.request_body) {
        if method != "tools/call" {
            continue;
        }
        let name = params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let scope = gw.engine.config.drift_scope_of(SERVER);
        let open = before.is_some_and(|r| {
            let serving = containment::serving(r, scope);
            let served = match r.status {
                SchemaStatus::Verified => true,
                SchemaStatus::Changed => {
                    serving == Serving::All
                        || (serving == Serving::AllBut && r.withheld(name).is_none())
                }
                _ => false,
            };
            served && !r.awaiting_verification()
        });
        let approved =
            baseline_digest(gw, before.and_then(|r| r.baseline.as_deref()), name).is_some();
        assert!(
            open && approved,
            "tools/call {name:?} reached the server while status was {:?} (tool approved: {approved})",
            before.map(|r| r.status)
        );
    }
}

fn check_served(
    gw: &NativeReplay,
    tools: &[Value],
    before: Option<&ServerRecord>,
    after: Option<&ServerRecord>,
    msg: &Value,
) {
    let fields = gw.engine.config.fingerprint.clone();
    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str);
        let digest = tool_digest(tool, &fields).ok();
        let approved = name.is_some_and(|n| {
            [before, after].iter().any(|r| {
                let expected = baseline_digest(gw, r.and_then(|r| r.baseline.as_deref()), n);
                expected.is_some() && expected == digest
            })
        });
        assert!(
            approved,
            "an unapproved tool reached the client in a tools/list answer: {tool} (message {msg})"
        );
    }
}
