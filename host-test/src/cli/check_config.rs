//! `toolseal check-config FILE`: validates a plugin configuration with the very parser the
//! plugin runs in `on_configure`, so CI can refuse a config before any Envoy sees it.
//!
//! Main design decision: no second validator. The file goes through
//! `toolseal_core::config::Config::parse`, and the error printed is the one Envoy's log would
//! show (it names the bad field). What a valid file prints is read back from the parsed
//! configuration, so it says what the plugin will do, not what the file seems to say.

use super::args::{Parsed, invocation_error, is_help, parser};
use super::stdout::print_lines;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use toolseal_core::config::Config;
use toolseal_core::policy::status::Posture;
use toolseal_core::policy::views::ViewSource;

/// Usage of `toolseal check-config`.
pub const USAGE: &str = "\
usage: toolseal check-config FILE
  Validates the plugin configuration in FILE with the plugin's own parser and prints
  `ok: posture P, N configured server(s)`, or the error Envoy would log (it names the field).
  When FILE sets `views`, `servers.ID.views` or `limits.max_views`, one `views:` line each
  follows: which request values tell the kinds of caller apart, and the bound on them
  (docs/views.md).
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
    let mut lines = vec![format!(
        "ok: posture {}, {} configured server(s)",
        config.posture.as_str(),
        config.servers.len(),
    )];
    // The file parsed strictly above, so it is JSON; it says which settings were written.
    let written: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    lines.extend(views_lines(&config, &written));
    print_lines(&lines)?;
    Ok(0)
}

/// The sources of a view, as reviews name them.
fn sources(views: &[ViewSource]) -> String {
    views
        .iter()
        .map(ViewSource::label)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the view settings of `written` mean, one line each (none when it sets none, so a
/// configuration without them prints what it always printed).
fn views_lines(config: &Config, written: &Value) -> Vec<String> {
    let top = written.get("views").is_some();
    let per_server: Vec<(&String, &[ViewSource])> = config
        .servers
        .iter()
        .filter_map(|(id, server)| Some((id, server.views.as_deref()?)))
        .collect();
    let bound = written.pointer("/limits/max_views").is_some();
    if !top && per_server.is_empty() && !bound {
        return Vec::new();
    }
    let hashed = |views: &[ViewSource]| {
        let hashed = views
            .iter()
            .any(|v| matches!(v, ViewSource::Header(_) | ViewSource::Metadata(_)));
        match hashed {
            true => "; header and metadata values are shown hashed in the admin API",
            false => "",
        }
    };
    let mut lines = Vec::new();
    let whose = if per_server.is_empty() {
        "every server"
    } else {
        "every other server"
    };
    let origin = if top {
        "top-level views"
    } else {
        "the default"
    };
    lines.push(format!(
        "views: {whose} tells its kinds of caller apart by {} ({origin}){}",
        sources(&config.views),
        hashed(&config.views)
    ));
    for (id, views) in per_server {
        lines.push(format!(
            "views: server {id} by {} (servers.{id}.views){}",
            sources(views),
            hashed(views)
        ));
    }
    lines.push(format!(
        "views: at most {} recorded per server (limits.max_views{}); a list of a new view past \
         them is checked against the approved catalogue alone: its known tools served, the \
         others withheld, nothing closed (audited view.limit)",
        config.limits.max_views,
        if bound { "" } else { ", the default" }
    ));
    lines.extend(new_view_lines(config));
    lines
}

/// What a new view's first list does, under each posture in use.
fn new_view_lines(config: &Config) -> Vec<String> {
    let mut lines = Vec::new();
    let mut postures = vec![config.posture];
    postures.extend(config.servers.keys().map(|id| config.posture_of(id)));
    for posture in [Posture::Discovery, Posture::Strict] {
        if !postures.contains(&posture) {
            continue;
        }
        let rule = match posture {
            Posture::Discovery => {
                "a new view's first list is trusted on first use: its new tools join the \
                 catalogue, screened as a first contact (view.baselined)"
            }
            Posture::Strict => {
                "a new view verifies only when the approved catalogue has every tool it \
                 lists, otherwise it is drift; pin every view's list with `toolseal pin A.json \
                 B.json …`"
            }
        };
        lines.push(format!("views: posture {}: {rule}", posture.as_str()));
    }
    lines
}
