//! Configuration applied by several root contexts at once. Every Envoy worker runs
//! `configure`, and the agents' and the admin listener's plugins share one state: between
//! the read that decides a config quarantine must be lifted and the compare-and-swap that
//! lifts it, another of them may already have lifted it, or an administrator may have taken
//! the hold over. Neither is a problem to report (a refused configuration fails closed and
//! takes the listener down): the config's wish, "no config hold", already holds. An
//! administrator's hold is never lifted by the config.

use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use toolseal_core::config::Config;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::policy::status::Posture;
use toolseal_core::policy::status::{Actor, Event};
use toolseal_core::state::audit::CollectedOutputs;
use toolseal_core::state::parse_cache::{ParseCache, RECORD_ENTRIES};
use toolseal_core::state::store::{Expect, MemoryStore, StateStore, StoreError};
use toolseal_core::state::{self, update_record};

const SERVER: &str = "demo";
const RECORD_KEY: &str = "ts/v1/srv/demo";

/// A store whose first read of the server record returns what it holds, after which the
/// store jumps to `after` (another worker's write landing between that read and the
/// compare-and-swap that follows it).
struct RacingStore {
    inner: RefCell<MemoryStore>,
    after: RefCell<Option<MemoryStore>>,
    armed: Cell<bool>,
}

impl RacingStore {
    fn new(now: MemoryStore, after: MemoryStore) -> Self {
        RacingStore {
            inner: RefCell::new(now),
            after: RefCell::new(Some(after)),
            armed: Cell::new(true),
        }
    }
}

impl StateStore for RacingStore {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        let value = self.inner.borrow().get(key);
        if key == RECORD_KEY
            && self.armed.replace(false)
            && let Some(after) = self.after.borrow_mut().take()
        {
            *self.inner.borrow_mut() = after;
        }
        value
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        self.inner.get_mut().set(key, value, expect)
    }
}

fn config(quarantine: Option<&str>) -> Config {
    let mut server = json!({});
    if let Some(reason) = quarantine {
        server["quarantine"] = json!(reason);
    }
    let doc = json!({"posture": "strict", "servers": {SERVER: server}});
    Config::parse(doc.to_string().as_bytes()).unwrap()
}

fn configure(store: &mut dyn StateStore, quarantine: Option<&str>) -> Result<(), String> {
    let mut engine = Engine::new(config(quarantine));
    let mut out = CollectedOutputs::default();
    engine
        .configure(store, &mut out, 1)
        .map_err(|e| e.to_string())
}

fn hold(store: &dyn StateStore) -> Option<Value> {
    state::load_record(store, SERVER)
        .unwrap()
        .and_then(|(record, _)| record.quarantine)
        .map(|(reason, by)| json!([reason, format!("{by:?}")]))
}

/// A store where the config's quarantine of `demo` was applied.
fn held_by_config() -> MemoryStore {
    let mut store = MemoryStore::new();
    configure(&mut store, Some("incident 7")).unwrap();
    assert_eq!(hold(&store), Some(json!(["incident 7", "Config"])));
    store
}

#[test]
fn a_config_release_that_another_worker_already_made_is_not_a_problem() {
    let before = held_by_config();
    let mut released = before.clone();
    configure(&mut released, None).unwrap();
    assert_eq!(hold(&released), None);

    let mut racing = RacingStore::new(before, released);
    assert_eq!(configure(&mut racing, None), Ok(()));
    assert_eq!(hold(&*racing.inner.borrow()), None);
}

#[test]
fn a_config_release_never_lifts_an_administrators_hold_taken_in_between() {
    let before = held_by_config();
    let mut taken_over = before.clone();
    configure(&mut taken_over, None).unwrap();
    let mut records = ParseCache::new(RECORD_ENTRIES);
    let quarantine = Event::Quarantine {
        reason: "admin: exfiltration suspected".into(),
        by: Actor::Admin,
    };
    update_record(
        &mut taken_over,
        &mut records,
        SERVER,
        &quarantine,
        Posture::Strict,
        2,
        16,
    )
    .unwrap();

    let mut racing = RacingStore::new(before, taken_over);
    assert_eq!(configure(&mut racing, None), Ok(()));
    assert_eq!(
        hold(&*racing.inner.borrow()),
        Some(json!(["admin: exfiltration suspected", "Admin"]))
    );
}

#[test]
fn without_a_race_the_config_release_lifts_the_config_hold() {
    let mut store = held_by_config();
    assert_eq!(configure(&mut store, None), Ok(()));
    assert_eq!(hold(&store), None);
}
