//! Parity with the Envoy build: the shared real transcripts of both MCP eras (and release A
//! then B of the reference server and of the 2026-07-28 rug-pull server) replayed through the component and through the proxy-wasm module
//! (`toolseal_plugin.wasm`, driven by host-test's replay on wasmtime) give the same decision
//! record for every message and the same bytes to the client: the same local answers and
//! the same (possibly rewritten) response bodies.
//!
//! The proxy-wasm module is built here with `cargo build -p toolseal-plugin --target
//! wasm32-wasip1 --profile wasm` into this test's target directory (a no-op when fresh), or
//! taken from `TOOLSEAL_PLUGIN_WASM`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod support;

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use support::files::{transcript, workspace};
use toolseal::abi::types::LogLevel;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{Replay, ReplayOptions, Transcript};
use toolseal_core::state::store::MemoryStore;
use toolseal_core::transcript::HttpExchange;
use toolseal_stdio::audit_sink::SharedCollected;
use toolseal_stdio::host_state::HostState;
use toolseal_stdio::policy::{Policy, Runtime};
use toolseal_stdio::{MessageContext, Transport, Verdict};

const TRANSCRIPTS: [&str; 8] = [
    "everything-2025.11.25",
    "everything-2026.1.26",
    "fastmcp-4.2.3-json",
    "fastmcp-4.2.3-paginated",
    "python-sdk-2.3.0-rev1-json",
    "python-sdk-2.3.0-rev1-sse",
    "python-sdk-2.3.0-rev2-json",
    "typescript-sdk-2.4.0-rev1",
];

/// What the client saw of one exchange, and the decisions made on it.
#[derive(Debug, PartialEq)]
struct Seen {
    seq: String,
    local_reply: Option<Vec<u8>>,
    response_body: Vec<u8>,
    decisions: Vec<Map<String, Value>>,
}

fn without_session(mut decision: Map<String, Value>) -> Map<String, Value> {
    decision.remove("session");
    decision
}

fn plugin_wasm() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLSEAL_PLUGIN_WASM") {
        return PathBuf::from(path);
    }
    // Cargo names a directory inside the target directory for integration tests' files: its
    // parent is the target directory, however that was created (a `target/` made before the
    // first build has no `CACHEDIR.TAG`, which cargo writes only into directories it creates).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap();
    let status =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(workspace())
            .args([
                "build",
                "--quiet",
                "-p",
                "toolseal-plugin",
                "--target",
                "wasm32-wasip1",
                "--profile",
                "wasm",
            ])
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .unwrap();
    assert!(status.success(), "building the proxy-wasm module failed");
    target.join("wasm32-wasip1/wasm/toolseal_plugin.wasm")
}

fn through_component(
    policy: &mut Policy,
    sink: &SharedCollected,
    server: &str,
    ex: &HttpExchange,
) -> Seen {
    let before = sink.0.lock().unwrap().decisions.len();
    let session = ex.request_header("mcp-session-id").map(str::to_string);
    let mut headers = ex.request_headers.clone();
    headers.push((":method".into(), ex.http_method.clone()));
    let request = MessageContext {
        server_id: server.into(),
        session_id: session.clone(),
        transport: Transport::Http,
        headers,
    };
    let mut seen = Seen {
        seq: ex.seq.clone(),
        local_reply: None,
        response_body: Vec::new(),
        decisions: Vec::new(),
    };
    let verdict = if ex.request_body.is_empty() {
        Verdict::Pass
    } else {
        policy.client_message(&request, &ex.request_body).unwrap()
    };
    match verdict {
        Verdict::Reply(reply) => seen.local_reply = Some(reply.body),
        Verdict::Rewrite(_) => panic!("a client message is never rewritten"),
        Verdict::Pass => {
            let response = MessageContext {
                server_id: server.into(),
                session_id: session,
                transport: Transport::Http,
                headers: ex.response_headers.clone(),
            };
            seen.response_body = match policy.server_message(&response, &ex.response_body).unwrap()
            {
                Verdict::Pass => ex.response_body.clone(),
                Verdict::Rewrite(bytes) => bytes,
                Verdict::Reply(_) => panic!("a server message is never answered locally"),
            };
        }
    }
    let collected = sink.0.lock().unwrap();
    seen.decisions = collected.decisions[before..]
        .iter()
        .map(|d| without_session(serde_json::from_str::<Map<String, Value>>(d).unwrap()))
        .collect();
    seen
}

fn component_run(runtime: &Runtime, server: &str, names: &[&str]) -> Vec<Seen> {
    let sink = SharedCollected::default();
    let mut policy = runtime
        .instantiate(HostState::new(MemoryStore::new(), Box::new(sink.clone())))
        .unwrap();
    policy.configure("").unwrap().unwrap();
    names
        .iter()
        .flat_map(|name| transcript(name))
        .map(|ex| through_component(&mut policy, &sink, server, &ex))
        .collect()
}

fn proxy_wasm_run(wasm: &Path, server: &str, names: &[&str]) -> Vec<Seen> {
    let options = ReplayOptions {
        wasm_path: wasm.to_path_buf(),
        plugin_configuration: Vec::new(),
        server: Some(server.into()),
        chunk: 0,
        log_level: LogLevel::Debug,
        dynamic_metadata: Map::new(),
        cache_dir: None,
        faults: Vec::new(),
        store: None,
        callouts: None,
    };
    let mut replay = Replay::start(options).unwrap();
    let mut seen = Vec::new();
    for name in names {
        let exchanges = transcript(name);
        let reports = replay
            .run(&Transcript {
                name: (*name).into(),
                exchanges: exchanges.clone(),
            })
            .unwrap();
        for (ex, report) in exchanges.iter().zip(reports) {
            let local_reply = report
                .outcome
                .local_response
                .as_ref()
                .map(|r| r.body.clone());
            seen.push(Seen {
                seq: ex.seq.clone(),
                response_body: if local_reply.is_some() {
                    Vec::new()
                } else {
                    report.outcome.response_body.clone()
                },
                local_reply,
                decisions: report
                    .records
                    .into_iter()
                    .filter_map(|r| match r {
                        PluginRecord::Decision(d) => Some(without_session(d)),
                        PluginRecord::Audit(_) => None,
                    })
                    .collect(),
            });
        }
    }
    seen
}

fn assert_same(component: &[Seen], proxy_wasm: &[Seen], what: &str) {
    assert_eq!(component.len(), proxy_wasm.len(), "{what}: exchange count");
    for (c, p) in component.iter().zip(proxy_wasm) {
        assert_eq!(c.decisions, p.decisions, "{what} seq {}: decisions", c.seq);
        assert_eq!(
            c.local_reply, p.local_reply,
            "{what} seq {}: local reply",
            c.seq
        );
        assert_eq!(
            String::from_utf8_lossy(&c.response_body),
            String::from_utf8_lossy(&p.response_body),
            "{what} seq {}: response body",
            c.seq
        );
    }
}

#[test]
fn component_and_proxy_wasm_module_agree_on_every_shared_transcript() {
    let runtime = Runtime::new().unwrap();
    let wasm = plugin_wasm();
    for name in TRANSCRIPTS {
        let component = component_run(&runtime, name, &[name]);
        let proxy_wasm = proxy_wasm_run(&wasm, name, &[name]);
        assert_same(&component, &proxy_wasm, name);
        let decisions: usize = component.iter().map(|s| s.decisions.len()).sum();
        let golden = workspace().join(format!("plugin/core/tests/data/golden/{name}.jsonl"));
        let expected = std::fs::read_to_string(golden).unwrap().lines().count();
        assert_eq!(
            decisions, expected,
            "{name}: one decision per message, as in the golden file"
        );
    }
}

#[test]
fn component_and_proxy_wasm_module_agree_on_release_drift() {
    let runtime = Runtime::new().unwrap();
    let names = ["everything-2025.11.25", "everything-2026.1.26"];
    let component = component_run(&runtime, "everything", &names);
    let proxy_wasm = proxy_wasm_run(&plugin_wasm(), "everything", &names);
    assert_same(&component, &proxy_wasm, "a then b");
    let denied: Vec<&Map<String, Value>> = component
        .iter()
        .flat_map(|s| &s.decisions)
        .filter(|d| d["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["error_code"], "SCHEMA_CHANGED");
    assert!(
        component.iter().any(|s| s.local_reply.is_some()),
        "the refused call was answered locally"
    );
}

#[test]
fn component_and_proxy_wasm_module_agree_on_the_2026_07_28_rug_pull() {
    let runtime = Runtime::new().unwrap();
    let names = ["python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json"];
    let component = component_run(&runtime, "rugpull", &names);
    let proxy_wasm = proxy_wasm_run(&plugin_wasm(), "rugpull", &names);
    assert_same(&component, &proxy_wasm, "2026-07-28 a then b");
    let refusals: Vec<Value> = component
        .iter()
        .filter_map(|s| s.local_reply.as_ref())
        .map(|body| serde_json::from_slice(body).unwrap())
        .collect();
    assert_eq!(refusals.len(), 2);
    for refusal in refusals {
        assert_eq!(refusal["result"]["resultType"], "complete");
        assert_eq!(
            refusal["result"]["structuredContent"]["error_code"],
            "SCHEMA_CHANGED"
        );
    }
}
