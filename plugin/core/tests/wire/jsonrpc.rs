//! Every request body, JSON response body and SSE event data of the recorded transcripts
//! through the JSON-RPC reader. (The frames' own cases are unit tests in
//! `src/wire/jsonrpc/tests.rs`.)

use toolseal_core::wire::jsonrpc::{Message, parse_payload, tool_call};
use toolseal_core::wire::sse::SseParser;

use crate::support::files::{exchanges, transcripts_dir};

const DEPTH: usize = 64;

/// Every request body, JSON response body and SSE event data in the transcripts parses; the
/// SSE bodies go through the SSE parser.
#[test]
fn transcripts_parse() {
    let (mut requests, mut responses, mut priming) = (0, 0, 0);
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for entry in std::fs::read_dir(transcripts_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        for ex in exchanges(&path) {
            let at = format!("{} seq {}", path.display(), ex["seq"]);
            let request = ex["request_body"].as_str().unwrap_or("");
            if !request.is_empty() {
                let payload = parse_payload(request.as_bytes(), DEPTH)
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                for m in payload.messages() {
                    if m.method() == Some("tools/call") {
                        let Message::Request { params, .. } = m else {
                            panic!("{at}")
                        };
                        tool_call(params.as_ref()).unwrap_or_else(|e| panic!("{at}: {e}"));
                    }
                    *kinds.entry(m.method().unwrap().to_owned()).or_default() += 1;
                }
                requests += 1;
            }
            let body = ex["response_body_raw"].as_str().unwrap_or("").as_bytes();
            let datas: Vec<String> = match ex["response_kind"].as_str() {
                Some("json") => vec![String::from_utf8(body.to_vec()).unwrap()],
                Some("sse") => {
                    let mut parser = SseParser::new(1 << 20);
                    let mut events = parser.push(body).unwrap();
                    events.extend(parser.close().unwrap());
                    assert_eq!(parser.finish(), None, "{at}");
                    events.into_iter().filter_map(|e| e.data).collect()
                }
                _ => Vec::new(),
            };
            for data in datas {
                if data.is_empty() {
                    priming += 1; // the priming event of the TypeScript SDK: no message
                    continue;
                }
                let payload =
                    parse_payload(data.as_bytes(), DEPTH).unwrap_or_else(|e| panic!("{at}: {e}"));
                for m in payload.messages() {
                    let kind = match m {
                        Message::Response { .. } => "response".to_owned(),
                        Message::Error { .. } => "error".to_owned(),
                        other => other.method().unwrap().to_owned(),
                    };
                    *kinds.entry(kind).or_default() += 1;
                }
                responses += 1;
            }
        }
    }
    // Counts taken independently from the recorder's own parse (`sse_events`) with Python.
    assert_eq!((requests, responses, priming), (21, 23, 6));
    let kinds: Vec<(&str, usize)> = kinds.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        kinds,
        vec![
            ("initialize", 4),
            ("notifications/initialized", 4),
            ("notifications/message", 3),
            ("notifications/progress", 2),
            ("notifications/tools/list_changed", 1),
            ("response", 17),
            ("tools/call", 8),
            ("tools/list", 5),
        ]
    );
}
