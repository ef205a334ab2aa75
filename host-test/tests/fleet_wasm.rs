//! The fleet store through the built `.wasm`: instances (each a VM with its own shared data)
//! over one simulated etcd, the plugin's callouts answered through the proxy-wasm host ABI
//! (`proxy_http_call`, `proxy_on_http_call_response`, `proxy_continue_stream`,
//! `proxy_on_tick`). What opens waits for the store's yes; what closes closes at once and
//! reaches the others; a restart forgets nothing and changes no decision; nothing opens
//! without the store; what the store holds is input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TOKEN, admin_config, fp, replay_options};

use serde_json::{Value, json};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use toolseal::fleet::invariants::verdict;
use toolseal::fleet::perturb::{Perturbation, every, interleavings};
use toolseal::fleet::{Action as FleetAction, Fleet, Scenario, Step as FleetStep, explore};
use toolseal::replay::exchange::Stop;
use toolseal::replay::fleet_store::{CalloutServer, FleetStore};
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, load_transcript};
use toolseal::wasm::plugin_vm::PluginVm;
use toolseal::workers::signature::exchange_signature;
use toolseal_core::transcript::HttpExchange;

const PREFIX: &str = "/toolseal/test/";
const SERVER: &str = "deploy";

/// Views by revision, the admin API on, the fleet store on the simulated etcd, and `extra`'s
/// top-level keys over them.
fn config(extra: &Value) -> Value {
    let mut config = json!({"views": ["revision"],
        "store": {"etcd": {"cluster": "toolseal_store", "prefix": PREFIX, "sync_ms": 600000}}});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    admin_config(&config)
}

fn options(config: &Value, server: Option<&str>, store: Option<&FleetStore>) -> ReplayOptions {
    let mut options = replay_options(server, config.to_string().as_bytes(), 0);
    options.store = store.cloned();
    options
}

/// One Envoy instance (a fresh process: its own shared data) of a fleet on `store`.
struct Instance {
    replay: Replay,
    reports: Vec<ExchangeReport>,
}

impl Instance {
    fn on(store: &FleetStore) -> Self {
        Self::with(options(&config(&json!({})), Some(SERVER), Some(store)))
    }

    fn with(options: ReplayOptions) -> Self {
        Instance {
            replay: Replay::start(options).unwrap(),
            reports: Vec::new(),
        }
    }

    fn run(&mut self, exchange: &HttpExchange) -> ExchangeReport {
        let report = self.replay.run_exchange(SERVER, exchange).unwrap();
        self.reports.push(report.clone());
        report
    }

    fn tick(&mut self) {
        self.replay.tick().unwrap();
    }

    /// Audit events `event` this instance logged so far.
    fn audited(&self, event: &str) -> usize {
        self.reports
            .iter()
            .flat_map(|r| &r.records)
            .filter(|r| matches!(r, PluginRecord::Audit(e) if e["event"] == event))
            .count()
    }
}

fn post(session: &str, body: &Value, response: Option<&Value>) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), session.into()),
        ],
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), "text/event-stream".into())],
        response_body: response.map_or_else(Vec::new, |r| {
            format!("event: message\r\ndata: {r}\r\n\r\n").into_bytes()
        }),
    }
}

fn deploy(required_region: bool) -> Value {
    let mut required = vec!["branch"];
    if required_region {
        required.push("region");
    }
    json!({"name": "deploy_preview", "description": "Deploy the current branch to a preview environment.",
        "inputSchema": {"type": "object", "properties": {"branch": {"type": "string"},
        "region": {"type": "string"}}, "required": required}})
}

fn weather() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

fn honest() -> Vec<Value> {
    vec![deploy(false), weather()]
}

fn rug_pull() -> Vec<Value> {
    vec![deploy(true), weather()]
}

fn list_exchange(session: &str, tools: &[Value]) -> HttpExchange {
    post(
        session,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        Some(&json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})),
    )
}

/// The tools a `tools/list` delivered and its `_meta`; panics when the exchange did not
/// complete (a stream never resumed is a failure of its own).
fn listed_of(report: &ExchangeReport) -> (Vec<Value>, Value) {
    let outcome = &report.outcome;
    assert_eq!(outcome.stop, None, "the list must complete: {outcome:?}");
    let text = String::from_utf8(outcome.response_body.clone()).unwrap();
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    let tools = v["result"]["tools"].as_array().unwrap().clone();
    (tools, v["result"]["_meta"].clone())
}

fn list(i: &mut Instance, session: &str, tools: &[Value]) -> (Vec<Value>, Value) {
    listed_of(&i.run(&list_exchange(session, tools)))
}

fn listed(i: &mut Instance, session: &str, tools: &[Value]) -> usize {
    list(i, session, tools).0.len()
}

/// A `tools/call`: the denial's error code, or `FORWARDED`.
fn call(i: &mut Instance, session: &str, tool: &str, args: &Value) -> String {
    let ex = post(
        session,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
        Some(
            &json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        ),
    );
    let report = i.run(&ex);
    match &report.outcome.local_response {
        None => {
            assert!(report.outcome.upstream_contacted, "{:?}", report.outcome);
            "FORWARDED".into()
        }
        Some(reply) => {
            let v: Value = serde_json::from_slice(&reply.body).unwrap();
            v["result"]["structuredContent"]["error_code"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        }
    }
}

fn weather_call(i: &mut Instance, session: &str) -> String {
    call(i, session, "get_weather", &json!({"city": "Oslo"}))
}

fn admin(i: &mut Instance, method: &str, path: &str, body: &Value) -> (u32, Value) {
    let ex = HttpExchange {
        seq: "a".into(),
        http_method: method.into(),
        path: format!("/toolseal/{path}"),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {TOKEN}")),
        ],
        request_body: if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
        status: 200,
        response_headers: vec![],
        response_body: vec![],
    };
    let report = i.run(&ex);
    let reply = report
        .outcome
        .local_response
        .clone()
        .unwrap_or_else(|| panic!("admin {path}: no local answer: {:?}", report.outcome));
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

fn status(i: &mut Instance) -> String {
    let (code, view) = admin(i, "GET", "servers/deploy", &Value::Null);
    assert_eq!(code, 200, "{view}");
    view["schema_status"].as_str().unwrap().to_string()
}

fn fleet_record(store: &FleetStore, server: &str) -> Value {
    let bytes = store
        .get(&format!("{PREFIX}servers/{server}"))
        .unwrap_or_else(|| panic!("no record of {server} in the store"));
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn the_recordings_decide_the_same_with_the_store_and_their_records_end_in_it() {
    let names: Vec<&str> = common::TRANSCRIPTS.to_vec();
    for chunk in [0, 61] {
        let store = FleetStore::new();
        let base = config(&json!({}));
        let mut plain_config = base.clone();
        plain_config.as_object_mut().unwrap().remove("store");
        let mut with = options(&base, None, Some(&store));
        with.chunk = chunk;
        let mut without = options(&plain_config, None, None);
        without.chunk = chunk;
        let (mut fleet, mut local) = (
            Replay::start(with).unwrap(),
            Replay::start(without).unwrap(),
        );
        for name in &names {
            let transcript = load_transcript(&common::transcript(name)).unwrap();
            for exchange in &transcript.exchanges {
                let a = fleet.run_exchange(name, exchange).unwrap();
                let b = local.run_exchange(name, exchange).unwrap();
                let at = format!("{name} seq {} chunk {chunk}", exchange.seq);
                assert_eq!(a.outcome.stop, None, "{at}: {:?}", a.outcome);
                assert_eq!(
                    exchange_signature(&a.outcome),
                    exchange_signature(&b.outcome),
                    "{at}: the store must change no decision"
                );
            }
            let record = fleet_record(&store, name);
            assert_eq!(record["format"], 1, "{name}");
            assert_eq!(record["record"]["status"], "verified", "{name}: {record}");
        }
    }
}

#[test]
fn the_release_drift_of_a_recording_is_caught_and_pushed_to_the_store() {
    let store = FleetStore::new();
    let mut replay = Replay::start(options(
        &config(&json!({})),
        Some("everything"),
        Some(&store),
    ))
    .unwrap();
    for name in ["everything-2025.11.25", "everything-2026.1.26"] {
        replay
            .run(&load_transcript(&common::transcript(name)).unwrap())
            .unwrap();
    }
    assert_eq!(
        fleet_record(&store, "everything")["record"]["status"],
        "changed"
    );
    // A restarted instance still refuses: it reads the record before anything is decided.
    let mut restarted = Replay::start(options(
        &config(&json!({})),
        Some("everything"),
        Some(&store),
    ))
    .unwrap();
    let reports = restarted
        .run(&load_transcript(&common::transcript("everything-2026.1.26")).unwrap())
        .unwrap();
    let baselined = reports
        .iter()
        .flat_map(|r| &r.records)
        .filter(|r| matches!(r, PluginRecord::Audit(e) if e["event"] == "schema.baselined"))
        .count();
    assert_eq!(
        baselined, 0,
        "a restart must not re-trust the drifted release"
    );
}

#[test]
fn a_first_contact_waits_for_the_store_and_another_instance_takes_it() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    let calls_before = store.calls();
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert!(
        store.calls() > calls_before,
        "the first contact asked the store"
    );
    assert_eq!(a.audited("schema.baselined"), 1);
    let record = fleet_record(&store, SERVER);
    assert_eq!(record["record"]["status"], "verified");
    assert_eq!(record["record"]["baseline"], fp(&honest()));
    assert!(
        store
            .get(&format!("{PREFIX}sets/{}", fp(&honest())))
            .is_some()
    );

    // A verified server makes no round trip.
    let before = store.calls();
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(weather_call(&mut a, "s1"), "FORWARDED");
    assert_eq!(store.calls(), before);

    // A session that listed through A calls through B: B reads the record first.
    let mut b = Instance::on(&store);
    assert_eq!(weather_call(&mut b, "s1"), "FORWARDED");
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    assert_eq!(b.audited("schema.baselined"), 0);
}

/// A callout server that stops before answering the `nth` txn (counting from 1) until the
/// test lets it go: another instance's steps run in between.
#[derive(Debug)]
struct GateBeforeTxn {
    store: FleetStore,
    nth: usize,
    seen: Mutex<usize>,
    paused: Mutex<Sender<()>>,
    resume: Mutex<Receiver<()>>,
}

impl CalloutServer for GateBeforeTxn {
    fn serve(&self, vm: &mut PluginVm) -> anyhow::Result<()> {
        while let Some(call) = vm.host().vm.callouts.pending.first().cloned() {
            if call.path() == "/v3/kv/txn" {
                let mut seen = self.seen.lock().unwrap();
                *seen += 1;
                if *seen == self.nth {
                    self.paused.lock().unwrap().send(()).unwrap();
                    self.resume.lock().unwrap().recv().unwrap();
                }
            }
            let answer = self.store.answer(&call);
            vm.deliver_http_call(call.token, answer)?;
        }
        Ok(())
    }
}

/// B's first contact (a list of `b_tools`) runs on its own thread with its first txn held
/// until A's first contact (a list of `a_tools`) is done: B compares a revision that is gone.
/// Returns what B's list delivered, and B's audit events.
fn race_first_contacts(
    store: &FleetStore,
    a_tools: &[Value],
    b_tools: &[Value],
) -> (usize, Vec<Value>) {
    let (paused_tx, paused_rx) = channel();
    let (resume_tx, resume_rx) = channel();
    let gate = Arc::new(GateBeforeTxn {
        store: store.clone(),
        nth: 1,
        seen: Mutex::new(0),
        paused: Mutex::new(paused_tx),
        resume: Mutex::new(resume_rx),
    });
    let mut b_options = options(&config(&json!({})), Some(SERVER), Some(store));
    b_options.callouts = Some(gate);
    let b_tools = b_tools.to_vec();
    let b = std::thread::spawn(move || {
        let mut b = Instance::with(b_options);
        let report = b.run(&list_exchange("t1", &b_tools));
        let audits: Vec<Value> = b
            .reports
            .iter()
            .flat_map(|r| &r.records)
            .filter_map(|r| match r {
                PluginRecord::Audit(e) => Some(e.clone()),
                PluginRecord::Decision(_) => None,
            })
            .collect();
        (listed_of(&report).0.len(), audits)
    });
    paused_rx.recv().unwrap();
    let mut a = Instance::on(store);
    assert_eq!(
        listed(&mut a, "s1", a_tools),
        a_tools.len(),
        "A's first contact"
    );
    assert_eq!(a.audited("schema.baselined"), 1);
    resume_tx.send(()).unwrap();
    b.join().unwrap()
}

#[test]
fn two_instances_racing_first_contact_with_different_sets_make_one_baseline_and_one_drift() {
    let store = FleetStore::new();
    let (delivered, audits) = race_first_contacts(&store, &honest(), &rug_pull());
    assert_eq!(
        delivered, 0,
        "the loser sees drift, never a second baseline"
    );
    let events: Vec<&str> = audits.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(!events.contains(&"schema.baselined"), "{events:?}");
    assert!(events.contains(&"schema.changed"), "{events:?}");
    let record = fleet_record(&store, SERVER);
    assert_eq!(record["record"]["baseline"], fp(&honest()));
    assert_eq!(record["record"]["status"], "changed");
    let mut restarted = Instance::on(&store);
    assert_eq!(status(&mut restarted), "changed");
}

#[test]
fn two_instances_racing_first_contact_with_the_same_set_agree_without_drift() {
    let store = FleetStore::new();
    let (delivered, audits) = race_first_contacts(&store, &honest(), &honest());
    assert_eq!(
        delivered, 2,
        "the loser decides again from the winner's record"
    );
    let events: Vec<&str> = audits.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(
        !events.contains(&"schema.changed"),
        "false drift: {events:?}"
    );
    assert_eq!(fleet_record(&store, SERVER)["record"]["status"], "verified");
}

#[test]
fn a_drift_on_one_instance_reaches_the_other_at_its_next_tick() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    let mut b = Instance::on(&store);
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut b, "t1", &honest()), 2);
    b.tick();
    assert_eq!(weather_call(&mut b, "t1"), "FORWARDED");
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0, "A closes at once");
    assert_eq!(fleet_record(&store, SERVER)["record"]["status"], "changed");
    assert_eq!(
        weather_call(&mut b, "t1"),
        "FORWARDED",
        "B has not synced yet"
    );
    b.tick();
    assert_eq!(weather_call(&mut b, "t1"), "SCHEMA_CHANGED");
    assert_eq!(
        listed(&mut b, "t1", &honest()),
        0,
        "changed is sticky fleet-wide"
    );
}

#[test]
fn a_restart_after_a_drift_still_refuses() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    assert_eq!(status(&mut a), "changed");
    let mut restarted = Instance::on(&store);
    assert_eq!(listed(&mut restarted, "s3", &rug_pull()), 0);
    assert_eq!(restarted.audited("schema.baselined"), 0);
    assert_eq!(
        call(
            &mut restarted,
            "s3",
            "deploy_preview",
            &json!({"branch": "main", "region": "x"})
        ),
        "SCHEMA_CHANGED"
    );
    assert_eq!(status(&mut restarted), "changed");
}

#[test]
fn a_quarantine_a_release_and_an_approval_on_one_instance_hold_on_the_other() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    let mut b = Instance::on(&store);
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    let (code, view) = admin(
        &mut a,
        "POST",
        "servers/deploy/quarantine",
        &json!({"reason": "incident"}),
    );
    assert_eq!(code, 200, "{view}");
    assert_eq!(listed(&mut b, "t1", &honest()), 0, "B reads the quarantine");
    assert_eq!(weather_call(&mut b, "t1"), "SERVER_QUARANTINED");
    // A release without a body: answered from the request headers' callback, held there
    // for the store, resumed by the answer.
    let (code, view) = admin(&mut b, "POST", "servers/deploy/release", &Value::Null);
    assert_eq!(code, 200, "{view}");
    assert_eq!(b.audited("server.released"), 1);
    a.tick();
    assert_eq!(weather_call(&mut a, "s1"), "FORWARDED");

    // A drift on A, approved on B: A serves the approved set after its sync.
    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0);
    b.tick();
    let (code, view) = admin(
        &mut b,
        "POST",
        "servers/deploy/approve",
        &json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 200, "{view}");
    a.tick();
    assert_eq!(listed(&mut a, "s3", &rug_pull()), 2);
    assert_eq!(
        call(
            &mut a,
            "s3",
            "deploy_preview",
            &json!({"branch": "main", "region": "x"})
        ),
        "FORWARDED"
    );
}

#[test]
fn an_outage_opens_nothing_keeps_known_servers_and_pushes_the_drift_when_back() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    store.set_down(true);

    assert_eq!(
        listed(&mut a, "s1", &honest()),
        2,
        "a known server is served"
    );
    assert_eq!(weather_call(&mut a, "s1"), "FORWARDED");

    let mut fresh = Instance::on(&store);
    let (tools, meta) = list(&mut fresh, "t1", &honest());
    assert!(tools.is_empty(), "a first contact is answered closed");
    assert!(
        meta.to_string().contains("fleet store unreachable"),
        "{meta}"
    );
    assert_eq!(weather_call(&mut fresh, "t1"), "SCHEMA_UNVERIFIED");
    assert_eq!(fresh.audited("store.unreachable"), 1);

    assert_eq!(listed(&mut a, "s2", &rug_pull()), 0, "drift closes at once");
    let (code, _) = admin(
        &mut a,
        "POST",
        "servers/deploy/approve",
        &json!({"fingerprint": fp(&rug_pull())}),
    );
    assert_eq!(code, 503);
    assert_eq!(fleet_record(&store, SERVER)["record"]["status"], "verified");

    store.set_down(false);
    a.tick();
    assert_eq!(fleet_record(&store, SERVER)["record"]["status"], "changed");
    a.run(&list_exchange("s1", &honest()));
    assert_eq!(a.audited("store.recovered"), 1);
    assert_eq!(
        listed(&mut fresh, "t1", &honest()),
        0,
        "the drift is read now"
    );
}

#[test]
fn corrupt_store_data_fails_the_server_closed_and_is_never_rewritten() {
    for garbage in [&b"not json"[..], br#"{"format":99,"record":{}}"#] {
        let store = FleetStore::new();
        let key = format!("{PREFIX}servers/{SERVER}");
        store.with(|etcd| etcd.put(key.as_bytes(), garbage));
        let mut a = Instance::on(&store);
        assert_eq!(listed(&mut a, "s1", &honest()), 0);
        assert_eq!(weather_call(&mut a, "s1"), "SCHEMA_UNVERIFIED");
        assert_eq!(a.audited("store.corrupt"), 1);
        a.tick();
        a.run(&list_exchange("s1", &honest()));
        assert_eq!(store.get(&key).as_deref(), Some(garbage));
    }
}

#[test]
fn a_corrupt_tool_set_fails_its_server_closed_after_a_restart_and_is_never_rewritten() {
    let store = FleetStore::new();
    let mut a = Instance::on(&store);
    assert_eq!(listed(&mut a, "s1", &honest()), 2);
    let key = format!("{PREFIX}sets/{}", fp(&honest()));
    store.with(|etcd| etcd.put(key.as_bytes(), b"not json"));
    let mut restarted = Instance::on(&store);
    assert_eq!(
        listed(&mut restarted, "s2", &honest()),
        0,
        "a set that does not parse serves nothing"
    );
    assert_eq!(weather_call(&mut restarted, "s2"), "SCHEMA_UNVERIFIED");
    assert!(restarted.audited("store.corrupt") >= 1);
    restarted.tick();
    assert_eq!(store.get(&key).as_deref(), Some(&b"not json"[..]));
}

#[test]
fn a_store_call_the_host_will_not_send_fails_closed_and_never_stalls() {
    // The configuration names a cluster the host does not serve: proxy_http_call answers
    // BadArgument, as Envoy does for an unknown cluster.
    let store = FleetStore::new();
    let mut other = config(&json!({}));
    other["store"]["etcd"]["cluster"] = json!("no_such_cluster");
    let mut opts = options(&other, Some(SERVER), Some(&store));
    opts.store = Some(store.clone());
    let mut a = Instance::with(opts);
    a.replay.vm_mut().host_mut().vm.callouts.cluster = Some("toolseal_store".into());
    let report = a.run(&list_exchange("s1", &honest()));
    assert_ne!(
        report.outcome.stop,
        Some(Stop::Stalled(
            "the plugin paused at end of stream and never resumed"
        ))
    );
    let (tools, _) = listed_of(&report);
    assert!(tools.is_empty(), "nothing opens without the store");
    assert_eq!(store.calls(), 0);
}

/// The fleet scenario every perturbation runs: two instances of two workers each. A first
/// contact on A, B takes the record, calls on both, the rug pull seen on A, B's sync, then
/// B refusing and filtering without having seen the drift itself.
fn fleet_scenario() -> Scenario {
    let step = |instance, worker, action| FleetStep {
        instance,
        worker,
        action,
    };
    let ex = |e: HttpExchange| FleetAction::Exchange(e);
    let weather = |s: &str| {
        post(
            s,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_weather", "arguments": {"city": "Oslo"}}}),
            Some(
                &json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}),
            ),
        )
    };
    Scenario {
        instances: 2,
        workers: 2,
        server: SERVER.into(),
        steps: vec![
            step(0, 0, ex(list_exchange("s1", &honest()))),
            step(1, 1, ex(list_exchange("t1", &honest()))),
            step(0, 1, ex(weather("s1"))),
            step(1, 0, ex(weather("t1"))),
            step(0, 0, ex(list_exchange("s2", &rug_pull()))),
            step(1, 0, FleetAction::Tick),
            step(1, 1, ex(weather("t1"))),
            step(1, 0, ex(list_exchange("t1", &honest()))),
            step(0, 1, ex(weather("s1"))),
        ],
    }
}

fn fleet() -> Fleet {
    Fleet::new(
        options(&config(&json!({})), Some(SERVER), None),
        fleet_scenario(),
    )
    .unwrap()
}

#[test]
fn the_fleet_scenario_decides_as_designed_without_perturbation() {
    let fleet = fleet();
    let run = fleet.run(&Perturbation::None).unwrap();
    assert_eq!(run.failure, None);
    let verdicts: Vec<String> = run
        .steps
        .iter()
        .filter_map(|s| s.report.as_ref().map(verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            r#"tools ["deploy_preview", "get_weather"]"#,
            r#"tools ["deploy_preview", "get_weather"]"#,
            "forwarded",
            "forwarded",
            "tools []",
            "local 200 \"SCHEMA_CHANGED\"",
            "tools []",
            "local 200 \"SCHEMA_CHANGED\"",
        ]
    );
    assert!(run.final_record.unwrap().contains(r#""status":"changed""#));
}

#[test]
fn restarts_conflicts_outages_and_late_answers_break_no_invariant() {
    let fleet = fleet();
    let steps = fleet.scenario().steps.len();
    let perturbations = every(steps, fleet.scenario().instances);
    let started = std::time::Instant::now();
    let (runs, violations) = explore(&fleet, &perturbations).unwrap();
    let shown: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(shown.is_empty(), "{runs} runs:\n{}", shown.join("\n"));
    eprintln!(
        "fleet harness: {runs} runs ({} perturbations) in {:?}",
        perturbations.len(),
        started.elapsed()
    );
}

/// Two instances whose first contacts see different sets (B's upstream already rugged),
/// then calls, syncs and a list on each.
fn racing_scenario() -> Scenario {
    let step = |instance, worker, action| FleetStep {
        instance,
        worker,
        action,
    };
    let ex = |e: HttpExchange| FleetAction::Exchange(e);
    let weather = |s: &str| {
        post(
            s,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_weather", "arguments": {"city": "Oslo"}}}),
            Some(
                &json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}),
            ),
        )
    };
    Scenario {
        instances: 2,
        workers: 1,
        server: SERVER.into(),
        steps: vec![
            step(0, 0, ex(list_exchange("s1", &honest()))),
            step(1, 0, ex(list_exchange("t1", &rug_pull()))),
            step(0, 0, ex(weather("s1"))),
            step(1, 0, ex(weather("t1"))),
            step(0, 0, FleetAction::Tick),
            step(1, 0, FleetAction::Tick),
            step(0, 0, ex(list_exchange("s1", &honest()))),
        ],
    }
}

#[test]
fn a_callout_held_while_another_instances_step_runs_decides_as_a_serial_order() {
    let started = std::time::Instant::now();
    let (mut total_runs, mut total_interleavings) = (0, 0);
    for scenario in [fleet_scenario(), racing_scenario()] {
        let fleet = Fleet::new(options(&config(&json!({})), Some(SERVER), None), scenario).unwrap();
        let instances: Vec<usize> = fleet.scenario().steps.iter().map(|s| s.instance).collect();
        let mut perturbations = interleavings(&instances);
        total_interleavings += perturbations.len();
        if fleet.scenario().workers == 1 {
            // The race of two first contacts under the other perturbations too.
            perturbations.extend(every(instances.len(), fleet.scenario().instances));
        }
        let (runs, violations) = explore(&fleet, &perturbations).unwrap();
        total_runs += runs;
        let shown: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(shown.is_empty(), "{runs} runs:\n{}", shown.join("\n"));
    }
    eprintln!(
        "fleet harness: {total_runs} runs ({total_interleavings} interleavings) in {:?}",
        started.elapsed()
    );
}

#[test]
fn a_plugin_that_served_before_the_stores_yes_would_be_caught() {
    // The store says yes to the first contact's transaction without writing it: what the
    // list serves is then in no store, exactly as if the plugin had not waited.
    let fleet = fleet();
    let (_, violations) = explore(&fleet, &[Perturbation::LyingYes { at: 0 }]).unwrap();
    let caught: Vec<&str> = violations.iter().map(|v| v.invariant).collect();
    assert!(caught.contains(&"served-without-yes"), "{violations:?}");
    // And a first contact served while the store is down is named as such.
    let run = fleet.run(&Perturbation::Outage { from: 0, to: 1 }).unwrap();
    assert_eq!(
        run.steps[0].report.as_ref().map(verdict).as_deref(),
        Some("tools []"),
        "nothing opens without the store"
    );
}

#[test]
fn toolseal_replay_store_sim_serves_the_store_and_shows_what_it_holds() {
    let config_path = common::scratch("fleet-config.json");
    std::fs::write(&config_path, config(&json!({})).to_string()).unwrap();
    let wasm = common::plugin_wasm();
    let a = common::transcript("everything-2025.11.25");
    let b = common::transcript("everything-2026.1.26");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = vec!["replay".into(), "--wasm".into()];
        args.push(wasm.display().to_string());
        args.extend(extra.iter().map(|s| (*s).to_string()));
        args
    };
    let config_arg = config_path.display().to_string();
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let out = common::toolseal(&args(&[
        "--config",
        &config_arg,
        "--store",
        "sim",
        "--server",
        "everything",
        &a,
        &b,
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let key = format!("{PREFIX}servers/everything");
    assert_eq!(
        last["store"]["keys"][&key]["record"]["status"], "changed",
        "{last}"
    );
    assert!(last["store"]["calls"].as_u64().unwrap() > 0);

    // Unusable: a configuration without a store, another store, --workers.
    let plain = common::scratch("plain-config.json");
    std::fs::write(&plain, "{}").unwrap();
    let plain = plain.display().to_string();
    for bad in [
        args(&["--config", &plain, "--store", "sim", &a]),
        args(&["--config", &config_arg, "--store", "etcd", &a]),
        args(&[
            "--config",
            &config_arg,
            "--store",
            "sim",
            "--workers",
            "2",
            &a,
        ]),
    ] {
        let out = common::toolseal(&bad);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--store"),
            "{bad:?}"
        );
    }
    let help = common::toolseal(&["replay", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--store sim"));
}
