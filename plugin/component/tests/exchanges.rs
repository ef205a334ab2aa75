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
use toolseal_core::gateway::engine::{Exchange, PendingList};

/// The ids of an exchange's pending lists.
fn ids(exchange: &Exchange) -> Vec<serde_json::Value> {
    exchange
        .pending_lists
        .iter()
        .map(|l| l.id.clone())
        .collect()
}

fn pending_list(server: &str, session: &str, id: u64) -> Exchange {
    let mut exchange = Exchange::new(server, Some(session));
    exchange
        .pending_lists
        .push(PendingList::new(json!(id), Some(session)));
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
        map.take("s", Some("a")).pending_lists.is_empty(),
        "taken out, not copied"
    );
    assert!(map.take("s", None).pending_lists.is_empty());
    assert!(map.take("other", Some("a")).pending_lists.is_empty());
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
        map.take("s", Some("session-1")).pending_lists.is_empty(),
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
    let taken = map.take("s", Some("a"));
    assert_eq!(taken.pending_lists.len(), MAX_PENDING);
    assert_eq!(taken.pending_lists[0].id, json!(10));
    assert_eq!(
        taken.pending_lists[MAX_PENDING - 1].id,
        json!(MAX_PENDING as u64 + 9)
    );
}
