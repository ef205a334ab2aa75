//! The fleet store through the engine: several instances (each its own shared data) over
//! one in-memory etcd. What opens waits for the store and is decided from its record; what
//! closes closes at once and reaches the others; a restart forgets nothing; a store that
//! cannot be reached opens nothing; what the store holds is input.

use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;
use toolseal_core::config::Config;
use toolseal_core::gateway::fleet::{FleetCall, FleetReply};
use toolseal_core::state::audit::Counter;
use toolseal_core::state::fleet::memory_etcd::MemoryEtcd;
use toolseal_core::state::store::MemoryStore;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

use crate::support;
use crate::support::admin::TOKEN;
use crate::support::gateway::{config_with, post};
use crate::support::tools::{fp, honest, rug_pull};

const PREFIX: &str = "/toolseal/test/";

type Etcd = Rc<RefCell<MemoryEtcd>>;

/// The admin API on and views by revision (the shared gateway config), the fleet store on
/// the in-memory etcd, and `extra`'s top-level keys over them.
fn config(extra: Value) -> Config {
    let mut config = json!({"store": {"etcd": {"cluster": "toolseal_store", "prefix": PREFIX}}});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config_with(config)
}

/// The in-memory etcd's answer to `call`, as a host hands it to the engine.
fn ask(etcd: &Etcd, call: &FleetCall) -> FleetReply {
    match etcd.borrow_mut().call(call.path, &call.body) {
        Ok((status, body)) => FleetReply::Answered { status, body },
        Err(why) => FleetReply::Failed(why),
    }
}

/// An instance (a fresh process: empty shared data) of a fleet on `etcd`.
fn instance(etcd: &Etcd, extra: Value) -> NativeReplay {
    let mut gw = NativeReplay::new(config(extra));
    let etcd = Rc::clone(etcd);
    gw.fleet = Some(Box::new(move |call| ask(&etcd, call)));
    gw
}

/// A `tools/list` round trip; the tools the client received and the `_meta` note.
fn list(gw: &mut NativeReplay, session: &str, tools: &[Value]) -> (Vec<Value>, Value) {
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})),
    );
    let out = gw.exchange("deploy", &ex, 7);
    assert!(out.local_reply.is_none(), "{:?}", out.local_reply);
    let text = String::from_utf8(out.response_body).unwrap();
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    let tools = v["result"]["tools"].as_array().unwrap().clone();
    (tools, v["result"]["_meta"].clone())
}

fn listed(gw: &mut NativeReplay, session: &str, tools: &[Value]) -> usize {
    list(gw, session, tools).0.len()
}

/// A `tools/call`: the denial's error code, or `FORWARDED`.
fn call(gw: &mut NativeReplay, session: &str, tool: &str, args: Value) -> String {
    let ex = post(
        session,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
        Some(
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        ),
    );
    match gw.exchange("deploy", &ex, 64).local_reply {
        None => "FORWARDED".into(),
        Some(reply) => {
            let v: Value = serde_json::from_slice(&reply.body).unwrap();
            v["result"]["structuredContent"]["error_code"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        }
    }
}

fn admin(gw: &mut NativeReplay, method: &str, path: &str, body: Value) -> (u16, Value) {
    support::admin::admin(gw, "deploy", method, path, body)
}

fn status(gw: &mut NativeReplay) -> String {
    support::admin::schema_status(gw, "deploy")
}

fn audited(gw: &NativeReplay, event: &str) -> usize {
    gw.out.audits.iter().filter(|a| a.event == event).count()
}

fn fleet_record(etcd: &Etcd) -> Value {
    let key = format!("{PREFIX}servers/deploy");
    let bytes = etcd
        .borrow()
        .get(key.as_bytes())
        .map(<[u8]>::to_vec)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn a_first_contact_is_written_to_the_store_and_another_instance_takes_it() {
    let etcd = Etcd::default();
    *etcd.borrow_mut() = MemoryEtcd::new();
    let mut a = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(
        audited(&a, "schema.baselined"),
        1,
        "the run that waited for the store is the one audited"
    );
    let record = fleet_record(&etcd);
    assert_eq!(record["format"], 1);
    assert_eq!(record["record"]["status"], "verified");
    assert_eq!(record["record"]["baseline"], fp(&honest()));
    assert!(
        record["record"].get("fleet_rev").is_none(),
        "bookkeeping stays local"
    );
    let set = format!("{PREFIX}sets/{}", fp(&honest()));
    assert!(
        etcd.borrow().get(set.as_bytes()).is_some(),
        "the set it names is stored too"
    );

    // Another instance trusts nothing anew: it reads the baseline and verifies against it.
    let mut b = instance(&etcd, json!({}));
    // A session that listed through A calls through B: B reads the fleet's record first.
    assert_eq!(
        call(&mut b, "s1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    assert_eq!(audited(&b, "schema.baselined"), 0);
    assert_eq!(
        call(&mut b, "t1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );
}

#[test]
fn a_verified_server_makes_no_round_trip() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    let before = etcd.borrow().calls.len();
    for _ in 0..3 {
        assert_eq!(listed(&mut a, "s1", &honest()), 2);
        assert_eq!(
            call(&mut a, "s1", "get_weather", json!({"city": "Oslo"})),
            "FORWARDED"
        );
    }
    assert_eq!(etcd.borrow().calls.len(), before);
}

#[test]
fn a_restart_does_not_re_trust_a_rug_pull() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    assert_eq!(status(&mut a), "changed");
    assert_eq!(
        fleet_record(&etcd)["record"]["status"],
        "changed",
        "the closure was pushed"
    );

    // The process restarts: empty shared data, same store.
    let mut restarted = instance(&etcd, json!({}));
    assert_eq!(listed(&mut restarted, "s3", &rug_pull()), 0);
    assert_eq!(audited(&restarted, "schema.baselined"), 0);
    assert_eq!(status(&mut restarted), "changed");
    assert_eq!(
        call(
            &mut restarted,
            "s3",
            "deploy_preview",
            json!({"branch": "main", "region": "x"})
        ),
        "SCHEMA_CHANGED"
    );
}

#[test]
fn a_drift_seen_on_one_instance_closes_the_others_at_their_next_sync() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let mut b = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    b.tick();
    assert_eq!(
        call(&mut b, "t1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    // Before its sync, B has not heard; after it, B refuses without having seen the drift.
    b.tick();
    assert_eq!(
        call(&mut b, "t1", "get_weather", json!({"city": "Oslo"})),
        "SCHEMA_CHANGED"
    );
    assert_eq!(
        listed(&mut b, "t1", &honest()),
        0,
        "changed is sticky fleet-wide"
    );
}

#[test]
fn a_second_first_contact_finds_the_first_ones_baseline_and_sees_drift() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let mut b = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut b, "t1", &rug_pull()), 0);
    assert_eq!(audited(&b, "schema.baselined"), 0);
    assert_eq!(audited(&b, "schema.changed"), 1);
    assert_eq!(fleet_record(&etcd)["record"]["baseline"], fp(&honest()));
}

#[test]
fn two_first_contacts_at_once_make_one_baseline_and_the_loser_decides_again() {
    // B reads the store before A's write and sends its own first contact after it: its
    // transaction compares a revision that is no longer there, and B decides again from A's.
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let racing = Rc::clone(&etcd);
    let mut b = NativeReplay::new(config(json!({})));
    let a_cell = Rc::new(RefCell::new(Some(a)));
    let a_run = Rc::clone(&a_cell);
    b.fleet = Some(Box::new(move |call| {
        if call.path == "/v3/kv/txn"
            && let Some(mut a) = a_run.borrow_mut().take()
        {
            // A's whole first contact lands between B's read and B's write.
            assert_eq!(listed(&mut a, "s1", &honest()), 2);
        }
        ask(&racing, call)
    }));
    assert_eq!(listed(&mut b, "t1", &rug_pull()), 0, "the loser sees drift");
    assert!(a_cell.borrow().is_none(), "A ran inside B's first contact");
    assert_eq!(fleet_record(&etcd)["record"]["baseline"], fp(&honest()));
    assert_eq!(fleet_record(&etcd)["record"]["status"], "changed");
    assert_eq!(audited(&b, "schema.baselined"), 0);
    a = instance(&etcd, json!({}));
    assert_eq!(status(&mut a), "changed");
}

#[test]
fn a_store_that_cannot_be_reached_opens_nothing_and_closes_what_drifts() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    etcd.borrow_mut().set_down(true);

    // A known server goes on as its record says.
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(
        call(&mut a, "s1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );

    // A first contact is answered closed and recorded nowhere.
    let mut fresh = instance(&etcd, json!({}));
    let (tools, meta) = list(&mut fresh, "t1", &honest());
    assert!(tools.is_empty());
    assert!(
        meta.to_string().contains("fleet store unreachable"),
        "{meta}"
    );
    assert_eq!(
        call(&mut fresh, "t1", "get_weather", json!({"city": "Oslo"})),
        "SCHEMA_UNVERIFIED"
    );
    assert_eq!(audited(&fresh, "store.unreachable"), 1);

    // Approve answers 503 and changes nothing; a drift closes at once.
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    assert_eq!(status(&mut a), "changed");
    let (code, _) = admin(
        &mut a,
        "POST",
        "servers/deploy/approve",
        json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 503);
    assert_eq!(
        fleet_record(&etcd)["record"]["status"],
        "verified",
        "not written yet"
    );

    // The store comes back: the closure is pushed by the next tick, and recovery is audited.
    etcd.borrow_mut().set_down(false);
    a.tick();
    assert_eq!(fleet_record(&etcd)["record"]["status"], "changed");
    assert_eq!(audited(&a, "store.recovered"), 1);
    let (_, view) = admin(&mut a, "GET", "servers/deploy", Value::Null);
    assert_eq!(view["fleet"]["in_step"], true);
    assert!(view["fleet"]["mod_revision"].as_u64().unwrap() > 0);
    assert_eq!(
        listed(&mut fresh, "t1", &honest()),
        0,
        "the fresh instance now reads the drift"
    );
}

#[test]
fn a_quarantine_and_an_approval_hold_on_every_instance() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let mut b = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    let (code, _) = admin(
        &mut a,
        "POST",
        "servers/deploy/quarantine",
        json!({"reason": "incident"}),
    );
    assert_eq!(code, 200);
    assert_eq!(listed(&mut b, "t1", &honest()), 0);
    assert_eq!(
        call(&mut b, "t1", "get_weather", json!({"city": "Oslo"})),
        "SERVER_QUARANTINED"
    );
    let (code, view) = admin(&mut b, "POST", "servers/deploy/release", Value::Null);
    assert_eq!(code, 200, "{view}");
    assert_eq!(audited(&b, "server.released"), 1);
    a.tick();
    assert_eq!(
        call(&mut a, "s1", "get_weather", json!({"city": "Oslo"})),
        "FORWARDED"
    );

    // A drift on A, approved on B: A serves the approved set after its sync.
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    b.tick();
    let (code, view) = admin(
        &mut b,
        "POST",
        "servers/deploy/approve",
        json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 200, "{view}");
    a.tick();
    assert_eq!(listed(&mut a, "s3", &rug_pull()), 2);
    assert_eq!(
        call(
            &mut a,
            "s3",
            "deploy_preview",
            json!({"branch": "main", "region": "x"})
        ),
        "FORWARDED"
    );
}

#[test]
fn a_record_the_store_holds_unreadable_fails_its_server_closed_and_is_never_overwritten() {
    for garbage in [&b"not json"[..], br#"{"format":99,"record":{}}"#] {
        let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
        let key = format!("{PREFIX}servers/deploy");
        etcd.borrow_mut().put(key.as_bytes(), garbage);
        let mut a = instance(&etcd, json!({}));
        assert_eq!(listed(&mut a, "s1", &honest()), 0);
        assert_eq!(
            call(&mut a, "s1", "get_weather", json!({"city": "Oslo"})),
            "SCHEMA_UNVERIFIED"
        );
        assert_eq!(audited(&a, "store.corrupt"), 1);
        a.tick();
        assert_eq!(etcd.borrow().get(key.as_bytes()), Some(garbage));
    }
}

#[test]
fn a_handshake_session_with_json_answers_makes_a_bounded_number_of_round_trips() {
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let json_post = |session: Option<&str>, body: Value, response: Value| HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: [("content-type", "application/json")]
            .into_iter()
            .chain(session.map(|s| ("mcp-session-id", s)))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "j1".into()),
        ],
        response_body: response.to_string().into_bytes(),
    };
    let init = json_post(
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
    );
    let out = a.exchange("deploy", &init, 64);
    assert!(out.local_reply.is_none());
    assert!(
        etcd.borrow().calls.len() <= 1,
        "{:?}",
        etcd.borrow()
            .calls
            .iter()
            .map(|(p, b)| format!("{p} {}", String::from_utf8_lossy(b)))
            .collect::<Vec<_>>()
    );
    let list = json_post(
        Some("j1"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": honest()}}),
    );
    let out = a.exchange("deploy", &list, 64);
    let v: Value = serde_json::from_slice(&out.response_body).unwrap();
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 2);
    assert!(
        etcd.borrow().calls.len() <= 3,
        "{:?}",
        etcd.borrow()
            .calls
            .iter()
            .map(|(p, b)| format!(
                "{p} {}",
                String::from_utf8_lossy(b)
                    .chars()
                    .take(150)
                    .collect::<String>()
            ))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_tool_set_the_store_holds_unreadable_fails_its_server_closed_after_a_restart() {
    // Found through the .wasm by the e2e (f9bd15c4) and host-test's fleet_wasm: a restarted
    // instance read the record, stored nothing of the set it names, and served the list.
    for garbage in [
        &b"not json"[..],
        br#"{"fingerprint":"sha256:00","tools":[]}"#,
    ] {
        let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
        let mut a = instance(&etcd, json!({}));
        assert_eq!(listed(&mut a, "s1", &honest()), 2);
        let key = format!("{PREFIX}sets/{}", fp(&honest()));
        etcd.borrow_mut().put(key.as_bytes(), garbage);
        let mut restarted = instance(&etcd, json!({}));
        assert_eq!(listed(&mut restarted, "s2", &honest()), 0);
        assert_eq!(
            call(&mut restarted, "s2", "get_weather", json!({"city": "Oslo"})),
            "SCHEMA_UNVERIFIED"
        );
        assert_eq!(audited(&restarted, "store.corrupt"), 1);
        restarted.tick();
        assert_eq!(etcd.borrow().get(key.as_bytes()), Some(garbage));
    }
}

#[test]
fn turning_the_store_on_does_not_open_a_drift_held_before_it() {
    // A ran without a store and holds a drift (its shared data outlives the config update that
    // names the store). B, new, first contacts the drifted set and the store takes it; A must
    // carry its closure into the store rather than take B's baseline.
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let hash = toolseal_core::policy::fingerprint::sha256_hex(TOKEN.as_bytes());
    let plain = json!({"views": ["revision"], "admin": {"token_sha256": hash}});
    let mut a = NativeReplay::new(Config::parse(plain.to_string().as_bytes()).unwrap());
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    assert_eq!(status(&mut a), "changed");
    a.engine = toolseal_core::gateway::engine::Engine::new(config(json!({})));
    let send = Rc::clone(&etcd);
    a.fleet = Some(Box::new(move |call| ask(&send, call)));
    let mut b = instance(&etcd, json!({}));
    assert_eq!(
        listed(&mut b, "t1", &rug_pull()),
        2,
        "B alone trusts what it first sees"
    );
    a.tick();
    assert_eq!(status(&mut a), "changed", "A keeps its drift");
    assert_eq!(
        fleet_record(&etcd)["record"]["status"],
        "changed",
        "and writes it to the store"
    );
    assert_eq!(
        call(&mut a, "s2", "get_weather", json!({"city": "Oslo"})),
        "SCHEMA_CHANGED"
    );
    b.tick();
    assert_eq!(
        call(&mut b, "t1", "get_weather", json!({"city": "Oslo"})),
        "SCHEMA_CHANGED"
    );
}

#[test]
fn a_copy_that_has_not_synced_does_not_close_a_server_an_approval_elsewhere_made_honest() {
    // B sees the new release drift and an admin approves it on B, all before A's next sync:
    // A's copy still holds the old baseline when A is listed the approved set.
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a = instance(&etcd, json!({}));
    let mut b = instance(&etcd, json!({}));
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    assert_eq!(listed(&mut b, "t2", &rug_pull()), 0);
    let (code, view) = admin(
        &mut b,
        "POST",
        "servers/deploy/approve",
        json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 200, "{view}");
    assert_eq!(
        listed(&mut a, "s2", &rug_pull()),
        2,
        "A reads the store before it closes"
    );
    assert_eq!(audited(&a, "schema.changed"), 0);
    assert_eq!(fleet_record(&etcd)["record"]["status"], "verified");
}

/// Runs `act` on `worker` over the store its instance's workers share.
fn on_worker<T>(
    worker: &mut NativeReplay,
    shared: &mut MemoryStore,
    act: impl FnOnce(&mut NativeReplay) -> T,
) -> T {
    std::mem::swap(&mut worker.store, shared);
    let result = act(worker);
    std::mem::swap(&mut worker.store, shared);
    result
}

#[test]
fn a_drift_decided_after_a_store_read_holds_no_worker_once_approved() {
    // A's first worker sees the drift on a copy read from the store, so it reads the store
    // before it closes (a run that waits, then is decided again). Once the drift is approved
    // on B and A's other worker has listed the approved set, a call on the first worker is
    // checked like any other: the run that waited left nothing behind on its worker.
    let etcd = Rc::new(RefCell::new(MemoryEtcd::new()));
    let mut a1 = instance(&etcd, json!({}));
    let mut a2 = instance(&etcd, json!({}));
    let mut shared = std::mem::take(&mut a1.store);
    let mut b = instance(&etcd, json!({}));
    assert_eq!(
        on_worker(&mut a1, &mut shared, |w| listed(w, "s1", &honest())),
        2
    );
    assert_eq!(
        on_worker(&mut a2, &mut shared, |w| listed(w, "s1", &honest())),
        2
    );
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    on_worker(&mut a1, &mut shared, NativeReplay::tick);
    let trips = |w: &NativeReplay| {
        w.out
            .counts
            .iter()
            .filter(|(c, _)| *c == Counter::StoreRoundTrips)
            .count()
    };
    let before = trips(&a1);
    assert_eq!(
        on_worker(&mut a1, &mut shared, |w| listed(w, "s2", &rug_pull())),
        0
    );
    assert!(trips(&a1) > before, "the drift was decided after a read");
    b.tick();
    let (code, view) = admin(
        &mut b,
        "POST",
        "servers/deploy/approve",
        json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 200, "{view}");
    on_worker(&mut a1, &mut shared, NativeReplay::tick);
    assert_eq!(
        on_worker(&mut a2, &mut shared, |w| listed(w, "s3", &rug_pull())),
        2
    );
    let args = json!({"branch": "main", "region": "x"});
    assert_eq!(
        on_worker(&mut a1, &mut shared, |w| call(
            w,
            "s3",
            "deploy_preview",
            args
        )),
        "FORWARDED"
    );
}
