//! The likely renames in an instance's classified diff, for the page's diff block: the
//! `tool_removed` and `tool_added` changes carry the whole definitions, so the console pairs
//! them as `toolseal diff` does (`toolseal_core::policy::drift::find_renames`).
//!
//! Main design decision: computed by the console from what the instance reports, beside the
//! instance's own answer, never inside it: the page can tell the instance's diff from the
//! console's hint, and an instance (the data plane) carries no review code.

use serde_json::Value;
use toolseal_core::policy::drift::find_renames;

/// `{"likely": [{"from", "to", "changes"}], "possible": [{"removed", "added"}]}` for an admin
/// API view of one server; `None` when the view has no classified diff.
pub fn of_view(view: &Value) -> Option<Value> {
    let changes = view.get("diff")?.get("changes")?.as_array()?;
    let tools = |kind: &str, side: &str| -> Vec<&Value> {
        changes
            .iter()
            .filter(|c| c.get("kind").and_then(Value::as_str) == Some(kind))
            .filter_map(|c| c.get(side))
            .collect()
    };
    let renames = find_renames(
        &tools("tool_removed", "before"),
        &tools("tool_added", "after"),
    );
    Some(renames.to_json())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolseal_core::policy::drift::diff_tools;

    #[test]
    fn an_instance_diff_names_its_likely_renames() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
        let old = [json!({"name": "add", "description": "Adds", "inputSchema": schema})];
        let new = [json!({"name": "get-sum", "description": "Sums", "inputSchema": schema})];
        let view = json!({"server": "everything", "diff": diff_tools(&old, &new).to_json()});
        let renames = of_view(&view).unwrap();
        assert_eq!(renames["likely"][0]["from"], "add");
        assert_eq!(renames["likely"][0]["to"], "get-sum");
        assert_eq!(
            renames["likely"][0]["changes"][0]["kind"],
            "description_changed"
        );
        assert_eq!(renames["possible"], json!([]));
        assert_eq!(of_view(&json!({"diff": null})), None);
    }
}
