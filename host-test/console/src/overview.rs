//! What the page polls: every server on every instance (from `GET servers`), where the
//! instances disagree, what the fleet's plugin configuration says of each server, and how
//! each instance converges after the console's recent actions.
//!
//! Main design decision: the admin views are passed to the page as the instances sent them
//! (the page renders every field it finds, so fields a later plugin adds, such as per-tool
//! state, show up without a console change); the console adds only what it alone knows: the
//! configured entry, the disagreement, the convergence of its own actions.

use super::Console;
use super::actions::Action;
use super::audit_log::now_ms;
use super::fleet_config::FleetConfig;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, VecDeque};
use toolseal_core::config::Pin;

/// Actions whose convergence the page follows.
const FOLLOWED_ACTIONS: usize = 10;

/// Fields compared across instances to tell where they disagree.
const COMPARED: [&str; 3] = ["schema_status", "baseline_fingerprint", "live_fingerprint"];

/// What an instance must show once an action reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Baseline is this fingerprint and the server is not `changed`/`pending`.
    Baseline(String),
    /// The server is quarantined.
    Quarantined,
    /// The server is not quarantined.
    Released,
}

impl Expect {
    /// Whether `view` (an admin server view) shows the expected state.
    pub fn met_by(&self, view: &Value) -> bool {
        let status = view.get("schema_status").and_then(Value::as_str);
        match self {
            Expect::Baseline(fp) => {
                view.get("baseline_fingerprint").and_then(Value::as_str) == Some(fp)
                    && matches!(status, Some("verified" | "quarantined"))
            }
            Expect::Quarantined => status == Some("quarantined"),
            Expect::Released => status.is_some() && status != Some("quarantined"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Expect::Baseline(fp) => format!("baseline {fp}, verified"),
            Expect::Quarantined => "quarantined".into(),
            Expect::Released => "not quarantined".into(),
        }
    }
}

/// An action the console wrote, followed until every instance shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRecord {
    /// When it was written (ms since the epoch).
    pub time_ms: u64,
    /// `approve`, `quarantine`, `release`.
    pub action: &'static str,
    /// The server.
    pub server: String,
    /// The ECDS version written.
    pub version: String,
    /// What converged means.
    pub expect: Expect,
    /// Whether convergence was already audited.
    pub converged_audited: bool,
}

impl Console {
    /// Remembers a written action so the page can follow it.
    pub fn record_action(&self, server: &str, action: &Action, version: &str) {
        let expect = match action {
            Action::Approve { fingerprint } => Expect::Baseline(fingerprint.clone()),
            Action::Quarantine { .. } => Expect::Quarantined,
            Action::Release => Expect::Released,
        };
        if let Ok(mut actions) = self.actions.lock() {
            actions.push_back(ActionRecord {
                time_ms: now_ms(),
                action: action.name(),
                server: server.to_owned(),
                version: version.to_owned(),
                expect,
                converged_audited: false,
            });
            while actions.len() > FOLLOWED_ACTIONS {
                actions.pop_front();
            }
        }
    }

    /// The whole state the page shows.
    pub fn overview(&self) -> Value {
        // The configuration first: it says where the admin listener reads the operator's name.
        let doc = self.fleet_config();
        let answers = self.reader().ask_all("servers");
        // server id -> instance -> view
        let mut by_server: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
        let mut instances = Vec::new();
        for (answer, instance) in answers.iter().zip(&self.fleet.instances) {
            let error = answer.result.as_ref().err();
            instances.push(json!({"name": instance.name, "admin_url": instance.admin_url.display(), "error": error}));
            let listed = answer
                .result
                .as_ref()
                .ok()
                .and_then(|v| v.get("servers"))
                .and_then(Value::as_array);
            for view in listed.into_iter().flatten() {
                if let Some(id) = view.get("server").and_then(Value::as_str) {
                    by_server
                        .entry(id.to_owned())
                        .or_default()
                        .insert(answer.instance.clone(), view.clone());
                }
            }
        }
        if let Ok(doc) = &doc {
            for id in doc.config().servers.keys() {
                by_server.entry(id.clone()).or_default();
            }
        }
        let servers: Vec<Value> = by_server
            .iter()
            .map(|(id, views)| self.server_row(id, views, &answers, doc.as_ref().ok()))
            .collect();
        let actions = self.follow_actions(&by_server);
        json!({
            "operator": self.operator,
            "ecds": self.configuration_state(doc.as_ref()),
            "instances": instances,
            "servers": servers,
            "actions": actions,
        })
    }

    /// The two ECDS files, their versions, and why they cannot be acted on, if they cannot.
    fn configuration_state(&self, doc: Result<&FleetConfig, &String>) -> Value {
        let (version, admin_version, error) = match doc {
            Ok(doc) => (
                Some(doc.agents.version.as_str()),
                Some(doc.admin.version.as_str()),
                doc.disagreement(),
            ),
            Err(e) => (None, None, Some(e.as_str())),
        };
        json!({"path": self.fleet.ecds_file.display().to_string(), "version": version,
               "admin_path": self.fleet.admin_ecds_file.display().to_string(),
               "admin_version": admin_version, "error": error})
    }

    fn server_row(
        &self,
        id: &str,
        views: &BTreeMap<String, Value>,
        answers: &[super::instances::Answer],
        doc: Option<&FleetConfig>,
    ) -> Value {
        let per_instance: Vec<Value> = answers
            .iter()
            .map(|a| match (&a.result, views.get(&a.instance)) {
                (Err(e), _) => json!({"instance": a.instance, "view": null, "error": e}),
                (Ok(_), view) => json!({"instance": a.instance, "view": view, "error": null}),
            })
            .collect();
        json!({
            "server": id,
            "instances": per_instance,
            "disagree": disagreement(views, answers.iter().filter(|a| a.result.is_ok()).count()),
            "config": doc.map_or(Value::Null, |d| configured(d, id)),
            "tools_url": self.fleet.servers.get(id).map(|s| s.tools_url.display()),
        })
    }

    fn follow_actions(&self, by_server: &BTreeMap<String, BTreeMap<String, Value>>) -> Vec<Value> {
        let Ok(mut actions) = self.actions.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut to_audit = Vec::new();
        for record in actions.iter_mut() {
            let views = by_server.get(&record.server);
            let instances: Vec<Value> = self
                .fleet
                .instances
                .iter()
                .map(|inst| {
                    let view = views.and_then(|v| v.get(&inst.name));
                    let state = match view {
                        Some(v) if record.expect.met_by(v) => "converged",
                        Some(_) => "waiting",
                        None => "not seen",
                    };
                    json!({"instance": inst.name, "state": state,
                           "schema_status": view.and_then(|v| v.get("schema_status")),
                           "baseline_fingerprint": view.and_then(|v| v.get("baseline_fingerprint"))})
                })
                .collect();
            let all = instances
                .iter()
                .all(|i| i.get("state") != Some(&json!("waiting")));
            if all && !record.converged_audited {
                record.converged_audited = true;
                to_audit.push(json!({"operator": self.operator, "action": record.action, "server": record.server,
                    "result": "converged", "ecds_version": record.version, "expected": record.expect.describe(),
                    "instances": instances.clone(), "after_ms": now_ms().saturating_sub(record.time_ms)}));
            }
            out.push(
                json!({"time_ms": record.time_ms, "action": record.action, "server": record.server,
                "version": record.version, "expected": record.expect.describe(),
                "instances": instances, "converged": all}),
            );
        }
        drop(actions);
        for event in to_audit {
            // A failed write is retried at the next poll by nobody: it is reported instead.
            if let Err(e) = self.audit.append(event) {
                eprintln!("toolseal console: {e}");
            }
        }
        out.reverse();
        out
    }
}

/// The compared fields on which the instances that answered disagree (an instance that does
/// not know the server disagrees on every field with one that does).
pub fn disagreement(views: &BTreeMap<String, Value>, answered: usize) -> Vec<&'static str> {
    COMPARED
        .iter()
        .copied()
        .filter(|field| {
            let mut values: Vec<Value> = views
                .values()
                .map(|v| v.get(*field).cloned().unwrap_or(Value::Null))
                .collect();
            if views.len() < answered && !views.is_empty() {
                values.push(json!("(not seen)"));
            }
            values.sort_by_key(Value::to_string);
            values.dedup();
            values.len() > 1
        })
        .collect()
}

/// The server's entry in the fleet's configuration: lock or pin fingerprint, quarantine.
fn configured(doc: &FleetConfig, id: &str) -> Value {
    let mut out = Map::new();
    if let Some(server) = doc.config().servers.get(id) {
        match &server.pin {
            Some(Pin::Lock {
                fingerprint, tools, ..
            }) => {
                out.insert(
                    "lock".into(),
                    json!({"fingerprint": fingerprint, "tools": tools.len()}),
                );
            }
            Some(Pin::Fingerprint(fp)) => {
                out.insert("pin".into(), json!(fp));
            }
            None => {}
        }
        out.insert("quarantine".into(), json!(server.quarantine));
    }
    Value::Object(out)
}

/// Keeps the queue type in one place for the console's state.
pub type ActionQueue = VecDeque<ActionRecord>;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn convergence_is_judged_from_the_admin_view() {
        let fp = "sha256:aa".to_string();
        let verified = json!({"schema_status": "verified", "baseline_fingerprint": fp});
        let changed = json!({"schema_status": "changed", "baseline_fingerprint": "sha256:00"});
        assert!(Expect::Baseline(fp.clone()).met_by(&verified));
        assert!(!Expect::Baseline(fp.clone()).met_by(&changed));
        let held = json!({"schema_status": "quarantined", "baseline_fingerprint": fp});
        assert!(Expect::Baseline(fp).met_by(&held));
        assert!(Expect::Quarantined.met_by(&held));
        assert!(!Expect::Released.met_by(&held));
        assert!(Expect::Released.met_by(&changed));
    }

    #[test]
    fn disagreement_names_the_fields_that_differ() {
        let a = json!({"schema_status": "changed", "baseline_fingerprint": "sha256:1", "live_fingerprint": "sha256:2"});
        let b = json!({"schema_status": "verified", "baseline_fingerprint": "sha256:1", "live_fingerprint": "sha256:1"});
        let views: BTreeMap<String, Value> = [("x".into(), a.clone()), ("y".into(), b)].into();
        assert_eq!(
            disagreement(&views, 2),
            ["schema_status", "live_fingerprint"]
        );
        let same: BTreeMap<String, Value> =
            [("x".into(), a.clone()), ("y".into(), a.clone())].into();
        assert!(disagreement(&same, 2).is_empty());
        let one: BTreeMap<String, Value> = [("x".into(), a)].into();
        assert_eq!(disagreement(&one, 2).len(), 3);
        assert!(disagreement(&BTreeMap::new(), 2).is_empty());
    }
}
