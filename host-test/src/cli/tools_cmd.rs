//! `toolseal fingerprint`, `diff` and `pin`: native, through toolseal-core, so their
//! answers are by construction the ones the plugin computes. With `--config CONFIG.json`
//! they use that configuration's `fingerprint.fields` (read by the plugin's own parser), so
//! a fleet that fingerprints more than the default fields gets the fingerprints, pins and
//! drift its plugin sees.

use super::args::{Parsed, invocation_error, is_help, parser, text_value};
use super::catalogue;
use super::stdout::{print, print_lines};
use super::tool_source::load_tools;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use toolseal_core::config::Config;
use toolseal_core::policy::drift::{Change, ChangeKind, DriftDiff, diff_surface, diff_tools};
use toolseal_core::policy::fingerprint::{
    FingerprintField, FingerprintFields, ToolDigests, digest_tools, tool_digest,
};
use toolseal_core::policy::section::{Section, Surface};

/// Usage of `toolseal fingerprint`.
pub const FINGERPRINT_USAGE: &str = "\
usage: toolseal fingerprint [--config CONFIG.json] [--surface [--seal-resources]] FILE
  Prints the server fingerprint of the tool set in FILE, then one `name digest` line per
  tool, in name order.
  FILE           a tools/list result ({\"tools\": [...]}), a bare array of tools, or a
                 recorded transcript (its last complete listing)
  --config FILE  fingerprint the fields that configuration's `fingerprint.fields` names
                 (default: name, description, inputSchema)
  --surface      FILE is a whole surface, one JSON object with any of `tools`,
                 `instructions`, `prompts`, `resourceTemplates`, `resources` (as the results
                 that list them name them): prints the surface fingerprint, then one
                 `section fingerprint` line per section with items, then one
                 `section key digest` line per item
  --seal-resources  with --surface: seal `resources` too (default: left out, as they are
                 screened, not sealed)
exit status: 0 printed, 2 unusable input.";

/// Usage of `toolseal diff`.
pub const DIFF_USAGE: &str = "\
usage: toolseal diff [--json] [--config CONFIG.json] [--surface [--seal-resources]] OLD NEW
  Compares two tool sets tool by tool and field by field and prints one line per change:
  `tool  path  kind  class` (class: additive, breaking, semantic or authority). Then, after
  a blank line, the likely renames: a removed and an added tool with the same inputSchema,
  as `old -> new` and what else changed (still a removal and an addition: the classes and
  the exit status stay); several on one schema are listed as possible renames, unpaired.
  OLD, NEW       a tools/list result, a bare array of tools, or a recorded transcript
  --json         one JSON object: {\"summary\": ..., \"changes\": [...], \"renames\":
                 {\"likely\": [{\"from\", \"to\", \"changes\"}], \"possible\": [...]}}
  --config FILE  only the changes that configuration's fingerprint covers (its
                 `fingerprint.fields`, and tools added or removed): the drift its plugin
                 would see. Without it every field is compared.
  --surface      OLD and NEW are whole surfaces (objects with any of `tools`,
                 `instructions`, `prompts`, `resourceTemplates`, `resources`): every
                 section is compared, item by item, one line per change
                 `section  item  path  kind  class`; --json prints {\"summary\": ...,
                 \"sections\": {section: {\"summary\", \"changes\"}}}
  --seal-resources  with --surface: compare `resources` too (default: not sealed)
exit status: 0 same, 1 additive changes only, 2 a breaking, semantic or authority change,
3 unusable input.";

/// Usage of `toolseal pin`.
pub const PIN_USAGE: &str = "\
usage: toolseal pin [--server ID] [--config CONFIG.json] FILE [FILE...]
       toolseal pin --surface [--seal-resources] [--server ID] [--config CONFIG.json] SURFACE.json [SURFACE.json...]
  Prints {\"servers\": {\"ID\": {\"lock\": {\"fingerprint\": ..., \"tools\": [...]}}}}: a full lock
  of the tool set in FILE, ready to merge into a plugin configuration (a lock replaces the
  server's previous `pin` or `lock`; a server holds at most one).
  Several FILEs are lists of one server as different kinds of caller see it (its views:
  docs/views.md): the lock is their catalogue, every tool of every list once. A tool two
  lists define two ways (different digests) is refused, naming the tool and both files.
  FILE           a tools/list result, a bare array of tools, or a recorded transcript
  --server ID    the server id (default: FILE's name without extension; needed with
                 several FILEs)
  --config FILE  fingerprint with that configuration's `fingerprint.fields`; give it when
                 the lock goes into a configuration that names extra fields, or the plugin
                 refuses the lock (its fingerprint would not match)
  --surface      lock a whole surface: SURFACE.json is a JSON object as `toolseal
                 fingerprint --surface` reads it (tools, instructions, prompts,
                 resourceTemplates); prints the server's `seal` (the sections it has: the
                 tools' other fields when a tool has one, and each of instructions, prompts,
                 resourceTemplates it names, even empty) and a `lock` of that catalogue, named
                 by its surface fingerprint (docs/surface.md, \"Pinning a whole surface\").
                 Several SURFACE.json are one server as several kinds of caller see it: the
                 lock holds them all (each instructions text, every item once; an item two
                 files define two ways is refused)
  --seal-resources  with --surface: lock the `resources` too, and print `\"resources\":
                 \"seal\"` (default: resources are left out, screened rather than sealed)
exit status: 0 printed, 2 unusable input or a tool defined two ways.";

/// Options shared by the three commands.
#[derive(Debug, Default)]
struct ToolsArgs {
    files: Vec<PathBuf>,
    config: Option<PathBuf>,
    server: Option<String>,
    json: bool,
    surface: bool,
    seal_resources: bool,
}

/// Parses `args` for `command`; `--server` and `--json` only where `command` takes them.
fn parse(command: &str, args: &[OsString]) -> Result<Parsed<ToolsArgs>, lexopt::Error> {
    let mut parsed = ToolsArgs::default();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Long("config") => parsed.config = Some(parser.value()?.into()),
            Arg::Long("server") if command == "pin" => {
                parsed.server = Some(text_value(&mut parser, "--server")?)
            }
            Arg::Long("json") if command == "diff" => parsed.json = true,
            Arg::Long("surface") => parsed.surface = true,
            Arg::Long("seal-resources") => parsed.seal_resources = true,
            Arg::Value(file) => parsed.files.push(file.into()),
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// Parses, or prints `usage` for `--help`; `Ok(None)` when help was printed. `files`: how
/// many files the command takes.
fn parse_or_help(
    command: &str,
    usage: &str,
    files: RangeInclusive<usize>,
    args: &[OsString],
) -> Result<Option<ToolsArgs>> {
    match parse(command, args).map_err(|e| invocation_error(command, e))? {
        Parsed::Help => {
            print_lines(&[usage])?;
            Ok(None)
        }
        Parsed::Run(parsed) if files.contains(&parsed.files.len()) => Ok(Some(parsed)),
        Parsed::Run(_) => Err(InputError(usage.to_owned()).into()),
    }
}

/// The fingerprint fields of `--config` (checked by the plugin's own parser, so a config
/// the plugin refuses is refused here too), or the default fields.
fn fingerprint_fields(config: Option<&Path>) -> Result<FingerprintFields> {
    let Some(path) = config else {
        return Ok(FingerprintFields::default());
    };
    let bytes = std::fs::read(path)
        .map_err(|e| input_error(format!("cannot read config {}: {e}", path.display())))?;
    let config =
        Config::parse(&bytes).map_err(|e| input_error(format!("{}: {e}", path.display())))?;
    Ok(config.fingerprint)
}

/// Digests `tools` with `fields`.
fn digests(tools: &[Value], fields: &FingerprintFields, source: &Path) -> Result<ToolDigests> {
    digest_tools(&Value::Array(tools.to_vec()), fields)
        .map_err(|e| input_error(format!("{}: not a valid tool set: {e}", source.display())))
}

/// `toolseal fingerprint FILE`: the fingerprint, then `name digest` lines in name order.
pub fn fingerprint(args: &[OsString]) -> Result<i32> {
    let Some(parsed) = parse_or_help("fingerprint", FINGERPRINT_USAGE, 1..=1, args)? else {
        return Ok(0);
    };
    let fields = fingerprint_fields(parsed.config.as_deref())?;
    let [file] = parsed.files.as_slice() else {
        return Err(InputError(FINGERPRINT_USAGE.to_owned()).into());
    };
    if parsed.seal_resources && !parsed.surface {
        return Err(InputError("--seal-resources goes with --surface".to_owned()).into());
    }
    if parsed.surface {
        return surface_fingerprint(file, &fields, parsed.seal_resources);
    }
    let set = digests(&load_tools(file)?, &fields, file)?;
    let mut lines = vec![set.fingerprint()];
    lines.extend(
        set.entries
            .iter()
            .map(|(name, digest)| format!("{name} {digest}")),
    );
    print_lines(&lines)?;
    Ok(0)
}

/// A surface file: a JSON object whose sections are valid (the surface it seals with
/// `fields`, and the document).
pub(crate) fn load_surface(
    file: &Path,
    fields: &FingerprintFields,
    seal_resources: bool,
) -> Result<(Surface, Value)> {
    let bytes = std::fs::read(file)
        .map_err(|e| input_error(format!("cannot read {}: {e}", file.display())))?;
    let document = toolseal_core::wire::json::parse_strict(&bytes, 127)
        .map_err(|e| input_error(format!("{}: not JSON: {e}", file.display())))?;
    if !document.is_object() {
        return Err(input_error(format!(
            "{}: a surface is a JSON object (members tools, instructions, prompts, resourceTemplates, resources)",
            file.display()
        )));
    }
    let surface = Surface::of_document(&document, fields, seal_resources)
        .map_err(|e| input_error(format!("{}: {e}", file.display())))?;
    Ok((surface, document))
}

/// The surfaces in `files` (one server as several kinds of caller see it) as one: every
/// tool, prompt and template once, each of them defined one way (its digest, and for a tool
/// its other fields, the same in every file that shows it: otherwise that is the drift the
/// gateway would report, refused naming both files), and every distinct instructions text
/// (an array when there are several). A member any file has is in the union.
fn surface_union(
    files: &[PathBuf],
    fields: &FingerprintFields,
    seal_resources: bool,
) -> Result<Value> {
    let mut union = Map::new();
    let mut seen: Vec<(Section, String, String, &Path)> = Vec::new();
    let mut texts: Vec<Value> = Vec::new();
    let mut keyed = vec![Section::Tools, Section::Prompts, Section::ResourceTemplates];
    if seal_resources {
        keyed.push(Section::Resources);
    }
    for file in files {
        let (surface, document) = load_surface(file, fields, seal_resources)?;
        match document.get("instructions") {
            Some(Value::Array(more)) => texts.extend(more.iter().cloned()),
            Some(Value::Null) | None => {}
            Some(text) => texts.push(text.clone()),
        }
        for &section in &keyed {
            let member = section.items_member();
            let Some(items) = document.get(member).and_then(Value::as_array) else {
                continue;
            };
            let kept = union
                .entry(member)
                .or_insert_with(|| Value::Array(Vec::new()));
            for item in items {
                let key_member = section.key_member().unwrap_or("name");
                let key = item
                    .get(key_member)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut digest = surface
                    .section(section)
                    .get(key)
                    .unwrap_or_default()
                    .to_owned();
                if section == Section::Tools {
                    digest.push_str(surface.section(Section::ToolFields).get(key).unwrap_or("-"));
                }
                match seen.iter().find(|(s, k, _, _)| *s == section && k == key) {
                    Some((_, _, first, _)) if *first == digest => {}
                    Some((_, _, _, first_file)) => {
                        return Err(input_error(format!(
                            "the {} {key:?} is defined one way in {} and another in {}: that is drift, not another view",
                            section.item_word(),
                            first_file.display(),
                            file.display()
                        )));
                    }
                    None => {
                        seen.push((section, key.to_owned(), digest, file.as_path()));
                        if let Value::Array(kept) = kept {
                            kept.push(item.clone());
                        }
                    }
                }
            }
        }
    }
    let mut distinct: Vec<Value> = Vec::new();
    for text in texts {
        if !distinct.contains(&text) {
            distinct.push(text);
        }
    }
    let instructions = match distinct.len() {
        0 => None,
        1 => distinct.pop(),
        _ => Some(Value::Array(distinct)),
    };
    if let Some(instructions) = instructions {
        union.insert("instructions".into(), instructions);
    }
    Ok(Value::Object(union))
}

/// The `seal` and the `lock` of the whole surface in `files` (their union: [`surface_union`]):
/// the sections it has (the tools' other fields when a tool has one; each of instructions,
/// prompts and resource templates it names), and the catalogue of them, named by its surface
/// fingerprint as the plugin names it.
fn surface_lock(
    files: &[PathBuf],
    fields: &FingerprintFields,
    seal_resources: bool,
) -> Result<(Vec<Value>, Value)> {
    let document = surface_union(files, fields, seal_resources)?;
    let surface = Surface::of_document(&document, fields, seal_resources)
        .map_err(|e| input_error(format!("the union of the surfaces: {e}")))?;
    let mut sealed = Vec::new();
    let mut lock = Map::new();
    let tools = document
        .get("tools")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    lock.insert("tools".into(), tools);
    for section in Section::ALL {
        let member = section.items_member();
        let has = match section {
            Section::Tools => false,
            Section::Resources if !seal_resources => false,
            Section::ToolFields => !surface.section(section).is_empty(),
            _ => document.get(member).is_some_and(|v| !v.is_null()),
        };
        if !has {
            continue;
        }
        sealed.push(Value::from(section.name()));
        if let Some(items) = document
            .get(member)
            .filter(|_| section != Section::ToolFields)
        {
            lock.insert(member.into(), items.clone());
        }
    }
    lock.insert("sealed".into(), Value::Array(sealed.clone()));
    let named = Value::Object(lock);
    let fingerprint = toolseal_core::policy::approved::document_fingerprint(&named, fields)
        .ok_or_else(|| input_error("the surfaces make no catalogue to lock".to_owned()))?;
    let Value::Object(lock) = named else {
        return Err(input_error("a lock is a JSON object".to_owned()));
    };
    let mut ordered = Map::new();
    ordered.insert("fingerprint".into(), Value::from(fingerprint));
    ordered.extend(lock);
    Ok((sealed, Value::Object(ordered)))
}

/// `toolseal diff --surface OLD NEW`: every section compared, item by item.
fn surface_diff(old: &Path, new: &Path, parsed: &ToolsArgs) -> Result<i32> {
    if parsed.config.is_some() {
        let why = "--config does not go with --surface: every field of every section is compared";
        return Err(InputError(why.to_owned()).into());
    }
    let fields = FingerprintFields::default();
    let (_, old) = load_surface(old, &fields, parsed.seal_resources)?;
    let (_, new) = load_surface(new, &fields, parsed.seal_resources)?;
    let drift = diff_surface(&old, &new, parsed.seal_resources);
    match parsed.json {
        true => print_lines(&[drift.to_json().to_string()])?,
        false => print(&drift.render_text())?,
    }
    Ok(drift.exit_code())
}

/// `toolseal fingerprint --surface FILE`: the surface fingerprint, each section's, and each
/// item's digest.
fn surface_fingerprint(
    file: &Path,
    fields: &FingerprintFields,
    seal_resources: bool,
) -> Result<i32> {
    let (surface, _) = load_surface(file, fields, seal_resources)?;
    let mut lines = vec![surface.fingerprint()];
    let with_items = || {
        Section::ALL
            .into_iter()
            .filter(|s| !surface.section(*s).is_empty())
    };
    lines.extend(with_items().map(|s| format!("{s} {}", surface.section(s).fingerprint())));
    for section in with_items() {
        lines.extend(
            surface
                .section(section)
                .entries
                .iter()
                .map(|(key, digest)| format!("{section} {key} {digest}")),
        );
    }
    print_lines(&lines)?;
    Ok(0)
}

/// `toolseal diff OLD NEW`: the classified diff; exit 0 same, 1 additive, 2 otherwise
/// (unusable input is 3, decided by the caller).
pub fn diff(args: &[OsString]) -> Result<i32> {
    let Some(parsed) = parse_or_help("diff", DIFF_USAGE, 2..=2, args)? else {
        return Ok(0);
    };
    let [old, new] = parsed.files.as_slice() else {
        return Err(InputError(DIFF_USAGE.to_owned()).into());
    };
    if parsed.seal_resources && !parsed.surface {
        return Err(InputError("--seal-resources goes with --surface".to_owned()).into());
    }
    if parsed.surface {
        return surface_diff(old, new, &parsed);
    }
    let fields = match &parsed.config {
        Some(path) => Some(fingerprint_fields(Some(path))?),
        None => None,
    };
    let old_tools = load_tools(old)?;
    let new_tools = load_tools(new)?;
    let mut drift = diff_tools(&old_tools, &new_tools);
    let mut renames = drift.renames();
    if let Some(fields) = fields {
        drift = covered_by(drift, &old_tools, &new_tools, &fields);
        for rename in &mut renames.likely {
            let pair = DriftDiff {
                changes: std::mem::take(&mut rename.changes),
            };
            let (before, after) = (rename.before_under_new_name(), rename.after.clone());
            rename.changes = covered_by(pair, &[before], &[after], &fields).changes;
        }
    }
    if parsed.json {
        let mut report = drift.to_json();
        if let Some(object) = report.as_object_mut() {
            object.insert("renames".to_owned(), renames.to_json());
        }
        print_lines(&[report.to_string()])?;
    } else {
        let mut text = drift.render_text();
        if !renames.is_empty() {
            text.push('\n');
            text.push_str(&renames.render_text());
        }
        print(&text)?;
    }
    Ok(drift.exit_code())
}

/// The changes of `drift` that a fingerprint over `fields` notices: tools added, removed or
/// invalid, and changes under a fingerprinted field. The diff's catch-all for a tool that
/// changed in no classified way stays only if that tool's digest over `fields` moved.
fn covered_by(
    drift: DriftDiff,
    old: &[Value],
    new: &[Value],
    fields: &FingerprintFields,
) -> DriftDiff {
    let digest_of = |tools: &[Value], name: &str| {
        tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|t| tool_digest(t, fields).ok())
    };
    let covered = |change: &Change| match change.path.split('/').nth(1) {
        None => {
            change.kind != ChangeKind::SchemaChanged
                || digest_of(old, &change.tool) != digest_of(new, &change.tool)
        }
        Some(field) => FingerprintField::from_str(field).is_some_and(|f| fields.contains(f)),
    };
    DriftDiff {
        changes: drift.changes.into_iter().filter(covered).collect(),
    }
}

/// The lock `toolseal pin` prints is the one `toolseal console` writes when an operator
/// approves: one function builds both.
pub use toolseal_console::actions::lock_entry;

/// `toolseal pin FILE… [--server ID]`: `{"servers": {"ID": {"lock": {"fingerprint",
/// "tools"}}}}`, the lock of one list or the catalogue of several.
pub fn pin(args: &[OsString]) -> Result<i32> {
    let Some(parsed) = parse_or_help("pin", PIN_USAGE, 1..=usize::MAX, args)? else {
        return Ok(0);
    };
    let server = match (parsed.server, parsed.files.as_slice()) {
        (Some(server), _) => server,
        (None, [file]) => crate::replay::transcript_name(file),
        (None, _) => {
            return Err(InputError(
                "pinning several files needs --server ID: the lock is one server's, and the \
                 file names do not say which (see `toolseal pin --help`)"
                    .into(),
            )
            .into());
        }
    };
    let fields = fingerprint_fields(parsed.config.as_deref())?;
    if parsed.seal_resources && !parsed.surface {
        return Err(InputError("--seal-resources goes with --surface".to_owned()).into());
    }
    if parsed.surface {
        let (mut seal, lock) = surface_lock(&parsed.files, &fields, parsed.seal_resources)?;
        // Resources are sealed by their own mode, not named in `seal`.
        let resources = Value::from(Section::Resources.name());
        let entry = match seal.iter().position(|s| *s == resources) {
            Some(at) => {
                seal.remove(at);
                json!({"seal": seal, "resources": "seal", "lock": lock})
            }
            None => json!({"seal": seal, "lock": lock}),
        };
        let text = serde_json::to_string_pretty(&json!({"servers": {server: entry}}))?;
        print_lines(&[text])?;
        return Ok(0);
    }
    let mut lists = Vec::with_capacity(parsed.files.len());
    for file in &parsed.files {
        lists.push((file.as_path(), load_tools(file)?));
    }
    let (tools, set) = catalogue::union(&lists, &fields)?;
    let mut servers = Map::new();
    servers.insert(server, lock_entry(&set, tools));
    let text = serde_json::to_string_pretty(&json!({ "servers": servers }))?;
    print_lines(&[text])?;
    Ok(0)
}
