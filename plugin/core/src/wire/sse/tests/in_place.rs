//! SSE read in place (`SseParser::push_with`, `rewrite`): the same events as the owned
//! reading at every chunk split, the "chunk unchanged" answer exactly when the chunk is whole
//! events, borrowed or joined data, and the UTF-8 check at every position of an event.
#![allow(clippy::type_complexity)]

use crate::wire::sse::{Coverage, EventRef, SseError, SseEvent, SseParser};
use std::borrow::Cow;

use super::{BIG, parse_chunks, parse_whole};

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
