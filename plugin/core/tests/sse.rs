//! SSE parsing: framing variants, chunking at every byte boundary, re-encoding, limits, and
//! the recorded transcripts.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::type_complexity
)]

use serde_json::Value;
use std::borrow::Cow;
use std::path::PathBuf;
use toolseal_core::sse::{Coverage, EventRef, SseError, SseEvent, SseParser};

const BIG: usize = 1 << 20;

/// Feeds `chunks`, then ends the stream: (events, leftover of an unterminated event).
fn parse_chunks(
    chunks: &[&[u8]],
    max: usize,
) -> Result<(Vec<SseEvent>, Option<Vec<u8>>), SseError> {
    let mut parser = SseParser::new(max);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.push(chunk)?);
    }
    events.extend(parser.close()?);
    Ok((events, parser.finish()))
}

fn parse_whole(body: &[u8]) -> (Vec<SseEvent>, Option<Vec<u8>>) {
    parse_chunks(&[body], BIG).unwrap()
}

/// (data, event_type, id) of each event.
fn fields(events: &[SseEvent]) -> Vec<(Option<&str>, Option<&str>, Option<&str>)> {
    events
        .iter()
        .map(|e| (e.data.as_deref(), e.event_type.as_deref(), e.id.as_deref()))
        .collect()
}

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

type Fields = (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
);

/// The framing variants of SPEC section 3 and FIELD-NOTES.
#[test]
fn framing_variants() {
    let cases: Vec<(&str, &[u8], Vec<Fields>, Option<&[u8]>)> = vec![
        (
            "priming event with empty data, then the message",
            b"id: p1\ndata: \n\nevent: message\nid: m1\ndata: {\"a\":1}\n\n",
            vec![
                (Some(""), None, Some("p1")),
                (Some("{\"a\":1}"), Some("message"), Some("m1")),
            ],
            None,
        ),
        (
            "id after data, CRLF",
            b"event: message\r\ndata: x\r\nid: 7\r\n\r\n",
            vec![(Some("x"), Some("message"), Some("7"))],
            None,
        ),
        (
            "CR only",
            b"data: a\rid: 1\r\r",
            vec![(Some("a"), None, Some("1"))],
            None,
        ),
        (
            "mixed line endings in one stream",
            b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r\n",
            // "d\r" ends a line, then "\r\n" is the blank line.
            vec![(Some("a\nb\nc"), None, None), (Some("d"), None, None)],
            None,
        ),
        (
            "retry and comments, keep-alive only event",
            b": keepalive\n\nretry: 3000\n: hello\ndata: x\n\n",
            vec![(None, None, None), (Some("x"), None, None)],
            None,
        ),
        (
            "leading BOM",
            b"\xEF\xBB\xBFdata: x\n\n",
            vec![(Some("x"), None, None)],
            None,
        ),
        (
            "BOM only at the start of the stream",
            b"data: x\n\n\xEF\xBB\xBFdata: y\n\n",
            vec![(Some("x"), None, None), (None, None, None)],
            None,
        ),
        (
            "several data lines join with LF",
            b"data: {\"a\":\ndata:  1}\ndata\n\n",
            vec![(Some("{\"a\":\n 1}\n"), None, None)],
            None,
        ),
        (
            "no space after colon, field without colon",
            b"data:x\nevent\nid\n\n",
            vec![(Some("x"), Some(""), Some(""))],
            None,
        ),
        (
            "id with NUL is ignored, last id and event win, unknown fields ignored",
            b"id: 1\nid: 2\0\nevent: a\nevent: b\nfoo: bar\nDATA: no\ndata: yes\n\n",
            vec![(Some("yes"), Some("b"), Some("1"))],
            None,
        ),
        ("blank line alone", b"\n", vec![(None, None, None)], None),
        (
            "unterminated event",
            b"data: x\n\ndata: y\n",
            vec![(Some("x"), None, None)],
            Some(b"data: y\n"),
        ),
        (
            "data without final newline",
            b"data: y",
            vec![],
            Some(b"data: y"),
        ),
        ("partial BOM", b"\xEF\xBB", vec![], Some(b"\xEF\xBB")),
        // Not a BOM after all: the two bytes are line content, so the line is not blank.
        (
            "broken BOM then newline",
            b"\xEF\xBB\n",
            vec![],
            Some(b"\xEF\xBB\n"),
        ),
        ("empty body", b"", vec![], None),
        (
            "non-ASCII data",
            "data: caf\u{e9} \u{1F600}\n\n".as_bytes(),
            vec![(Some("caf\u{e9} \u{1F600}"), None, None)],
            None,
        ),
    ];
    for (name, body, want, leftover) in cases {
        let (events, rest) = parse_whole(body);
        assert_eq!(fields(&events), want, "{name}");
        assert_eq!(rest.as_deref(), leftover, "{name}");
        assert_split_invariant(body);
    }
}

#[test]
fn raw_is_exact_per_event() {
    let body = b"id: p\r\ndata: \r\n\r\n: ka\r\n\r\nevent: message\r\ndata: {}\r\n\r\n";
    let (events, _) = parse_whole(body);
    let raws: Vec<&[u8]> = events.iter().map(|e| e.raw.as_slice()).collect();
    assert_eq!(
        raws,
        vec![
            &b"id: p\r\ndata: \r\n\r\n"[..],
            b": ka\r\n\r\n",
            b"event: message\r\ndata: {}\r\n\r\n"
        ]
    );
    let (events, _) = parse_whole(b"\xEF\xBB\xBFdata: x\n\ndata: y\n\n");
    assert_eq!(events[0].raw, b"\xEF\xBB\xBFdata: x\n\n");
    assert_eq!(events[1].raw, b"data: y\n\n");
}

/// An event ended by a lone CR at the end of the input is held until the next byte (it
/// might be the LF of a CRLF) or until `close`.
#[test]
fn trailing_cr_is_held_until_the_next_byte_or_close() {
    let mut parser = SseParser::new(BIG);
    assert_eq!(parser.push(b"data: a\r\n\r").unwrap(), vec![]);
    let events = parser.push(b"\n").unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].raw, b"data: a\r\n\r\n");

    let mut parser = SseParser::new(BIG);
    assert_eq!(parser.push(b"data: a\r\r").unwrap(), vec![]);
    let events = parser.push(b"data: b").unwrap();
    assert_eq!(fields(&events), vec![(Some("a"), None, None)]);
    assert_eq!(events[0].raw, b"data: a\r\r");
    assert_eq!(parser.close().unwrap(), vec![]);
    assert_eq!(parser.finish(), Some(b"data: b".to_vec()));

    let mut parser = SseParser::new(BIG);
    assert_eq!(parser.push(b"data: a\r\r").unwrap(), vec![]);
    let events = parser.close().unwrap();
    assert_eq!(fields(&events), vec![(Some("a"), None, None)]);
    assert_eq!(parser.finish(), None);

    // Without close, the held event comes back as leftover bytes: nothing is lost.
    let mut parser = SseParser::new(BIG);
    assert_eq!(parser.push(b"data: a\r\r").unwrap(), vec![]);
    assert_eq!(parser.finish(), Some(b"data: a\r\r".to_vec()));
}

#[test]
fn with_data_keeps_other_lines_and_line_endings() {
    let cases: Vec<(&[u8], &str, &[u8])> = vec![
        (
            b"event: message\nid: 5\ndata: {\"old\":1}\n\n",
            "{\"new\":2}",
            b"event: message\nid: 5\ndata: {\"new\":2}\n\n",
        ),
        (
            b"data: a\r\nid: 9\r\ndata: b\r\nretry: 10\r\n: c\r\n\r\n",
            "x",
            b"data: x\r\nid: 9\r\nretry: 10\r\n: c\r\n\r\n",
        ),
        (
            b"data:old\rid: 1\r\r",
            "two\nlines",
            b"data: two\rdata: lines\rid: 1\r\r",
        ),
        (b": keepalive\n\n", "x", b": keepalive\ndata: x\n\n"),
        (b"\n", "x", b"data: x\n\n"),
        (b"data: a\n\n", "", b"data: \n\n"),
        (
            b"data: a\n\n",
            "p\r\nq\rr\n",
            b"data: p\ndata: q\ndata: r\ndata: \n\n",
        ),
        (b"data: a\n\n", " lead", b"data:  lead\n\n"),
        (b"\xEF\xBB\xBFdata: a\n\n", "b", b"\xEF\xBB\xBFdata: b\n\n"),
    ];
    for (raw, data, want) in cases {
        let (events, rest) = parse_whole(raw);
        assert_eq!((events.len(), rest), (1, None), "{raw:?}");
        let encoded = events[0].with_data(data);
        assert_eq!(
            String::from_utf8_lossy(&encoded),
            String::from_utf8_lossy(want),
            "{raw:?} with {data:?}"
        );
        // What a client parses back: the new data (line breaks become LF).
        let (back, _) = parse_whole(&encoded);
        let expected = data.replace("\r\n", "\n").replace('\r', "\n");
        assert_eq!(back[0].data.as_deref(), Some(expected.as_str()));
        assert_eq!(
            (back[0].id.clone(), back[0].event_type.clone()),
            (events[0].id.clone(), events[0].event_type.clone())
        );
    }
}

#[test]
fn event_size_cap() {
    let body = b"data: 12345\n\n"; // 13 bytes
    assert_eq!(parse_chunks(&[body], 13).unwrap().0.len(), 1);
    assert_eq!(
        parse_chunks(&[body], 12),
        Err(SseError::EventTooLarge { limit: 12 })
    );
    // A partial event over the cap is refused before its end arrives.
    let mut parser = SseParser::new(8);
    assert_eq!(
        parser.push(b"data: 1234"),
        Err(SseError::EventTooLarge { limit: 8 })
    );
    // The error is sticky.
    assert_eq!(
        parser.push(b"\n\n"),
        Err(SseError::EventTooLarge { limit: 8 })
    );
    assert_eq!(parser.close(), Err(SseError::EventTooLarge { limit: 8 }));
    // Many small events in one chunk are fine with a small cap.
    let many = b"data: 1\n\n".repeat(100);
    assert_eq!(parse_chunks(&[&many], 9).unwrap().0.len(), 100);
}

#[test]
fn invalid_utf8_is_refused_but_split_characters_are_fine() {
    assert_eq!(
        parse_chunks(&[b"data: \xFF\n\n"], BIG),
        Err(SseError::InvalidUtf8)
    );
    assert_eq!(
        parse_chunks(&[b": \xC3\n\n"], BIG),
        Err(SseError::InvalidUtf8)
    );
    let body = "data: \u{e9}\u{1F600}\n\n".as_bytes();
    assert_eq!(
        fields(
            &parse_chunks(&[&body[..7], &body[7..9], &body[9..]], BIG)
                .unwrap()
                .0
        ),
        vec![(Some("\u{e9}\u{1F600}"), None, None)]
    );
    assert_eq!(
        SseError::InvalidUtf8.to_string(),
        "a server-sent event is not valid UTF-8; the upstream server's event stream is corrupt or not text/event-stream"
    );
}

/// Pseudo-random bytes from the SSE alphabet, cut at random places: never a panic, and when
/// no error, the events are the same as for the whole body and the raw bytes add up.
#[test]
fn random_streams_never_panic() {
    let alphabet: &[&[u8]] = &[
        b"\r",
        b"\n",
        b":",
        b" ",
        b"data",
        b"id",
        b"event",
        b"retry",
        b"x",
        b"\xEF\xBB\xBF",
        b"\xC3\xA9",
        b"\xFF",
        b"\0",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut clean = 0;
    for _ in 0..2000 {
        let len = (next() % 40) as usize;
        let body: Vec<u8> = (0..len)
            .flat_map(|_| alphabet[(next() % alphabet.len() as u64) as usize].to_vec())
            .collect();
        let whole = parse_chunks(&[&body], 64);
        let mut chunks = Vec::new();
        let mut rest = body.as_slice();
        while !rest.is_empty() {
            let n = ((next() % 5) as usize).min(rest.len());
            let (a, b) = rest.split_at(n);
            chunks.push(a);
            rest = b;
        }
        let split = parse_chunks(&chunks, 64);
        match (&whole, &split) {
            (Ok(w), Ok(s)) => {
                assert_eq!(w, s, "{body:?}");
                let mut joined: Vec<u8> = w.0.iter().flat_map(|e| e.raw.clone()).collect();
                joined.extend(w.1.clone().unwrap_or_default());
                assert_eq!(joined, body);
                clean += 1;
            }
            (Err(_), Err(_)) => {}
            _ => panic!("whole {whole:?} vs split {split:?} for {body:?}"),
        }
    }
    eprintln!("clean streams: {clean}");
    assert!(
        clean > 500,
        "too few error-free streams ({clean}) to mean anything"
    );
}

/// The recorded transcripts (copies of real sessions, one JSON file each).
pub fn transcripts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcripts")
}

fn exchanges(path: &std::path::Path) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    match doc {
        Value::Array(items) => items,
        Value::Object(obj) => obj
            .get("exchanges")
            .or(obj.get("entries"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap(),
        _ => panic!("bad transcript {}", path.display()),
    }
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

#[test]
fn line_break_search_agrees_with_a_byte_loop_at_every_offset_and_byte() {
    use toolseal_core::sse::find_line_break;
    // Every byte value at every position of buffers up to 40 bytes, over backgrounds that
    // stress the word test's borrows (0x00, 0x01, 0x0B, 0x0E, 0x80, 0xFF neighbours).
    for background in [b'a', 0x00, 0x01, 0x0B, 0x0C, 0x0E, 0x80, 0xFF] {
        for len in 0..40usize {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut buf = vec![background; len];
                    buf[at] = byte;
                    let naive = buf.iter().position(|&b| b == b'\n' || b == b'\r');
                    assert_eq!(
                        find_line_break(&buf),
                        naive,
                        "{background:#x} {len} {at} {byte:#x}"
                    );
                }
            }
        }
    }
    let mut two = vec![b'x'; 64];
    two[20] = b'\r';
    two[9] = b'\n';
    assert_eq!(find_line_break(&two), Some(9));
}

/// Bodies whose framing the in-place path must read exactly as the owned path: CRLF, CR
/// only (ending on a CR), BOM, several data lines, comments, empty data, a NUL id, mixed
/// line endings, an unterminated tail, a broken BOM, non-ASCII data, blank-only events.
const TRICKY: [&[u8]; 13] = [
    b"event: message\r\ndata: x\r\nid: 7\r\n\r\n",
    b"data: a\rid: 1\r\rdata: b\r\r",
    b"\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
    b"data: {\"a\":\ndata:  1}\ndata\n\n",
    b": keepalive\n\nretry: 3000\n: hello\ndata: x\n\n",
    b"id: p1\ndata:\n\nevent: message\ndata: {}\n\n",
    b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r\n",
    b"id: 1\nid: 2\0\nevent: a\nevent: b\nfoo: bar\ndata: yes\n\n",
    b"data: x\n\ndata: y\n",
    b"\xEF\xBB\xBE\n\ndata: z\n\n",
    "data: caf\u{e9} \u{1F600}\n\n".as_bytes(),
    b"\n\n\r\n\r\r",
    b"data:x\nevent\nid\n\ndata: \xC3\xA9\r\n\r\n",
];

/// (raw, data, event type, id) of one event, owned.
type Seen = (Vec<u8>, Option<String>, Option<String>, Option<String>);

fn seen_owned(e: &SseEvent) -> Seen {
    (
        e.raw.clone(),
        e.data.clone(),
        e.event_type.clone(),
        e.id.clone(),
    )
}

fn seen_ref(e: &EventRef<'_>) -> Seen {
    (
        e.raw.to_vec(),
        e.data
            .as_deref()
            .map(|d| String::from_utf8(d.to_vec()).unwrap()),
        e.event_type.map(str::to_owned),
        e.id.map(str::to_owned),
    )
}

/// The in-place path over `chunks` (the last one ends the stream): the events, the coverage
/// of each push, and the unterminated leftover.
fn parse_in_place(chunks: &[&[u8]]) -> (Vec<Seen>, Vec<Coverage>, Option<Vec<u8>>) {
    let mut parser = SseParser::new(BIG);
    let mut events = Vec::new();
    let mut coverage = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let end = i + 1 == chunks.len();
        coverage.push(
            parser
                .push_with(chunk, end, |e| events.push(seen_ref(&e)))
                .unwrap(),
        );
    }
    (events, coverage, parser.finish())
}

/// Every way to cut `body` into one, two and three chunks.
fn splits(body: &[u8]) -> Vec<Vec<&[u8]>> {
    let mut out = vec![vec![body]];
    for a in 0..=body.len() {
        out.push(vec![&body[..a], &body[a..]]);
        for b in a..=body.len() {
            out.push(vec![&body[..a], &body[a..b], &body[b..]]);
        }
    }
    out
}

/// The offsets where a chunk may start or end and still be forwarded as it is: event
/// boundaries of the whole-body reading, except after an event ended by a lone CR (held until
/// the next byte shows it is not a CRLF), unless that is the end of the stream.
fn clean_cuts(body: &[u8], events: &[Seen]) -> (Vec<usize>, Vec<usize>) {
    let mut at = 0;
    let mut boundaries = vec![0];
    for (raw, ..) in events {
        at += raw.len();
        boundaries.push(at);
    }
    let clean = boundaries
        .iter()
        .copied()
        .filter(|&x| x == 0 || body[x - 1] != b'\r')
        .collect();
    (boundaries, clean)
}

#[test]
fn in_place_events_equal_owned_events_at_every_split() {
    for body in TRICKY {
        let (owned, leftover) = parse_whole(body);
        let owned: Vec<Seen> = owned.iter().map(seen_owned).collect();
        for chunks in splits(body) {
            let (events, _, rest) = parse_in_place(&chunks);
            assert_eq!(
                events,
                owned,
                "{:?} cut as {chunks:?}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(rest, leftover, "{chunks:?}");
        }
    }
}

#[test]
fn coverage_is_exact_exactly_when_the_chunk_is_whole_events() {
    let mut exact_seen = 0;
    let mut shifted_seen = 0;
    for body in TRICKY {
        let (owned, _) = parse_whole(body);
        let owned: Vec<Seen> = owned.iter().map(seen_owned).collect();
        let (boundaries, clean) = clean_cuts(body, &owned);
        for chunks in splits(body) {
            let (_, coverage, _) = parse_in_place(&chunks);
            let mut start = 0;
            for (i, chunk) in chunks.iter().enumerate() {
                let end = start + chunk.len();
                let last = i + 1 == chunks.len();
                let ends_clean = clean.contains(&end)
                    || (last && end == body.len() && boundaries.contains(&end));
                let want = match clean.contains(&start) && ends_clean {
                    true => Coverage::Exact,
                    false => Coverage::Shifted,
                };
                assert_eq!(coverage[i], want, "chunk {i} of {chunks:?}");
                match want {
                    Coverage::Exact => exact_seen += 1,
                    Coverage::Shifted => shifted_seen += 1,
                }
                start = end;
            }
        }
    }
    // Both answers occur many times over these bodies.
    assert!(
        exact_seen > 1000 && shifted_seen > 1000,
        "{exact_seen} {shifted_seen}"
    );
}

#[test]
fn rewrite_forwards_the_chunk_or_the_events_with_replacements() {
    for body in TRICKY {
        let (owned, _) = parse_whole(body);
        // Events whose data is exactly "x" are replaced; all others pass.
        let replacement =
            |data: Option<&[u8]>| (data == Some(b"x")).then(|| b"data: R\n\n".to_vec());
        let want: Vec<u8> = owned
            .iter()
            .flat_map(|e| {
                replacement(e.data.as_ref().map(String::as_bytes)).unwrap_or_else(|| e.raw.clone())
            })
            .collect();
        for chunks in splits(body) {
            let mut parser = SseParser::new(BIG);
            let mut forwarded = Vec::new();
            for (i, chunk) in chunks.iter().enumerate() {
                let end = i + 1 == chunks.len();
                let mut replaced = false;
                let mut coverage_probe = parser.clone();
                let coverage = coverage_probe.push_with(chunk, end, |_| {}).unwrap();
                let out = parser
                    .rewrite(chunk, end, |e| {
                        let new = replacement(e.data.as_deref());
                        replaced |= new.is_some();
                        new
                    })
                    .unwrap();
                // None exactly when the chunk is whole events and none was replaced.
                assert_eq!(
                    out.is_none(),
                    coverage == Coverage::Exact && !replaced,
                    "chunk {i} of {chunks:?}"
                );
                forwarded.extend(out.unwrap_or_else(|| chunk.to_vec()));
            }
            assert_eq!(forwarded, want, "{chunks:?}");
        }
    }
}

#[test]
fn one_data_line_is_borrowed_several_are_joined() {
    let mut parser = SseParser::new(BIG);
    let mut kinds = Vec::new();
    let mut note = |e: EventRef<'_>| {
        kinds.push(match e.data {
            Some(Cow::Borrowed(s)) => format!("borrowed {}", String::from_utf8_lossy(s)),
            Some(Cow::Owned(s)) => format!("joined {}", String::from_utf8_lossy(&s)),
            None => "none".to_string(),
        })
    };
    let body = b"data: one\n\ndata: a\ndata: b\n\n: no data\n\ndata: held";
    assert_eq!(
        parser.push_with(body, false, &mut note),
        Ok(Coverage::Shifted)
    );
    // An event begun in an earlier chunk is borrowed from the parser's buffer.
    assert_eq!(
        parser.push_with(b" over\n\n", false, &mut note),
        Ok(Coverage::Shifted)
    );
    assert_eq!(
        parser.push_with(b"data: 2\n\n", true, &mut note),
        Ok(Coverage::Exact)
    );
    assert_eq!(
        kinds,
        [
            "borrowed one",
            "joined a\nb",
            "none",
            "borrowed held over",
            "borrowed 2"
        ]
    );
}

/// The UTF-8 check is settled for ASCII events by the line-break search: a byte that is not
/// ASCII anywhere in an event (in a 16-byte block, in a tail, in a line's first byte, split
/// from the rest of the event by a chunk end) must still get the full check.
#[test]
fn utf8_check_sees_every_position_of_the_event() {
    let prefixes: [&[u8]; 3] = [b"data: ", b"", b": x\r\n\r\n"];
    for prefix in prefixes {
        for len in 0..40 {
            for at in 0..len {
                for (insert, valid) in
                    [(&b"\xFF"[..], false), (b"\xC3", false), (b"\xC3\xA9", true)]
                {
                    let mut value = vec![b'a'; len];
                    value.splice(at..at + 1, insert.iter().copied());
                    let body = [prefix, &value, b"\n\n"].concat();
                    let want = if valid {
                        Ok(body.len())
                    } else {
                        Err(SseError::InvalidUtf8)
                    };
                    for cut in 0..=body.len() {
                        let (a, b) = body.split_at(cut);
                        let got = parse_chunks(&[a, b], BIG)
                            .map(|(events, _)| events.iter().map(|e| e.raw.len()).sum());
                        assert_eq!(got, want, "{prefix:?} {len} {at} {insert:?} cut at {cut}");
                    }
                }
            }
        }
    }
}
