//! The shared state stays bounded whatever servers and clients do: a server that flaps
//! between ever new tool sets reuses its set slots, and ever new sessions reuse the snapshot
//! slots. Measured through the engine on the in-memory store (the same keys and values as
//! proxy-wasm shared data).
//!
//! The million-scale measurement is ignored by default (about a minute in release):
//! `cargo test --release -p toolseal-core --test state state_bounds:: -- --ignored --nocapture`.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::{Exchange, RequestInfo, RequestVerdict};
use toolseal_core::state::SET_SLOTS;
use toolseal_core::state::audit::CollectedOutputs;
use toolseal_core::state::store::{MemoryStore, StateStore};
use toolseal_core::wire::revision::RoutingHeaders;

use crate::support::host::NoCaller;

/// One worker and its store.
struct Gateway {
    engine: Engine,
    store: MemoryStore,
    out: CollectedOutputs,
}

impl Gateway {
    fn new() -> Self {
        // Audit events to the host only matter here through the ring they fill.
        let mut engine = Engine::new(Config::parse(br#"{"views": ["revision"]}"#).unwrap());
        let mut store = MemoryStore::new();
        let mut out = CollectedOutputs::default();
        engine.configure(&mut store, &mut out, 1).unwrap();
        Gateway { engine, store, out }
    }

    /// `session` lists `server`'s tools and gets `body` (a JSON `tools/list` answer).
    fn list(&mut self, server: &str, session: &str, body: &[u8]) {
        let caller = NoCaller;
        let info = RequestInfo {
            http_method: "POST",
            content_type: Some("application/json"),
            session: Some(session),
            routing: RoutingHeaders {
                present: true,
                ..RoutingHeaders::default()
            },
            caller: &caller,
        };
        let mut exchange = Exchange::new(server, Some(session));
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let verdict = self.engine.request_body(
            &mut self.store,
            &mut self.out,
            2,
            &mut exchange,
            &info,
            request,
        );
        assert_eq!(verdict, RequestVerdict::Forward);
        self.engine
            .response_headers(&mut exchange, Some("application/json"), None);
        self.engine
            .response_json(&mut self.store, &mut self.out, 3, &mut exchange, body);
        // The collected records would be the only thing to grow here.
        self.out = CollectedOutputs::default();
    }

    fn keys_with(&self, prefix: &str) -> usize {
        self.store
            .entries()
            .filter(|(k, _)| k.starts_with(prefix))
            .count()
    }
}

/// The `n`th tool set of a flapping server: one tool whose description says `n`.
fn nth_set(n: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{
        "name": "deploy", "description": format!("Deploy release {n}."),
        "inputSchema": {"type": "object", "properties": {"branch": {"type": "string"}}}
    }]}})
    .to_string()
    .into_bytes()
}

/// Feeds `sets` distinct tool sets of one server, then `sessions` sessions listing one set,
/// printing the key count and value bytes at every power of ten.
fn measure(sets: u64, sessions: u64) -> (usize, usize, usize, usize) {
    let mut gw = Gateway::new();
    let mut at_sets = (0, 0);
    for n in 1..=sets {
        gw.list("flapping", "s", &nth_set(n));
        if n.is_power_of_two() || n == sets {
            at_sets = (gw.store.len(), gw.store.value_bytes());
            eprintln!(
                "{n:>8} distinct sets: {:>6} keys, {:>9} value bytes",
                at_sets.0, at_sets.1
            );
        }
    }
    assert!(gw.keys_with("ts/v1/set/flapping/") <= SET_SLOTS);
    let steady = nth_set(1);
    gw.list("steady", "first", &steady);
    let mut at_sessions = (0, 0);
    for n in 1..=sessions {
        gw.list("steady", &format!("session-{n}"), &steady);
        if n.is_power_of_two() || n == sessions {
            at_sessions = (gw.store.len(), gw.store.value_bytes());
            eprintln!(
                "{n:>8} sessions:      {:>6} keys, {:>9} value bytes",
                at_sessions.0, at_sessions.1
            );
        }
    }
    (at_sets.0, at_sets.1, at_sessions.0, at_sessions.1)
}

#[test]
fn a_flapping_server_and_ever_new_sessions_keep_the_state_bounded() {
    // Small enough for every run, large enough to go round every ring: the set slots, the
    // audit ring (256 events) and a session-slot table of the default 4096 slots.
    let mut gw = Gateway::new();
    let mut sizes = Vec::new();
    for n in 1..=600 {
        gw.list("flapping", "s", &nth_set(n));
        if n >= 300 {
            sizes.push(gw.store.len());
        }
    }
    // Once the audit ring has gone round, a new set adds no key.
    assert!(sizes.windows(2).all(|w| w[0] == w[1]), "{sizes:?}");
    assert_eq!(gw.keys_with("ts/v1/set/flapping/"), SET_SLOTS);
    // The record names sets that are all still stored (baseline, live candidate).
    let (record, _) = gw.store.get("ts/v1/srv/flapping").unwrap().unwrap();
    let record: Value = serde_json::from_slice(&record).unwrap();
    for reference in ["baseline", "live"] {
        let fingerprint = record[reference].as_str().unwrap();
        let holder = gw
            .store
            .entries()
            .filter(|(k, _)| k.starts_with("ts/v1/set/flapping/"))
            .find(|(_, v)| String::from_utf8_lossy(v).contains(fingerprint));
        assert!(holder.is_some(), "{reference} {fingerprint} is stored");
    }
    let before = gw.store.len();
    let steady = nth_set(1);
    for n in 0..10_000 {
        gw.list("steady", &format!("session-{n}"), &steady);
    }
    // Snapshots take at most one key per session slot (4096 by default).
    let snapshots = gw.keys_with("ts/v1/sess/");
    assert!(snapshots <= 4096 && snapshots > 3_000, "{snapshots}");
    assert!(gw.store.len() <= before + 4096 + SET_SLOTS + 2);
}

#[test]
#[ignore = "a million lists: run in release, see the module doc"]
fn one_million_fingerprints_and_one_million_snapshot_keys() {
    let (set_keys, set_bytes, keys, bytes) = measure(1_000_000, 1_000_000);
    eprintln!(
        "after 1M distinct fingerprints: {set_keys} keys, {set_bytes} bytes; after 1M sessions as well: {keys} keys, {bytes} bytes"
    );
    assert!(set_keys < 300);
    assert!(keys < 300 + 4096 + SET_SLOTS + 8);
}

/// Two sessions whose first capabilities slot is the same both keep their capabilities (each
/// has a second slot), and a third of that slot only displaces the first slot's holder.
#[test]
fn sessions_of_one_capabilities_slot_keep_their_capabilities() {
    use toolseal_core::state::{get_capabilities, put_capabilities};
    let slots = 64;
    let first_slot = |session: &str| {
        let mut store = MemoryStore::new();
        put_capabilities(&mut store, "s", session, (&[], 0), slots).unwrap();
        store.entries().next().unwrap().0.to_string()
    };
    let anchor = first_slot("session-0");
    let mates: Vec<String> = (1..10_000)
        .map(|n| format!("session-{n}"))
        .filter(|s| first_slot(s) == anchor)
        .take(2)
        .collect();
    let [a, b] = [&mates[0], &mates[1]];
    let mut store = MemoryStore::new();
    let names = |n: &str| vec![n.to_string()];
    put_capabilities(&mut store, "s", "session-0", (&names("roots"), 0), slots).unwrap();
    put_capabilities(&mut store, "s", a, (&names("sampling"), 0), slots).unwrap();
    assert_eq!(
        get_capabilities(&store, "s", "session-0", slots)
            .unwrap()
            .map(|c| c.names),
        Some(names("roots"))
    );
    assert_eq!(
        get_capabilities(&store, "s", a, slots)
            .unwrap()
            .map(|c| c.names),
        Some(names("sampling"))
    );
    // A session writing again keeps its slot, whichever of its two it is in.
    put_capabilities(&mut store, "s", a, (&names("elicitation"), 0), slots).unwrap();
    assert_eq!(
        get_capabilities(&store, "s", "session-0", slots)
            .unwrap()
            .map(|c| c.names),
        Some(names("roots"))
    );
    assert_eq!(
        get_capabilities(&store, "s", a, slots)
            .unwrap()
            .map(|c| c.names),
        Some(names("elicitation"))
    );
    // A third session of the same first slot, its second slot taken or not, never reads as
    // another's: what it reads is its own or nothing.
    put_capabilities(&mut store, "s", b, (&names("sampling"), 0), slots).unwrap();
    assert_eq!(
        get_capabilities(&store, "s", b, slots)
            .unwrap()
            .map(|c| c.names),
        Some(names("sampling"))
    );
    for session in ["session-0", a.as_str()] {
        let read = get_capabilities(&store, "s", session, slots).unwrap();
        assert!(read.is_none() || read.as_ref().is_some_and(|c| c.names != names("sampling")));
    }
}
