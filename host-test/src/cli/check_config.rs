//! `toolseal check-config FILE`: validates a plugin configuration with the very parser the
//! plugin runs in `on_configure`, so CI can refuse a config before any Envoy sees it.
//!
//! Main design decision: no second validator. The file goes through
//! `toolseal_core::config::Config::parse`, and the error printed is the one Envoy's log would
//! show (it names the bad field).

use super::args::Args;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use std::path::Path;
use toolseal_core::config::Config;

/// Prints `ok: …` and exits 0 for a valid config; prints the field-named error and exits 2
/// (unusable input) otherwise.
pub fn run(rest: &[String]) -> Result<i32> {
    let args = Args::parse(rest, &[], &[])?;
    let [file] = args.positionals.as_slice() else {
        return Err(InputError("usage: toolseal check-config FILE".into()).into());
    };
    let path = Path::new(file);
    let bytes = std::fs::read(path).map_err(|e| input_error(format!("cannot read {file}: {e}")))?;
    let config = Config::parse(&bytes).map_err(|e| input_error(format!("{file}: {e}")))?;
    println!(
        "ok: posture {}, {} configured server(s)",
        config.posture.as_str(),
        config.servers.len(),
    );
    Ok(0)
}
