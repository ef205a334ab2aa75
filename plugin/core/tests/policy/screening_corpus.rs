//! First-contact screening measured on the labeled corpus in `tests/data/screening/corpus`
//! (docs/screening.md, "Measured"): the same counting as `toolseal screen`. These tests fail
//! when recall on a category of poisoned sets drops below its recorded figure, or when any
//! honest server would be held.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use toolseal_core::policy::screening::ScreeningConfig;
use toolseal_core::policy::screening::corpus::{
    Item, Label, Outcome, evaluate, items_of, report, tally,
};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/screening/corpus")
}

/// Every item of the corpus, files in name order.
fn corpus() -> Vec<Item> {
    let mut files = Vec::new();
    let mut stack = vec![corpus_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut items = Vec::new();
    for file in files {
        let document: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        items.extend(items_of(&document, &name).expect("labeled").unwrap());
    }
    items
}

fn outcomes() -> Vec<Outcome> {
    let outcomes = evaluate(corpus(), &ScreeningConfig::default());
    for line in report(&outcomes, false) {
        println!("{line}");
    }
    outcomes
}

/// Held poisoned sets per (split, category) that the screening must keep catching: the
/// figures of docs/screening.md. Raise a floor when recall improves; never lower one to
/// make a change pass.
const RECALL_FLOORS: &[(&str, &str, usize, usize)] = &[
    ("dev", "confusable", 6, 6),
    ("dev", "exfiltration", 7, 7),
    ("dev", "preference_manipulation", 6, 6),
    ("dev", "rug_pull", 5, 5),
    ("dev", "schema_instruction", 8, 8),
    ("dev", "shadowing", 7, 7),
    ("dev", "tool_poisoning", 8, 8),
    ("heldout", "confusable", 5, 5),
    ("heldout", "exfiltration", 3, 5),
    ("heldout", "preference_manipulation", 3, 5),
    ("heldout", "rug_pull", 5, 5),
    ("heldout", "schema_instruction", 5, 5),
    ("heldout", "shadowing", 3, 5),
    ("heldout", "tool_poisoning", 2, 5),
];

#[test]
fn no_honest_server_in_the_corpus_is_held() {
    let outcomes = outcomes();
    let benign: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.item.label == Label::Benign)
        .collect();
    let servers = benign.len();
    assert!(servers >= 42, "the corpus lost honest servers: {servers}");
    let held: Vec<String> = benign
        .iter()
        .filter(|o| o.held())
        .flat_map(|o| o.findings.iter().map(|f| format!("{}: {f}", o.item.id)))
        .collect();
    assert_eq!(held, Vec::<String>::new(), "false holds");
}

#[test]
fn recall_per_category_does_not_drop() {
    let counts = tally(&outcomes());
    let mut seen: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for ((label, split, category), counts) in &counts {
        if *label == Label::Poisoned {
            seen.insert((split.clone(), category.clone()), *counts);
        }
    }
    let mut worse = Vec::new();
    for (split, category, floor, total) in RECALL_FLOORS {
        let key = (split.to_string(), category.to_string());
        let (held, of) = seen.get(&key).copied().unwrap_or((0, 0));
        if held < *floor || of != *total {
            worse.push(format!(
                "{split} {category}: {held} of {of} held, recorded {floor} of {total}"
            ));
        }
    }
    assert_eq!(worse, Vec::<String>::new());
    let recorded: Vec<(String, String)> = RECALL_FLOORS
        .iter()
        .map(|(s, c, _, _)| (s.to_string(), c.to_string()))
        .collect();
    let unrecorded: Vec<&(String, String)> =
        seen.keys().filter(|k| !recorded.contains(k)).collect();
    assert!(unrecorded.is_empty(), "no floor for {unrecorded:?}");
}
