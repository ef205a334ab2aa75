//! The pair format read in place: well-formed buffers give exact spans, anything else is
//! refused whole; header lookups see lower-case names and valid UTF-8 only.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use toolseal_plugin::pairs::{self, Headers};

fn read(bytes: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let spans = pairs::spans(bytes)?;
    Some(
        spans
            .into_iter()
            .map(|(k, v)| (bytes[k].to_vec(), bytes[v].to_vec()))
            .collect(),
    )
}

/// Serializes `pairs` in the pair format, as the host does (the inverse of `pairs::spans`).
fn serialize<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> Vec<u8> {
    let le = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let mut out = le(pairs.len()).to_vec();
    for (k, v) in pairs {
        out.extend_from_slice(&le(k.as_ref().len()));
        out.extend_from_slice(&le(v.as_ref().len()));
    }
    for (k, v) in pairs {
        for part in [k.as_ref(), v.as_ref()] {
            out.extend_from_slice(part);
            out.push(0);
        }
    }
    out
}

#[test]
fn serialized_pairs_read_back_exactly() {
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"POST"),
        (b"mcp-session-id", b"abc"),
        (b"", b""),
        (b"x-empty", b""),
    ];
    let bytes = serialize(&pairs);
    // count, 4 x (key len, value len), then each part and its NUL.
    let parts: usize = pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    assert_eq!(bytes.len(), 4 + 4 * 8 + parts);
    let back = read(&bytes).unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = pairs
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(back, expected);
    assert_eq!(read(&[]), Some(Vec::new()));
    assert_eq!(read(&serialize::<&[u8], &[u8]>(&[])), Some(Vec::new()));
}

#[test]
fn malformed_buffers_are_refused_whole() {
    let good = serialize(&[("a", "b"), ("cc", "dd")]);
    assert!(read(&good).is_some());
    // Cut anywhere: refused.
    for cut in 1..good.len() {
        assert_eq!(read(&good[..cut]), None, "cut at {cut}");
    }
    // A byte left over, a missing NUL, a length past the end, too many pairs.
    let mut extra = good.clone();
    extra.push(0);
    assert_eq!(read(&extra), None);
    let mut no_nul = good.clone();
    let first_nul = 4 + 2 * 8 + 1;
    assert_eq!(no_nul[first_nul], 0);
    no_nul[first_nul] = b'x';
    assert_eq!(read(&no_nul), None);
    let mut long = good.clone();
    long[4] = 200;
    assert_eq!(read(&long), None);
    let mut many = good;
    many[..4].copy_from_slice(&u32::try_from(pairs::MAX_PAIRS + 1).unwrap().to_le_bytes());
    assert_eq!(read(&many), None);
}

#[test]
fn headers_are_looked_up_in_place_by_lower_case_name() {
    let headers = Headers::from_serialized(serialize(&[
        (":path", "/mcp"),
        ("content-type", "application/json"),
        ("x-twice", "first"),
        ("x-twice", "second"),
    ]));
    assert_eq!(headers.get(":path"), Some("/mcp"));
    assert_eq!(headers.get("content-type"), Some("application/json"));
    assert_eq!(headers.get("x-twice"), Some("first"));
    assert_eq!(headers.get("Content-Type"), None);
    assert_eq!(headers.get("missing"), None);
}

#[test]
fn upper_case_names_and_invalid_utf8_are_normalized_once() {
    let headers = Headers::from_serialized(serialize::<&[u8], &[u8]>(&[
        (b"Mcp-Session-Id", b"s\xff1"),
        (b"x-ok", b"fine"),
    ]));
    assert_eq!(headers.get("mcp-session-id"), Some("s\u{FFFD}1"));
    assert_eq!(headers.get("x-ok"), Some("fine"));
    assert_eq!(headers.get("Mcp-Session-Id"), None);
}

#[test]
fn a_malformed_header_buffer_is_an_empty_map() {
    let mut bytes = serialize(&[(":method", "POST")]);
    bytes.pop();
    let headers = Headers::from_serialized(bytes);
    assert_eq!(headers.get(":method"), None);
}

#[test]
fn the_filters_own_serializer_writes_what_the_host_reads() {
    // The headers of a local reply, as `proxy_send_local_response` takes them.
    let local = [
        ("content-type", "application/json"),
        ("x-toolseal", "local"),
    ];
    let bytes = pairs::serialize(&local);
    assert_eq!(bytes, serialize(&local));
    let back = read(&bytes).unwrap();
    assert_eq!(
        back,
        [
            (b"content-type".to_vec(), b"application/json".to_vec()),
            (b"x-toolseal".to_vec(), b"local".to_vec()),
        ]
    );
    assert_eq!(pairs::serialize(&[]), 0u32.to_le_bytes());
}
