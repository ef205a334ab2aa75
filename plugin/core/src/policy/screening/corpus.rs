//! Screening measured on a labeled corpus: which poisoned tool sets would be held (recall)
//! and which honest ones would be (false holds), per category. For `toolseal screen` and
//! the tests that guard the numbers; the data plane never uses it (feature `review`).
//!
//! Main design decision: the numbers are counted per category and per split (`dev`, the
//! items the cues were tuned on, and `heldout`, never used to tune them), so a change that
//! buys recall on one kind of attack by holding honest servers shows on its own line. The
//! caller reads the files; this module only reads parsed documents.

use super::{ScreeningConfig, findings};
use serde_json::Value;
use std::collections::BTreeMap;

/// What an item is labeled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    /// A poisoned tool set: screening should hold it.
    Poisoned,
    /// An honest server's tool set: screening must not hold it.
    Benign,
}

/// One labeled tool set of the corpus.
#[derive(Debug, Clone)]
pub struct Item {
    /// Poisoned or benign.
    pub label: Label,
    /// `dev`, `heldout` (poisoned), or `-` (benign).
    pub split: String,
    /// The attack kind, or the kind of server.
    pub category: String,
    /// Where it is: `file#id`, or the file for a one-set file.
    pub id: String,
    /// The tools a server would list.
    pub tools: Vec<Value>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The items of one corpus document named `file`: `{"label", "split", "items": [{"id",
/// "category", "source", "tools"}]}`, or one set `{"label", "category", "source", "tools"}`.
/// `None` when the document has no `label` (the caller may read it as a recorded tool set).
/// Every item must say its category and its source.
pub fn items_of(document: &Value, file: &str) -> Option<Result<Vec<Item>, String>> {
    let label = match document.get("label")?.as_str() {
        Some("poisoned") => Label::Poisoned,
        Some("benign") => Label::Benign,
        _ => {
            return Some(Err(format!(
                "{file}: label is not \"poisoned\" or \"benign\""
            )));
        }
    };
    let split = text(document, "split").unwrap_or_else(|| "-".into());
    let listed: Vec<&Value> = match document.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![document],
    };
    let mut items = Vec::new();
    for (i, entry) in listed.into_iter().enumerate() {
        let category = text(entry, "category").or_else(|| text(document, "category"));
        let source = text(entry, "source").or_else(|| text(document, "source"));
        let tools = entry.get("tools").and_then(Value::as_array);
        let (Some(category), Some(_), Some(tools)) = (category, source, tools) else {
            return Some(Err(format!(
                "{file}: item {i} needs a category, a source and tools"
            )));
        };
        let id = text(entry, "id").map_or_else(|| file.to_owned(), |id| format!("{file}#{id}"));
        items.push(Item {
            label,
            split: split.clone(),
            category,
            id,
            tools: tools.clone(),
        });
    }
    Some(Ok(items))
}

/// A recorded tool set with no label: benign, category `recorded`.
pub fn recorded(file: &str, tools: Vec<Value>) -> Item {
    Item {
        label: Label::Benign,
        split: "-".into(),
        category: "recorded".into(),
        id: file.to_owned(),
        tools,
    }
}

/// The screening of one item.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The item.
    pub item: Item,
    /// Its findings (`tool: kind: detail`); held when not empty.
    pub findings: Vec<String>,
}

impl Outcome {
    /// Whether the item would be held `pending`.
    pub fn held(&self) -> bool {
        !self.findings.is_empty()
    }
}

/// Screens every item with `config`, as a first contact.
pub fn evaluate(items: Vec<Item>, config: &ScreeningConfig) -> Vec<Outcome> {
    items
        .into_iter()
        .map(|item| {
            let found = findings(&Value::Array(item.tools.clone()), config)
                .iter()
                .map(ToString::to_string)
                .collect();
            Outcome {
                item,
                findings: found,
            }
        })
        .collect()
}

/// Held and total per (label, split, category).
pub type Tally = BTreeMap<(Label, String, String), (usize, usize)>;

/// Counts `outcomes` per label, split and category: (held, total).
pub fn tally(outcomes: &[Outcome]) -> Tally {
    let mut counts = Tally::new();
    for outcome in outcomes {
        let item = &outcome.item;
        let key = (item.label, item.split.clone(), item.category.clone());
        let entry = counts.entry(key).or_insert((0, 0));
        entry.0 = entry.0.saturating_add(usize::from(outcome.held()));
        entry.1 = entry.1.saturating_add(1);
    }
    counts
}

fn percent(held: usize, total: usize) -> usize {
    held.saturating_mul(100) / total.max(1)
}

/// The report: recall per split and category, false holds per category, then each miss and
/// each false hold on its own line (`verbose`: also what held each poisoned set).
pub fn report(outcomes: &[Outcome], verbose: bool) -> Vec<String> {
    let counts = tally(outcomes);
    let mut lines = vec![format!(
        "{:<9} {:<24} {:>5} {:>5} {:>7}",
        "poisoned", "category", "held", "of", "recall"
    )];
    let mut sums: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for ((label, split, category), (held, total)) in &counts {
        if *label != Label::Poisoned {
            continue;
        }
        let sum = sums.entry(split.as_str()).or_insert((0, 0));
        sum.0 = sum.0.saturating_add(*held);
        sum.1 = sum.1.saturating_add(*total);
        let recall = percent(*held, *total);
        lines.push(format!(
            "{split:<9} {category:<24} {held:>5} {total:>5} {recall:>6}%"
        ));
    }
    for (split, (held, total)) in &sums {
        let recall = percent(*held, *total);
        lines.push(format!(
            "{split:<9} {:<24} {held:>5} {total:>5} {recall:>6}%",
            "(all)"
        ));
    }
    lines.push(String::new());
    lines.push(format!(
        "{:<9} {:<24} {:>5} {:>5} {:>7}",
        "benign", "category", "held", "sets", "tools"
    ));
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    for outcome in outcomes.iter().filter(|o| o.item.label == Label::Benign) {
        let count = tools.entry(outcome.item.category.as_str()).or_default();
        *count = count.saturating_add(outcome.item.tools.len());
    }
    for ((label, _, category), (held, total)) in &counts {
        if *label == Label::Benign {
            let n = tools.get(category.as_str()).copied().unwrap_or(0);
            lines.push(format!(
                "{:<9} {category:<24} {held:>5} {total:>5} {n:>7}",
                "-"
            ));
        }
    }
    for outcome in outcomes {
        let item = &outcome.item;
        match (item.label, outcome.held()) {
            (Label::Poisoned, false) => lines.push(format!(
                "missed: {} ({}, {})",
                item.id, item.split, item.category
            )),
            (Label::Benign, true) => lines.extend(
                outcome
                    .findings
                    .iter()
                    .map(|f| format!("false hold: {} ({}): {f}", item.id, item.category)),
            ),
            (Label::Poisoned, true) if verbose => lines.extend(
                outcome
                    .findings
                    .iter()
                    .map(|f| format!("held: {}: {f}", item.id)),
            ),
            _ => {}
        }
    }
    lines
}
