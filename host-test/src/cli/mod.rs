//! The `toolseal` command: `replay`, `fingerprint`, `diff`, `pin`, `report`, `check-config`,
//! `console`, `bench`.
//!
//! Main design decision: every subcommand parses its own arguments (lexopt), answers
//! `--help` with the usage text kept beside it, returns an exit code and writes its own
//! output; errors travel as `anyhow` chains and are classified once, here: unusable input
//! and a refused plugin configuration exit 2 (3 for `diff`, whose 2 is a drift class), a
//! plugin fault or a broken expectation exit 1.

pub mod args;
pub mod catalogue;
pub mod check_config;
pub mod console_cmd;
pub mod replay_cmd;
pub mod replay_workers;
pub mod report_html;
pub mod stdout;
pub mod tool_source;
pub mod tools_cmd;

use crate::input_error::InputError;
use crate::wasm::plugin_vm::ConfigRefused;
use std::ffi::OsString;

/// Every subcommand: its name and one line about it (its own `--help` says the rest).
const COMMANDS: [(&str, &str); 9] = [
    (
        "replay",
        "recorded MCP traffic through the built .wasm; one JSON line per message",
    ),
    (
        "fingerprint",
        "the server fingerprint of a tool set, then `name digest` per tool",
    ),
    (
        "diff",
        "classified drift between two tool sets; exit 0 same, 1 additive, 2 breaking",
    ),
    (
        "pin",
        "a full lock of a server's tool lists (their catalogue), ready to merge into a config",
    ),
    (
        "report",
        "the classified drift as a self-contained HTML page",
    ),
    (
        "check-config",
        "validate a plugin configuration with the plugin's own parser",
    ),
    (
        "console",
        "a local web app to review drift across a fleet and approve",
    ),
    ("bench", "per-message cost, native vs .wasm"),
    (
        "help",
        "this text, or `toolseal help COMMAND` for one command's usage",
    ),
];

/// The top-level usage: every subcommand, one line each.
pub fn usage() -> String {
    let mut text = String::from("usage: toolseal COMMAND [OPTIONS] [ARGS...]\n");
    for (name, about) in COMMANDS {
        text.push_str(&format!("  {name:<13} {about}\n"));
    }
    text.push_str(
        "`toolseal COMMAND --help` prints that command's usage.\n\
         Tool sets (FILE, OLD, NEW) are a tools/list result ({\"tools\": [...]}), a bare array of\n\
         tools, or a recorded transcript (docs/transcripts.md).\n\
         exit status: 0 ok, 1 a finding (drift, a broken expectation, a plugin fault), 2 unusable\n\
         input; `diff` uses 0/1/2 for its drift classes and 3 for unusable input.",
    );
    text
}

/// The usage of subcommand `name`.
fn command_usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "replay" => replay_cmd::USAGE,
        "fingerprint" => tools_cmd::FINGERPRINT_USAGE,
        "diff" => tools_cmd::DIFF_USAGE,
        "pin" => tools_cmd::PIN_USAGE,
        "report" => report_html::USAGE,
        "check-config" => check_config::USAGE,
        "console" => console_cmd::USAGE,
        "bench" => crate::bench::USAGE,
        _ => return None,
    })
}

/// `toolseal help [COMMAND]`.
fn help(rest: &[OsString]) -> anyhow::Result<i32> {
    let text = match rest {
        [] => usage(),
        [name] => name
            .to_str()
            .and_then(command_usage)
            .map(str::to_owned)
            .ok_or_else(|| InputError(format!("unknown command {name:?}\n{}", usage())))?,
        _ => return Err(InputError(usage()).into()),
    };
    stdout::print_lines(&[text])?;
    Ok(0)
}

/// Runs the command line `args` (without the program name) and returns the exit status.
pub fn run(args: &[OsString]) -> i32 {
    let Some((given, rest)) = args.split_first() else {
        eprintln!("{}", usage());
        return 2;
    };
    let command = given.to_string_lossy();
    let result = match command.as_ref() {
        "replay" => replay_cmd::run(rest),
        "fingerprint" => tools_cmd::fingerprint(rest),
        "diff" => tools_cmd::diff(rest),
        "pin" => tools_cmd::pin(rest),
        "report" => report_html::run(rest),
        "check-config" => check_config::run(rest),
        "console" => console_cmd::run(rest),
        "bench" => crate::bench::run(rest),
        "help" | "--help" | "-h" => help(rest),
        _ => Err(InputError(format!("unknown command {given:?}\n{}", usage())).into()),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolseal: {err:#}");
            match command.as_ref() {
                // diff's 1 and 2 are drift classes: a failure must not look like one.
                "diff" => 3,
                _ => exit_code_for(&err),
            }
        }
    }
}

/// 2 for unusable input or a refused plugin configuration, 1 for everything else.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    let unusable =
        |e: &(dyn std::error::Error + 'static)| e.is::<InputError>() || e.is::<ConfigRefused>();
    if err.chain().any(unusable) { 2 } else { 1 }
}
