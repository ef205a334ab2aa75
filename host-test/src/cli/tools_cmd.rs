//! `toolseal fingerprint`, `diff` and `pin`: native, through toolseal-core, so their
//! answers are by construction the ones the plugin computes.

use super::args::Args;
use super::stdout::{print, print_lines};
use super::tool_source::load_tools;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use serde_json::{Map, Value, json};
use std::path::Path;
use toolseal_core::drift::diff_tools;
use toolseal_core::fingerprint::{FingerprintFields, ToolDigests, digest_tools};

/// Digests `tools` with the default fingerprint fields.
fn digests(tools: &[Value], source: &str) -> Result<ToolDigests> {
    digest_tools(&Value::Array(tools.to_vec()), &FingerprintFields::default())
        .map_err(|e| input_error(format!("{source}: not a valid tool set: {e}")))
}

fn one_file(rest: &[String], with_value: &[&str], what: &str) -> Result<(Args, String)> {
    let args = Args::parse(rest, with_value, &[])?;
    match args.positionals.as_slice() {
        [file] => {
            let file = file.clone();
            Ok((args, file))
        }
        _ => Err(InputError(format!("usage: {what}")).into()),
    }
}

/// `toolseal fingerprint FILE`: the fingerprint, then `name digest` lines in name order.
pub fn fingerprint(rest: &[String]) -> Result<i32> {
    let (_, file) = one_file(rest, &[], "toolseal fingerprint FILE")?;
    let tools = load_tools(Path::new(&file))?;
    let set = digests(&tools, &file)?;
    let mut lines = vec![set.fingerprint()];
    lines.extend(
        set.entries
            .iter()
            .map(|(name, digest)| format!("{name} {digest}")),
    );
    print_lines(&lines)?;
    Ok(0)
}

/// `toolseal diff OLD NEW`: the classified diff; exit 0 same, 1 additive, 2 otherwise.
pub fn diff(rest: &[String]) -> Result<i32> {
    let args = Args::parse(rest, &[], &["json"])?;
    let [old, new] = args.positionals.as_slice() else {
        return Err(InputError("usage: toolseal diff [--json] OLD NEW".into()).into());
    };
    let old_tools = load_tools(Path::new(old))?;
    let new_tools = load_tools(Path::new(new))?;
    let drift = diff_tools(&old_tools, &new_tools);
    if args.has("json") {
        print_lines(&[drift.to_json().to_string()])?;
    } else {
        print(&drift.render_text())?;
    }
    Ok(drift.exit_code())
}

/// A server's config entry pinning `tools` (whose digests are `set`) as a full lock:
/// `{"lock": {"fingerprint", "tools"}}`. `toolseal pin` prints it; `toolseal console` writes
/// it into the fleet's plugin configuration when an operator approves.
pub fn lock_entry(set: &ToolDigests, tools: Vec<Value>) -> Value {
    json!({"lock": {"fingerprint": set.fingerprint(), "tools": tools}})
}

/// `toolseal pin FILE [--server ID]`: `{"ID": {"lock": {"fingerprint", "tools"}}}`.
pub fn pin(rest: &[String]) -> Result<i32> {
    let (args, file) = one_file(rest, &["server"], "toolseal pin FILE [--server ID]")?;
    let path = Path::new(&file);
    let tools = load_tools(path)?;
    let set = digests(&tools, &file)?;
    let server = args
        .value("server")
        .map_or_else(|| crate::replay::transcript_name(path), str::to_owned);
    let mut entry = Map::new();
    entry.insert(server, lock_entry(&set, tools));
    let text = serde_json::to_string_pretty(&Value::Object(entry)).map_err(anyhow::Error::from)?;
    print_lines(&[text])?;
    Ok(0)
}
