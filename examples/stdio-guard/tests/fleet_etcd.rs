//! Guards sharing one fleet store: a real etcd (Debian's `etcd-server`, started on free
//! loopback ports with its own data directory and stopped by PID) and several guards, as
//! library instances and as `toolseal-stdio --store` processes. A rug pull closed through one
//! guard is refused by another after its tick, a restarted guard still refuses, and a store
//! that cannot be reached leaves a first contact closed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::etcd::{Etcd, PREFIX, free_port};
use toolseal_core::state::store::MemoryStore;
use toolseal_stdio::audit_sink::SharedCollected;
use toolseal_stdio::host_state::HostState;
use toolseal_stdio::policy::{Policy, Runtime};
use toolseal_stdio::store_option::StoreOption;
use toolseal_stdio::{MessageContext, Transport, Verdict};

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

/// A guard as a library instance: the embedded component over its own memory store.
struct Guard {
    policy: Policy,
    sink: SharedCollected,
    ctx: MessageContext,
}

/// A session's view is its MCP revision: these sessions send no `initialize`.
const CONFIG: &str = r#"{"views": ["revision"]}"#;

impl Guard {
    fn new(runtime: &Runtime, store: &str, session: &str) -> Guard {
        let option = StoreOption::parse(store).unwrap();
        let config = option.into_config(CONFIG).unwrap();
        let sink = SharedCollected::default();
        let host =
            HostState::new(MemoryStore::new(), Box::new(sink.clone())).with_fleet(option.client);
        Guard::configured(runtime.instantiate(host).unwrap(), &config, sink, session)
    }

    /// A guard without a fleet store (per-process state, as before).
    fn local(runtime: &Runtime, session: &str) -> Guard {
        let sink = SharedCollected::default();
        let host = HostState::new(MemoryStore::new(), Box::new(sink.clone()));
        Guard::configured(runtime.instantiate(host).unwrap(), CONFIG, sink, session)
    }

    fn configured(mut policy: Policy, config: &str, sink: SharedCollected, session: &str) -> Guard {
        policy.configure(config).unwrap().unwrap();
        let sync_ms = policy.tick().unwrap();
        assert!(
            sync_ms.is_none() || sync_ms == Some(1000),
            "the default sync_ms, or none without a store: {sync_ms:?}"
        );
        let ctx = MessageContext {
            server_id: "deploy".into(),
            session_id: Some(session.into()),
            transport: Transport::Stdio,
            headers: Vec::new(),
        };
        Guard { policy, sink, ctx }
    }

    /// A `tools/list` round trip: the tools the client received and the result's `_meta`.
    fn list(&mut self, tools: &[Value]) -> (Vec<Value>, Value) {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let verdict = self
            .policy
            .client_message(&self.ctx, request.to_string().as_bytes())
            .unwrap();
        assert!(matches!(verdict, Verdict::Pass), "{verdict:?}");
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
        let bytes = answer.to_string().into_bytes();
        let received = match self.policy.server_message(&self.ctx, &bytes).unwrap() {
            Verdict::Pass => bytes,
            Verdict::Rewrite(bytes) => bytes,
            Verdict::Reply(reply) => panic!("a server message answered: {reply:?}"),
        };
        let v: Value = serde_json::from_slice(&received).unwrap();
        let tools = v["result"]["tools"].as_array().cloned().unwrap_or_default();
        (tools, v["result"]["_meta"].clone())
    }

    /// A `tools/call`: the refusal's error code, or `FORWARDED`.
    fn call(&mut self, tool: &str, args: Value) -> String {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        match self
            .policy
            .client_message(&self.ctx, request.to_string().as_bytes())
            .unwrap()
        {
            Verdict::Pass => {
                let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}});
                let _ = self
                    .policy
                    .server_message(&self.ctx, answer.to_string().as_bytes())
                    .unwrap();
                "FORWARDED".into()
            }
            Verdict::Reply(reply) => {
                let v: Value = serde_json::from_slice(&reply.body).unwrap();
                v["result"]["structuredContent"]["error_code"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            }
            Verdict::Rewrite(_) => panic!("a client message rewritten"),
        }
    }

    fn audited(&self, event: &str) -> usize {
        let collected = self.sink.0.lock().unwrap();
        collected
            .events
            .iter()
            .filter(|e| serde_json::from_str::<Value>(e).unwrap()["event"] == event)
            .count()
    }

    fn round_trips(&mut self) -> u64 {
        self.policy.host().fleet_calls
    }
}

#[test]
fn a_rug_pull_closed_through_one_guard_is_refused_by_another_after_its_tick() {
    let Some(etcd) = Etcd::start("rug-pull") else {
        return;
    };
    let runtime = Runtime::new().unwrap();
    let mut a = Guard::new(&runtime, &etcd.store_option(), "a");
    let mut b = Guard::new(&runtime, &etcd.store_option(), "b");

    let before = a.round_trips();
    let waited = a.policy.host().fleet_wait;
    let started = Instant::now();
    assert_eq!(a.list(&honest()).0.len(), 2);
    let first_contact = (a.round_trips() - before, started.elapsed());
    let mut local = Guard::local(&runtime, "l");
    let started = Instant::now();
    assert_eq!(local.list(&honest()).0.len(), 2);
    let alone = started.elapsed();
    eprintln!(
        "first contact through a guard: {} round trips to etcd, {:?} in all ({:?} waiting for etcd); without a store {alone:?}",
        first_contact.0,
        first_contact.1,
        a.policy.host().fleet_wait - waited
    );
    assert!(first_contact.0 <= 3, "{first_contact:?}");
    assert_eq!(a.audited("schema.baselined"), 1);
    let record = etcd.record("deploy").expect("the baseline is in etcd");
    assert_eq!(record["record"]["status"], "verified");

    // B trusts nothing anew: it reads A's baseline.
    assert_eq!(b.list(&honest()).0.len(), 2);
    assert_eq!(b.audited("schema.baselined"), 0);
    let before = b.round_trips();
    assert_eq!(b.list(&honest()).0.len(), 2);
    assert_eq!(b.call("get_weather", json!({"city": "Oslo"})), "FORWARDED");
    assert_eq!(
        b.round_trips(),
        before,
        "a verified server makes no round trip"
    );

    // The rug pull, seen through A: closed at once, pushed to etcd.
    assert_eq!(a.list(&rug_pull()).0.len(), 0);
    assert_eq!(
        etcd.record("deploy").unwrap()["record"]["status"],
        "changed"
    );
    assert_eq!(
        a.call("deploy_preview", json!({"branch": "main", "region": "x"})),
        "SCHEMA_CHANGED"
    );

    // B has not heard until its tick; after it, B refuses without having seen the drift.
    assert_eq!(b.call("get_weather", json!({"city": "Oslo"})), "FORWARDED");
    assert_eq!(b.policy.tick().unwrap(), Some(1000));
    assert_eq!(
        b.call("get_weather", json!({"city": "Oslo"})),
        "SCHEMA_CHANGED"
    );
    assert_eq!(b.list(&honest()).0.len(), 0, "changed is sticky fleet-wide");
}

#[test]
fn a_restarted_guard_still_refuses_and_an_approval_through_one_holds_on_all() {
    let Some(etcd) = Etcd::start("restart") else {
        return;
    };
    let runtime = Runtime::new().unwrap();
    let mut a = Guard::new(&runtime, &etcd.store_option(), "a");
    assert_eq!(a.list(&honest()).0.len(), 2);
    assert_eq!(a.list(&rug_pull()).0.len(), 0);
    drop(a);

    // A new process: empty memory, same etcd.
    let mut restarted = Guard::new(&runtime, &etcd.store_option(), "a2");
    assert_eq!(restarted.list(&rug_pull()).0.len(), 0);
    assert_eq!(restarted.audited("schema.baselined"), 0);
    assert_eq!(
        restarted.call("deploy_preview", json!({"branch": "main", "region": "x"})),
        "SCHEMA_CHANGED"
    );
    let status: Value = serde_json::from_str(
        &restarted
            .policy
            .admin_status(Some("deploy"))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(status["schema_status"], "changed");
    let candidate = status["candidate_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();

    // An approval from an admin instance that never saw the server waits for etcd's yes.
    let mut admin = Guard::new(&runtime, &etcd.store_option(), "admin");
    let approved = admin.policy.approve("deploy", &candidate).unwrap();
    assert!(approved.is_ok(), "{approved:?}");
    let record = etcd.record("deploy").unwrap();
    assert_eq!(record["record"]["baseline"], candidate.as_str());
    assert_eq!(restarted.policy.tick().unwrap(), Some(1000));
    assert_eq!(restarted.list(&rug_pull()).0.len(), 2);
    assert_eq!(
        restarted.call("deploy_preview", json!({"branch": "main", "region": "x"})),
        "FORWARDED"
    );
}

#[test]
fn an_unreachable_store_leaves_a_first_contact_closed() {
    // Nothing listens on this port: every call is refused.
    let store = format!("etcd=http://127.0.0.1:{},prefix={PREFIX}", free_port());
    let runtime = Runtime::new().unwrap();
    let mut guard = Guard::new(&runtime, &store, "s");
    let (tools, meta) = guard.list(&honest());
    assert!(tools.is_empty());
    assert!(
        meta.to_string().contains("fleet store unreachable"),
        "{meta}"
    );
    assert_eq!(
        guard.call("get_weather", json!({"city": "Oslo"})),
        "SCHEMA_UNVERIFIED"
    );
    assert_eq!(guard.audited("store.unreachable"), 1);
    assert_eq!(guard.audited("schema.baselined"), 0);
    let approved = guard.policy.approve("deploy", "sha256:00").unwrap();
    assert!(approved.is_err(), "{approved:?}");
}

/// A stdio MCP server in `sh`: answers `tools/list` with the tools in `tools_file` as it
/// holds them at that moment, and every `tools/call` with a text result; logs each call.
fn fake_server(dir: &Path) -> Vec<String> {
    let script = r#"while IFS= read -r line; do
case "$line" in
  *'"tools/list"'*) printf '{"jsonrpc":"2.0","id":1,"result":{"tools":%s}}\n' "$(cat "$TOOLS_FILE")" ;;
  *'"tools/call"'*) echo "$line" >> "$CALL_LOG"; printf '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}\n' ;;
esac
done"#;
    let path = dir.join("server.sh");
    std::fs::write(&path, script).unwrap();
    vec!["sh".into(), path.display().to_string()]
}

struct Process {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Process {
    fn start(dir: &Path, store: &str, config: &Path) -> Process {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolseal-stdio"));
        command
            .args(["--server", "deploy", "--store", store, "--config"])
            .arg(config)
            .arg("--audit")
            .arg(dir.join("audit.jsonl"))
            .arg("--")
            .args(fake_server(dir))
            .env("TOOLS_FILE", dir.join("tools.json"))
            .env("CALL_LOG", dir.join("calls.log"))
            .env("TOOLSEAL_CACHE_DIR", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Process { child, out }
    }

    fn ask(&mut self, request: Value) -> Value {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn tools(&mut self) -> usize {
        let answer = self.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        answer["result"]["tools"].as_array().map_or(0, Vec::len)
    }

    fn call(&mut self) -> String {
        let answer = self.ask(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "get_weather", "arguments": {"city": "Oslo"}}}));
        match answer["result"]["structuredContent"]["error_code"].as_str() {
            Some(code) => code.to_string(),
            None => "FORWARDED".into(),
        }
    }

    fn finish(mut self) -> i32 {
        drop(self.child.stdin.take());
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

#[test]
fn guard_processes_share_one_etcd_and_tick_from_their_read_loop() {
    let Some(etcd) = Etcd::start("processes") else {
        return;
    };
    let dir = etcd.dir.join("guards");
    std::fs::create_dir_all(&dir).unwrap();
    let tools_file = dir.join("tools.json");
    std::fs::write(&tools_file, Value::Array(honest()).to_string()).unwrap();
    // The same prefix as --store: the config's own sync_ms stands.
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        json!({"views": ["revision"],
            "store": {"etcd": {"cluster": "x", "prefix": PREFIX, "sync_ms": 100}}})
        .to_string(),
    )
    .unwrap();
    let store = etcd.store_option();

    let mut b = Process::start(&dir, &store, &config);
    assert_eq!(b.tools(), 2, "first contact, trusted once etcd said yes");
    assert_eq!(b.call(), "FORWARDED");

    // Another guard process sees the rug pull and closes it fleet-wide.
    std::fs::write(&tools_file, Value::Array(rug_pull()).to_string()).unwrap();
    let mut a = Process::start(&dir, &store, &config);
    assert_eq!(a.tools(), 0);
    assert_eq!(a.finish(), 0);
    assert_eq!(
        etcd.record("deploy").unwrap()["record"]["status"],
        "changed"
    );

    // B, idle meanwhile, ticks from its read loop (sync_ms 100) and refuses.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(b.call(), "SCHEMA_CHANGED");
    assert_eq!(b.finish(), 0);
    let calls = std::fs::read_to_string(dir.join("calls.log")).unwrap();
    assert_eq!(
        calls.lines().count(),
        1,
        "the refused call never reached the server"
    );

    // A different store in the config is refused, with a clear message.
    let other = dir.join("other.json");
    std::fs::write(
        &other,
        json!({"store": {"etcd": {"cluster": "x", "prefix": "/prod/"}}}).to_string(),
    )
    .unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_toolseal-stdio"))
        .args(["--store", &store, "--config"])
        .arg(&other)
        .args(["--", "true"])
        .env("TOOLSEAL_CACHE_DIR", "off")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains(
            "the config's store has prefix \"/prod/\" but --store says \"/toolseal/team/\""
        ),
        "{message}"
    );
}
