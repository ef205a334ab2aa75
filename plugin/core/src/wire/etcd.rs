//! etcd's v3 JSON API, as much of it as the fleet store speaks: `POST /v3/kv/range` and
//! `POST /v3/kv/txn`, their request bodies written here and their answers read strictly.
//!
//! Main design decision: the core writes and reads the bodies itself, so every host (Envoy's
//! HTTP callouts, the stdio guard's blocking client, a simulated store in tests) only moves
//! bytes and cannot disagree on what a revision or a conflict is. etcd's JSON gateway sends
//! keys and values base64-encoded and its 64-bit integers (revisions, counts) as JSON
//! strings; both are decoded here, and an answer that is not what etcd sends is an error,
//! never an empty result (what the store says decides what opens).

use serde_json::Value;

/// The path of a range (read) request.
pub const RANGE_PATH: &str = "/v3/kv/range";
/// The path of a transaction.
pub const TXN_PATH: &str = "/v3/kv/txn";

/// One key as etcd holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kv {
    /// The key.
    pub key: Vec<u8>,
    /// The value (empty in a keys-only range).
    pub value: Vec<u8>,
    /// The store revision of the key's last write: what a compare-and-swap compares.
    pub mod_revision: u64,
}

/// A range answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeAnswer {
    /// The store's revision when it answered.
    pub revision: u64,
    /// The keys found (none: no such key).
    pub kvs: Vec<Kv>,
}

/// A transaction's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnAnswer {
    /// The store's revision after the transaction: the new `mod_revision` of every key it put.
    pub revision: u64,
    /// Whether the compares held (the puts were made).
    pub succeeded: bool,
    /// The ranges the transaction read, in order (its failure branch reads the record that
    /// won, so a conflict is decided again from it without another round trip).
    pub ranges: Vec<RangeAnswer>,
}

/// An answer that is not what etcd sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdError(pub String);

impl std::fmt::Display for EtcdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unexpected answer from the fleet store: {}", self.0)
    }
}

/// The first key after every key that starts with `prefix` (etcd's `range_end` of a prefix).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): to the end of the keyspace.
    vec![0]
}

/// A range request: `key` alone, or every key from `key` to `range_end`; `min_mod_revision`
/// keeps only keys written at or after it.
pub fn range_request(
    key: &[u8],
    range_end: Option<&[u8]>,
    keys_only: bool,
    min_mod_revision: u64,
) -> Vec<u8> {
    let mut body = format!("{{\"key\":\"{}\"", encode(key));
    if let Some(end) = range_end {
        body.push_str(&format!(",\"range_end\":\"{}\"", encode(end)));
    }
    if keys_only {
        body.push_str(",\"keys_only\":true");
    }
    if min_mod_revision > 0 {
        body.push_str(&format!(",\"min_mod_revision\":\"{min_mod_revision}\""));
    }
    body.push('}');
    body.into_bytes()
}

/// A transaction that puts `puts` if `key` is still at `mod_revision` (0: the key does not
/// exist), and otherwise reads `key`, so the caller learns what won.
pub fn txn_request(key: &[u8], mod_revision: u64, puts: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let key = encode(key);
    let success: Vec<String> = puts
        .iter()
        .map(|(k, v)| {
            format!(
                "{{\"request_put\":{{\"key\":\"{}\",\"value\":\"{}\"}}}}",
                encode(k),
                encode(v)
            )
        })
        .collect();
    format!(
        "{{\"compare\":[{{\"key\":\"{key}\",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"{mod_revision}\"}}],\"success\":[{}],\"failure\":[{{\"request_range\":{{\"key\":\"{key}\"}}}}]}}",
        success.join(",")
    )
    .into_bytes()
}

/// A transaction that only reads: every key of `keys`, in one round trip.
pub fn read_many_request(keys: &[Vec<u8>]) -> Vec<u8> {
    let success: Vec<String> = keys
        .iter()
        .map(|k| format!("{{\"request_range\":{{\"key\":\"{}\"}}}}", encode(k)))
        .collect();
    format!("{{\"compare\":[],\"success\":[{}]}}", success.join(",")).into_bytes()
}

/// Reads a range answer.
pub fn parse_range(body: &[u8]) -> Result<RangeAnswer, EtcdError> {
    let value = answer(body)?;
    range_of(&value)
}

/// Reads a transaction's answer.
pub fn parse_txn(body: &[u8]) -> Result<TxnAnswer, EtcdError> {
    let value = answer(body)?;
    let revision = header_revision(&value)?;
    let succeeded = match value.get("succeeded") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(EtcdError("`succeeded` is not a boolean".into())),
    };
    let mut ranges = Vec::new();
    if let Some(responses) = value.get("responses") {
        let responses = responses
            .as_array()
            .ok_or_else(|| EtcdError("`responses` is not an array".into()))?;
        for response in responses {
            if let Some(range) = response.get("response_range") {
                ranges.push(range_of_body(range, revision)?);
            }
        }
    }
    Ok(TxnAnswer {
        revision,
        succeeded,
        ranges,
    })
}

fn answer(body: &[u8]) -> Result<Value, EtcdError> {
    let value = crate::wire::json::parse_strict(body, 16)
        .map_err(|e| EtcdError(format!("not JSON ({e})")))?;
    if !value.is_object() {
        return Err(EtcdError("not a JSON object".into()));
    }
    Ok(value)
}

fn header_revision(value: &Value) -> Result<u64, EtcdError> {
    let header = value
        .get("header")
        .ok_or_else(|| EtcdError("no `header`".into()))?;
    int64(header.get("revision"), "header.revision")
}

fn range_of(value: &Value) -> Result<RangeAnswer, EtcdError> {
    let revision = header_revision(value)?;
    range_of_body(value, revision)
}

fn range_of_body(value: &Value, revision: u64) -> Result<RangeAnswer, EtcdError> {
    let mut kvs = Vec::new();
    if let Some(list) = value.get("kvs") {
        let list = list
            .as_array()
            .ok_or_else(|| EtcdError("`kvs` is not an array".into()))?;
        for kv in list {
            kvs.push(Kv {
                key: base64(kv.get("key"), "kvs[].key")?,
                value: match kv.get("value") {
                    None => Vec::new(),
                    some => base64(some, "kvs[].value")?,
                },
                mod_revision: int64(kv.get("mod_revision"), "kvs[].mod_revision")?,
            });
        }
    }
    Ok(RangeAnswer { revision, kvs })
}

/// etcd's int64 fields: a JSON string of digits (a number is taken too); absent is 0, as
/// protobuf's JSON mapping leaves out zero values.
fn int64(value: Option<&Value>, field: &str) -> Result<u64, EtcdError> {
    match value {
        None => Ok(0),
        Some(Value::String(s)) => s
            .parse::<u64>()
            .map_err(|_| EtcdError(format!("`{field}` is not a revision"))),
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| EtcdError(format!("`{field}` is not a revision"))),
        Some(_) => Err(EtcdError(format!("`{field}` is not a revision"))),
    }
}

fn base64(value: Option<&Value>, field: &str) -> Result<Vec<u8>, EtcdError> {
    let text = value
        .and_then(Value::as_str)
        .ok_or_else(|| EtcdError(format!("`{field}` is not a string")))?;
    decode(text).ok_or_else(|| EtcdError(format!("`{field}` is not base64")))
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (what etcd's JSON gateway sends and takes).
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                let index = usize::try_from((n >> shift) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET.get(index).copied().unwrap_or(b'A')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding required when the length says so); `None` for anything
/// else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.len() / 4;
    for (index, chunk) in bytes.chunks(4).enumerate() {
        let last = index + 1 == chunks;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n: u32 = 0;
        for &c in chunk.iter().take(4 - pad) {
            let v = ALPHABET.iter().position(|&a| a == c)?;
            n = (n << 6) | u32::try_from(v).ok()?;
        }
        n <<= 6 * u32::try_from(pad).ok()?;
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(three.get(..3 - pad)?);
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_refuses_what_is_not() {
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = encode(text.as_bytes());
            assert_eq!(decode(&encoded).as_deref(), Some(text.as_bytes()));
        }
        // RFC 4648's test vectors.
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(decode("Zm9v!mFy"), None);
        assert_eq!(decode("Zm8"), None);
        assert_eq!(decode("Zg==Zg=="), None);
        assert_eq!(decode("Z==="), None);
    }

    #[test]
    fn requests_are_json_etcd_reads() {
        let range: Value =
            serde_json::from_slice(&range_request(b"/t/", Some(b"/t0"), true, 5)).unwrap();
        assert_eq!(range["key"], "L3Qv");
        assert_eq!(range["range_end"], "L3Qw");
        assert_eq!(range["keys_only"], true);
        assert_eq!(range["min_mod_revision"], "5");
        let txn: Value =
            serde_json::from_slice(&txn_request(b"k", 7, &[(b"a".to_vec(), b"b".to_vec())]))
                .unwrap();
        assert_eq!(txn["compare"][0]["mod_revision"], "7");
        assert_eq!(txn["success"][0]["request_put"]["value"], "Yg==");
        assert_eq!(txn["failure"][0]["request_range"]["key"], "aw==");
        let read: Value =
            serde_json::from_slice(&read_many_request(&[b"a".to_vec(), b"b".to_vec()])).unwrap();
        assert_eq!(read["success"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_prefix_ends_after_its_last_byte() {
        assert_eq!(prefix_end(b"/toolseal/"), b"/toolseal0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn answers_read_as_etcd_writes_them() {
        let body = br#"{"header":{"cluster_id":"1","revision":"42"},"kvs":[{"key":"YQ==","create_revision":"3","mod_revision":"41","version":"2","value":"Yg=="}],"count":"1"}"#;
        let range = parse_range(body).unwrap();
        assert_eq!(range.revision, 42);
        assert_eq!(range.kvs[0].key, b"a");
        assert_eq!(range.kvs[0].value, b"b");
        assert_eq!(range.kvs[0].mod_revision, 41);
        let none = parse_range(br#"{"header":{"revision":"7"}}"#).unwrap();
        assert!(none.kvs.is_empty());
        let lost = br#"{"header":{"revision":"9"},"responses":[{"response_range":{"header":{"revision":"9"},"kvs":[{"key":"YQ==","mod_revision":"8","value":"Yw=="}],"count":"1"}}]}"#;
        let txn = parse_txn(lost).unwrap();
        assert!(!txn.succeeded);
        assert_eq!(txn.ranges[0].kvs[0].value, b"c");
        let won = br#"{"header":{"revision":"10"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"10"}}}]}"#;
        assert_eq!(parse_txn(won).unwrap().revision, 10);
        for bad in [
            &b"[]"[..],
            b"{}",
            br#"{"header":{"revision":"x"}}"#,
            br#"{"header":{"revision":"1"},"kvs":[{"key":"%"}]}"#,
        ] {
            assert!(
                parse_range(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
