//! The command line.
//!
//! ```text
//! toolseal-stdio [--state FILE] [--config FILE] [--server ID] [--audit FILE] [--decisions] -- SERVER COMMAND…
//! toolseal-stdio status     --state FILE [--server ID] [--config FILE]
//! toolseal-stdio approve    --state FILE --server ID --fingerprint sha256:… [--config FILE]
//! toolseal-stdio quarantine --state FILE --server ID [--reason TEXT] [--config FILE]
//! toolseal-stdio release    --state FILE --server ID [--config FILE]
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
use anyhow::{Context, Result, anyhow, bail};
use std::ffi::OsString;
use std::path::PathBuf;
use toolseal_core::store::MemoryStore;

/// The server id used when `--server` is not given.
pub const DEFAULT_SERVER_ID: &str = "stdio";

const USAGE: &str = "usage:
  toolseal-stdio [--state FILE] [--config FILE] [--server ID] [--audit FILE] [--decisions] -- SERVER COMMAND...
  toolseal-stdio status     --state FILE [--server ID] [--config FILE]
  toolseal-stdio approve    --state FILE --server ID --fingerprint sha256:... [--config FILE]
  toolseal-stdio quarantine --state FILE --server ID [--reason TEXT] [--config FILE]
  toolseal-stdio release    --state FILE --server ID [--config FILE]";

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

/// Parses the arguments after the program name.
pub fn parse(args: Vec<OsString>) -> Result<Args> {
    let mut parsed = Args::default();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        let text = arg
            .to_str()
            .ok_or_else(|| anyhow!("argument {arg:?} is not UTF-8"))?
            .to_string();
        let mut value = |name: &str| -> Result<String> {
            iter.next()
                .and_then(|v| v.into_string().ok())
                .ok_or_else(|| anyhow!("{name} needs a value"))
        };
        match text.as_str() {
            "--" => {
                parsed.command = iter.collect();
                break;
            }
            "--state" => parsed.state = Some(PathBuf::from(value("--state")?)),
            "--config" => parsed.config = Some(PathBuf::from(value("--config")?)),
            "--server" => parsed.server = Some(value("--server")?),
            "--audit" => parsed.audit = Some(PathBuf::from(value("--audit")?)),
            "--fingerprint" => parsed.fingerprint = Some(value("--fingerprint")?),
            "--reason" => parsed.reason = Some(value("--reason")?),
            "--decisions" => parsed.decisions = true,
            "status" | "approve" | "quarantine" | "release" if parsed.subcommand.is_none() => {
                parsed.subcommand = Some(text)
            }
            other => bail!("unknown argument {other:?}"),
        }
    }
    Ok(parsed)
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let args = match parse(std::env::args_os().skip(1).collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("toolseal-stdio: {e}\n{USAGE}");
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
    if args.subcommand.is_some() && args.state.is_none() {
        bail!("admin subcommands act on a state file: give --state FILE");
    }
    let config = match &args.config {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the config {}", path.display()))?,
        None => String::new(),
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
    let mut policy = PersistentPolicy::new(runtime.instantiate(HostState::new(store, sink))?, file);
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
