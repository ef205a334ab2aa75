//! `toolseal check-config FILE`: validates a plugin configuration with the very parser the
//! plugin runs in `on_configure`, so CI can refuse a config before any Envoy sees it.
//!
//! Main design decision: no second validator. The file goes through
//! `toolseal_core::config::Config::parse`, and the error printed is the one Envoy's log would
//! show (it names the bad field).

use super::args::{Parsed, invocation_error, is_help, parser};
use super::stdout::print_lines;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use std::ffi::OsString;
use std::path::PathBuf;
use toolseal_core::config::Config;

/// Usage of `toolseal check-config`.
pub const USAGE: &str = "\
usage: toolseal check-config FILE
  Validates the plugin configuration in FILE with the plugin's own parser and prints
  `ok: posture P, N configured server(s)`, or the error Envoy would log (it names the field).
exit status: 0 valid, 2 refused or unreadable.";

fn parse(args: &[OsString]) -> Result<Parsed<Vec<PathBuf>>, lexopt::Error> {
    let mut files = Vec::new();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Value(file) => files.push(PathBuf::from(file)),
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(files))
}

/// Prints `ok: …` and exits 0 for a valid config; prints the field-named error and exits 2
/// (unusable input) otherwise.
pub fn run(args: &[OsString]) -> Result<i32> {
    let files = match parse(args).map_err(|e| invocation_error("check-config", e))? {
        Parsed::Help => {
            print_lines(&[USAGE])?;
            return Ok(0);
        }
        Parsed::Run(files) => files,
    };
    let [path] = files.as_slice() else {
        return Err(InputError("usage: toolseal check-config FILE".into()).into());
    };
    let file = path.display();
    let bytes = std::fs::read(path).map_err(|e| input_error(format!("cannot read {file}: {e}")))?;
    let config = Config::parse(&bytes).map_err(|e| input_error(format!("{file}: {e}")))?;
    println!(
        "ok: posture {}, {} configured server(s)",
        config.posture.as_str(),
        config.servers.len(),
    );
    Ok(0)
}
