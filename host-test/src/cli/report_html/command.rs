//! The `toolseal report` command: its arguments, the inputs it reads (two tool sets, the
//! plugin configuration, the views of the server) and the page it prints.
//!
//! Main design decision: the views shown come from the admin API's own answer, saved
//! (`--admin-view`) or made by the core replaying the recordings under the configuration;
//! this command reads them, it never tells a view itself.

use super::replayed;
use super::{ReportConfig, ServerViews, render_review};
use crate::cli::args::{Parsed, invocation_error, is_help, parser, text_value};
use crate::cli::stdout::{print, print_lines};
use crate::cli::tool_source::{load_tools, transcript_exchanges};
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toolseal_core::policy::drift::diff_tools;
use toolseal_core::wire::json::parse_strict;

/// The synopsis of `toolseal report`.
const SYNOPSIS: &str = "usage: toolseal report [--surface [--seal-resources]] [--config CONFIG.json [--server ID]] [--admin-view SERVER.json] OLD NEW > report.html";

/// Usage of `toolseal report`.
pub const USAGE: &str = "\
usage: toolseal report [--surface [--seal-resources]] [--config CONFIG.json [--server ID]] [--admin-view SERVER.json] OLD NEW > report.html
  Writes the classified drift between two tool sets as one self-contained HTML page for
  reviewers (no script, no external resource): every change with its class, and both
  definitions of every changed tool; a removed and an added tool with the same inputSchema
  side by side as a likely rename (still a removal and an addition).
  OLD, NEW            a tools/list result, a bare array of tools, or a recorded transcript
  --config FILE       the plugin configuration: the page also says what the gateway serves
                      of the server until NEW is approved (its drift_scope: which tools are
                      served, which withheld and why) and who is shown each tool (policy).
                      When OLD and NEW are recorded transcripts, they are replayed in order
                      through the plugin's core under it, and the page shows the server's
                      views as the gateway records them: the kinds of caller it tells apart,
                      the tools each is listed, and which one showed the drift (docs/views.md)
  --server ID         the server's id in that configuration (default: its only server)
  --admin-view FILE   a saved answer of the admin API's GET {prefix}servers/{id}: the page
                      shows that server's views as that gateway recorded them (instead of
                      replaying the transcripts)
  --surface           OLD and NEW are whole surfaces (JSON objects with tools, instructions,
                      prompts, resourceTemplates, resources, as `toolseal fingerprint
                      --surface` reads them): the page also shows every other section's
                      changes, item by item, classified as `toolseal diff --surface` does
  --seal-resources    with --surface: compare `resources` too (default: not sealed)
exit status: 0 same, 1 additive changes only, 2 anything else or unusable input.";

/// What `toolseal report` was asked.
#[derive(Debug, Default)]
struct ReportArgs {
    files: Vec<PathBuf>,
    config: Option<PathBuf>,
    server: Option<String>,
    admin_view: Option<PathBuf>,
    surface: bool,
    seal_resources: bool,
}

fn parse(args: &[OsString]) -> Result<Parsed<ReportArgs>, lexopt::Error> {
    let mut parsed = ReportArgs::default();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Long("config") => parsed.config = Some(parser.value()?.into()),
            Arg::Long("server") => parsed.server = Some(text_value(&mut parser, "--server")?),
            Arg::Long("admin-view") => parsed.admin_view = Some(parser.value()?.into()),
            Arg::Long("surface") => parsed.surface = true,
            Arg::Long("seal-resources") => parsed.seal_resources = true,
            Arg::Value(file) => parsed.files.push(PathBuf::from(file)),
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// `toolseal report [--config CONFIG.json [--server ID]] OLD NEW`: prints the page; exit 0
/// same, 1 additive, 2 otherwise.
pub fn run(args: &[OsString]) -> Result<i32> {
    let parsed = match parse(args).map_err(|e| invocation_error("report", e))? {
        Parsed::Help => {
            print_lines(&[USAGE])?;
            return Ok(0);
        }
        Parsed::Run(parsed) => parsed,
    };
    let [old, new] = parsed.files.as_slice() else {
        return Err(InputError(SYNOPSIS.into()).into());
    };
    let context = match &parsed.config {
        Some(path) => {
            let shown = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|e| {
                crate::input_error::input_error(format!("cannot read {shown}: {e}"))
            })?;
            Some(
                ReportConfig::parse(&bytes, &shown, parsed.server.as_deref())
                    .map_err(input_error)?,
            )
        }
        None if parsed.server.is_some() => {
            return Err(InputError("--server needs --config CONFIG.json".into()).into());
        }
        None => None,
    };
    let names = (
        old.to_string_lossy().into_owned(),
        new.to_string_lossy().into_owned(),
    );
    if parsed.seal_resources && !parsed.surface {
        return Err(InputError("--seal-resources goes with --surface".into()).into());
    }
    if parsed.surface {
        return surface_report(&parsed, (old, new), context.as_ref(), &names);
    }
    let old_tools = load_tools(old)?;
    let new_tools = load_tools(new)?;
    let answer = views_answer(&parsed, context.as_ref(), (old, new))?;
    let views = page_views(&answer);
    print(&render_review(
        (&names.0, &names.1),
        &old_tools,
        &new_tools,
        context.as_ref(),
        &views,
    ))?;
    Ok(diff_tools(&old_tools, &new_tools).exit_code())
}

/// `toolseal report --surface OLD NEW`: the page of two whole surfaces; the views only from
/// `--admin-view` (a surface file is no recording to replay).
fn surface_report(
    parsed: &ReportArgs,
    (old, new): (&Path, &Path),
    context: Option<&ReportConfig>,
    names: &(String, String),
) -> Result<i32> {
    let fields = toolseal_core::policy::fingerprint::FingerprintFields::default();
    let load =
        |file: &Path| crate::cli::tools_cmd::load_surface(file, &fields, parsed.seal_resources);
    let ((_, old_surface), (_, new_surface)) = (load(old)?, load(new)?);
    let answer = match parsed.admin_view {
        Some(_) => views_answer(parsed, context, (old, new))?,
        None => ViewsAnswer::NotAsked,
    };
    let views = page_views(&answer);
    print(&super::render_surface_review(
        (&names.0, &names.1),
        (&old_surface, &new_surface),
        parsed.seal_resources,
        context,
        &views,
    ))?;
    let diff = toolseal_core::policy::drift::diff_surface(
        &old_surface,
        &new_surface,
        parsed.seal_resources,
    );
    Ok(diff.exit_code())
}

/// The views sections the page shows for `answer`.
fn page_views(answer: &ViewsAnswer) -> Vec<ServerViews<'_>> {
    match answer {
        ViewsAnswer::Answer(Some(view), source, note) => vec![ServerViews {
            admin_view: Some(view),
            source: source.clone(),
            note: note.map(str::to_owned),
        }],
        ViewsAnswer::Answer(None, source, _) => vec![ServerViews {
            admin_view: None,
            source: format!("{source}: the gateway recorded nothing of this server"),
            note: None,
        }],
        ViewsAnswer::Untold(why) => vec![replayed::untold(why)],
        ViewsAnswer::NotAsked => Vec::new(),
    }
}

/// Where the page's views come from.
enum ViewsAnswer {
    /// An admin API answer (`None`: the gateway recorded nothing of the server), its source,
    /// and what the replay says that the drift sections cannot.
    Answer(Option<Value>, String, Option<&'static str>),
    /// They cannot be told: why.
    Untold(String),
    /// Neither `--admin-view` nor `--config` was given.
    NotAsked,
}

/// The views for the page: the saved admin answer of `--admin-view`, else, with `--config`,
/// those the core records replaying OLD then NEW (when both are transcripts).
fn views_answer(
    parsed: &ReportArgs,
    context: Option<&ReportConfig>,
    (old, new): (&Path, &Path),
) -> Result<ViewsAnswer> {
    if let Some(path) = &parsed.admin_view {
        let shown = path.display();
        let bytes = std::fs::read(path)
            .map_err(|e| input_error(format!("cannot read --admin-view {shown}: {e}")))?;
        let view = parse_strict(&bytes, 128)
            .map_err(|e| input_error(format!("--admin-view {shown} is not usable JSON: {e}")))?;
        if !view.is_object() || view.get("views").is_none() {
            return Err(input_error(format!(
                "--admin-view {shown}: expected the admin API's answer to GET {{prefix}}servers/{{id}} \
                 (an object with `views`), as saved with curl -H 'Authorization: Bearer …' \
                 ADMIN_URL/servers/ID"
            )));
        }
        return Ok(ViewsAnswer::Answer(
            Some(view),
            format!("the admin API answer saved in {shown}"),
            None,
        ));
    }
    let (Some(context), Some(config_file)) = (context, &parsed.config) else {
        return Ok(ViewsAnswer::NotAsked);
    };
    let exchanges = (transcript_exchanges(old)?, transcript_exchanges(new)?);
    let (Some(old_exchanges), Some(new_exchanges)) = exchanges else {
        return Ok(ViewsAnswer::Untold(
            "OLD or NEW is a bare tool list, not a recorded transcript".into(),
        ));
    };
    let recordings = [old_exchanges.as_slice(), new_exchanges.as_slice()];
    let view = replayed::admin_view_after(&context.config, &context.server, &recordings);
    let source = replayed::source(
        &config_file.display().to_string(),
        &context.server,
        &old.display().to_string(),
        &new.display().to_string(),
    );
    let differ = !diff_tools(&load_tools(old)?, &load_tools(new)?).is_empty();
    let note = view.as_ref().and_then(|v| replayed::outcome(v, differ));
    Ok(ViewsAnswer::Answer(view, source, note))
}
