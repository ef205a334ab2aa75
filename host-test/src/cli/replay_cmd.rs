//! `toolseal replay`: transcripts in order through one plugin VM; one JSON line per
//! decision record on stdout (and, with `--audit`, per audit event; otherwise audit events
//! go to stderr; with `--http`, one line per exchange with its HTTP outcome); `--expect
//! FILE` checks the lines exactly (`BLESS=1` rewrites FILE); `--fail-hostcall NAME[:N]`
//! injects host faults, and `--hostcalls` ends the output with how often each hostcall was
//! made (what a fault sweep iterates over). `--store sim` serves the configuration's fleet
//! store (`store.etcd`) from an in-memory etcd and ends the output with what it holds.

use super::args::{Parsed, invocation_error, is_help, parser, text_value};
use super::stdout::print_lines;
use crate::abi::faults::{FAULT_STATUS, Fault};
use crate::abi::types::LogLevel;
use crate::input_error::input_error;
use crate::replay::exchange::Stop;
use crate::replay::expect::{self, ExpectOutcome};
use crate::replay::fleet_store::FleetStore;
use crate::replay::records::{PluginRecord, audit_line, decision_line, http_line};
use crate::replay::{ExchangeReport, Replay, ReplayOptions, chunks, load_transcript};
use crate::wasm::module_cache::default_cache_dir;
use anyhow::Result;
use lexopt::Arg;
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toolseal_core::wire::json::parse_strict;

/// Usage of `toolseal replay`.
pub const USAGE: &str = "\
usage: toolseal replay [--config CONFIG.json] [--server ID] [--wasm PATH] [--expect FILE]
                       [--chunk N] [--audit] [--http] [--log-level LEVEL] [--metadata FILE]
                       [--no-cache] [--fail-hostcall NAME[:N]]... [--hostcalls]
                       [--store sim]
                       [--workers N [--assign copies|round-robin]] [--scenario FILE]
                       [--schedule SPEC] [--schedules K] [--preemptions P] [--keep-going]
                       [--trace] TRANSCRIPT...
  Replays recorded MCP traffic through the built proxy-wasm plugin on wasmtime, in order,
  keeping plugin state across transcripts (so release A then release B of one server shows
  the drift), and prints one JSON line per MCP message the plugin saw (its decision record).
  --config FILE      the plugin configuration (default: none, the plugin's defaults)
  --server ID        the server id of every exchange (default: each transcript's name)
  --wasm PATH        the plugin module (default: $TOOLSEAL_WASM, else this workspace's
                     target/wasm32-wasip1/wasm/toolseal_plugin.wasm)
  --expect FILE      compare the lines with FILE exactly (BLESS=1 rewrites FILE)
  --chunk N          body chunk size in bytes as Envoy would deliver them (0: whole bodies)
  --audit            audit events on stdout as lines too (default: on stderr)
  --http             one more line per exchange: what the client got (status, body hash,
                     whether the upstream was contacted)
  --log-level LEVEL  the plugin's log level: trace, debug, info, warn, error or critical
  --metadata FILE    Envoy dynamic metadata the plugin reads: a JSON object of namespaces
  --no-cache         compile the module again instead of using the precompiled cache
  --fail-hostcall NAME[:N]
                     make the Nth call (counting from 1 over the whole run; without :N every
                     call) of proxy-wasm hostcall NAME fail with an error status, as a
                     faulting host would; repeatable
  --hostcalls        a last line {\"hostcalls\": {NAME: calls, ...}}: how often the plugin made
                     each hostcall
  --store sim        serve the fleet store the configuration names (store.etcd.cluster)
                     from an etcd in memory, empty at start: every HTTP callout to that
                     cluster is answered right after the callback that made it (the stream
                     held meanwhile, as Envoy holds it), the timer fires every sync_ms of the
                     replay clock (one second per exchange), and a last line
                     {\"store\": {\"calls\": N, \"keys\": {KEY: VALUE, ...}}} shows what the
                     store holds. Without it, callouts are refused (no cluster) and what
                     needs the store fails closed. Not with --workers (see docs/host-test.md)
  --workers N        N plugin VMs (Envoy workers) over one shared data store, taking turns
                     at every shared-data access as --schedule decides; each schedule is
                     checked against single-worker replays of the same exchanges
  --assign HOW       copies (default): every worker replays every transcript; round-robin:
                     transcript i goes to worker i mod N
  --scenario FILE    phases of steps (which worker replays which exchanges), instead of
                     TRANSCRIPTs; implies the workers it names
  --schedule SPEC    random:SEED (default random:0), exhaustive[:MAX] (every schedule
                     depth-first, at most MAX, default 10000) or fixed:C,C,... (the option
                     chosen at each choice point, as a failure report prints it)
  --schedules K      with random:SEED, K schedules seeded SEED, SEED+1, ... (default 1)
  --preemptions P    with exhaustive, only schedules that take the turn from a worker that
                     could go on at most P times
  --keep-going       run every schedule even after one broke an invariant
  --trace            print the shared-data accesses of failing schedules on stderr
exit status: 0 replayed (and the expectation held, and every schedule kept every
invariant), 1 the expectation or an invariant did not hold or the plugin faulted, 2
unusable input.";

/// The options of one `toolseal replay`.
#[derive(Debug, Default)]
pub(super) struct ReplayArgs {
    pub(super) transcripts: Vec<PathBuf>,
    pub(super) config: Option<PathBuf>,
    pub(super) server: Option<String>,
    pub(super) wasm: Option<PathBuf>,
    pub(super) expect: Option<PathBuf>,
    pub(super) chunk: Option<String>,
    pub(super) log_level: Option<String>,
    pub(super) metadata: Option<PathBuf>,
    pub(super) fail_hostcall: Vec<String>,
    pub(super) audit: bool,
    pub(super) http: bool,
    pub(super) no_cache: bool,
    pub(super) hostcalls: bool,
    pub(super) store: Option<String>,
    /// The multi-worker options (`--workers` and friends).
    pub(super) workers: WorkerArgs,
}

/// The options of a multi-worker replay.
#[derive(Debug, Default)]
pub(super) struct WorkerArgs {
    pub(super) workers: Option<String>,
    pub(super) assign: Option<String>,
    pub(super) scenario: Option<PathBuf>,
    pub(super) schedule: Option<String>,
    pub(super) schedules: Option<String>,
    pub(super) preemptions: Option<String>,
    pub(super) keep_going: bool,
    pub(super) trace: bool,
}

impl WorkerArgs {
    /// Whether a multi-worker replay is asked for.
    fn any(&self) -> bool {
        self.workers.is_some()
            || self.scenario.is_some()
            || self.schedule.is_some()
            || self.schedules.is_some()
    }
}

fn parse(args: &[OsString]) -> Result<Parsed<ReplayArgs>, lexopt::Error> {
    let mut parsed = ReplayArgs::default();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Long("config") => parsed.config = Some(parser.value()?.into()),
            Arg::Long("server") => parsed.server = Some(text_value(&mut parser, "--server")?),
            Arg::Long("wasm") => parsed.wasm = Some(parser.value()?.into()),
            Arg::Long("expect") => parsed.expect = Some(parser.value()?.into()),
            Arg::Long("chunk") => parsed.chunk = Some(text_value(&mut parser, "--chunk")?),
            Arg::Long("log-level") => {
                parsed.log_level = Some(text_value(&mut parser, "--log-level")?)
            }
            Arg::Long("metadata") => parsed.metadata = Some(parser.value()?.into()),
            Arg::Long("audit") => parsed.audit = true,
            Arg::Long("http") => parsed.http = true,
            Arg::Long("no-cache") => parsed.no_cache = true,
            Arg::Long("fail-hostcall") => parsed
                .fail_hostcall
                .push(text_value(&mut parser, "--fail-hostcall")?),
            Arg::Long("hostcalls") => parsed.hostcalls = true,
            Arg::Long("store") => parsed.store = Some(text_value(&mut parser, "--store")?),
            Arg::Long("workers") => {
                parsed.workers.workers = Some(text_value(&mut parser, "--workers")?)
            }
            Arg::Long("assign") => {
                parsed.workers.assign = Some(text_value(&mut parser, "--assign")?)
            }
            Arg::Long("scenario") => parsed.workers.scenario = Some(parser.value()?.into()),
            Arg::Long("schedule") => {
                parsed.workers.schedule = Some(text_value(&mut parser, "--schedule")?)
            }
            Arg::Long("schedules") => {
                parsed.workers.schedules = Some(text_value(&mut parser, "--schedules")?)
            }
            Arg::Long("preemptions") => {
                parsed.workers.preemptions = Some(text_value(&mut parser, "--preemptions")?)
            }
            Arg::Long("keep-going") => parsed.workers.keep_going = true,
            Arg::Long("trace") => parsed.workers.trace = true,
            Arg::Value(transcript) => parsed.transcripts.push(transcript.into()),
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// The plugin module `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm`
/// writes, relative to the workspace this command was built in.
pub fn default_wasm_path() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLSEAL_WASM").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target/wasm32-wasip1/wasm/toolseal_plugin.wasm")
}

/// Runs `toolseal replay`.
pub fn run(args: &[OsString]) -> Result<i32> {
    let args = match parse(args).map_err(|e| invocation_error("replay", e))? {
        Parsed::Help => {
            print_lines(&[USAGE])?;
            return Ok(0);
        }
        Parsed::Run(args) => args,
    };
    if args.workers.any() {
        return super::replay_workers::run(&args, options(&args)?);
    }
    if args.transcripts.is_empty() {
        return Err(input_error(
            "toolseal replay needs at least one TRANSCRIPT (see `toolseal replay --help`)",
        ));
    }
    let options = options(&args)?;
    let transcripts = args
        .transcripts
        .iter()
        .map(|p| load_transcript(p))
        .collect::<Result<Vec<_>>>()?;
    let mut replay = Replay::start(options)?;
    let audit_to_stdout = args.audit;
    let mut lines = Vec::new();
    let first = transcripts.first().map_or("", |t| t.name.as_str());
    emit_records(
        &mut lines,
        first,
        &Value::Null,
        &replay.startup_records,
        audit_to_stdout,
    );
    for transcript in &transcripts {
        for report in replay.run(transcript)? {
            note_outcome(&report);
            emit_records(
                &mut lines,
                &report.transcript,
                &report.seq,
                &report.records,
                audit_to_stdout,
            );
            if args.http {
                lines.push(http_line(&report.transcript, &report.seq, &report.outcome));
            }
        }
    }
    for (hostcall, call) in &replay.hostcalls().injected {
        eprintln!("toolseal: injected fault: call {call} of {hostcall} answered {FAULT_STATUS:?}");
    }
    if args.hostcalls {
        lines.push(hostcalls_line(&replay.hostcalls().counts));
    }
    if let Some(store) = &replay.options().store {
        lines.push(store_line(store));
    }
    print_lines(&lines)?;
    match &args.expect {
        Some(expect_path) => check_expectation(expect_path, &lines),
        None => Ok(0),
    }
}

/// Compares `lines` with the expectation file (`BLESS=1` rewrites it): 0 when they agree
/// (or were blessed), 1 with a line diff on stderr when they do not.
pub(super) fn check_expectation(expect_path: &Path, lines: &[String]) -> Result<i32> {
    let expect_name = expect_path.display();
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    match expect::check(expect_path, lines, bless)? {
        ExpectOutcome::Holds => Ok(0),
        ExpectOutcome::Blessed => {
            eprintln!(
                "toolseal: wrote {} ({} lines); review it with git diff",
                expect_name,
                lines.len()
            );
            Ok(0)
        }
        ExpectOutcome::Differs(diff) => {
            eprintln!(
                "toolseal: the replay does not match {expect_name} (- expected, + actual; BLESS=1 accepts the new output):\n{diff}"
            );
            Ok(1)
        }
    }
}

pub(super) fn options(args: &ReplayArgs) -> Result<ReplayOptions> {
    let plugin_configuration = match &args.config {
        Some(file) => {
            let path = file.display();
            let bytes = std::fs::read(file)
                .map_err(|e| input_error(format!("cannot read config {path}: {e}")))?;
            parse_strict(&bytes, 128)
                .map_err(|e| input_error(format!("config {path} is not valid JSON: {e}")))?;
            bytes
        }
        None => Vec::new(),
    };
    let chunk = match &args.chunk {
        Some(n) => n.parse().map_err(|_| {
            input_error(format!(
                "--chunk needs a byte count (0 = whole bodies), not {n:?}"
            ))
        })?,
        None => chunks::DEFAULT_CHUNK,
    };
    let log_level = match &args.log_level {
        Some(name) => LogLevel::from_name(name).ok_or_else(|| {
            input_error(format!(
                "--log-level must be trace, debug, info, warn, error or critical, not {name:?}"
            ))
        })?,
        None => LogLevel::Debug,
    };
    let store = store(args.store.as_deref(), &plugin_configuration)?;
    Ok(ReplayOptions {
        wasm_path: args.wasm.clone().unwrap_or_else(default_wasm_path),
        plugin_configuration,
        server: args.server.clone(),
        chunk,
        log_level,
        dynamic_metadata: metadata(args.metadata.as_deref())?,
        cache_dir: if args.no_cache {
            None
        } else {
            default_cache_dir()
        },
        faults: args
            .fail_hostcall
            .iter()
            .map(|spec| Fault::parse(spec).map_err(input_error))
            .collect::<Result<_>>()?,
        store,
        callouts: None,
    })
}

/// `--store sim`: an empty etcd in memory, for a configuration that names a fleet store.
fn store(spec: Option<&str>, configuration: &[u8]) -> Result<Option<FleetStore>> {
    match spec {
        None => Ok(None),
        Some("sim") => {
            let named = toolseal_core::config::Config::parse(configuration)
                .is_ok_and(|c| c.store.is_some());
            if !named {
                return Err(input_error(
                    "--store sim serves the fleet store the configuration names, and it names none: add \"store\": {\"etcd\": {\"cluster\": \"toolseal_store\"}} to --config (docs/config.md)",
                ));
            }
            Ok(Some(FleetStore::new()))
        }
        Some(other) => Err(input_error(format!(
            "--store {other:?}: the only store a replay serves is `sim` (an etcd in memory)"
        ))),
    }
}

/// `{"store": {"calls": N, "keys": {KEY: VALUE}}}`: what the simulated store received and
/// holds (values that are JSON as JSON).
pub fn store_line(store: &FleetStore) -> String {
    let keys: Map<String, Value> = store
        .entries()
        .into_iter()
        .map(|(k, v)| {
            let value = parse_strict(v.as_bytes(), 128).unwrap_or(Value::String(v));
            (k, value)
        })
        .collect();
    json!({"store": {"calls": store.calls(), "keys": keys}}).to_string()
}

/// `{"hostcalls": {NAME: calls, ...}}`: how often the plugin made each hostcall.
pub fn hostcalls_line(counts: &std::collections::BTreeMap<&'static str, u64>) -> String {
    let counts: Map<String, Value> = counts
        .iter()
        .map(|(name, n)| ((*name).to_owned(), Value::from(*n)))
        .collect();
    serde_json::json!({ "hostcalls": counts }).to_string()
}

/// Reads `--metadata FILE`: a JSON object of namespaces (e.g.
/// `{"envoy.filters.http.jwt_authn": {"payload": {...}}}`).
fn metadata(path: Option<&Path>) -> Result<Map<String, Value>> {
    let Some(file) = path else {
        return Ok(Map::new());
    };
    let path = file.display();
    let bytes = std::fs::read(file)
        .map_err(|e| input_error(format!("cannot read metadata {path}: {e}")))?;
    match parse_strict(&bytes, 64) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(input_error(format!(
            "metadata {path} must be a JSON object of namespaces"
        ))),
        Err(e) => Err(input_error(format!(
            "metadata {path} is not valid JSON: {e}"
        ))),
    }
}

pub(super) fn emit_records(
    lines: &mut Vec<String>,
    transcript: &str,
    seq: &Value,
    records: &[PluginRecord],
    audit_to_stdout: bool,
) {
    for record in records {
        match record {
            PluginRecord::Decision(fields) => lines.push(decision_line(transcript, seq, fields)),
            PluginRecord::Audit(event) if audit_to_stdout => {
                lines.push(audit_line(transcript, seq, event))
            }
            PluginRecord::Audit(event) => eprintln!("audit {transcript} {seq}: {event}"),
        }
    }
}

/// Tells on stderr how an exchange ended when it did not simply pass.
pub(super) fn note_outcome(report: &ExchangeReport) {
    let outcome = &report.outcome;
    let at = format!("{} {}", report.transcript, report.seq);
    match (&outcome.stop, &outcome.local_response) {
        (Some(Stop::LocalResponse), Some(reply)) => {
            eprintln!(
                "exchange {at}: answered locally with HTTP {} (upstream not contacted): {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            );
        }
        (Some(Stop::Reset), _) => eprintln!("exchange {at}: stream reset by the plugin"),
        (Some(Stop::Stalled(why)), _) => eprintln!("exchange {at}: stalled: {why}"),
        _ => {}
    }
}
