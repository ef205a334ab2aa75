//! The resource URIs a server listed through this gateway, for a server whose reads are
//! limited to them (`resources: "listed"`, and `"seal"` until its resources are sealed).
//!
//! Main design decision: one key per server (`ts/v1/listed/<id>`) holding the URIs its
//! `resources/list` answers served, newest last, at most [`MAX_LISTED`]: a read of a URI
//! missing from it (never listed, listed through another instance, or pushed out by newer
//! ones) is refused with "list resources again", which a client can always do, so losing a
//! URI closes one read and never opens anything. An answer that lists only URIs already held
//! writes nothing. A write is a compare-and-swap on the version read, so two workers adding
//! URIs at once both keep theirs; the key's first write has no version to compare with (the
//! host ignores a condition on a missing key), and a URI lost there is one more refused read.

use crate::state::store::{Expect, StateStore, StoreError};
use crate::state::{CAS_ATTEMPTS, StateError};

/// URIs kept per server: a listing of more pushes the oldest out.
pub const MAX_LISTED: usize = 4096;

fn key(server: &str) -> String {
    format!("ts/v1/listed/{server}")
}

/// The URIs held for `server`, with the version read (`None`: none yet). Bytes that do not
/// parse hold nothing (the next listing writes them anew).
fn held(store: &dyn StateStore, server: &str) -> Result<(Vec<String>, Option<u32>), StateError> {
    match store.get(&key(server)).map_err(StateError::Store)? {
        None => Ok((Vec::new(), None)),
        Some((bytes, version)) => {
            let uris = serde_json::from_slice(&bytes).unwrap_or_default();
            Ok((uris, Some(version)))
        }
    }
}

/// Adds `uris` (served by one `resources/list` answer of `server`) to those held.
pub fn remember(store: &mut dyn StateStore, server: &str, uris: &[&str]) -> Result<(), StateError> {
    for _ in 0..CAS_ATTEMPTS {
        let (mut held, version) = held(&*store, server)?;
        // Looked up in a sorted set, not one by one: n URIs listed against m held cost
        // n log m comparisons, not n × m.
        // (An answer's own URIs are equally new: they join in byte order, each once.)
        let known = crate::wire::order::name_set(held.iter().map(String::as_str));
        let listed = crate::wire::order::name_set(uris.iter().copied());
        let new: Vec<String> = listed
            .into_iter()
            .filter(|uri| known.binary_search(uri).is_err())
            .map(str::to_string)
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        held.extend(new);
        let excess = held.len().saturating_sub(MAX_LISTED);
        held.drain(..excess);
        let bytes = serde_json::to_vec(&held).map_err(|e| StateError::Corrupt(e.to_string()))?;
        let expect = version.map_or(Expect::Any, Expect::Version);
        match store.set(&key(server), &bytes, expect) {
            Ok(()) => return Ok(()),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(StateError::Store(e)),
        }
    }
    Err(StateError::Store(StoreError::Conflict))
}

/// Whether `uri` was listed by `server` through this gateway (and is still held).
pub fn holds(store: &dyn StateStore, server: &str, uri: &str) -> Result<bool, StateError> {
    let (held, _) = held(store, server)?;
    Ok(held.iter().any(|h| h == uri))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::state::store::MemoryStore;

    #[test]
    fn listed_uris_are_held_newest_last_and_the_oldest_leave_past_the_bound() {
        let mut store = MemoryStore::new();
        assert!(!holds(&store, "docs", "file:///a").unwrap());
        remember(&mut store, "docs", &["file:///a", "file:///b"]).unwrap();
        assert!(holds(&store, "docs", "file:///a").unwrap());
        assert!(!holds(&store, "other", "file:///a").unwrap());
        // Listed again: nothing written.
        let before = store.get("ts/v1/listed/docs").unwrap().unwrap().1;
        remember(&mut store, "docs", &["file:///b"]).unwrap();
        assert_eq!(store.get("ts/v1/listed/docs").unwrap().unwrap().1, before);
        let many: Vec<String> = (0..MAX_LISTED).map(|i| format!("file:///n/{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        remember(&mut store, "docs", &many).unwrap();
        assert!(!holds(&store, "docs", "file:///a").unwrap(), "pushed out");
        assert!(holds(&store, "docs", "file:///n/0").unwrap());
        assert!(holds(&store, "docs", &format!("file:///n/{}", MAX_LISTED - 1)).unwrap());
    }
}
