//! The MCP revision a request is decided under, read once per request from its
//! `MCP-Protocol-Version` header and its `params._meta` (MCP 2026-07-28 carries the
//! revision in every request), and the header rules of the stateless revisions.
//!
//! Main design decision: the revision is a per-request fact, not a per-server or
//! per-session one: clients of both eras reach the same gateway and often the same server.
//! A version at or after [`STATELESS`] (ISO dates compare as strings) puts the request in
//! the stateless era, where every answer the gateway writes must be valid under that
//! revision; anything else (an older version, none at all) is the handshake era, decided as
//! before. A request that disagrees with itself (header against body) is refused before any
//! check, because the gateway and the server could otherwise read it differently; a
//! stateless-era request whose body does not carry its revision at all is malformed, not a
//! disagreement, and is refused as invalid params, as that revision's servers refuse it.

use crate::wire::jsonrpc::{self, Message, Payload};
use serde_json::Value;
use std::borrow::Cow;

/// The first MCP revision without the `initialize` handshake and sessions.
pub const STATELESS: &str = "2026-07-28";

/// The `params._meta` key that carries a request's revision.
pub const VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether `version` names a stateless-era revision.
pub fn is_stateless(version: &str) -> bool {
    version >= STATELESS
}

/// Why a request's revision or routing headers cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The JSON-RPC error code of the answer: in the stateless era `-32020`
    /// (HEADER_MISMATCH) for values that disagree and `-32602` (Invalid params) for a body
    /// without its revision in `params._meta`; `-32600` before it (as the gateway always
    /// answered).
    pub code: i64,
    /// What disagrees, for the answer and the audit trail.
    pub reason: Cow<'static, str>,
    /// The stateless revision the request declared, when the answer follows it (the
    /// request's id echoed, the revision in the records); `None` for the handshake era.
    pub version: Option<String>,
}

impl Mismatch {
    fn legacy(reason: impl Into<Cow<'static, str>>) -> Self {
        Mismatch {
            code: jsonrpc::INVALID_REQUEST,
            reason: reason.into(),
            version: None,
        }
    }

    fn header(reason: &'static str, version: Option<&str>) -> Self {
        Mismatch {
            code: jsonrpc::HEADER_MISMATCH,
            reason: Cow::Borrowed(reason),
            version: Some(version.unwrap_or(STATELESS).to_string()),
        }
    }

    /// A stateless-era request whose `params._meta` does not say its revision: there is
    /// nothing for the header to disagree with, the body is malformed.
    fn malformed(reason: &'static str, version: Option<&str>) -> Self {
        Mismatch {
            code: jsonrpc::INVALID_PARAMS,
            ..Mismatch::header(reason, version)
        }
    }
}

/// What the host knows of a request's routing headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoutingHeaders<'a> {
    /// The transport carries MCP's HTTP headers (false on stdio: the revision is then in
    /// `_meta` only).
    pub present: bool,
    /// `MCP-Protocol-Version`.
    pub version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
    /// One of the three headers above appears more than once (hosts may leave it false
    /// when `MCP-Protocol-Version` names no stateless revision: only that revision's rules
    /// read it).
    pub repeated: bool,
}

/// The names of the routing headers, lower case.
pub const ROUTING_HEADERS: [&str; 3] = ["mcp-protocol-version", "mcp-method", "mcp-name"];

/// Whether one of [`ROUTING_HEADERS`] occurs more than once among `names` (any case): a
/// reader of the first copy and a reader of the last would disagree.
pub fn routing_repeated<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    let mut seen = [0u8; 3];
    for name in names {
        if let Some(i) = ROUTING_HEADERS
            .iter()
            .position(|r| name.eq_ignore_ascii_case(r))
            && let Some(count) = seen.get_mut(i)
        {
            *count = count.saturating_add(1);
        }
    }
    seen.iter().any(|&n| n > 1)
}

/// The stateless revision `payload` declares (`None`: a handshake-era request), after
/// checking that its header and body agree. Handshake-era requests keep the gateway's
/// historical header check (`Mcp-Method`/`Mcp-Name` compared when present, `-32600`).
pub fn read(headers: &RoutingHeaders<'_>, payload: &Payload) -> Result<Option<String>, Mismatch> {
    let header = headers.version.filter(|_| headers.present);
    let header_stateless = header.is_some_and(is_stateless);
    let message = match payload {
        Payload::Batch(messages) => {
            let stateless = header_stateless
                || messages
                    .iter()
                    .any(|m| meta_version(m).is_ok_and(|v| v.is_some_and(is_stateless)));
            if stateless {
                // The stateless revisions have no batches: the server refuses them as not one
                // request (`-32600`, HTTP 400); so does the gateway, before reading them.
                return Err(Mismatch::legacy(
                    "MCP 2026-07-28 takes one JSON-RPC message per request, not a batch",
                ));
            }
            legacy_headers(headers, payload)?;
            return Ok(None);
        }
        Payload::Single(message) => message,
    };
    let meta = meta_version(message).map_err(|reason| match header_stateless {
        true => Mismatch::malformed(reason, header),
        false => Mismatch::legacy(reason),
    })?;
    if !header_stateless && !meta.is_some_and(is_stateless) {
        if header.is_some() && meta.is_some() && header != meta {
            return Err(Mismatch::legacy(
                "MCP-Protocol-Version header does not match params._meta",
            ));
        }
        legacy_headers(headers, payload)?;
        return Ok(None);
    }
    if let (true, None, Message::Request { params, .. }) = (header_stateless, meta, message) {
        let reason = match params.as_ref().and_then(|p| p.get("_meta")) {
            None => "an MCP 2026-07-28 request must carry params._meta",
            Some(_) => {
                "an MCP 2026-07-28 request must carry its revision in params._meta[\"io.modelcontextprotocol/protocolVersion\"]"
            }
        };
        return Err(Mismatch::malformed(reason, header));
    }
    if headers.present {
        stateless_headers(headers, message, meta).map_err(|reason| {
            let declared = [meta, header]
                .into_iter()
                .flatten()
                .find(|v| is_stateless(v));
            Mismatch::header(reason, declared)
        })?;
    }
    Ok(meta.or(header).map(str::to_string))
}

/// `params._meta["io.modelcontextprotocol/protocolVersion"]` of a request or notification:
/// `Ok(None)` when absent, an error when it is there but not a string.
#[inline(never)]
fn meta_version(message: &Message) -> Result<Option<&str>, &'static str> {
    let params = match message {
        Message::Request { params, .. } | Message::Notification { params, .. } => params.as_ref(),
        _ => None,
    };
    match params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(VERSION_META_KEY))
    {
        None => Ok(None),
        Some(Value::String(v)) => Ok(Some(v)),
        Some(_) => Err("params._meta protocol version must be a string"),
    }
}

/// The stateless revision's rules, as its servers apply them: a request carries
/// `MCP-Protocol-Version` equal to its `_meta` version and `Mcp-Method` equal to its method,
/// and a `tools/call`/`prompts/get` (`name`) or `resources/read` (`uri`) carries `Mcp-Name`
/// equal to that param (decoded from the `=?base64?…?=` form). A notification's headers are
/// compared only where the body has the same value. No routing header may be repeated.
fn stateless_headers(
    headers: &RoutingHeaders<'_>,
    message: &Message,
    meta: Option<&str>,
) -> Result<(), &'static str> {
    if headers.repeated {
        return Err(
            "an MCP routing header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) appears more than once",
        );
    }
    let request = matches!(message, Message::Request { .. });
    // A notification's headers are compared only when the header and the body both have
    // the value (the revision sets no header rules for them).
    let differs = |header: Option<&str>, body: Option<&str>| match (header, body) {
        (Some(h), Some(b)) => h != b,
        _ => request,
    };
    if differs(headers.version, meta) {
        return Err(
            "MCP-Protocol-Version header does not match the request's params._meta protocol version",
        );
    }
    let method = message.method();
    if differs(headers.method, method) {
        return Err("Mcp-Method header does not match the request body's method");
    }
    let key = match method {
        Some("tools/call" | "prompts/get") => "name",
        Some("resources/read") => "uri",
        _ => return Ok(()),
    };
    let params = match message {
        Message::Request { params, .. } | Message::Notification { params, .. } => params.as_ref(),
        _ => None,
    };
    let body = params.and_then(|p| p.get(key)).filter(|v| !v.is_null());
    let matches = match (body, headers.name) {
        (None, _) => true,
        (Some(_), None) => !request,
        (Some(value), Some(header)) => {
            decode_header_value(header).is_some_and(|decoded| value.as_str() == Some(&*decoded))
        }
    };
    match matches {
        true => Ok(()),
        false => Err("Mcp-Name header does not match the request body's name (uri) parameter"),
    }
}

/// The handshake-era check: `Mcp-Method`/`Mcp-Name`, when present, must match the body.
fn legacy_headers(headers: &RoutingHeaders<'_>, payload: &Payload) -> Result<(), Mismatch> {
    let refuse = |reason: String| Mismatch::legacy(reason);
    if headers.method.is_none() && headers.name.is_none() {
        return Ok(());
    }
    let Payload::Single(message) = payload else {
        return Err(Mismatch::legacy(
            "Mcp-Method/Mcp-Name headers cannot describe a batch",
        ));
    };
    if let Some(header) = headers.method
        && message.method() != Some(header)
    {
        return Err(refuse(format!(
            "Mcp-Method header {header:?} does not match the body's method"
        )));
    }
    if let Some(header) = headers.name {
        let params = match message {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_ref()
            }
            _ => None,
        };
        let body_name = params
            .and_then(|p| p.get("name").or_else(|| p.get("uri")))
            .and_then(Value::as_str);
        if body_name != Some(header) {
            return Err(refuse(format!(
                "Mcp-Name header {header:?} does not match the body's params.name"
            )));
        }
    }
    Ok(())
}

/// A header value as MCP 2026-07-28 writes it: verbatim, or `=?base64?PAYLOAD?=` for a value
/// that would not survive as a header. `None` for a malformed sentinel (bad or non-canonical
/// base64, bad UTF-8), which then matches nothing.
pub fn decode_header_value(value: &str) -> Option<Cow<'_, str>> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(Cow::Borrowed(value));
    };
    String::from_utf8(decode_base64(payload.as_bytes())?)
        .ok()
        .map(Cow::Owned)
}

/// Strict, canonical standard base64 (RFC 4648 with padding): any other byte, a missing or
/// misplaced `=`, or non-zero unused bits refuse the whole input.
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let body = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    if !text.len().is_multiple_of(4) || body.len() % 4 == 1 {
        return None;
    }
    let (mut out, mut acc, mut bits) = (Vec::with_capacity(body.len()), 0u32, 0u32);
    for &c in body {
        let sextet = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Canonical: the bits past the last whole byte are zero.
    (acc == 0).then_some(out)
}
