//! `sse::SseParser` under arbitrary chunking: the fuzzer picks the cut points (first byte:
//! how many, then two bytes per cut), the event size cap, and the body. The events (raw
//! bytes and fields), the error and the unterminated remainder must be those of a one-shot
//! parse; on success the raw bytes of the events plus the remainder are the body.
//! `SseEvent::with_data` must give back an event that reads as the new data. The in-place
//! path (`push_with`, `rewrite`) under the same chunking must give the owned path's events
//! and error, and `rewrite` must forward exactly the events' bytes (the chunk itself only
//! when that is what they are).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolseal_core::wire::sse::{EventRef, SseError, SseEvent, SseParser};
use toolseal_fuzz::split_at_cuts;

type Outcome = (Vec<SseEvent>, Result<Option<Vec<u8>>, SseError>);

fn parse(pieces: &[&[u8]], cap: usize) -> Outcome {
    let mut parser = SseParser::new(cap);
    let mut events = Vec::new();
    for piece in pieces {
        match parser.push(piece) {
            Ok(more) => events.extend(more),
            Err(e) => return (events, Err(e)),
        }
    }
    match parser.close() {
        Ok(more) => events.extend(more),
        Err(e) => return (events, Err(e)),
    }
    (events, Ok(parser.finish()))
}

/// The pieces, each with whether the stream ends with it (an empty last piece if none).
fn with_end<'a>(pieces: &[&'a [u8]]) -> Vec<(&'a [u8], bool)> {
    match pieces.split_last() {
        Some((last, rest)) => rest.iter().map(|p| (*p, false)).chain([(*last, true)]).collect(),
        None => vec![(&[][..], true)],
    }
}

/// `push_with` over `pieces`, the stream ending with the last.
fn parse_in_place(pieces: &[&[u8]], cap: usize) -> Outcome {
    let mut parser = SseParser::new(cap);
    let mut events = Vec::new();
    for (piece, end) in with_end(pieces) {
        if let Err(e) = parser.push_with(piece, end, |e: EventRef<'_>| events.push(e.to_event())) {
            return (events, Err(e));
        }
    }
    (events, Ok(parser.finish()))
}

/// What `rewrite` forwards over `pieces` when it replaces nothing (the chunk when it
/// answers `None`), or its error.
fn forward_unchanged(pieces: &[&[u8]], cap: usize) -> Result<Vec<u8>, SseError> {
    let mut parser = SseParser::new(cap);
    let mut forwarded = Vec::new();
    for (piece, end) in with_end(pieces) {
        match parser.rewrite(piece, end, |_| None)? {
            Some(bytes) => forwarded.extend(bytes),
            None => forwarded.extend_from_slice(piece),
        }
    }
    Ok(forwarded)
}

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else { return };
    let Some((&cap_byte, rest)) = rest.split_first() else { return };
    let count = usize::from(count % 24);
    let cut_bytes = rest.get(..count * 2).unwrap_or(rest);
    let body = rest.get(count * 2..).unwrap_or_default();
    let cuts: Vec<usize> = cut_bytes.chunks(2).map(|c| usize::from(u16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)]))).collect();
    let cap = 16 + usize::from(cap_byte) * 8;

    let (whole_events, whole_end) = parse(&[body], cap);
    let pieces = split_at_cuts(body, &cuts);
    let (cut_events, cut_end) = parse(&pieces, cap);
    let bytes: Vec<&[u8]> = body.iter().map(std::slice::from_ref).collect();
    let (byte_events, byte_end) = parse(&bytes, cap);

    let (place_events, place_end) = parse_in_place(&pieces, cap);
    let forwarded = forward_unchanged(&pieces, cap);
    match &cut_end {
        Ok(_) => {
            assert_eq!(place_end, cut_end, "in place: another end of the stream");
            assert_eq!(place_events, cut_events, "in place: other events");
            let raws: Vec<u8> = cut_events.iter().flat_map(|e| e.raw.iter().copied()).collect();
            assert_eq!(forwarded, Ok(raws), "rewrite forwarded other bytes than the events'");
        }
        Err(e) => {
            assert_eq!(place_end.as_ref().err(), Some(e), "in place: another error");
            assert_eq!(forwarded.as_ref().err(), Some(e), "rewrite: another error");
            // The owned path may have returned the last piece's events before close failed.
            assert!(cut_events.starts_with(&place_events), "in place: events not a prefix");
        }
    }

    match &whole_end {
        Ok(rest) => {
            assert_eq!(cut_end, whole_end, "chunking changed the end of the stream");
            assert_eq!(byte_end, whole_end, "byte-by-byte feeding changed the end of the stream");
            assert_eq!(cut_events, whole_events, "chunking changed the events");
            assert_eq!(byte_events, whole_events, "byte-by-byte feeding changed the events");
            let mut joined: Vec<u8> = whole_events.iter().flat_map(|e| e.raw.iter().copied()).collect();
            joined.extend(rest.iter().flatten());
            assert_eq!(joined, body, "raw bytes of the events are not the body");
        }
        Err(e) => {
            assert_eq!(cut_end.as_ref().err(), Some(e), "chunking changed the error");
            assert_eq!(byte_end.as_ref().err(), Some(e), "byte-by-byte feeding changed the error");
            // Events returned before the error are a prefix of the one-shot reading's.
            let joined: Vec<u8> = cut_events.iter().flat_map(|e| e.raw.iter().copied()).collect();
            assert!(body.starts_with(&joined), "events before the error are not a prefix of the body");
        }
    }

    for (index, event) in whole_events.iter().enumerate() {
        let new_data = format!("x{}", event.data.as_deref().unwrap_or(""));
        let rewritten = event.with_data(&new_data);
        let mut again = SseParser::new(usize::MAX);
        // Read it where it stands: only the first event of a stream may start with a BOM.
        if index > 0 {
            assert_eq!(again.push(b": first\n\n").map(|e| e.len()), Ok(1));
        }
        let mut events = again.push(&rewritten).expect("a rewritten event must parse");
        events.extend(again.close().expect("close"));
        assert_eq!(again.finish(), None, "a rewritten event must be terminated");
        assert_eq!(events.len(), 1, "a rewritten event must stay one event: {:?}", String::from_utf8_lossy(&rewritten));
        let expected = new_data.replace("\r\n", "\n").replace('\r', "\n");
        assert_eq!(events[0].data.as_deref(), Some(expected.as_str()));
        assert_eq!(events[0].id, event.id);
        assert_eq!(events[0].event_type, event.event_type);
    }
});
