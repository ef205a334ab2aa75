//! `toolseal console FLEET.json`: reads its options, opens the fleet and the audit log, binds
//! the listener and serves the console (the `toolseal-console` crate) until killed.

use crate::cli::args::{Parsed, invocation_error, is_help, parser, text_value};
use crate::cli::stdout::print_lines;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolseal_console::audit_log::AuditLog;
use toolseal_console::candidates::CandidateCache;
use toolseal_console::fleet::Fleet;
use toolseal_console::guard::{self, Guard};
use toolseal_console::overview::ActionQueue;
use toolseal_console::{Console, web};

/// Usage of `toolseal console`.
pub const USAGE: &str = "\
usage: toolseal console FLEET.json [--listen ADDR:PORT] [--operator NAME] [--timeout-ms N]
                        [--allow-non-loopback]
  Serves a review console for the fleet named in FLEET.json (default 127.0.0.1:8740; port 0
  picks a free one). The first line printed is the console's URL.
  --operator NAME        who is acting, recorded in the audit log (default: the fleet file's
                         \"operator\", else $USER)
  --timeout-ms N         timeout of each call to an admin API or a server (default 5000)
  --allow-non-loopback   accept a --listen address that is not loopback (the console has no
                         login: anyone who reaches it can act)";

/// The options of `toolseal console`.
#[derive(Debug, Default)]
struct ConsoleArgs {
    fleet_files: Vec<PathBuf>,
    listen: Option<String>,
    operator: Option<String>,
    timeout_ms: Option<String>,
    allow_non_loopback: bool,
}

fn parse(args: &[OsString]) -> Result<Parsed<ConsoleArgs>, lexopt::Error> {
    let mut parsed = ConsoleArgs::default();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Long("listen") => parsed.listen = Some(text_value(&mut parser, "--listen")?),
            Arg::Long("operator") => parsed.operator = Some(text_value(&mut parser, "--operator")?),
            Arg::Long("timeout-ms") => {
                parsed.timeout_ms = Some(text_value(&mut parser, "--timeout-ms")?)
            }
            Arg::Long("allow-non-loopback") => parsed.allow_non_loopback = true,
            Arg::Value(file) => parsed.fleet_files.push(file.into()),
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// The operator: the flag, else the fleet file's, else the OS user.
fn operator(args: &ConsoleArgs, fleet: &Fleet) -> Result<String> {
    let from_env = || {
        ["USER", "LOGNAME"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
    };
    let name = args
        .operator
        .clone()
        .or_else(|| fleet.operator.clone())
        .or_else(from_env)
        .ok_or_else(|| {
            input_error("who is acting? give --operator NAME (or \"operator\" in the fleet file)")
        })?;
    let name = name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
        return Err(input_error("--operator: 1 to 128 printable characters"));
    }
    Ok(name)
}

/// The address to bind: loopback unless `--allow-non-loopback`.
fn listen_address(args: &ConsoleArgs) -> Result<SocketAddr> {
    let text = args.listen.as_deref().unwrap_or("127.0.0.1:8740");
    let address: SocketAddr = text.parse().map_err(|_| {
        input_error(format!(
            "--listen {text:?}: expected ADDR:PORT, e.g. 127.0.0.1:8740"
        ))
    })?;
    if address.ip().is_unspecified() {
        return Err(input_error(format!(
            "--listen {text}: bind one address, not all of them (the console checks the Host header against it)"
        )));
    }
    if !address.ip().is_loopback() && !args.allow_non_loopback {
        return Err(input_error(format!(
            "--listen {text}: not a loopback address; the console has no login, so anyone who reaches it can \
             approve; add --allow-non-loopback to accept that"
        )));
    }
    Ok(address)
}

/// `toolseal console FLEET.json …`: serves until killed.
pub fn run(args: &[OsString]) -> Result<i32> {
    let args = match parse(args).map_err(|e| invocation_error("console", e))? {
        Parsed::Help => {
            print_lines(&[USAGE])?;
            return Ok(0);
        }
        Parsed::Run(args) => args,
    };
    let [fleet_file] = args.fleet_files.as_slice() else {
        return Err(InputError(USAGE.into()).into());
    };
    let fleet = Fleet::load(fleet_file).map_err(input_error)?;
    let operator = operator(&args, &fleet)?;
    let timeout_ms: u64 = match args.timeout_ms.as_deref() {
        None => 5000,
        Some(n) => n
            .parse()
            .ok()
            .filter(|n| (100..=600_000).contains(n))
            .ok_or_else(|| {
                input_error("--timeout-ms: a number of milliseconds from 100 to 600000")
            })?,
    };
    let address = listen_address(&args)?;
    let audit = AuditLog::open(&fleet.audit_log).map_err(input_error)?;
    let listener = TcpListener::bind(address)
        .map_err(|e| input_error(format!("cannot listen on {address}: {e}")))?;
    let bound = listener.local_addr()?;
    let console = Arc::new(Console {
        fleet,
        operator,
        guard: Guard::new(bound, guard::random_token().map_err(anyhow::Error::msg)?),
        timeout: Duration::from_millis(timeout_ms),
        audit,
        candidates: Mutex::new(CandidateCache::default()),
        action_lock: Mutex::new(()),
        actions: Mutex::new(ActionQueue::new()),
        identity_header: Mutex::new(None),
    });
    // Where the admin listener reads the approver's name, before the first read of an admin
    // API; an unreadable configuration is shown on the page.
    let _ = console.fleet_config();
    // Best effort: a reader that went away after the URL must not stop the console.
    let _ = print_lines(&[
        format!("http://{bound}/"),
        format!(
            "toolseal console: {} instance(s), plugin configuration {} and {}, audit log {}, operator {}",
            console.fleet.instances.len(),
            console.fleet.ecds_file.display(),
            console.fleet.admin_ecds_file.display(),
            console.fleet.audit_log.display(),
            console.operator
        ),
    ]);
    let handler = Arc::clone(&console);
    web::serve(
        listener,
        Arc::new(move |request: &web::Request| handler.handle(request)),
    )
    .map_err(|e| input_error(format!("cannot serve on {bound}: {e}")))?;
    Ok(0)
}
