//! An etcd in memory that answers the JSON API the fleet store speaks (range and txn), for
//! native hosts' tests and simulations of a fleet: several engines, each with its own shared
//! data, over one store, with an outage and forced conflicts to order.
//!
//! It keeps etcd's rules that the fleet relies on: one store revision, bumped by every
//! transaction that writes; each key's `mod_revision`; a missing key compares as revision 0;
//! `range_end` and `min_mod_revision`; int64 fields sent as strings, keys and values base64.

use crate::wire::etcd::{RANGE_PATH, TXN_PATH, decode, encode};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The in-memory store.
#[derive(Debug, Clone, Default)]
pub struct MemoryEtcd {
    kv: BTreeMap<Vec<u8>, (Vec<u8>, u64)>,
    revision: u64,
    down: bool,
    /// Every call made, in order: `(path, the request body)`.
    pub calls: Vec<(String, Vec<u8>)>,
}

impl MemoryEtcd {
    /// An empty store at revision 1 (as a new etcd).
    pub fn new() -> Self {
        MemoryEtcd {
            revision: 1,
            ..Default::default()
        }
    }

    /// While down, every call fails as an unreachable store does.
    pub fn set_down(&mut self, down: bool) {
        self.down = down;
    }

    /// Writes `key` as another writer would (bumps its revision): the next compare on it loses.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.revision += 1;
        self.kv
            .insert(key.to_vec(), (value.to_vec(), self.revision));
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.kv.get(key).map(|(v, _)| v.as_slice())
    }

    /// Every key, in order.
    pub fn keys(&self) -> Vec<Vec<u8>> {
        self.kv.keys().cloned().collect()
    }

    /// Answers one call: `Ok((HTTP status, body))`, or `Err` when the store is down.
    pub fn call(&mut self, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        self.calls.push((path.to_string(), body.to_vec()));
        if self.down {
            return Err("connection refused".into());
        }
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return Ok((400, br#"{"error":"bad json","code":3}"#.to_vec()));
        };
        let answer = match path {
            RANGE_PATH => self.range(&request),
            TXN_PATH => self.txn(&request),
            _ => return Ok((404, b"404 page not found".to_vec())),
        };
        Ok((200, crate::wire::json::encode(&answer)))
    }

    fn header(&self) -> Value {
        json!({"cluster_id": "1", "member_id": "1", "revision": self.revision.to_string(), "raft_term": "2"})
    }

    fn range(&self, request: &Value) -> Value {
        let bytes = |name: &str| request.get(name).and_then(Value::as_str).and_then(decode);
        let key = bytes("key").unwrap_or_default();
        let end = bytes("range_end");
        let keys_only = request.get("keys_only").and_then(Value::as_bool) == Some(true);
        let min = request
            .get("min_mod_revision")
            .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
            .unwrap_or(0u64);
        let matches = |k: &Vec<u8>| match &end {
            None => *k == key,
            Some(end) if end.as_slice() == [0] => *k >= key,
            Some(end) => *k >= key && k < end,
        };
        let kvs: Vec<Value> = self
            .kv
            .iter()
            .filter(|(k, (_, rev))| matches(k) && *rev >= min)
            .map(|(k, (v, rev))| {
                let mut kv = json!({"key": encode(k), "create_revision": "1",
                    "mod_revision": rev.to_string(), "version": "1"});
                if !keys_only && let Some(obj) = kv.as_object_mut() {
                    obj.insert("value".into(), json!(encode(v)));
                }
                kv
            })
            .collect();
        let mut answer = json!({"header": self.header()});
        if !kvs.is_empty()
            && let Some(obj) = answer.as_object_mut()
        {
            obj.insert("count".into(), json!(kvs.len().to_string()));
            obj.insert("kvs".into(), Value::Array(kvs));
        }
        answer
    }

    fn txn(&mut self, request: &Value) -> Value {
        let empty = Vec::new();
        let list = |name: &str| {
            request
                .get(name)
                .and_then(Value::as_array)
                .unwrap_or(&empty)
                .clone()
        };
        let held = list("compare").iter().all(|compare| {
            let key = compare
                .get("key")
                .and_then(Value::as_str)
                .and_then(decode)
                .unwrap_or_default();
            let want = compare
                .get("mod_revision")
                .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
                .unwrap_or(0u64);
            let have = self.kv.get(&key).map_or(0, |(_, rev)| *rev);
            have == want
        });
        let ops = list(if held { "success" } else { "failure" });
        let writes = ops.iter().any(|op| op.get("request_put").is_some());
        if writes {
            self.revision += 1;
        }
        let mut responses = Vec::new();
        for op in &ops {
            if let Some(put) = op.get("request_put") {
                let field = |name: &str| {
                    put.get(name)
                        .and_then(Value::as_str)
                        .and_then(decode)
                        .unwrap_or_default()
                };
                self.kv
                    .insert(field("key"), (field("value"), self.revision));
                responses.push(json!({"response_put": {"header": self.header()}}));
            } else if let Some(range) = op.get("request_range") {
                responses.push(json!({"response_range": self.range(range)}));
            }
        }
        let mut answer = json!({"header": self.header(), "responses": responses});
        if held && let Some(obj) = answer.as_object_mut() {
            obj.insert("succeeded".into(), json!(true));
        }
        answer
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::wire::etcd::{parse_range, parse_txn, range_request, txn_request};

    #[test]
    fn a_txn_writes_only_on_the_revision_it_compares() {
        let mut etcd = MemoryEtcd::new();
        let put = |v: &str| vec![(b"k".to_vec(), v.as_bytes().to_vec())];
        let (_, body) = etcd
            .call(TXN_PATH, &txn_request(b"k", 0, &put("one")))
            .unwrap();
        let first = parse_txn(&body).unwrap();
        assert!(first.succeeded);
        let (_, body) = etcd
            .call(TXN_PATH, &txn_request(b"k", 0, &put("two")))
            .unwrap();
        let lost = parse_txn(&body).unwrap();
        assert!(!lost.succeeded);
        assert_eq!(lost.ranges[0].kvs[0].value, b"one");
        assert_eq!(lost.ranges[0].kvs[0].mod_revision, first.revision);
        let (_, body) = etcd
            .call(TXN_PATH, &txn_request(b"k", first.revision, &put("two")))
            .unwrap();
        assert!(parse_txn(&body).unwrap().succeeded);
        let (_, body) = etcd
            .call(RANGE_PATH, &range_request(b"k", None, false, 0))
            .unwrap();
        assert_eq!(parse_range(&body).unwrap().kvs[0].value, b"two");
        let (_, body) = etcd
            .call(RANGE_PATH, &range_request(b"a", Some(b"z"), true, 99))
            .unwrap();
        assert!(parse_range(&body).unwrap().kvs.is_empty());
        etcd.set_down(true);
        assert!(etcd.call(RANGE_PATH, b"{}").is_err());
    }
}
