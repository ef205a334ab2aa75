//! The plugin under host faults: every proxy-wasm hostcall the built `.wasm` imports is made
//! to fail, at every call index a working replay makes of it (and at every call at once),
//! over a drifted transcript under a strict lock, over a verified one, and over the MCP
//! 2026-07-28 recordings of a rug pull (release A verified, release B drifted). The properties
//! are read from what host-test saw leave the gateway, never from the plugin's own records:
//!
//! - no drifted tool reaches a client (no `inputSchema` in any byte a client received; for
//!   the rug pull, not its poisoned description);
//! - no request a working host refused is forwarded;
//! - every `tools/list` and `tools/call` is answered as a working host answers it, or with
//!   an error (a local reply, a reset stream, or a toolseal error in the body); nothing
//!   stalls, and no recorded answer a working host replaced reaches the client;
//! - the guest never traps (a trap kills an Envoy worker's VM);
//! - a 2026-07-28 client gets answers valid under its revision: every result it receives
//!   says `resultType`, and a list toolseal emptied carries `ttlMs: 0`, `cacheScope: private`.
//!
//! A configuration refused at start (a fault while `proxy_on_configure` applies the locks)
//! is fail-closed too: nothing is served.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs
)]

mod common;

use serde_json::{Map, Value, json};
use std::time::Instant;
use toolseal::abi::faults::{Fault, PROXY_HOSTCALLS};
use toolseal::cli::tool_source::load_tools;
use toolseal::replay::exchange::{ExchangeOutcome, Stop};
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, Transcript, load_transcript};
use toolseal::wasm::plugin_vm::ConfigRefused;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};

/// A replay set-up: a configuration, transcripts in order, the metadata every exchange has.
struct Scenario {
    name: &'static str,
    config: Value,
    transcripts: Vec<Transcript>,
    metadata: Map<String, Value>,
    /// Byte patterns no client may ever receive in this scenario.
    never_delivered: Vec<&'static [u8]>,
    /// One server id for every transcript (`None`: each transcript's name).
    server: Option<&'static str>,
    /// The requests are MCP 2026-07-28 ones: results must follow that revision.
    stateless: bool,
}

/// A lock entry (`{"lock": {...}}` plus `extra`) for `tools`.
fn lock(tools: &[Value], extra: Value) -> Value {
    let array = Value::Array(tools.to_vec());
    let fingerprint = digest_tools(&array, &FingerprintFields::default())
        .unwrap()
        .fingerprint();
    let mut entry = json!({"lock": {"fingerprint": fingerprint, "tools": tools}});
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    entry
}

fn transcript(name: &str) -> Transcript {
    load_transcript(&common::transcript(name)).unwrap()
}

/// Release B of server-everything (SSE) and a FastMCP server (JSON) whose lock has one
/// description that differs from what it lists: both drifted under a strict lock.
fn drifted() -> Scenario {
    let everything_a = load_tools(&common::transcript("everything-2025.11.25")).unwrap();
    let mut fastmcp = load_tools(&common::transcript("fastmcp-4.2.3-json")).unwrap();
    fastmcp[0]["description"] = json!("The description the reviewer approved.");
    Scenario {
        name: "drifted",
        config: json!({
            "posture": "strict",
            "servers": {
                "everything-2026.1.26": lock(&everything_a, json!({})),
                "fastmcp-4.2.3-json": lock(&fastmcp, json!({})),
            }
        }),
        transcripts: vec![
            transcript("everything-2026.1.26"),
            transcript("fastmcp-4.2.3-json"),
        ],
        metadata: Map::new(),
        never_delivered: vec![b"\"inputSchema\""],
        server: None,
        stateless: false,
    }
}

/// The same servers verified against their own locks, with refusals a working host makes:
/// a policy rule on a `jwt_authn`-style metadata claim denies `fake_weather`, and under
/// `results: "enforce"` a recorded result that breaks its `outputSchema` is replaced.
fn verified() -> Scenario {
    let everything = load_tools(&common::transcript("everything-2025.11.25")).unwrap();
    let fastmcp = load_tools(&common::transcript("fastmcp-4.2.3-json")).unwrap();
    let mut fast = transcript("fastmcp-4.2.3-json");
    let count = fast
        .exchanges
        .iter_mut()
        .find(|e| contains(&e.request_body, b"count_with_progress"))
        .unwrap();
    let broken = String::from_utf8(count.response_body.clone())
        .unwrap()
        .replace(
            r#""structuredContent":{"result":[1,2]}"#,
            r#""structuredContent":{"result":"BROKEN-CONTRACT"}"#,
        );
    assert!(broken.contains("BROKEN-CONTRACT"));
    count.response_body = broken.into_bytes();
    let mut metadata = Map::new();
    metadata.insert(
        "envoy.filters.http.jwt_authn".into(),
        json!({"payload": {"groups": ["contractors"]}}),
    );
    Scenario {
        name: "verified",
        config: json!({
            "posture": "strict",
            "servers": {
                "everything-2025.11.25": lock(&everything, json!({})),
                "fastmcp-4.2.3-json": lock(&fastmcp, json!({"results": "enforce"})),
            },
            "policy": {"rules": [{
                "action": "deny",
                "tool": "fake_weather",
                "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": ["contractors"]}
            }]}
        }),
        transcripts: vec![transcript("everything-2025.11.25"), fast],
        metadata,
        never_delivered: vec![b"BROKEN-CONTRACT"],
        server: None,
        stateless: false,
    }
}

/// MCP 2026-07-28 (official Python SDK 2.3.0 client and server): release A of a rug-pull
/// server over SSE and JSON (lists with a one-hour cache hint, calls, a multi round-trip
/// call, a `subscriptions/listen` stream), then release B, whose poisoned description drifts
/// from A's strict lock. Snapshots are keyed by a `jwt_authn`-style subject, so the key is
/// read through the host's metadata, and results are enforced.
fn stateless() -> Scenario {
    let rugpull = load_tools(&common::transcript("python-sdk-2.3.0-rev1-json")).unwrap();
    let mut metadata = Map::new();
    metadata.insert(
        "envoy.filters.http.jwt_authn".into(),
        json!({"payload": {"sub": "agent-7"}}),
    );
    Scenario {
        name: "stateless",
        config: json!({
            "posture": "strict",
            "servers": {"rugpull": lock(&rugpull, json!({"results": "enforce"}))},
            "snapshots": {"key": [{"metadata": "envoy.filters.http.jwt_authn/payload/sub"}]}
        }),
        transcripts: vec![
            transcript("python-sdk-2.3.0-rev1-sse"),
            transcript("python-sdk-2.3.0-rev1-json"),
            transcript("python-sdk-2.3.0-rev2-json"),
        ],
        metadata,
        never_delivered: vec![b"id_rsa"],
        server: Some("rugpull"),
        stateless: true,
    }
}

fn options(s: &Scenario, faults: Vec<Fault>) -> ReplayOptions {
    let mut options = common::replay_options(s.server, s.config.to_string().as_bytes(), 61);
    options.dynamic_metadata = s.metadata.clone();
    options.faults = faults;
    options
}

/// How one run ended.
enum Run {
    /// Every exchange replayed.
    Replayed(Vec<ExchangeReport>, toolseal::abi::faults::HostcallLog),
    /// The plugin refused its configuration (fail closed: nothing is served).
    Refused,
}

fn run(s: &Scenario, faults: Vec<Fault>) -> Result<Run, String> {
    let label = format!("{} with {faults:?}", s.name);
    let mut replay = match Replay::start(options(s, faults)) {
        Ok(replay) => replay,
        Err(e) if e.chain().any(|c| c.is::<ConfigRefused>()) => return Ok(Run::Refused),
        Err(e) => return Err(format!("{label}: start failed: {e:#}")),
    };
    let mut reports = Vec::new();
    for t in &s.transcripts {
        reports.extend(replay.run(t).map_err(|e| format!("{label}: {e:#}"))?);
    }
    Ok(Run::Replayed(reports, replay.hostcalls().clone()))
}

/// What the exchange's request asks for.
fn method(report: &ExchangeReport, s: &Scenario) -> &'static str {
    let exchange = s
        .transcripts
        .iter()
        .filter(|t| t.name == report.transcript)
        .flat_map(|t| &t.exchanges)
        .find(|e| toolseal::replay::records::seq_value(&e.seq) == report.seq)
        .unwrap();
    let body = &exchange.request_body;
    if contains(body, b"\"tools/list\"") {
        "tools/list"
    } else if contains(body, b"\"tools/call\"") {
        "tools/call"
    } else {
        "other"
    }
}

/// Every byte the client received: the local reply, or the response body.
fn delivered(o: &ExchangeOutcome) -> Vec<u8> {
    match (&o.stop, &o.local_response) {
        (Some(Stop::LocalResponse), Some(reply)) => reply.body.clone(),
        _ => o.response_body.clone(),
    }
}

fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// The JSON-RPC messages in what a client received: a JSON body (one message or a batch), or
/// the `data` of each event of a stream; what does not parse (a stream cut by a reset) is
/// not a message.
fn messages(bytes: &[u8]) -> Vec<Value> {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return match value {
            Value::Array(items) => items,
            other => vec![other],
        };
    }
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Whether the client was told no: a local reply, a reset, a toolseal error or denial, or a
/// list withheld (`tools: []` with toolseal's reason in `_meta`).
fn refused(o: &ExchangeOutcome) -> bool {
    let bytes = delivered(o);
    matches!(o.stop, Some(Stop::LocalResponse | Stop::Reset))
        || contains(&bytes, b"toolseal:")
        || contains(&bytes, b"\"error_code\"")
        || contains(&bytes, b"\"io.toolseal/status\"")
}

/// The fail-closed properties of one faulted run against the working one.
fn check(s: &Scenario, label: &str, working: &[ExchangeReport], faulted: &[ExchangeReport]) {
    assert_eq!(working.len(), faulted.len(), "{label}");
    for (w, f) in working.iter().zip(faulted) {
        let at = format!("{label}: {} exchange {}", f.transcript, f.seq);
        let (wo, fo) = (&w.outcome, &f.outcome);
        assert!(
            !matches!(fo.stop, Some(Stop::Stalled(_))),
            "{at}: stalled ({:?})",
            fo.stop
        );
        let bytes = delivered(fo);
        for pattern in &s.never_delivered {
            assert!(
                !contains(&bytes, pattern),
                "{at}: delivered {}: {}",
                String::from_utf8_lossy(pattern),
                String::from_utf8_lossy(&bytes)
            );
        }
        assert!(
            wo.upstream_contacted || !fo.upstream_contacted,
            "{at}: forwarded a request a working host refused"
        );
        if s.stateless {
            for message in messages(&bytes) {
                let Some(result) = message.get("result") else {
                    continue;
                };
                assert!(
                    result.get("resultType").is_some(),
                    "{at}: a 2026-07-28 result without resultType: {message}"
                );
                if result.pointer("/_meta/io.toolseal~1status").is_some() {
                    assert_eq!(
                        (&result["ttlMs"], &result["cacheScope"]),
                        (&json!(0), &json!("private")),
                        "{at}: an emptied list keeps a cache hint: {message}"
                    );
                }
            }
        }
        if method(f, s) != "other" {
            // The same answer, byte for byte, or the same messages written another way (a
            // list the working host spliced in place may be re-encoded when a fault earlier
            // in the run kept it from being remembered).
            let working = delivered(wo);
            let same_answer = bytes == working
                || (!messages(&bytes).is_empty() && messages(&bytes) == messages(&working));
            let same =
                fo.upstream_contacted == wo.upstream_contacted && fo.stop == wo.stop && same_answer;
            assert!(
                same || refused(fo),
                "{at}: answered neither as a working host nor with an error: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

/// Fails every call index of every hostcall the module imports, then every call of each,
/// in `s`; returns (runs, configurations refused).
fn sweep(s: &Scenario) -> (usize, usize) {
    let Ok(Run::Replayed(working, log)) = run(s, Vec::new()) else {
        panic!("{}: the working replay failed", s.name);
    };
    // The working host's own outcome is what the scenario says it is.
    assert!(working.iter().all(|r| r.outcome.stop != Some(Stop::Reset)));
    let mut plans: Vec<Vec<Fault>> = Vec::new();
    for hostcall in imported_hostcalls() {
        let calls = log.counts.get(hostcall).copied().unwrap_or(0);
        for call in 1..=calls {
            plans.push(vec![Fault {
                hostcall,
                call: Some(call),
            }]);
        }
        plans.push(vec![Fault {
            hostcall,
            call: None,
        }]);
    }
    let (mut runs, mut refused) = (0, 0);
    for faults in plans {
        let label = format!("{} with {faults:?}", s.name);
        match run(s, faults) {
            Ok(Run::Replayed(faulted, _)) => check(s, &label, &working, &faulted),
            Ok(Run::Refused) => refused += 1,
            Err(e) => panic!("{e}"),
        }
        runs += 1;
    }
    (runs, refused)
}

/// The `env::proxy_*` functions the built plugin imports.
fn imported_hostcalls() -> Vec<&'static str> {
    let engine = toolseal::wasm::engine().unwrap();
    let wasm = std::fs::read(common::plugin_wasm()).unwrap();
    let cache = common::module_cache();
    let (module, _) = toolseal::wasm::module_cache::load(&engine, &wasm, Some(&cache)).unwrap();
    let imported: Vec<&'static str> = PROXY_HOSTCALLS
        .into_iter()
        .filter(|name| {
            module
                .imports()
                .any(|i| i.module() == "env" && i.name() == *name)
        })
        .collect();
    let unknown: Vec<String> = module
        .imports()
        .filter(|i| i.module() == "env" && !PROXY_HOSTCALLS.contains(&i.name()))
        .map(|i| i.name().to_owned())
        .collect();
    assert!(
        unknown.is_empty(),
        "imports the sweep would miss: {unknown:?}"
    );
    imported
}

#[test]
fn the_working_replays_are_what_the_sweep_compares_with() {
    // Drifted: every list emptied, every call refused locally.
    let s = drifted();
    let Ok(Run::Replayed(reports, _)) = run(&s, Vec::new()) else {
        panic!("drifted: working replay failed");
    };
    for r in &reports {
        match method(r, &s) {
            "tools/list" => assert!(contains(&delivered(&r.outcome), b"\"tools\":[]")),
            "tools/call" => {
                assert!(!r.outcome.upstream_contacted);
                assert_eq!(r.outcome.stop, Some(Stop::LocalResponse));
            }
            _ => {}
        }
    }
    // Verified: lists served whole; the metadata-denied call refused locally; the broken
    // result replaced; the other calls forwarded and answered as recorded.
    let s = verified();
    let Ok(Run::Replayed(reports, _)) = run(&s, Vec::new()) else {
        panic!("verified: working replay failed");
    };
    let calls: Vec<(bool, bool)> = reports
        .iter()
        .filter(|r| method(r, &s) == "tools/call")
        .map(|r| (r.outcome.upstream_contacted, refused(&r.outcome)))
        .collect();
    // echo, add, fake_weather (denied), count_with_progress (result replaced).
    assert_eq!(
        calls,
        [(true, false), (true, false), (false, true), (true, true)]
    );
    for r in reports.iter().filter(|r| method(r, &s) == "tools/list") {
        assert!(contains(&delivered(&r.outcome), b"\"inputSchema\""));
    }
    // Stateless: release A's lists served with the cache hint lowered and its calls
    // forwarded; release B's list emptied and its calls refused locally.
    let s = stateless();
    let Ok(Run::Replayed(reports, _)) = run(&s, Vec::new()) else {
        panic!("stateless: working replay failed");
    };
    for r in &reports {
        let release_b = r.transcript == "python-sdk-2.3.0-rev2-json";
        let bytes = delivered(&r.outcome);
        match (method(r, &s), release_b) {
            ("tools/list", false) => {
                assert!(contains(&bytes, b"\"inputSchema\""));
                assert!(contains(&bytes, b"\"ttlMs\":60000"));
            }
            ("tools/list", true) => assert!(contains(&bytes, b"\"tools\":[]")),
            ("tools/call", false) => assert!(r.outcome.upstream_contacted && !refused(&r.outcome)),
            ("tools/call", true) => {
                assert!(!r.outcome.upstream_contacted);
                assert!(contains(&bytes, b"\"resultType\":\"complete\""));
            }
            _ => {}
        }
    }
}

/// Sweeps one scenario and says how many replays it made: each scenario is a test of its
/// own, so the test threads share them out (the three take about two minutes one after
/// another).
fn sweep_reporting(s: &Scenario) {
    let started = Instant::now();
    let (runs, refused) = sweep(s);
    eprintln!(
        "{}: {runs} faulted replays ({refused} refused the configuration) in {:.1} s",
        s.name,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn every_hostcall_failing_at_every_call_fails_closed_on_a_drifted_transcript() {
    sweep_reporting(&drifted());
}

#[test]
fn every_hostcall_failing_at_every_call_fails_closed_on_a_verified_transcript() {
    sweep_reporting(&verified());
}

#[test]
fn every_hostcall_failing_at_every_call_fails_closed_on_a_2026_07_28_rug_pull() {
    sweep_reporting(&stateless());
}

#[test]
fn a_host_that_can_neither_answer_nor_reset_gets_a_held_stream_not_a_forwarded_one() {
    // Both ways of stopping a stream fail: a refused call is held (paused), never forwarded.
    let s = drifted();
    let faults = ["proxy_send_local_response", "proxy_close_stream"]
        .map(|h| Fault::parse(h).unwrap())
        .to_vec();
    let Ok(Run::Replayed(reports, _)) = run(&s, faults) else {
        panic!("replay failed");
    };
    let calls: Vec<&ExchangeReport> = reports
        .iter()
        .filter(|r| method(r, &s) == "tools/call")
        .collect();
    assert!(!calls.is_empty());
    for r in calls {
        assert!(!r.outcome.upstream_contacted, "{} {}", r.transcript, r.seq);
        assert!(matches!(r.outcome.stop, Some(Stop::Stalled(_))));
        assert!(r.outcome.response_body.is_empty());
    }
}
