//! The command line.
//!
//! ```text
//! toolseal-stdio [--state FILE] [--config FILE] [--server ID] [--store etcd=URL[,prefix=P]] [--audit FILE] [--decisions] -- SERVER COMMAND…
//! toolseal-stdio status     --state FILE|--store … [--server ID] [--config FILE]
//! toolseal-stdio approve    --state FILE|--store … --server ID --fingerprint sha256:… [--config FILE]
//! toolseal-stdio quarantine --state FILE|--store … --server ID [--reason TEXT] [--config FILE]
//! toolseal-stdio release    --state FILE|--store … --server ID [--config FILE]
//! ```
//!
//! Main design decision: the admin subcommands are thin: they load the same component on the
//! same state file and call its admin exports, so a CLI approval is the lifecycle transition
//! Envoy's admin API makes. Exit codes: the server's own exit code when guarding; 0 done,
//! 1 refused (conflict, unknown server), 2 unusable input, 70 the guard could not decide.

use crate::AdminError;
use crate::audit_sink::{AuditSink, JsonLines};
use crate::host_state::HostState;
use crate::persistent::PersistentPolicy;
use crate::policy::Runtime;
use crate::state_file::StateFile;
use crate::stdio::{self, EXIT_POLICY_FAILED, Target};
use crate::store_option::StoreOption;
use anyhow::{Context, Result, anyhow, bail};
use lexopt::{Arg, ValueExt};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use toolseal_core::state::store::MemoryStore;

/// The server id used when `--server` is not given.
pub const DEFAULT_SERVER_ID: &str = "stdio";

/// Every form of the command line.
pub const USAGE: &str = "usage:
  toolseal-stdio [--state FILE] [--config FILE] [--server ID] [--store etcd=URL[,prefix=P]] [--audit FILE] [--decisions] -- SERVER COMMAND...
  toolseal-stdio status     --state FILE|--store etcd=URL[,prefix=P] [--server ID] [--config FILE]
  toolseal-stdio approve    --state FILE|--store etcd=URL[,prefix=P] --server ID --fingerprint sha256:... [--config FILE]
  toolseal-stdio quarantine --state FILE|--store etcd=URL[,prefix=P] --server ID [--reason TEXT] [--config FILE]
  toolseal-stdio release    --state FILE|--store etcd=URL[,prefix=P] --server ID [--config FILE]
`toolseal-stdio SUBCOMMAND --help` says more about each.
exit status: the server's own when guarding; 0 done, 1 refused (conflict, unknown server),
2 unusable input, 70 the guard could not decide (it stopped the server: fail closed).";

const GUARD_USAGE: &str = "usage: toolseal-stdio [--state FILE] [--config FILE] [--server ID] [--store etcd=URL[,prefix=P]] [--audit FILE] [--decisions] -- SERVER COMMAND...
  Starts SERVER COMMAND as a child and passes its line-delimited JSON-RPC through the
  toolseal policy both ways: drifted tools are withheld, refused calls never reach it.
  --state FILE   baselines, status and audit ring, kept across restarts (default: in memory)
  --config FILE  the toolseal configuration (the same JSON as the Envoy plugin's)
  --server ID    the id baselines, pins, policy rules and admin commands name (default: stdio)
  --store etcd=URL[,prefix=P]
                 share baselines, drift and admin decisions with every guard and Envoy on
                 this etcd (http:// only; prefix default /toolseal/)
  --audit FILE   audit events as JSON lines, appended (default: stderr)
  --decisions    also write one decision record per MCP message
exit status: the server's own; 2 unusable input; 70 the guard could not decide.";

const STATUS_USAGE: &str = "usage: toolseal-stdio status --state FILE|--store etcd=URL[,prefix=P] [--server ID] [--config FILE]
  Prints the status of one server (or of every server without --server): schema_status,
  baseline and candidate fingerprints, the classified diff.
exit status: 0 printed, 1 unknown server, 2 unusable input.";

const APPROVE_USAGE: &str = "usage: toolseal-stdio approve --state FILE|--store etcd=URL[,prefix=P] --server ID --fingerprint sha256:... [--config FILE]
  Approves the server's candidate tool set: the fingerprint must be the candidate_fingerprint
  that `status` printed (what you reviewed), else nothing changes.
exit status: 0 approved, 1 refused (not the candidate, unknown server), 2 unusable input.";

const QUARANTINE_USAGE: &str =
    "usage: toolseal-stdio quarantine --state FILE|--store etcd=URL[,prefix=P] --server ID [--reason TEXT] [--config FILE]
  Holds the server: no tools listed, every call refused, until `release`.
exit status: 0 held, 1 unknown server, 2 unusable input.";

const RELEASE_USAGE: &str = "usage: toolseal-stdio release --state FILE|--store etcd=URL[,prefix=P] --server ID [--config FILE]
  Lifts a quarantine; the server's status is evaluated again from its baseline.
exit status: 0 released, 1 refused (not quarantined, unknown server), 2 unusable input.";

/// The subcommands, with their usage and the options each takes besides `--state`,
/// `--server` and `--config`.
const SUBCOMMANDS: [(&str, &str, &[&str]); 4] = [
    ("status", STATUS_USAGE, &[]),
    ("approve", APPROVE_USAGE, &["--fingerprint"]),
    ("quarantine", QUARANTINE_USAGE, &["--reason"]),
    ("release", RELEASE_USAGE, &[]),
];

/// What the command line asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    /// `status`, `approve`, `quarantine`, `release`, or `None` to guard a server.
    pub subcommand: Option<String>,
    /// `--state`.
    pub state: Option<PathBuf>,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--server`.
    pub server: Option<String>,
    /// `--store`, as given (`etcd=URL[,prefix=P]`).
    pub store: Option<String>,
    /// `--audit`.
    pub audit: Option<PathBuf>,
    /// `--decisions`: also write per-message decision records to the audit output.
    pub decisions: bool,
    /// `--fingerprint`.
    pub fingerprint: Option<String>,
    /// `--reason`.
    pub reason: Option<String>,
    /// The server command after `--`.
    pub command: Vec<OsString>,
}

/// A parsed command line: what to run, or a usage text to print (`-h`/`--help`).
#[derive(Debug, Clone, PartialEq, Eq)]
// One value per process, made once: boxing `Args` would only make its tests wordier.
#[allow(clippy::large_enum_variant)]
pub enum Invocation {
    /// Guard a server or run an admin subcommand.
    Run(Args),
    /// Print this usage and exit 0.
    Help(&'static str),
}

/// Parses the arguments after the program name. Everything after the first `--` is the
/// server command, passed on untouched; before it, options may come in any order around
/// the subcommand. An option the (sub)command does not take is refused.
pub fn parse(args: Vec<OsString>) -> Result<Invocation, lexopt::Error> {
    let mut parsed = Args::default();
    // The options given that only some forms take.
    let mut particular: Vec<&'static str> = Vec::new();
    let mut help = false;
    let mut parser = lexopt::Parser::from_args(args);
    loop {
        if let Some(mut raw) = parser.try_raw_args()
            && raw.next_if(|arg| arg == "--").is_some()
        {
            parsed.command = raw.collect();
            break;
        }
        let Some(arg) = parser.next()? else {
            break;
        };
        match arg {
            Arg::Short('h') | Arg::Long("help") => help = true,
            Arg::Long("state") => parsed.state = Some(parser.value()?.into()),
            Arg::Long("config") => parsed.config = Some(parser.value()?.into()),
            Arg::Long("server") => parsed.server = Some(parser.value()?.string()?),
            Arg::Long("store") => parsed.store = Some(parser.value()?.string()?),
            Arg::Long("audit") => {
                parsed.audit = Some(parser.value()?.into());
                particular.push("--audit");
            }
            Arg::Long("decisions") => {
                parsed.decisions = true;
                particular.push("--decisions");
            }
            Arg::Long("fingerprint") => {
                parsed.fingerprint = Some(parser.value()?.string()?);
                particular.push("--fingerprint");
            }
            Arg::Long("reason") => {
                parsed.reason = Some(parser.value()?.string()?);
                particular.push("--reason");
            }
            Arg::Value(name) if parsed.subcommand.is_none() => {
                let name = name.string()?;
                if !SUBCOMMANDS.iter().any(|(known, _, _)| *known == name) {
                    return Err(format!(
                        "unknown subcommand {name:?} (the server command goes after --)"
                    )
                    .into());
                }
                parsed.subcommand = Some(name);
            }
            other => return Err(other.unexpected()),
        }
    }
    let (usage, takes): (&'static str, &[&str]) = match parsed.subcommand.as_deref() {
        None if help && parsed.command.is_empty() => return Ok(Invocation::Help(USAGE)),
        None => (GUARD_USAGE, &["--audit", "--decisions"]),
        Some(name) => SUBCOMMANDS
            .iter()
            .find(|(known, _, _)| *known == name)
            .map(|(_, usage, takes)| (*usage, *takes))
            .unwrap_or((USAGE, &[])),
    };
    if help {
        return Ok(Invocation::Help(usage));
    }
    if let Some(option) = particular.iter().find(|o| !takes.contains(o)) {
        let form = parsed.subcommand.as_deref().unwrap_or("guarding a server");
        return Err(format!("{option} is not an option of {form}").into());
    }
    if parsed.subcommand.is_some() && !parsed.command.is_empty() {
        return Err("an admin subcommand starts no server: nothing goes after --".into());
    }
    Ok(Invocation::Run(parsed))
}

/// lexopt's error as the guard says it.
fn invocation_error(error: lexopt::Error) -> String {
    match error {
        lexopt::Error::MissingValue {
            option: Some(option),
        } => format!("{option} needs a value"),
        lexopt::Error::UnexpectedOption(option) => format!("unknown option {option}"),
        lexopt::Error::UnexpectedArgument(value) => {
            format!("unexpected argument {value:?} (the server command goes after --)")
        }
        lexopt::Error::UnexpectedValue { option, value } => {
            format!("{option} takes no value (got {value:?})")
        }
        lexopt::Error::NonUnicodeValue(value) => format!("argument {value:?} is not valid UTF-8"),
        other => other.to_string(),
    }
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let args = match parse(std::env::args_os().skip(1).collect()) {
        Ok(Invocation::Run(args)) => args,
        Ok(Invocation::Help(usage)) => {
            // A reader that closed the pipe (`| head`) is not an error.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{usage}").and_then(|()| out.flush());
            return 0;
        }
        Err(e) => {
            eprintln!("toolseal-stdio: {}\n{USAGE}", invocation_error(e));
            return 2;
        }
    };
    let mut policy = match open_policy(&args) {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("toolseal-stdio: {e:#}");
            return 2;
        }
    };
    match run(&args, &mut policy) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolseal-stdio: {e:#}");
            EXIT_POLICY_FAILED
        }
    }
}

fn run(args: &Args, policy: &mut PersistentPolicy) -> Result<i32> {
    let server = args
        .server
        .clone()
        .unwrap_or_else(|| DEFAULT_SERVER_ID.to_string());
    let outcome = match args.subcommand.as_deref() {
        None => {
            let target = Target {
                server_id: server,
                session_id: session_id(),
                command: args.command.clone(),
            };
            return stdio::run(policy, &target);
        }
        Some("status") => policy.call(|p| p.admin_status(args.server.as_deref()))?,
        Some("approve") => {
            let fingerprint = args
                .fingerprint
                .as_deref()
                .ok_or_else(|| anyhow!("approve needs --fingerprint sha256:…"))?;
            policy.call(|p| p.approve(&server, fingerprint))?
        }
        Some("quarantine") => {
            let reason = args
                .reason
                .as_deref()
                .unwrap_or("quarantined with toolseal-stdio");
            policy.call(|p| p.quarantine(&server, reason))?
        }
        Some("release") => policy.call(|p| p.release(&server))?,
        Some(other) => bail!("unknown subcommand {other:?}"),
    };
    Ok(report(outcome))
}

fn report(outcome: std::result::Result<String, AdminError>) -> i32 {
    match outcome {
        Ok(view) => {
            println!("{view}");
            0
        }
        Err(AdminError::UnknownServer(m) | AdminError::Conflict(m)) => {
            eprintln!("toolseal-stdio: refused: {m}");
            1
        }
        Err(AdminError::Failed(m)) => {
            eprintln!("toolseal-stdio: failed: {m}");
            2
        }
    }
}

/// Loads the config and the state file and instantiates the configured component.
fn open_policy(args: &Args) -> Result<PersistentPolicy> {
    if args.subcommand.is_none() && args.command.is_empty() {
        bail!("give the server command after --\n{USAGE}");
    }
    if args.subcommand.is_some() && args.state.is_none() && args.store.is_none() {
        bail!(
            "admin subcommands act on a state file or a fleet store: give --state FILE or --store etcd=URL"
        );
    }
    let mut config = match &args.config {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the config {}", path.display()))?,
        None => String::new(),
    };
    let store_option = match &args.store {
        Some(spec) => {
            let option = StoreOption::parse(spec).map_err(|e| anyhow!("{e}"))?;
            config = option.into_config(&config).map_err(|e| anyhow!("{e}"))?;
            Some(option)
        }
        None => None,
    };
    let (file, store) = match &args.state {
        Some(path) => {
            let (file, store) = StateFile::open(path).map_err(|e| anyhow!("{e}"))?;
            (Some(file), store)
        }
        None => (None, MemoryStore::new()),
    };
    let sink: Box<dyn AuditSink + Send> = match &args.audit {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the audit file {}", path.display()))?;
            Box::new(JsonLines::new(Box::new(file), args.decisions))
        }
        None => Box::new(JsonLines::new(Box::new(std::io::stderr()), args.decisions)),
    };
    let runtime = Runtime::new()?;
    let mut host = HostState::new(store, sink);
    if let Some(option) = store_option {
        host = host.with_fleet(option.client);
    }
    let mut policy = PersistentPolicy::new(runtime.instantiate(host)?, file);
    if let Err(message) = policy.call(|p| p.configure(&config))? {
        bail!("the config is invalid: {message}");
    }
    Ok(policy)
}

/// One session id per guard process: the per-session checks (a client still holding an
/// older tool list) then apply to this connection.
fn session_id() -> String {
    format!(
        "stdio-{}-{}",
        std::process::id(),
        crate::host_state::system_now_ms()
    )
}
