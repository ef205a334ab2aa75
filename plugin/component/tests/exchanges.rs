//! The component's memory of pending requests stays bounded: a fixed number of
//! (server, session) pairs with least-recently-used eviction, and a cap on pending ids.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use serde_json::json;
use toolseal_component::exchanges::{CAPACITY, Exchanges, MAX_PENDING};
use toolseal_core::gateway::exchange::{Exchange, Pending, PendingList};

/// The ids of an exchange's pending lists.
fn ids(exchange: &Exchange) -> Vec<serde_json::Value> {
    let lists = exchange.pending.iter().filter_map(|p| match p {
        Pending::List(list) => Some(list.id.clone()),
        _ => None,
    });
    lists.collect()
}

fn pending_list(server: &str, session: &str, id: u64) -> Exchange {
    let mut exchange = Exchange::new(server, Some(session));
    exchange
        .pending
        .push(Pending::List(PendingList::new(json!(id), Some(session))));
    exchange
}

#[test]
fn take_gives_back_what_merge_left_and_a_fresh_exchange_otherwise() {
    let mut map = Exchanges::default();
    map.merge(pending_list("s", "a", 1));
    map.merge(pending_list("s", "a", 2));
    let taken = map.take("s", Some("a"));
    assert_eq!(ids(&taken), vec![json!(1), json!(2)]);
    assert!(
        map.take("s", Some("a")).pending.is_empty(),
        "taken out, not copied"
    );
    assert!(map.take("s", None).pending.is_empty());
    assert!(map.take("other", Some("a")).pending.is_empty());
}

#[test]
fn the_least_recently_used_pair_is_evicted_at_capacity() {
    let mut map = Exchanges::default();
    for i in 0..CAPACITY {
        map.merge(pending_list("s", &format!("session-{i}"), i as u64));
    }
    // Touch session-0 so that session-1 is now the least recently used.
    let first = map.take("s", Some("session-0"));
    map.put(first);
    map.merge(pending_list("s", "newcomer", 9999));
    assert!(
        map.take("s", Some("session-1")).pending.is_empty(),
        "evicted"
    );
    assert_eq!(ids(&map.take("s", Some("session-0"))), vec![json!(0)]);
    assert_eq!(ids(&map.take("s", Some("newcomer"))), vec![json!(9999)]);
    assert_eq!(ids(&map.take("s", Some("session-2"))), vec![json!(2)]);
}

#[test]
fn pending_ids_are_capped_oldest_first() {
    let mut map = Exchanges::default();
    for i in 0..(MAX_PENDING as u64 + 10) {
        map.merge(pending_list("s", "a", i));
    }
    // Other requests are capped apart: as many of them do not push lists out.
    for i in 0..(MAX_PENDING as u64 + 5) {
        let mut other = Exchange::new("s", Some("a"));
        other
            .pending
            .push(Pending::Other(json!(format!("o{i}")), "ping".into()));
        map.merge(other);
    }
    let taken = map.take("s", Some("a"));
    // The newest of each kind, oldest first, lists before the others that came after them.
    let lists: Vec<serde_json::Value> = (10..MAX_PENDING as u64 + 10).map(|i| json!(i)).collect();
    let others = (5..MAX_PENDING as u64 + 5).map(|i| json!(format!("o{i}")));
    let all: Vec<serde_json::Value> = lists.iter().cloned().chain(others).collect();
    assert_eq!(ids(&taken), lists);
    let pending: Vec<serde_json::Value> = taken.pending.iter().map(|p| p.id().clone()).collect();
    assert_eq!(pending, all);
}
