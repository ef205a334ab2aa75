//! A server's views on the review page, as the admin API's `GET {prefix}servers/{id}` gives
//! them: each kind of caller the server lists tools to (its sources and their values, header
//! and metadata values already hashed by the plugin), the names it is listed, when it was
//! first and last seen, and the views whose lists made the candidate under review
//! (`drifted_view`, the last, and `drifted_views_also`, those before it: approving the
//! candidate records the names each listed).
//!
//! Main design decision: the section renders the admin API's answer as it comes and derives
//! nothing the plugin did not decide. Whoever supplies it (an instance's admin API through
//! the console, an answer saved to a file, the core replaying recordings natively), every
//! value in it is text for the page: view values are what callers sent, tool names what the
//! server listed, so all of it goes through [`escape`]. A field of the wrong shape is shown
//! as absent, never trusted and never a panic.

use super::escape;
use crate::audit_log::rfc3339;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Hex digits of a view key shown (the key is the SHA-256 of its source values).
const SHOWN_KEY_HEX: usize = 12;

/// A server's views and where they were read.
pub struct ServerViews<'a> {
    /// The admin API's view of the server (`GET {prefix}servers/{id}`): its `views`,
    /// `drifted_view`, `drifted_views_also` and `schema_status` are read. `None`: they could not be had, and
    /// `source` says why.
    pub admin_view: Option<&'a Value>,
    /// Where that answer comes from, for the reader (`GET servers/deploy on envoy-0`), or
    /// why there is none.
    pub source: String,
    /// What else the reader should know of it (a paragraph of its own).
    pub note: Option<String>,
}

/// One view as the admin API shows it, read leniently.
struct Shown<'v> {
    key: &'v str,
    sources: Vec<(&'v str, &'v Value)>,
    names: Vec<&'v str>,
    first_seen: Option<u64>,
    last_seen: Option<u64>,
}

impl<'v> Shown<'v> {
    fn read(view: &'v Value) -> Option<Shown<'v>> {
        let object = view.as_object()?;
        let sources = object
            .get("sources")
            .and_then(Value::as_object)
            .map(|s| s.iter().map(|(label, v)| (label.as_str(), v)).collect())
            .unwrap_or_default();
        let names = object
            .get("names")
            .and_then(Value::as_array)
            .map(|n| n.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Some(Shown {
            key: object.get("key").and_then(Value::as_str).unwrap_or(""),
            sources,
            names,
            first_seen: object.get("first_seen_ms").and_then(Value::as_u64),
            last_seen: object.get("last_seen_ms").and_then(Value::as_u64),
        })
    }

    /// `revision = "2025-11-25", capabilities = ["roots"]`, escaped.
    fn described(&self) -> String {
        if self.sources.is_empty() {
            return "(no sources)".to_owned();
        }
        self.sources
            .iter()
            .map(|(label, value)| format!("{} = {}", escape(label), escape(&value_text(value))))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A source value as text: strings as they are, `(absent)` for null, JSON otherwise.
fn value_text(value: &Value) -> String {
    match value {
        Value::Null => "(absent)".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn short_key(key: &str) -> String {
    match key.get(..SHOWN_KEY_HEX) {
        Some(start) if key.len() > SHOWN_KEY_HEX => format!("{start}\u{2026}"),
        _ => key.to_owned(),
    }
}

fn when(ms: Option<u64>) -> String {
    ms.map_or_else(String::new, rfc3339)
}

/// How a row of the views table stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    /// A recorded view.
    Recorded,
    /// A recorded view whose list drifted (its recorded names).
    RecordedDrifted,
    /// The list that made the candidate: the names it showed, awaiting review.
    Drift,
}

/// The section: every recorded view, the list that made the candidate (a recorded view's new
/// names, or a view not recorded before), and which views list each tool.
pub fn views_section(out: &mut String, views: &ServerViews<'_>) {
    let Some(admin) = views.admin_view else {
        let _ = writeln!(
            out,
            "<section class=\"views\"><h2>Views: the kinds of caller the server lists tools to</h2>\n<p class=\"absent\">{}</p></section>",
            escape(&views.source)
        );
        return;
    };
    let recorded: Vec<Shown<'_>> = admin
        .get("views")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Shown::read).collect())
        .unwrap_or_default();
    // The views that listed the candidate: the earlier ones, then the last.
    let mut drifted: Vec<Shown<'_>> = admin
        .get("drifted_views_also")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Shown::read).collect())
        .unwrap_or_default();
    drifted.extend(admin.get("drifted_view").and_then(Shown::read));
    let status = admin
        .get("schema_status")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let _ = write!(
        out,
        "<section class=\"views\"><h2>Views: the kinds of caller the server lists tools to</h2>\n<p class=\"source\">From {}. <code>schema_status</code> {}, {} view(s) recorded. Each kind of caller is listed its own names; every tool has one approved definition for all of them (the catalogue).</p>\n",
        escape(&views.source),
        escape(status),
        recorded.len()
    );
    if let Some(note) = &views.note {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    let rows = drift_and_rows(out, &recorded, &drifted);
    if rows.is_empty() {
        out.push_str("<p class=\"absent\">No view is recorded yet: a view is recorded when its first complete list verifies (or is trusted on first use).</p></section>\n");
        return;
    }
    views_table(out, &rows);
    listed_to(out, &rows);
    out.push_str("</section>\n");
}

/// A row of the views table: its label, the view, how it stands.
type TableRow<'r, 'v> = (String, &'r Shown<'v>, Row);

/// Says which lists made the candidate, and returns the table's rows: the recorded views,
/// then those lists (a recorded view's new names, or a view not recorded before).
fn drift_and_rows<'r, 'v>(
    out: &mut String,
    recorded: &'r [Shown<'v>],
    drifted: &'r [Shown<'v>],
) -> Vec<TableRow<'r, 'v>> {
    let position = |d: &Shown<'_>| recorded.iter().position(|v| v.key == d.key);
    let mut rows: Vec<TableRow<'r, 'v>> = recorded
        .iter()
        .enumerate()
        .map(|(n, v)| {
            let row = match drifted.iter().any(|d| d.key == v.key) {
                true => Row::RecordedDrifted,
                false => Row::Recorded,
            };
            (format!("view {}", n + 1), v, row)
        })
        .collect();
    let fresh = drifted.iter().filter(|d| position(d).is_none()).count();
    let mut described = Vec::new();
    let mut new_views = 0;
    for d in drifted {
        let (label, text) = match position(d) {
            Some(n) => (
                format!("view {}, as the drift listed it", n + 1),
                format!(
                    "view {} ({}): it listed {} tools where {} are recorded",
                    n + 1,
                    d.described(),
                    d.names.len(),
                    recorded.get(n).map_or(0, |v| v.names.len())
                ),
            ),
            None => {
                new_views += 1;
                let label = match fresh {
                    1 => "new view".to_owned(),
                    _ => format!("new view {new_views}"),
                };
                let text = format!(
                    "a view not recorded before ({}), of {} tools",
                    d.described(),
                    d.names.len()
                );
                (label, text)
            }
        };
        rows.push((label, d, Row::Drift));
        described.push(text);
    }
    let _ = match described.as_slice() {
        [] => writeln!(
            out,
            "<p class=\"drifted\">No view's list awaits review.</p>"
        ),
        [one] => writeln!(
            out,
            "<p class=\"drifted\">The candidate was made by a list shown to {one}. Approving it with the admin API records the names it listed.</p>"
        ),
        several => writeln!(
            out,
            "<p class=\"drifted\">The candidate was made by the lists shown to {} views: {}. Approving it with the admin API records the names each listed.</p>",
            several.len(),
            several.join("; ")
        ),
    };
    rows
}

/// The table of views, one row each.
fn views_table(out: &mut String, rows: &[TableRow<'_, '_>]) {
    out.push_str("<table class=\"overview\"><tr><th>view</th><th>sources</th><th>tools</th><th>names</th><th>first seen</th><th>last seen</th></tr>\n");
    for (label, view, row) in rows {
        let (class, badge) = match row {
            Row::Recorded => ("view", ""),
            Row::RecordedDrifted => ("view", " <span class=\"badge drifted\">drifted</span>"),
            Row::Drift => (
                "view drift",
                " <span class=\"badge drifted\">awaiting review</span>",
            ),
        };
        let names: Vec<String> = view
            .names
            .iter()
            .map(|n| format!("<code>{}</code>", escape(n)))
            .collect();
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{}{badge}<br><code title=\"{}\">{}</code></td><td class=\"detail\">{}</td><td>{}</td><td class=\"detail\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(label),
            escape(view.key),
            escape(&short_key(view.key)),
            view.described(),
            view.names.len(),
            names.join(" "),
            when(view.first_seen),
            when(view.last_seen)
        );
    }
    out.push_str("</table>\n");
}

/// Which views list each tool: the recorded views' names, and the list under review.
fn listed_to(out: &mut String, rows: &[TableRow<'_, '_>]) {
    let mut by_tool: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (label, view, row) in rows {
        let shown = match row {
            Row::Drift => format!("{label} (awaiting review)"),
            _ => label.clone(),
        };
        for name in &view.names {
            by_tool.entry(name).or_default().push(shown.clone());
        }
    }
    out.push_str("<h3>Which views list each tool</h3>\n<table class=\"overview\"><tr><th>tool</th><th>listed to</th></tr>\n");
    for (tool, labels) in by_tool {
        let _ = writeln!(
            out,
            "<tr class=\"listed\"><td><code>{}</code></td><td>{}</td></tr>",
            escape(tool),
            escape(&labels.join(", "))
        );
    }
    out.push_str("</table>\n");
}
