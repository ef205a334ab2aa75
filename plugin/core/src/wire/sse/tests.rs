//! SSE parsing: framing variants, chunking at every byte boundary, re-encoding, limits, and
//! the owned parser's helpers shared with the in-place tests (`in_place`). The recorded
//! transcripts are read in `tests/wire/sse.rs`.
#![allow(clippy::type_complexity)]

use crate::wire::sse::{SseError, SseEvent, SseParser};

mod in_place;

/// An event cap no test body reaches.
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

/// The events of a whole body fed in one chunk.
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

/// The framing variants an event stream may use (line ends, BOM, multi-line data, comments).
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

#[test]
fn line_break_search_agrees_with_a_byte_loop_at_every_offset_and_byte() {
    use crate::wire::sse::find_line_break;
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
