//! What a lenient peer reads from the bytes the gateway let through: a last-wins JSON parser
//! (JavaScript's `JSON.parse`, serde_json), a browser-style event-stream reader (invalid
//! UTF-8 replaced, BOM skipped), and the TypeScript SDK's id matching (`Number(id)`).
//! The engine target judges the gateway by what such a peer would act upon.

use serde_json::Value;

/// The JSON-RPC messages a lenient client reads from a response body.
pub fn response_messages(content_type: &str, body: &[u8]) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        event_data(body)
            .iter()
            .flat_map(|data| messages(data.as_bytes()))
            .collect()
    } else {
        messages(body)
    }
}

/// The messages of one JSON body (a batch is flattened); nothing when it does not parse.
pub fn messages(body: &[u8]) -> Vec<Value> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => items,
        Ok(value) => vec![value],
        Err(_) => Vec::new(),
    }
}

/// The `data` of every complete event, read the way browsers read `text/event-stream`.
pub fn event_data(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let mut out = Vec::new();
    let mut data: Option<String> = None;
    let mut rest = text;
    while let Some(pos) = rest.find(['\r', '\n']) {
        let (line, after) = rest.split_at(pos);
        rest = after
            .strip_prefix("\r\n")
            .or_else(|| after.get(1..))
            .unwrap_or("");
        if line.is_empty() {
            if let Some(d) = data.take() {
                out.push(d);
            }
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if name == "data" {
            match data.as_mut() {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    out
}

/// The key a TypeScript-SDK client files a request id under (`Number(id)`), so `"1"` and
/// `1` collide, as they do in that SDK's response routing.
pub fn id_key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => n.as_f64().map(|f| format!("{f}")),
        Value::String(s) if s.trim().is_empty() => Some("0".to_owned()),
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(f) => Some(format!("{f}")),
            Err(_) => Some(format!("s:{s}")),
        },
        _ => None,
    }
}

/// `(method, id, params)` of each request a lenient server reads from a request body.
pub fn requests(body: &[u8]) -> Vec<(String, Option<Value>, Option<Value>)> {
    messages(body)
        .into_iter()
        .filter_map(|m| {
            let method = m.get("method")?.as_str()?.to_owned();
            Some((method, m.get("id").cloned(), m.get("params").cloned()))
        })
        .collect()
}
