//! Every SSE body of the recorded transcripts through the parser, at every chunking. (The
//! parser's own cases are unit tests in `src/wire/sse/tests.rs`.)

use crate::support::files::{exchanges, transcripts_dir};
use crate::support::sse::{BIG, parse_chunks, parse_whole};

/// Asserts that cutting `body` at every byte boundary (two chunks), and feeding it byte by
/// byte, gives exactly the events of the whole body, and that raw bytes add up to the body.
fn assert_split_invariant(body: &[u8]) {
    let whole = parse_whole(body);
    for cut in 0..=body.len() {
        let (a, b) = body.split_at(cut);
        assert_eq!(parse_chunks(&[a, b], BIG).unwrap(), whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(parse_chunks(&bytes, BIG).unwrap(), whole, "byte by byte");
    let mut joined: Vec<u8> = whole.0.iter().flat_map(|e| e.raw.clone()).collect();
    joined.extend(whole.1.clone().unwrap_or_default());
    assert_eq!(joined, body, "raw bytes must add up to the body");
}

/// Every SSE body of every transcript parses to the events the recorder saw, whatever the
/// chunking (every byte boundary for every body).
#[test]
fn transcripts_sse_bodies() {
    let mut bodies = 0;
    let mut events_seen = 0;
    for entry in std::fs::read_dir(transcripts_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        for ex in exchanges(&path) {
            if ex["response_kind"] != "sse" {
                continue;
            }
            let body = ex["response_body_raw"].as_str().unwrap().as_bytes();
            assert_split_invariant(body);
            let (events, rest) = parse_whole(body);
            assert_eq!(rest, None, "{} seq {}", path.display(), ex["seq"]);
            let recorded = ex["sse_events"].as_array().unwrap();
            let got: Vec<(Option<&str>, &str, Option<&str>)> = events
                .iter()
                .map(|e| {
                    (
                        e.data.as_deref(),
                        e.event_type.as_deref().unwrap_or("message"),
                        e.id.as_deref(),
                    )
                })
                .collect();
            let want: Vec<(Option<&str>, &str, Option<&str>)> = recorded
                .iter()
                .map(|r| {
                    (
                        r["data"].as_str(),
                        r["event"].as_str().unwrap(),
                        r["id"].as_str(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{} seq {}", path.display(), ex["seq"]);
            bodies += 1;
            events_seen += events.len();
        }
    }
    // everything-*: 4 SSE bodies, 7 events each; fastmcp-json: 1 empty GET stream;
    // fastmcp-paginated: 7 bodies (one empty GET stream), 10 events.
    assert_eq!((bodies, events_seen), (16, 24));
}
