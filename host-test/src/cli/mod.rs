//! The `toolseal` command: `replay`, `fingerprint`, `diff`, `pin`, `report`, `check-config`,
//! `console`, `bench`.
//!
//! Main design decision: every subcommand returns an exit code and writes its own output;
//! errors travel as `anyhow` chains and are classified once, here: unusable input and a
//! refused plugin configuration exit 2, a plugin fault or a broken expectation exit 1.

pub mod args;
pub mod check_config;
pub mod replay_cmd;
pub mod report_html;
pub mod stdout;
pub mod tool_source;
pub mod tools_cmd;

use crate::input_error::InputError;
use crate::wasm::plugin_vm::ConfigRefused;

/// Usage text.
pub const USAGE: &str = "\
usage:
  toolseal replay [--config CONFIG.json] [--server ID] [--wasm PATH] [--expect FILE]
                  [--chunk N] [--audit] [--http] [--log-level LEVEL] [--metadata FILE]
                  [--no-cache] [--fail-hostcall NAME[:N]]... [--hostcalls]
                  TRANSCRIPT...
      Replays recorded MCP traffic through the built proxy-wasm plugin on wasmtime,
      keeping plugin state across transcripts; prints one JSON line per MCP message.
      --expect FILE compares the lines with FILE (BLESS=1 rewrites it).
      --fail-hostcall NAME[:N] makes the Nth call (default: every call) of hostcall NAME
      fail with an error status; --hostcalls prints how often each hostcall was made.
  toolseal fingerprint FILE      server fingerprint, then `name digest` per tool
  toolseal diff OLD NEW          classified drift; exit 0 same, 1 additive, 2 breaking
  toolseal pin FILE [--server ID]  a `servers` config entry with a full lock
  toolseal report [--config CONFIG.json [--server ID]] OLD NEW
                                 the classified drift as a self-contained HTML page; with the
                                 plugin configuration, also what the gateway serves until the
                                 candidate is approved (drift_scope) and who is shown each tool
  toolseal check-config FILE     validate a plugin configuration (the plugin's own parser)
  toolseal console FLEET.json    a local web app to review drift across a fleet of Envoys and
                                 approve / quarantine / release through the plugin configuration
                                 (see `toolseal console --help`)
  toolseal bench [--help]        per-message cost, native vs .wasm (see `toolseal bench --help`)
FILE: a tools/list result ({\"tools\": [...]}), a bare array of tools, or a transcript.
exit status: 0 ok, 1 replay/expectation/diff finding, 2 unusable input.";

/// Runs the command line `args` (without the program name) and returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let result = match command.as_str() {
        "replay" => replay_cmd::run(rest),
        "fingerprint" => tools_cmd::fingerprint(rest),
        "diff" => tools_cmd::diff(rest),
        "pin" => tools_cmd::pin(rest),
        "report" => report_html::run(rest),
        "check-config" => check_config::run(rest),
        "console" => crate::console::run(rest),
        "bench" => crate::bench::run(rest),
        "help" | "--help" | "-h" => stdout::print_lines(&[USAGE]).map(|()| 0),
        other => Err(InputError(format!("unknown command `{other}`\n{USAGE}")).into()),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolseal: {err:#}");
            exit_code_for(&err)
        }
    }
}

/// 2 for unusable input or a refused plugin configuration, 1 for everything else.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    let unusable =
        |e: &(dyn std::error::Error + 'static)| e.is::<InputError>() || e.is::<ConfigRefused>();
    if err.chain().any(unusable) { 2 } else { 1 }
}
