//! The review page: the classified drift of two tool sets as one HTML page a reviewer reads
//! before approving. `toolseal report OLD NEW > report.html` writes it; the console serves it.
//!
//! Main design decision: the page is self-contained and inert. CSS is inline, there is no
//! script and no URL in any attribute, so opening it fetches nothing and runs nothing; every
//! piece of text from the tool sets (names, descriptions, schema values: all written by the
//! server, so attacker-controlled) and from the server's views (values its callers sent)
//! goes through [`escape`] and nowhere else. Each changed
//! tool is shown side by side (baseline left, candidate right) as pretty JSON in which the
//! node at each change's JSON pointer is highlighted; a changed description is diffed word
//! by word. The changes themselves carry their class as a colored badge. A removed and an
//! added tool with the same input schema are also shown as a likely rename, side by side,
//! without changing any class.

mod renames;
mod serving;
mod views;
mod word_diff;

pub use serving::ReportConfig;
pub use views::ServerViews;
pub use word_diff::{WordOp, word_diff};

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use toolseal_core::policy::approved::sealed_of;
use toolseal_core::policy::drift::{
    Change, ChangeClass, ChangeKind, DriftDiff, SurfaceDiff, diff_surface, diff_tools,
};
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};
use toolseal_core::policy::section::{Section, Surface};

/// The page's style sheet. Class colors are fixed values (the tests look for them).
/// `toolseal console` serves the page with a Content-Security-Policy naming this sheet's hash.
pub const STYLE: &str = "
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#ffffff;color:#1f2328}
header{padding:20px 28px;background:#f6f8fa;border-bottom:1px solid #d0d7de}
h1{margin:0 0 8px;font-size:24px}
h2{margin:0;font-size:19px;font-family:ui-monospace,monospace}
main{padding:8px 28px 40px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.files code{background:#eaeef2;padding:1px 5px;border-radius:4px}
.badge{display:inline-block;min-width:84px;text-align:center;padding:4px 10px;border-radius:6px;color:#ffffff;font-weight:600;font-size:13px}
.additive{background:#1a7f37}.breaking{background:#cf222e}.semantic{background:#8250df}.authority{background:#bc4c00}
.badge.zero{background:#d0d7de;color:#59636e}
table.overview{border-collapse:collapse;margin-top:16px;width:100%}
table.overview th{text-align:left;font-size:12px;color:#59636e;padding:4px 10px}
table.overview td{padding:5px 10px;border-top:1px solid #eaeef2;vertical-align:top}
.detail{font-family:ui-monospace,monospace;font-size:13px;overflow-wrap:anywhere}
.counts{display:flex;gap:14px;list-style:none;padding:0;margin:10px 0 0}
.tool{margin-top:26px;border:1px solid #d0d7de;border-radius:8px;overflow:hidden}
.tool>h2{padding:10px 14px;background:#f6f8fa;border-bottom:1px solid #d0d7de}
.state{font:600 12px system-ui,sans-serif;margin-left:10px;color:#59636e}
table.changes{border-collapse:collapse;width:100%}
table.changes td{padding:6px 14px;border-bottom:1px solid #eaeef2;vertical-align:top}
table.changes td:last-child{width:100%}
.sides{display:grid;grid-template-columns:1fr 1fr}
.side{padding:10px 14px;min-width:0}
.side+.side{border-left:1px solid #d0d7de}
.side h3{margin:0 0 6px;font-size:12px;text-transform:uppercase;color:#59636e}
pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.absent{color:#59636e;font-style:italic}
.chg-old{background:#ffebe9;outline:1px solid #ff8182}
.chg-new{background:#dafbe1;outline:1px solid #4ac26b}
del{background:#ff8182;color:#1f2328;text-decoration:line-through}
ins{background:#4ac26b;color:#1f2328;text-decoration:none}
section.serving,section.visibility,section.renames,section.views{margin-top:22px}
section.renames>h2{font-family:system-ui,sans-serif}
.badge.served{background:#1a7f37}.badge.withheld{background:#cf222e}.badge.drifted{background:#cf222e}
tr.drift td{background:#fff8f7}
";

/// HTML-escapes text for element content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Which side of the comparison a definition is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Old,
    New,
}

/// The nodes to highlight in one tool's definition, by JSON pointer; a string value with a
/// word diff is highlighted word by word instead of as a whole.
#[derive(Default)]
struct Marks {
    nodes: BTreeSet<String>,
    words: BTreeMap<String, Vec<WordOp>>,
}

fn marks_for(changes: &[&Change], side: Side) -> Marks {
    let mut marks = Marks::default();
    for change in changes {
        let present = match side {
            Side::Old => change.before.is_some(),
            Side::New => change.after.is_some(),
        };
        if !present || change.path.is_empty() {
            continue;
        }
        if let (
            ChangeKind::DescriptionChanged | ChangeKind::TitleChanged,
            Some(Value::String(old)),
            Some(Value::String(new)),
        ) = (change.kind, &change.before, &change.after)
        {
            marks.words.insert(change.path.clone(), word_diff(old, new));
        } else {
            marks.nodes.insert(change.path.clone());
        }
    }
    marks
}

fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Pretty JSON as escaped HTML with the marked nodes highlighted. Depth is bounded by the
/// parser that read the file (`tool_source`), so the recursion is too.
fn write_json(
    out: &mut String,
    value: &Value,
    pointer: &str,
    indent: usize,
    marks: &Marks,
    side: Side,
) {
    let class = if side == Side::Old {
        "chg-old"
    } else {
        "chg-new"
    };
    if let (Some(ops), Value::String(_)) = (marks.words.get(pointer), value) {
        out.push_str("&quot;");
        for op in ops {
            match (op, side) {
                (WordOp::Same(t), _) => out.push_str(&escape(json_inner(t).as_str())),
                (WordOp::Removed(t), Side::Old) => {
                    let _ = write!(out, "<del>{}</del>", escape(&json_inner(t)));
                }
                (WordOp::Added(t), Side::New) => {
                    let _ = write!(out, "<ins>{}</ins>", escape(&json_inner(t)));
                }
                _ => {}
            }
        }
        out.push_str("&quot;");
        return;
    }
    let marked = marks.nodes.contains(pointer);
    if marked {
        let _ = write!(out, "<span class=\"{class}\">");
    }
    let pad = "  ".repeat(indent + 1);
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (n, (key, item)) in map.iter().enumerate() {
                let child = format!("{pointer}/{}", pointer_token(key));
                let _ = write!(
                    out,
                    "{pad}{}: ",
                    escape(&Value::String(key.clone()).to_string())
                );
                write_json(out, item, &child, indent + 1, marks, side);
                out.push_str(if n + 1 < map.len() { ",\n" } else { "\n" });
            }
            let _ = write!(out, "{}}}", "  ".repeat(indent));
        }
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (n, item) in items.iter().enumerate() {
                out.push_str(&pad);
                write_json(
                    out,
                    item,
                    &format!("{pointer}/{n}"),
                    indent + 1,
                    marks,
                    side,
                );
                out.push_str(if n + 1 < items.len() { ",\n" } else { "\n" });
            }
            let _ = write!(out, "{}]", "  ".repeat(indent));
        }
        other => out.push_str(&escape(&other.to_string())),
    }
    if marked {
        out.push_str("</span>");
    }
}

/// A piece of string content as it appears between JSON quotes.
fn json_inner(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

fn badge(class: ChangeClass) -> String {
    format!("<span class=\"badge {0}\">{0}</span>", class.as_str())
}

fn fingerprint(tools: &[Value]) -> String {
    digest_tools(&Value::Array(tools.to_vec()), &FingerprintFields::default()).map_or_else(
        |e| format!("invalid tool set: {e}"),
        |set| set.fingerprint(),
    )
}

/// The page's header: both sides named with their fingerprints, and the summary of `drift`
/// (every change the page shows, of items called `word`: tools, or items of any section).
fn header(
    out: &mut String,
    names: (&str, &str),
    fingerprints: (&str, &str),
    drift: &DriftDiff,
    word: &str,
) {
    let items: BTreeSet<&str> = drift.changes.iter().map(|c| c.tool.as_str()).collect();
    let _ = write!(
        out,
        "<header><h1>Tool surface drift</h1>\n<p class=\"files\">baseline <code>{}</code> <code>{}</code><br>candidate <code>{}</code> <code>{}</code></p>\n",
        escape(names.0),
        escape(fingerprints.0),
        escape(names.1),
        escape(fingerprints.1),
    );
    let worst = drift.worst().map_or_else(|| "no change".to_owned(), badge);
    let _ = write!(
        out,
        "<p class=\"summary\">{} change(s) in {} {word}(s); worst: {worst}; release gate exit {}</p>\n<ul class=\"counts\">",
        drift.changes.len(),
        items.len(),
        drift.exit_code()
    );
    for class in ChangeClass::ALL {
        let count = drift.changes.iter().filter(|c| c.class == class).count();
        let shown = if count == 0 {
            format!("<span class=\"badge zero\">{}</span>", class.as_str())
        } else {
            badge(class)
        };
        let _ = write!(out, "<li>{shown} {count}</li>");
    }
    out.push_str("</ul></header>\n");
}

/// The longest excerpt of a before/after value shown in the overview.
const MAX_DETAIL_CHARS: usize = 160;

fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((cut, _)) => format!("{}\u{2026}", text.get(..cut).unwrap_or_default()),
        None => text,
    }
}

/// One line saying what changed: a word diff for texts, `before → after` otherwise.
fn detail(change: &Change) -> String {
    match (&change.before, &change.after) {
        (Some(Value::String(old)), Some(Value::String(new)))
            if matches!(
                change.kind,
                ChangeKind::DescriptionChanged | ChangeKind::TitleChanged
            ) =>
        {
            word_diff(old, new)
                .iter()
                .map(|op| match op {
                    WordOp::Same(t) => escape(t),
                    WordOp::Removed(t) => format!("<del>{}</del>", escape(t)),
                    WordOp::Added(t) => format!("<ins>{}</ins>", escape(t)),
                })
                .collect()
        }
        _ if change.path.is_empty() => String::new(),
        (before, after) => {
            let side =
                |v: &Option<Value>| v.as_ref().map_or_else(|| "(absent)".to_owned(), excerpt);
            format!(
                "{} \u{2192} {}",
                escape(&side(before)),
                escape(&side(after))
            )
        }
    }
}

/// Every change on one screen, worst class first, before the per-tool detail.
fn overview(out: &mut String, drift: &DriftDiff) {
    if drift.is_empty() {
        return;
    }
    changes_table(out, drift, "tool", "(whole tool)");
}

/// The table of `drift`'s changes, worst class first: each with its class, the item (called
/// `word`), its kind, where in the item (`whole`: a change of the whole item) and what.
fn changes_table(out: &mut String, drift: &DriftDiff, word: &str, whole: &str) {
    let mut changes: Vec<&Change> = drift.changes.iter().collect();
    changes.sort_by_key(|c| std::cmp::Reverse(c.class));
    let _ = writeln!(
        out,
        "<table class=\"overview\"><tr><th>class</th><th>{}</th><th>change</th><th>where</th><th>what</th></tr>",
        escape(word)
    );
    for change in changes {
        let path = match change.path.is_empty() {
            true => whole,
            false => change.path.as_str(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"change\"><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td class=\"detail\">{}</td></tr>",
            badge(change.class),
            escape(&change.tool),
            change.kind.as_str(),
            escape(path),
            detail(change)
        );
    }
    out.push_str("</table>\n");
}

/// Where in the tool a change is, as the report shows it.
fn where_changed(change: &Change) -> &str {
    match change.path.is_empty() {
        true => "(whole tool)",
        false => &change.path,
    }
}

/// One table row per change of a tool (its class, kind and where), with `class` on the row.
fn change_rows<'c>(out: &mut String, changes: impl Iterator<Item = &'c Change>, class: &str) {
    for change in changes {
        let path = where_changed(change);
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            badge(change.class),
            change.kind.as_str(),
            escape(path)
        );
    }
}

fn tool_section(
    out: &mut String,
    name: &str,
    changes: &[&Change],
    (old, new): (Option<&Value>, Option<&Value>),
    rename: Option<String>,
) {
    let state = match (old, new) {
        (None, _) => "added",
        (_, None) => "removed",
        _ => "changed",
    };
    let rename = rename.map_or_else(String::new, |note| format!(" \u{b7} {}", escape(&note)));
    let _ = write!(
        out,
        "<section class=\"tool\"><h2>{}<span class=\"state\">{state}{rename}</span></h2>\n<table class=\"changes\">",
        escape(name)
    );
    change_rows(out, changes.iter().copied(), "in-tool");
    out.push_str("</table>\n<div class=\"sides\">");
    for (side, value, title) in [(Side::Old, old, "baseline"), (Side::New, new, "candidate")] {
        let _ = write!(out, "<div class=\"side {title}\"><h3>{title}</h3>");
        match value {
            Some(value) => {
                out.push_str("<pre>");
                write_json(out, value, "", 0, &marks_for(changes, side), side);
                out.push_str("</pre>");
            }
            None => out.push_str("<p class=\"absent\">(not in this set)</p>"),
        }
        out.push_str("</div>");
    }
    out.push_str("</div></section>\n");
}

fn by_name(tools: &[Value]) -> BTreeMap<&str, &Value> {
    tools
        .iter()
        .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
        .collect()
}

/// The whole page for the drift from `old` to `new` (`names` label the two sets).
pub fn render(names: (&str, &str), old: &[Value], new: &[Value]) -> String {
    render_with(names, old, new, None)
}

/// [`render`], and with a plugin configuration, what the gateway serves of the candidate
/// until it is approved (the server's drift scope) and who is shown each tool (the policy).
pub fn render_with(
    names: (&str, &str),
    old: &[Value],
    new: &[Value],
    context: Option<&ReportConfig>,
) -> String {
    render_review(names, old, new, context, &[])
}

/// [`render_with`], and the server's views as the admin API shows them (one section per
/// answer: each Envoy keeps its own).
pub fn render_review(
    names: (&str, &str),
    old: &[Value],
    new: &[Value],
    context: Option<&ReportConfig>,
    views: &[ServerViews<'_>],
) -> String {
    render_page(names, (old, new), None, context, views)
}

/// [`render_review`] of two whole surfaces (JSON objects with `tools`, `instructions`,
/// `prompts`, `resourceTemplates`, `resources`: what `toolseal fingerprint --surface` reads,
/// or a stored catalogue): the tools as a tool drift, and every other section's changes, item
/// by item (`resources` compared when `seal_resources`, or when either catalogue seals them).
pub fn render_surface_review(
    names: (&str, &str),
    (old, new): (&Value, &Value),
    seal_resources: bool,
    context: Option<&ReportConfig>,
    views: &[ServerViews<'_>],
) -> String {
    let tools = |surface: &Value| {
        surface
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let seals_resources = |surface: &Value| {
        let sealed = surface.as_object().map(sealed_of).unwrap_or_default();
        sealed.contains(&Section::Resources)
    };
    let resources = seal_resources || seals_resources(old) || seals_resources(new);
    let sections = diff_surface(old, new, resources);
    let fields = FingerprintFields::default();
    // A stored catalogue is named as the gateway names it; a surface file as `toolseal
    // fingerprint --surface` does.
    let named = |surface: &Value| {
        let named = match surface.get("sealed") {
            Some(_) => toolseal_core::policy::approved::document_fingerprint(surface, &fields),
            None => Surface::of_document(surface, &fields, resources)
                .ok()
                .map(|s| s.fingerprint()),
        };
        named.unwrap_or_else(|| "(not a valid surface)".to_owned())
    };
    let fingerprints = (named(old), named(new));
    render_page(
        names,
        (&tools(old), &tools(new)),
        Some((&sections, fingerprints)),
        context,
        views,
    )
}

/// The changes of every section beyond tools, one table per section, worst class first.
fn sections_block(out: &mut String, sections: &SurfaceDiff) {
    for (section, drift) in &sections.sections {
        if *section == Section::Tools || drift.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<section class=\"surface\"><h2>{}</h2>",
            escape(section.name())
        );
        changes_table(out, drift, section.item_word(), "(whole item)");
        out.push_str("</section>\n");
    }
}

/// The page: the tools' drift from `old` to `new`, and with `sections` the other sections'.
fn render_page(
    names: (&str, &str),
    (old, new): (&[Value], &[Value]),
    surfaces: Option<(&SurfaceDiff, (String, String))>,
    context: Option<&ReportConfig>,
    views: &[ServerViews<'_>],
) -> String {
    let drift = diff_tools(old, new);
    let (sections, sections_fingerprints) = match surfaces {
        Some((diff, fingerprints)) => (Some(diff), fingerprints),
        None => (None, (String::new(), String::new())),
    };
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        out,
        "<title>toolseal drift: {} \u{2192} {}</title>",
        escape(names.0),
        escape(names.1)
    );
    let _ = write!(out, "<style>{STYLE}</style></head>\n<body>\n");
    match sections {
        // Every section's changes, named by the surfaces' fingerprints.
        Some(sections) => {
            let all = DriftDiff {
                changes: sections
                    .sections
                    .iter()
                    .flat_map(|(_, d)| d.changes.iter().cloned())
                    .collect(),
            };
            let (old_fp, new_fp) = &sections_fingerprints;
            header(&mut out, names, (old_fp, new_fp), &all, "item");
        }
        None => {
            let fingerprints = (fingerprint(old), fingerprint(new));
            header(
                &mut out,
                names,
                (&fingerprints.0, &fingerprints.1),
                &drift,
                "tool",
            );
        }
    }
    out.push_str("<main>\n");
    if let Some(context) = context {
        serving::serving_section(&mut out, context, old, new);
        serving::visibility_section(&mut out, context, new);
    }
    let likely = drift.renames();
    renames::section(&mut out, &likely);
    for server_views in views {
        views::views_section(&mut out, server_views);
    }
    overview(&mut out, &drift);
    if let Some(sections) = sections {
        sections_block(&mut out, sections);
    }
    let others_same = sections.is_none_or(|s| {
        s.sections
            .iter()
            .all(|(section, d)| *section == Section::Tools || d.is_empty())
    });
    match (drift.is_empty(), others_same, sections.is_some()) {
        (true, true, false) => {
            out.push_str("<p>The two tool sets are the same (same fingerprint).</p>\n")
        }
        (true, true, true) => {
            out.push_str("<p>The two surfaces are the same (same fingerprint).</p>\n")
        }
        (true, false, _) => out.push_str("<p>The tools are the same.</p>\n"),
        _ => {}
    }
    let (old_tools, new_tools) = (by_name(old), by_name(new));
    let mut grouped: BTreeMap<&str, Vec<&Change>> = BTreeMap::new();
    for change in &drift.changes {
        grouped
            .entry(change.tool.as_str())
            .or_default()
            .push(change);
    }
    for (name, changes) in &grouped {
        tool_section(
            &mut out,
            name,
            changes,
            (old_tools.get(name).copied(), new_tools.get(name).copied()),
            renames::note(&likely, name),
        );
    }
    out.push_str("</main>\n</body></html>\n");
    out
}
