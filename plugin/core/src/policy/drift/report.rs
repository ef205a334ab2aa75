//! The diff as JSON (summary and full list) and as text (one line per change).

use super::{Change, ChangeClass, ChangeKind, DriftDiff};
use serde_json::{Map, Value, json};

impl DriftDiff {
    /// Counts per class and the names of tools added, removed and changed:
    /// `{"changes": N, "worst": "semantic"|null, "exit_code": 2, "classes": {"additive": …,
    /// "breaking": …, "semantic": …, "authority": …}, "tools_added": […],
    /// "tools_removed": […], "tools_changed": […]}` (names sorted, each listed once).
    pub fn summary_json(&self) -> Value {
        let mut classes = Map::new();
        for class in ChangeClass::ALL {
            let count = self.changes.iter().filter(|c| c.class == class).count();
            classes.insert(class.as_str().to_owned(), json!(count));
        }
        let names = |pick: &dyn Fn(&Change) -> bool| -> Vec<&str> {
            crate::wire::order::name_set(
                self.changes
                    .iter()
                    .filter(|c| pick(c))
                    .map(|c| c.tool.as_str()),
            )
        };
        let whole_tool =
            |c: &Change| matches!(c.kind, ChangeKind::ToolAdded | ChangeKind::ToolRemoved);
        json!({
            "changes": self.changes.len(),
            "worst": self.worst().map(ChangeClass::as_str),
            "exit_code": self.exit_code(),
            "classes": classes,
            "tools_added": names(&|c| c.kind == ChangeKind::ToolAdded),
            "tools_removed": names(&|c| c.kind == ChangeKind::ToolRemoved),
            "tools_changed": names(&|c| !whole_tool(c)),
        })
    }

    /// `{"summary": summary_json(), "changes": [{"tool", "path", "kind", "class",
    /// "before"?, "after"?}, …]}`; `before`/`after` are omitted where the value is absent.
    pub fn to_json(&self) -> Value {
        let changes: Vec<Value> = self.changes.iter().map(Change::to_json).collect();
        json!({"summary": self.summary_json(), "changes": changes})
    }

    /// One line per change, `tool  path  kind  class` (a whole-tool change shows the path
    /// as `-`); the empty string when nothing changed.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let path = if c.path.is_empty() {
                "-"
            } else {
                c.path.as_str()
            };
            out.push_str(&format!(
                "{}  {}  {}  {}\n",
                c.tool,
                path,
                c.kind.as_str(),
                c.class.as_str()
            ));
        }
        out
    }
}

impl Change {
    /// The change as a JSON object (see [`DriftDiff::to_json`]).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("tool".to_owned(), json!(self.tool));
        object.insert("path".to_owned(), json!(self.path));
        object.insert("kind".to_owned(), json!(self.kind.as_str()));
        object.insert("class".to_owned(), json!(self.class.as_str()));
        if let Some(before) = &self.before {
            object.insert("before".to_owned(), before.clone());
        }
        if let Some(after) = &self.after {
            object.insert("after".to_owned(), after.clone());
        }
        Value::Object(object)
    }
}

impl super::SurfaceDiff {
    /// `{"summary": {"changes", "worst", "exit_code", "classes", "sections": {section:
    /// count}}, "sections": {section: DriftDiff::to_json()}}`.
    pub fn to_json(&self) -> Value {
        let mut classes = Map::new();
        let all = || self.sections.iter().flat_map(|(_, d)| d.changes.iter());
        for class in ChangeClass::ALL {
            classes.insert(
                class.as_str().to_owned(),
                json!(all().filter(|c| c.class == class).count()),
            );
        }
        let mut counts = Map::new();
        let mut sections = Map::new();
        for (section, diff) in &self.sections {
            counts.insert(section.name().to_owned(), json!(diff.changes.len()));
            sections.insert(section.name().to_owned(), diff.to_json());
        }
        json!({
            "summary": {
                "changes": all().count(),
                "worst": self.worst().map(ChangeClass::as_str),
                "exit_code": self.exit_code(),
                "classes": classes,
                "sections": counts,
            },
            "sections": sections,
        })
    }

    /// One line per change, `section  item  path  kind  class`; empty when nothing changed.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for (section, diff) in &self.sections {
            for line in diff.render_text().lines() {
                out.push_str(&format!("{section}  {line}\n"));
            }
        }
        out
    }
}
