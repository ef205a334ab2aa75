//! What the gateway would serve of the candidate, for a report made with the plugin
//! configuration (`toolseal report --config CONFIG.json --server ID`): under the server's
//! `drift_scope`, which tools keep serving while the drift awaits review and which are
//! withheld (and why); under the policy, which callers are shown each tool.
//!
//! Main design decision: no second implementation. The page asks the functions the plugin
//! decides with (`toolseal_core::policy::containment::classify`, `Policy::visibility`), with the
//! configuration's own fingerprint fields, so what a reviewer reads is what the gateway does.

use super::escape;
use serde_json::Value;
use std::fmt::Write as _;
use toolseal_core::config::Config;
use toolseal_core::policy::approved::Approved;
use toolseal_core::policy::containment::DriftScope;
use toolseal_core::policy::containment::{ToolChange, classify};
use toolseal_core::policy::fingerprint::digest_tools;
use toolseal_core::policy::rules::Visibility;

/// The configuration a report is made with, and the server it reviews.
pub struct ReportConfig {
    /// The server id (a key of `servers`, or any id: unlisted servers get the defaults).
    pub server: String,
    /// The validated configuration.
    pub config: Config,
    /// The configuration's `policy.rules`, as written (shown beside the tools they decide).
    pub rules: Vec<Value>,
}

impl ReportConfig {
    /// Reads and validates `bytes` (the plugin's own parser); `server` may be left out when
    /// the configuration lists exactly one server. The error says what to fix in the file.
    pub fn parse(bytes: &[u8], source: &str, server: Option<&str>) -> Result<ReportConfig, String> {
        let config = Config::parse(bytes).map_err(|e| format!("{source}: {e}"))?;
        let server = match (server, config.servers.keys().collect::<Vec<_>>().as_slice()) {
            (Some(id), _) => id.to_owned(),
            (None, [only]) => (*only).clone(),
            (None, _) => {
                return Err(format!(
                    "{source} lists {} servers: name the one under review with --server ID",
                    config.servers.len()
                ));
            }
        };
        let raw: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let rules = raw
            .pointer("/policy/rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(ReportConfig {
            server,
            config,
            rules,
        })
    }
}

/// One row of the serving table: a tool, whether it is served, and why not.
fn row(out: &mut String, tool: &str, served: bool, why: &str) {
    let state = if served { "served" } else { "withheld" };
    let _ = writeln!(
        out,
        "<tr class=\"{state}\"><td><code>{}</code></td><td><span class=\"badge {state}\">{state}</span></td><td>{}</td></tr>",
        escape(tool),
        escape(why)
    );
}

/// The section saying what the gateway serves while the drift from `old` to `new` awaits
/// review.
pub fn serving_section(out: &mut String, context: &ReportConfig, old: &[Value], new: &[Value]) {
    let fields = &context.config.fingerprint;
    let scope = context.config.drift_scope_of(&context.server);
    let _ = write!(
        out,
        "<section class=\"serving\"><h2>What the gateway serves until the candidate is approved</h2>\n<p class=\"scope\">server <code>{}</code>, <code>drift_scope: \"{}\"</code>: ",
        escape(&context.server),
        scope.as_str()
    );
    let sets = (
        digest_tools(&Value::Array(old.to_vec()), fields),
        digest_tools(&Value::Array(new.to_vec()), fields),
    );
    let (old_set, new_set) = match sets {
        (Ok(old_set), Ok(new_set)) => (old_set, new_set),
        (Err(e), _) => {
            let _ = writeln!(
                out,
                "the baseline is not a valid tool set ({}).</p></section>",
                escape(&e.to_string())
            );
            return;
        }
        (_, Err(e)) => {
            let _ = writeln!(
                out,
                "the candidate is not a valid tool set ({}), so the drift cannot be told tool by tool: the whole server is closed.</p></section>",
                escape(&e.to_string())
            );
            return;
        }
    };
    if old_set.fingerprint() == new_set.fingerprint() {
        out.push_str("the candidate is the baseline: every tool is served.</p></section>\n");
        return;
    }
    if scope == DriftScope::Server {
        out.push_str("any drift closes the whole server: no tool is served and every call is refused (<code>SCHEMA_CHANGED</code>) until an admin approves the candidate.</p></section>\n");
        return;
    }
    let Some(baseline) = Approved::from_definitions(&old_set.fingerprint(), old.to_vec(), fields)
    else {
        out.push_str("the baseline's definitions do not form a set: the whole server is closed.</p></section>\n");
        return;
    };
    let differing = classify(&baseline, &new_set, true);
    out.push_str("the tools the drift reaches are withheld and their calls refused (<code>TOOL_CHANGED</code>); the others keep serving.</p>\n<table class=\"overview\"><tr><th>tool</th><th>state</th><th>why</th></tr>\n");
    for (name, _) in &new_set.entries {
        let change = if differing.added.contains(name) {
            Some(ToolChange::Added)
        } else if differing.changed.contains(name) {
            Some(ToolChange::Changed)
        } else {
            None
        };
        match change {
            Some(ToolChange::Added) => row(out, name, false, "new: not in the baseline"),
            Some(_) => row(out, name, false, "changed since the baseline"),
            None => row(out, name, true, "the same as in the baseline"),
        }
    }
    for name in &differing.removed {
        row(
            out,
            name,
            false,
            "removed: the candidate no longer lists it",
        );
    }
    out.push_str("</table></section>\n");
}

/// The section saying which callers are shown each candidate tool (nothing when the policy
/// hides no tool from anyone).
pub fn visibility_section(out: &mut String, context: &ReportConfig, new: &[Value]) {
    let policy = &context.config.policy;
    if !policy.may_hide() {
        return;
    }
    out.push_str("<section class=\"visibility\"><h2>Who is shown each tool</h2>\n<p>A caller is not listed a tool that policy refuses it whatever the arguments.</p>\n<table class=\"overview\"><tr><th>tool</th><th>listed for</th><th>deciding rules</th></tr>\n");
    let mut named: Vec<(&str, &Value)> = new
        .iter()
        .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
        .collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    for (name, tool) in named {
        let annotations = tool.get("annotations");
        let (who, rules) = match policy.visibility(&context.server, name, annotations) {
            Visibility::Everyone => ("every caller".to_owned(), String::new()),
            Visibility::Nobody => ("no caller: every call is refused".to_owned(), String::new()),
            Visibility::Depends(indices) => {
                let rules: Vec<String> = indices
                    .iter()
                    .map(|&i| {
                        let rule = context
                            .rules
                            .get(i)
                            .map_or_else(String::new, Value::to_string);
                        format!("<code>rules[{i}]</code> <code>{}</code>", escape(&rule))
                    })
                    .collect();
                (
                    "the callers these rules' principals let through".to_owned(),
                    rules.join("<br>"),
                )
            }
        };
        let _ = writeln!(
            out,
            "<tr class=\"visible\"><td><code>{}</code></td><td>{}</td><td class=\"detail\">{rules}</td></tr>",
            escape(name),
            escape(&who)
        );
    }
    out.push_str("</table></section>\n");
}
