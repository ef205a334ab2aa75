//! `toolseal screen`: first-contact screening measured on a labeled corpus. Every item (a
//! tool set a server could list at first contact) is screened natively, through
//! toolseal-core, with the configuration's `screening` section; a poisoned item counts as
//! caught when it would be held `pending`, a benign one as a false hold when it would.
//!
//! Main design decision: this command only finds and reads the files; what an item is and
//! how the numbers are counted lives in `toolseal_core::policy::screening::corpus`, so the
//! tests that guard the numbers count them the same way.

use super::args::{Parsed, invocation_error, is_help, parser};
use super::stdout::print_lines;
use super::tool_source::load_tools;
use crate::input_error::{InputError, input_error};
use anyhow::Result;
use lexopt::Arg;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toolseal_core::config::Config;
use toolseal_core::policy::screening::ScreeningConfig;
use toolseal_core::policy::screening::corpus::{
    Item, Label, Outcome, evaluate, items_of, recorded, report,
};
use toolseal_core::wire::json::parse_strict;

/// Usage of `toolseal screen`.
pub const USAGE: &str = "\
usage: toolseal screen [--config CONFIG.json] [--verbose] CORPUS...
  Screens every tool set of the corpus as a first contact and prints, per category, how
  many poisoned sets would be held (recall, per split: dev and heldout) and how many
  benign sets would be held (false holds), then each miss and each false hold.
  CORPUS         a file or a directory (its *.json files, recursively, in name order):
                 {\"label\": \"poisoned\"|\"benign\", \"split\": ..., \"items\": [{\"id\",
                 \"category\", \"source\", \"tools\"}]}, or one benign set {\"label\":
                 \"benign\", \"category\", \"source\", \"tools\"}, or an unlabeled tool set
                 (a tools/list result, a bare array, a recorded transcript): benign, category
                 `recorded`
  --config FILE  screen with that configuration's `screening` section (default: defaults)
  --verbose      also print the findings that held each poisoned set
  The corpus of this repository: plugin/core/tests/data/screening/corpus examples/transcripts
exit status: 0 no benign set held, 1 a benign set held, 2 unusable input.";

/// The JSON files of `paths`: files as given, directories walked in name order.
fn corpus_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = paths.iter().rev().cloned().collect();
    while let Some(path) = stack.pop() {
        if !path.is_dir() {
            files.push(path);
            continue;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|e| input_error(format!("cannot read {}: {e}", path.display())))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "json"))
            .collect();
        entries.sort();
        stack.extend(entries.into_iter().rev());
    }
    Ok(files)
}

/// The items of one file: labeled corpus items, or an unlabeled recorded tool set.
fn load_items(path: &Path) -> Result<Vec<Item>> {
    let bytes = std::fs::read(path)
        .map_err(|e| input_error(format!("cannot read {}: {e}", path.display())))?;
    let document = parse_strict(&bytes, 128)
        .map_err(|e| input_error(format!("{} is not usable JSON: {e}", path.display())))?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    match items_of(&document, &name) {
        Some(items) => items.map_err(|why| InputError(why).into()),
        None => Ok(vec![recorded(&name, load_tools(path)?)]),
    }
}

/// Screens every item under `paths` with `config`.
pub fn screen_corpus(paths: &[PathBuf], config: &ScreeningConfig) -> Result<Vec<Outcome>> {
    let mut items = Vec::new();
    for file in corpus_files(paths)? {
        items.extend(load_items(&file)?);
    }
    Ok(evaluate(items, config))
}

/// `toolseal screen CORPUS...`.
pub fn run(args: &[OsString]) -> Result<i32> {
    let mut paths = Vec::new();
    let mut config_path: Option<PathBuf> = None;
    let mut verbose = false;
    let mut parse = || -> Result<Parsed<()>, lexopt::Error> {
        let mut parser = parser(args);
        while let Some(arg) = parser.next()? {
            match arg {
                arg if is_help(&arg) => return Ok(Parsed::Help),
                Arg::Long("config") => config_path = Some(parser.value()?.into()),
                Arg::Long("verbose") => verbose = true,
                Arg::Value(path) => paths.push(PathBuf::from(path)),
                other => return Err(other.unexpected()),
            }
        }
        Ok(Parsed::Run(()))
    };
    if parse().map_err(|e| invocation_error("screen", e))? == Parsed::Help {
        print_lines(&[USAGE])?;
        return Ok(0);
    }
    if paths.is_empty() {
        return Err(InputError(USAGE.to_owned()).into());
    }
    let config = match config_path {
        None => ScreeningConfig::default(),
        Some(path) => {
            let bytes = std::fs::read(&path)
                .map_err(|e| input_error(format!("cannot read config {}: {e}", path.display())))?;
            Config::parse(&bytes)
                .map_err(|e| input_error(format!("{}: {e}", path.display())))?
                .screening
        }
    };
    let outcomes = screen_corpus(&paths, &config)?;
    print_lines(&report(&outcomes, verbose))?;
    let false_hold = outcomes
        .iter()
        .any(|o| o.item.label == Label::Benign && o.held());
    Ok(i32::from(false_hold))
}
