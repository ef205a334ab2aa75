//! Two paginated listings of one server that run at once. Pages accumulate in the shared
//! store until the last page completes the set; callers that share an accumulator identity
//! (the same session, or no snapshot key at all, as most 2026-07-28 callers) used to mix
//! their pages: listing X's last page completed a set holding listing Y's first page instead
//! of X's own pages, a set no server listed, and an honest server was closed as drifted.
//! Pages now accumulate along the chain of cursors, and, for callers without a key, per view:
//! two kinds of caller shown different pages under the same cursors never mix them either.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::policy::status::SchemaStatus;
use toolseal_core::state;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool."),
        "inputSchema": {"type": "object", "properties": {}}})
}

/// Three pages of one unchanged server: cursor → (tools, next cursor).
fn page_for(cursor: Option<&str>) -> (Vec<Value>, Option<&'static str>) {
    match cursor {
        None => (vec![tool("a1"), tool("a2")], Some("c2")),
        Some("c2") => (vec![tool("b1"), tool("b2")], Some("c3")),
        _ => (vec![tool("c1")], None),
    }
}

/// A 2026-07-28 `tools/list` page request without any snapshot key.
fn page(id: u64, cursor: Option<&str>) -> HttpExchange {
    let mut params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    if let Some(c) = cursor {
        params["cursor"] = json!(c);
    }
    let (tools, next) = page_for(cursor);
    let mut result = json!({"tools": tools, "resultType": "complete"});
    if let Some(n) = next {
        result["nextCursor"] = json!(n);
    }
    HttpExchange {
        seq: id.to_string(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-protocol-version".into(), "2026-07-28".into()),
            ("mcp-method".into(), "tools/list".into()),
        ],
        request_body: json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
            .to_string()
            .into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: json!({"jsonrpc": "2.0", "id": id, "result": result})
            .to_string()
            .into_bytes(),
    }
}

fn served(gw: &mut NativeReplay, ex: &HttpExchange) -> usize {
    let out = gw.exchange("demo", ex, 4096);
    assert!(out.local_reply.is_none(), "{:?}", out.local_reply);
    let answer: Value = serde_json::from_slice(&out.response_body).unwrap();
    answer["result"]["tools"].as_array().unwrap().len()
}

fn status(gw: &NativeReplay) -> SchemaStatus {
    state::load_record(&gw.store, "demo")
        .unwrap()
        .unwrap()
        .0
        .status
}

#[test]
fn two_listings_without_a_key_interleaved_never_close_an_unchanged_server() {
    let mut gw = NativeReplay::new(Config::parse(b"{}").unwrap());
    // A first listing makes first contact and verifies.
    assert_eq!(served(&mut gw, &page(1, None)), 2);
    assert_eq!(served(&mut gw, &page(2, Some("c2"))), 2);
    assert_eq!(served(&mut gw, &page(3, Some("c3"))), 1);
    assert_eq!(status(&gw), SchemaStatus::Verified);
    // X is on its last page when Y starts: X's last page must complete X's pages.
    assert_eq!(served(&mut gw, &page(10, None)), 2);
    assert_eq!(served(&mut gw, &page(11, Some("c2"))), 2);
    assert_eq!(served(&mut gw, &page(20, None)), 2);
    assert_eq!(served(&mut gw, &page(12, Some("c3"))), 1);
    assert_eq!(status(&gw), SchemaStatus::Verified);
    let changed: Vec<_> = gw
        .out
        .audits
        .iter()
        .filter(|e| e.event == "schema.changed")
        .map(|e| e.reason.clone())
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
    // Y goes on and completes its own listing.
    assert_eq!(served(&mut gw, &page(21, Some("c2"))), 2);
    assert_eq!(served(&mut gw, &page(22, Some("c3"))), 1);
    assert_eq!(status(&gw), SchemaStatus::Verified);
}

/// A 2026-07-28 `tools/list` page without a snapshot key, of a caller of `toolsets` (a view
/// source), answered with `tools` (and `next`, a cursor, when more follow).
fn view_page(
    id: u64,
    toolsets: &str,
    cursor: Option<&str>,
    tools: &[&str],
    next: bool,
) -> HttpExchange {
    let mut ex = page(id, cursor);
    ex.request_headers
        .push(("x-mcp-toolsets".into(), toolsets.into()));
    let listed: Vec<Value> = tools.iter().map(|name| tool(name)).collect();
    let mut result = json!({"tools": listed, "resultType": "complete"});
    if next {
        result["nextCursor"] = json!("c2");
    }
    ex.response_body = json!({"jsonrpc": "2.0", "id": id, "result": result})
        .to_string()
        .into_bytes();
    ex
}

#[test]
fn two_kinds_of_caller_without_a_key_shown_different_pages_never_mix_them() {
    let config = br#"{"servers": {"demo": {"views": ["revision", {"header": "x-mcp-toolsets"}]}}}"#;
    let mut gw = NativeReplay::new(Config::parse(config).unwrap());
    // Each kind of caller lists its own two pages, under the same cursor: the first is the
    // baseline, the second a new view trusted on first use.
    let listing = |gw: &mut NativeReplay, who: &str, base: u64| {
        let (one, two) = match who {
            "a" => (["a1"], ["a2"]),
            _ => (["b1"], ["b2"]),
        };
        let first = served(gw, &view_page(base, who, None, &one, true));
        let last = served(gw, &view_page(base + 1, who, Some("c2"), &two, false));
        (first, last)
    };
    assert_eq!(listing(&mut gw, "a", 1), (1, 1));
    // B's first page shows a tool the catalogue lacks: withheld from it, nothing closed; its
    // last page decides the whole listing, a new view's, trusted on first use.
    assert_eq!(listing(&mut gw, "b", 3), (0, 1));
    let trusted = gw
        .out
        .audits
        .iter()
        .filter(|e| e.event == "view.baselined")
        .count();
    assert_eq!(trusted, 1);
    assert_eq!(status(&gw), SchemaStatus::Verified);
    // Interleaved: A's first page, B's first page, A's last, B's last. Each listing is its
    // own pages; neither closes the server.
    assert_eq!(served(&mut gw, &view_page(10, "a", None, &["a1"], true)), 1);
    assert_eq!(served(&mut gw, &view_page(20, "b", None, &["b1"], true)), 1);
    assert_eq!(
        served(&mut gw, &view_page(11, "a", Some("c2"), &["a2"], false)),
        1
    );
    assert_eq!(
        served(&mut gw, &view_page(21, "b", Some("c2"), &["b2"], false)),
        1
    );
    assert_eq!(status(&gw), SchemaStatus::Verified);
    let drifts = gw
        .out
        .audits
        .iter()
        .filter(|e| e.event == "schema.changed")
        .count();
    assert_eq!(drifts, 0);
}
