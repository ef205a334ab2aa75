//! What telling a view costs a worker once rather than on every list (see
//! [`crate::gateway::surface`]): the capabilities a 2025 session declared, as last read from
//! the store, and the views last told from their source values.

use crate::gateway::exchange::Exchange;
use crate::policy::views::{self, ViewId, ViewSource};
use crate::state;
use crate::state::parse_cache::ParseCache;
use crate::state::store::StateStore;
use serde_json::Value;

/// The `_meta` member a 2026-07-28 request declares its client capabilities in.
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// How long after a session's `initialize` its lists wait for its `notifications/initialized`
/// before its view is told without it (ms).
pub const HANDSHAKE_GRACE_MS: u64 = 10_000;

/// Views told lately that a worker keeps (a view is one kind of caller: a server has few).
const TOLD_ENTRIES: usize = 8;

/// What telling a view costs a worker once rather than on every list: the capabilities slots
/// as last parsed (the store is still read on every request, see [`ParseCache`]), the slot
/// keys of the session last seen (two SHA-256 words), and the views last told from their
/// source values (a view's key is a SHA-256 of them). Each is reused only for exactly the
/// inputs it was made of, so a view is told as it would be without it.
pub(crate) struct ViewMemo {
    caps: ParseCache<state::CapsSlot>,
    keys: Option<(String, String, usize, [String; 2])>,
    told: Vec<(Vec<ViewSource>, Vec<Value>, ViewId)>,
}

impl Default for ViewMemo {
    fn default() -> Self {
        ViewMemo {
            caps: ParseCache::new(state::parse_cache::SNAPSHOT_ENTRIES),
            keys: None,
            told: Vec::new(),
        }
    }
}

impl ViewMemo {
    /// The view of `values` (one per source of `sources`).
    pub(crate) fn told(&mut self, sources: &[ViewSource], values: Vec<Value>) -> ViewId {
        if let Some((_, _, id)) = self
            .told
            .iter()
            .find(|(s, v, _)| s.as_slice() == sources && *v == values)
        {
            return id.clone();
        }
        let id = ViewId::new(sources, values.clone());
        if self.told.len() >= TOLD_ENTRIES {
            self.told.remove(0);
        }
        self.told.push((sources.to_vec(), values, id.clone()));
        id
    }

    /// The capability names a request declared: in its `_meta` under the stateless revision,
    /// in its session's `initialize` before it (null for a request of no session).
    /// `listed_at`: the time of a list. A session's capabilities take effect when its
    /// handshake ends: a server may register tools for them only then (server-everything
    /// does), so a list made before the session's `notifications/initialized` can be short,
    /// and recorded as its view's names it would make the complete list look like drift. Such
    /// a list's view cannot be told (it is checked against the catalogue alone) until the
    /// notification passes or [`HANDSHAKE_GRACE_MS`] after the `initialize` (the notification
    /// may have gone through another instance).
    pub(crate) fn declared(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        (params, revision): (Option<&Value>, &str),
        listed_at: Option<u64>,
        slots: usize,
    ) -> Result<Value, String> {
        let names = if exchange.stateless() {
            let declared = params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(CAPABILITIES_META))
                .unwrap_or(&Value::Null);
            views::capability_names(declared, revision)
        } else {
            let Some(session) = exchange.session.as_deref() else {
                return Ok(Value::Null);
            };
            let pair = (exchange.server.as_str(), session);
            match self.capabilities(store, pair, slots) {
                Ok(Some(caps)) => {
                    let early = |at: u64, now: u64| now.saturating_sub(at) < HANDSHAKE_GRACE_MS;
                    if !caps.initialized
                        && listed_at
                            .zip(caps.at_ms)
                            .is_some_and(|(now, at)| early(at, now))
                    {
                        return Err(
                            "this session has not sent notifications/initialized yet: what a server lists before the handshake ends may be short"
                                .into(),
                        );
                    }
                    caps.names
                }
                Ok(None) => {
                    return Err(
                        "the capabilities this session declared are not remembered (its initialize was not seen, or its slot was reused)"
                            .into(),
                    );
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        Ok(Value::Array(names.into_iter().map(Value::String).collect()))
    }

    /// What `session` of `server` declared, read through the cache.
    fn capabilities(
        &mut self,
        store: &dyn StateStore,
        (server, session): (&str, &str),
        slots: usize,
    ) -> Result<Option<state::SessionCaps>, state::StateError> {
        let keys = match self.keys.take() {
            Some(kept) if kept.0 == server && kept.1 == session && kept.2 == slots => kept,
            _ => (
                server.to_string(),
                session.to_string(),
                slots,
                state::capabilities_keys(server, session, slots),
            ),
        };
        let read =
            state::get_capabilities_cached(store, &mut self.caps, (server, session), &keys.3);
        self.keys = Some(keys);
        read
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::state::store::MemoryStore;
    use serde_json::json;

    #[test]
    fn a_view_told_through_the_memo_is_the_view_told_without_it() {
        let mut memo = ViewMemo::default();
        let sources = views::default_sources();
        let with_path = vec![ViewSource::Revision, ViewSource::Path];
        let inputs = [
            (sources.clone(), vec![json!("2025-06-18"), json!(["roots"])]),
            (sources.clone(), vec![json!("2025-06-18"), json!([])]),
            (sources.clone(), vec![json!("2026-07-28"), json!(["roots"])]),
            (
                with_path.clone(),
                vec![json!("2025-06-18"), json!(["roots"])],
            ),
        ];
        // More views than the memo keeps, twice over, in an order that reuses and evicts.
        for round in 0..3 {
            for (i, (sources, values)) in inputs.iter().enumerate().cycle().take(20) {
                let extra = (i + round) % 3;
                let mut values = values.clone();
                values.push(json!(extra));
                let mut sources = sources.clone();
                sources.push(ViewSource::Header("x-toolset".into()));
                let told = memo.told(&sources, values.clone());
                assert_eq!(told, ViewId::new(&sources, values));
            }
        }
        assert!(memo.told.len() <= TOLD_ENTRIES);
        let a = memo.told(&sources, vec![json!("2025-06-18"), json!([])]);
        let b = memo.told(&with_path, vec![json!("2025-06-18"), json!([])]);
        assert_eq!(a.key, b.key, "the key is the values'");
        assert_ne!(a.sources, b.sources, "the sources are named as configured");
    }

    #[test]
    fn capabilities_read_through_the_memo_follow_every_write_of_the_slot() {
        let mut store = MemoryStore::new();
        let mut memo = ViewMemo::default();
        let slots = 64;
        let pair = ("srv", "session-1");
        assert_eq!(memo.capabilities(&store, pair, slots).unwrap(), None);
        let names = vec!["roots".to_string()];
        state::put_capabilities(&mut store, "srv", "session-1", (&names, 1_000), slots).unwrap();
        let read = memo.capabilities(&store, pair, slots).unwrap().unwrap();
        assert_eq!(
            (read.names.clone(), read.initialized),
            (names.clone(), false)
        );
        // Read again unchanged (from the cached parse), then after the handshake ends.
        assert_eq!(memo.capabilities(&store, pair, slots).unwrap(), Some(read));
        state::session_initialized(&mut store, "srv", "session-1", slots).unwrap();
        let after = memo.capabilities(&store, pair, slots).unwrap().unwrap();
        assert!(after.initialized);
        // Another session of the same server, and the first again: each reads its own.
        assert_eq!(
            memo.capabilities(&store, ("srv", "session-2"), slots)
                .unwrap(),
            None
        );
        assert_eq!(
            memo.capabilities(&store, pair, slots).unwrap(),
            state::get_capabilities(&store, "srv", "session-1", slots).unwrap()
        );
        // A slot taken over by another session is not read as this one's.
        let other = vec!["sampling".to_string()];
        for key in state::capabilities_keys("srv", "session-1", slots) {
            let value = json!({"server": "srv", "session": "session-9", "capabilities": other});
            store
                .set(
                    &key,
                    value.to_string().as_bytes(),
                    crate::state::store::Expect::Any,
                )
                .unwrap();
        }
        assert_eq!(memo.capabilities(&store, pair, slots).unwrap(), None);
    }
}
