//! `toolseal replay`: transcripts in order through one plugin VM; one JSON line per
//! decision record on stdout (and, with `--audit`, per audit event; otherwise audit events
//! go to stderr; with `--http`, one line per exchange with its HTTP outcome); `--expect
//! FILE` checks the lines exactly (`BLESS=1` rewrites FILE); `--fail-hostcall NAME[:N]`
//! injects host faults, and `--hostcalls` ends the output with how often each hostcall was
//! made (what a fault sweep iterates over).

use super::args::Args;
use super::stdout::print_lines;
use crate::abi::faults::{FAULT_STATUS, Fault};
use crate::abi::types::LogLevel;
use crate::input_error::{InputError, input_error};
use crate::replay::exchange::Stop;
use crate::replay::expect::{self, ExpectOutcome};
use crate::replay::records::{PluginRecord, audit_line, decision_line, http_line};
use crate::replay::{ExchangeReport, Replay, ReplayOptions, chunks, load_transcript};
use crate::wasm::module_cache::default_cache_dir;
use anyhow::Result;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use toolseal_core::json::parse_strict;

const WITH_VALUE: [&str; 8] = [
    "config",
    "server",
    "wasm",
    "expect",
    "chunk",
    "log-level",
    "metadata",
    "fail-hostcall",
];
const SWITCHES: [&str; 4] = ["audit", "http", "no-cache", "hostcalls"];

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
pub fn run(rest: &[String]) -> Result<i32> {
    let args = Args::parse(rest, &WITH_VALUE, &SWITCHES)?;
    if args.positionals.is_empty() {
        return Err(InputError(
            "toolseal replay needs at least one TRANSCRIPT (see `toolseal help`)".into(),
        )
        .into());
    }
    let options = options(&args)?;
    let transcripts = args
        .positionals
        .iter()
        .map(|p| load_transcript(Path::new(p)))
        .collect::<Result<Vec<_>>>()?;
    let mut replay = Replay::start(options)?;
    let audit_to_stdout = args.has("audit");
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
            if args.has("http") {
                lines.push(http_line(&report.transcript, &report.seq, &report.outcome));
            }
        }
    }
    for (hostcall, call) in &replay.hostcalls().injected {
        eprintln!("toolseal: injected fault: call {call} of {hostcall} answered {FAULT_STATUS:?}");
    }
    if args.has("hostcalls") {
        lines.push(hostcalls_line(&replay.hostcalls().counts));
    }
    print_lines(&lines)?;
    let Some(expect_path) = args.value("expect") else {
        return Ok(0);
    };
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    match expect::check(Path::new(expect_path), &lines, bless)? {
        ExpectOutcome::Holds => Ok(0),
        ExpectOutcome::Blessed => {
            eprintln!(
                "toolseal: wrote {} ({} lines); review it with git diff",
                expect_path,
                lines.len()
            );
            Ok(0)
        }
        ExpectOutcome::Differs(diff) => {
            eprintln!(
                "toolseal: the replay does not match {expect_path} (- expected, + actual; BLESS=1 accepts the new output):\n{diff}"
            );
            Ok(1)
        }
    }
}

fn options(args: &Args) -> Result<ReplayOptions> {
    let plugin_configuration = match args.value("config") {
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| input_error(format!("cannot read config {path}: {e}")))?;
            parse_strict(&bytes, 128)
                .map_err(|e| input_error(format!("config {path} is not valid JSON: {e}")))?;
            bytes
        }
        None => Vec::new(),
    };
    let chunk = match args.value("chunk") {
        Some(n) => n.parse().map_err(|_| {
            input_error(format!(
                "--chunk needs a byte count (0 = whole bodies), not {n:?}"
            ))
        })?,
        None => chunks::DEFAULT_CHUNK,
    };
    let log_level = match args.value("log-level") {
        Some(name) => LogLevel::from_name(name).ok_or_else(|| {
            input_error(format!(
                "--log-level must be trace, debug, info, warn, error or critical, not {name:?}"
            ))
        })?,
        None => LogLevel::Debug,
    };
    Ok(ReplayOptions {
        wasm_path: args
            .value("wasm")
            .map_or_else(default_wasm_path, PathBuf::from),
        plugin_configuration,
        server: args.value("server").map(str::to_owned),
        chunk,
        log_level,
        dynamic_metadata: metadata(args.value("metadata"))?,
        cache_dir: if args.has("no-cache") {
            None
        } else {
            default_cache_dir()
        },
        faults: args
            .values("fail-hostcall")
            .map(|spec| Fault::parse(spec).map_err(input_error))
            .collect::<Result<_>>()?,
    })
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
fn metadata(path: Option<&str>) -> Result<Map<String, Value>> {
    let Some(path) = path else {
        return Ok(Map::new());
    };
    let bytes = std::fs::read(path)
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

fn emit_records(
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
fn note_outcome(report: &ExchangeReport) {
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
