//! The page's *likely renames*: a removed and an added tool that take the same arguments,
//! each pair shown side by side (the old definition left, the new one right) with what else
//! changed highlighted, as the other changed tools are.
//!
//! Main design decision: a hint, never a verdict. The classes, the counts in the header and
//! the exit status stay those of the removal and the addition (a caller of the old name
//! breaks); the section only tells the reviewer which of the removed and added tools are
//! probably one tool, and lists ambiguous groups without pairing them
//! (`toolseal_core::policy::drift::renames`).

use super::{Marks, Side, badge, change_rows, escape, marks_for, write_json};
use std::fmt::Write as _;
use toolseal_core::policy::drift::{Change, Rename, Renames};

/// What a tool's heading says when it is part of a likely rename: `likely renamed to NEW`
/// (removed) or `likely rename of OLD` (added).
pub(super) fn note(renames: &Renames, tool: &str) -> Option<String> {
    renames.likely.iter().find_map(|r| {
        if r.from == tool {
            Some(format!("likely renamed to {}", r.to))
        } else if r.to == tool {
            Some(format!("likely rename of {}", r.from))
        } else {
            None
        }
    })
}

/// The section, or nothing when the drift suggests no rename.
pub(super) fn section(out: &mut String, renames: &Renames) {
    if renames.is_empty() {
        return;
    }
    out.push_str(
        "<section class=\"renames\"><h2>Likely renames</h2>\n<p>A removed tool and an added tool \
         take the same arguments (the same <code>inputSchema</code>, as the fingerprint \
         normalizes it). It is still drift: calls to the old name fail (breaking), the new \
         name is additive.</p>\n",
    );
    if !renames.likely.is_empty() {
        out.push_str(
            "<table class=\"overview\"><tr><th>from</th><th>to</th><th>what else changed</th></tr>\n",
        );
        for rename in &renames.likely {
            let _ = writeln!(
                out,
                "<tr class=\"rename\"><td><code>{}</code></td><td><code>{}</code></td><td class=\"detail\">{}</td></tr>",
                escape(&rename.from),
                escape(&rename.to),
                what_else(&rename.changes)
            );
        }
        out.push_str("</table>\n");
    }
    for group in &renames.possible {
        let names = |names: &[String]| {
            names
                .iter()
                .map(|n| format!("<code>{}</code>", escape(n)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "<p class=\"possible\">Possible renames, not paired (one <code>inputSchema</code> shared by several tools): {} \u{2192} {}</p>",
            names(&group.removed),
            names(&group.added)
        );
    }
    for rename in &renames.likely {
        pair_section(out, rename);
    }
    out.push_str("</section>\n");
}

/// The other changes of a pair, one `class kind path` item each.
fn what_else(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "nothing else: only the name".to_owned();
    }
    changes
        .iter()
        .map(|c| {
            let path = if c.path.is_empty() {
                "(whole tool)"
            } else {
                &c.path
            };
            format!(
                "{} {} <code>{}</code>",
                badge(c.class),
                c.kind.as_str(),
                escape(path)
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// One pair side by side, the name and every other change highlighted.
fn pair_section(out: &mut String, rename: &Rename) {
    let _ = write!(
        out,
        "<section class=\"tool rename\"><h2>{} \u{2192} {}<span class=\"state\">likely rename</span></h2>\n<table class=\"changes\">",
        escape(&rename.from),
        escape(&rename.to)
    );
    change_rows(out, rename.changes.iter(), "in-rename");
    out.push_str("</table>\n<div class=\"sides\">");
    let changes: Vec<&Change> = rename.changes.iter().collect();
    for (side, value, title) in [
        (Side::Old, &rename.before, "baseline"),
        (Side::New, &rename.after, "candidate"),
    ] {
        let mut marks: Marks = marks_for(&changes, side);
        marks.nodes.insert("/name".to_owned());
        let _ = write!(out, "<div class=\"side {title}\"><h3>{title}</h3><pre>");
        write_json(out, value, "", 0, &marks, side);
        out.push_str("</pre></div>");
    }
    out.push_str("</div></section>\n");
}
