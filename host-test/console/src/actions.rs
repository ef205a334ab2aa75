//! Approve, quarantine and release, through the fleet's plugin configuration.
//!
//! Main design decision: an action is a change to `servers.<id>` in the fleet's plugin
//! configuration — both ECDS resources, the agents' listener's and the admin listener's — so
//! it reaches every instance through the control plane and outlives restarts; the admin APIs
//! are only read. An approval is bound to the fingerprint the operator reviewed: every
//! instance is read again just before the write, and if any of them now holds another live
//! set (or cannot be read) nothing is written. The lock written is built the way `toolseal
//! pin` builds it, from definitions that hash to the reviewed fingerprint (stored by an
//! instance, else listed from the server). Every attempt, refused or written, goes to the
//! audit log with the operator, the fingerprint and what each instance showed; the
//! instances' convergence is then followed on the page.

use super::Console;
use super::candidates::{ToolSet, is_fingerprint, tool_set};
use super::ecds::EntryChange;
use super::fleet_config::{FleetConfig, Versions};
use super::instances::Reader;
use serde_json::{Value, json};
use toolseal_core::policy::fingerprint::ToolDigests;

/// A server's config entry pinning `tools` (whose digests are `set`) as a full lock:
/// `{"lock": {"fingerprint", "tools"}}`. `toolseal pin` prints it under `servers`;
/// `toolseal console` writes it into the fleet's plugin configuration when an operator
/// approves.
pub fn lock_entry(set: &ToolDigests, tools: Vec<Value>) -> Value {
    json!({"lock": {"fingerprint": set.fingerprint(), "tools": tools}})
}

/// Longest quarantine reason accepted.
const MAX_REASON_CHARS: usize = 500;

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Re-baseline every instance to the reviewed candidate (a lock in config).
    Approve {
        /// The candidate fingerprint the operator reviewed.
        fingerprint: String,
    },
    /// Hold the server on every instance.
    Quarantine {
        /// Why (recorded in config and shown by every instance).
        reason: String,
    },
    /// Lift the configured quarantine.
    Release,
}

impl Action {
    /// `approve`, `quarantine` or `release`.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Approve { .. } => "approve",
            Action::Quarantine { .. } => "quarantine",
            Action::Release => "release",
        }
    }

    /// Reads an action from its name and the JSON body the page sent.
    pub fn parse(name: &str, body: &Value) -> Result<Action, String> {
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::trim);
        match name {
            "approve" => match text("fingerprint") {
                Some(fp) if is_fingerprint(fp) => Ok(Action::Approve {
                    fingerprint: fp.to_owned(),
                }),
                _ => Err(
                    "approve needs {\"fingerprint\": \"sha256:…\"}: the candidate you reviewed"
                        .into(),
                ),
            },
            "quarantine" => match text("reason") {
                Some(r) if !r.is_empty() && r.chars().count() <= MAX_REASON_CHARS => {
                    Ok(Action::Quarantine {
                        reason: r.to_owned(),
                    })
                }
                _ => Err(format!(
                    "quarantine needs {{\"reason\": \"…\"}}: 1 to {MAX_REASON_CHARS} characters saying why"
                )),
            },
            "release" => Ok(Action::Release),
            other => Err(format!(
                "unknown action {other:?}; expected approve, quarantine or release"
            )),
        }
    }
}

/// The answer to an action: HTTP status and JSON body for the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// 200 written, 409 refused (state moved or not reviewable), 502 an instance unreadable,
    /// 500 the configuration could not be written.
    pub status: u16,
    /// `{"result", "message", "version"?}`.
    pub body: Value,
}

/// What each instance shows of `server` now: `(observed list for the audit, views, problems)`.
fn observe(reader: &Reader<'_>, server: &str) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    let mut observed = Vec::new();
    let mut views = Vec::new();
    let mut unreadable = Vec::new();
    for (instance, result) in reader.server_views(server) {
        match result {
            Ok(Some(view)) => {
                observed.push(json!({
                    "instance": instance,
                    "schema_status": view.get("schema_status"),
                    "baseline_fingerprint": view.get("baseline_fingerprint"),
                    "live_fingerprint": view.get("live_fingerprint"),
                }));
                views.push(json!({"instance": instance, "view": view}));
            }
            Ok(None) => {
                observed.push(json!({"instance": instance, "schema_status": null, "seen": false}))
            }
            Err(e) => {
                observed.push(json!({"instance": instance, "error": e}));
                unreadable.push(format!("{instance}: {e}"));
            }
        }
    }
    (observed, views, unreadable)
}

/// Why an approval of `fingerprint` must not go on, given every instance's view.
pub fn approval_conflict(views: &[Value], fingerprint: &str) -> Option<String> {
    let mut seen_by_one = false;
    for entry in views {
        let instance = entry.get("instance").and_then(Value::as_str).unwrap_or("?");
        let view = entry.get("view").unwrap_or(&Value::Null);
        if view.get("live_invalid").and_then(Value::as_bool) == Some(true) {
            return Some(format!(
                "{instance} holds an invalid live tool set; nothing to approve there"
            ));
        }
        match view.get("live_fingerprint").and_then(Value::as_str) {
            Some(live) if live == fingerprint => seen_by_one = true,
            Some(live) => {
                return Some(format!(
                    "{instance} has moved on: its live tool set is {live}, not the reviewed \
                     {fingerprint}; review the new candidate"
                ));
            }
            None => {}
        }
    }
    if seen_by_one {
        None
    } else {
        Some(format!(
            "no instance reports {fingerprint} as its live tool set"
        ))
    }
}

/// Why a lock of `fingerprint` would approve nothing: on an instance where it is the
/// baseline already and a view's list awaits review, the candidate differs from the baseline
/// only in the names that view is listed (the catalogue is the same), and a configured lock
/// equal to the baseline changes nothing there. The admin API's approve records the names.
pub fn names_only_candidate(views: &[Value], server: &str, fingerprint: &str) -> Option<String> {
    let names_only: Vec<&str> = views
        .iter()
        .filter(|entry| {
            let view = entry.get("view").unwrap_or(&Value::Null);
            view.get("baseline_fingerprint").and_then(Value::as_str) == Some(fingerprint)
                && view.get("drifted_view").is_some_and(|d| !d.is_null())
        })
        .map(|entry| entry.get("instance").and_then(Value::as_str).unwrap_or("?"))
        .collect();
    if names_only.is_empty() {
        return None;
    }
    Some(format!(
        "{fingerprint} is already the baseline on {}: what awaits review there is the names a \
         kind of caller is listed (drifted_view), not a new tool set, and a lock of the same set \
         changes nothing; approve it through the admin API of each of them (POST \
         {{prefix}}servers/{server}/approve with {{\"fingerprint\": \"{fingerprint}\"}}, \
         docs/views.md)",
        names_only.join(", ")
    ))
}

impl Console {
    /// Carries out `action` on `server` for the operator and audits it.
    pub fn act(&self, server: &str, action: &Action) -> Outcome {
        // One action at a time: each reads the configuration, the instances, then writes.
        let _serial = self.action_lock.lock();
        let config = self.fleet_config();
        let reader = self.reader();
        // Obtaining the candidate can take the longest (it may be listed from the server): it
        // comes first, so that the instances are read last, just before the write.
        let candidate = match (action, &config) {
            (Action::Approve { fingerprint }, Ok(config)) => Some(tool_set(
                self,
                &reader,
                server,
                fingerprint,
                &config.config().fingerprint,
                true,
            )),
            _ => None,
        };
        let (observed, views, unreadable) = observe(&reader, server);
        let result = if unreadable.is_empty() {
            config
                .map_err(|e| (500, e))
                .and_then(|config| self.write_action(&config, server, action, &views, candidate))
        } else {
            Err((
                502,
                format!(
                    "refused: every instance must be read before a change; unreadable: {}",
                    unreadable.join("; ")
                ),
            ))
        };
        let (status, result_name, message, versions) = match result {
            Ok((versions, message)) => (200, "written", message, Some(versions)),
            Err((status, message)) => (status, "refused", message, None),
        };
        let version = versions.as_ref().map(|v| v.agents.clone());
        let mut event = json!({
            "operator": self.operator, "action": action.name(), "server": server,
            "observed": observed, "result": result_name, "message": message,
            "ecds_file": self.fleet.ecds_file.display().to_string(), "ecds_version": version,
            "admin_ecds_file": self.fleet.admin_ecds_file.display().to_string(),
            "admin_ecds_version": versions.as_ref().map(|v| v.admin.clone()),
        });
        if let (Some(map), Action::Approve { fingerprint }) = (event.as_object_mut(), action) {
            map.insert("fingerprint".into(), json!(fingerprint));
        }
        if let (Some(map), Action::Quarantine { reason }) = (event.as_object_mut(), action) {
            map.insert("reason".into(), json!(reason));
        }
        if let Err(e) = self.audit.append(event) {
            return Outcome {
                status: 500,
                body: json!({"result": "error", "message": format!("{message}; but the audit log failed: {e}")}),
            };
        }
        if let Some(version) = &version {
            self.record_action(server, action, version);
        }
        Outcome {
            status,
            body: json!({"result": result_name, "message": message, "version": version}),
        }
    }

    /// Writes the change (an approval's lock from `candidate`) to both resources of
    /// `config`; `(versions, message)` or `(status, why not)`.
    fn write_action(
        &self,
        config: &FleetConfig,
        server: &str,
        action: &Action,
        views: &[Value],
        candidate: Option<Result<ToolSet, String>>,
    ) -> Result<(Versions, String), (u16, String)> {
        if let Some(why) = config.disagreement() {
            return Err((409, format!("refused: {why}")));
        }
        let (change, message) = match action {
            Action::Approve { fingerprint } => {
                if let Some(conflict) = approval_conflict(views, fingerprint) {
                    return Err((409, format!("refused: {conflict}")));
                }
                if let Some(why) = names_only_candidate(views, server, fingerprint) {
                    return Err((409, format!("refused: {why}")));
                }
                let set = candidate
                    .unwrap_or_else(|| Err("the candidate was not read".into()))
                    .map_err(|e| (409, format!("refused: {e}")))?;
                let count = set.tools.len();
                // A catalogue that seals more than tools is locked whole, named by its
                // surface fingerprint (the server's `seal` must name what it seals, which
                // the plugin's parser checks before anything is written).
                let lock = match set.surface {
                    Some(Value::Object(surface)) => {
                        let mut lock = serde_json::Map::new();
                        lock.insert("fingerprint".into(), json!(fingerprint));
                        lock.extend(surface);
                        Value::Object(lock)
                    }
                    _ => lock_entry(&set.digests, set.tools)
                        .get("lock")
                        .cloned()
                        .unwrap_or(Value::Null),
                };
                (
                    EntryChange::Lock(lock),
                    format!(
                        "locked {server} to {fingerprint} ({count} tools) in the fleet's plugin configuration"
                    ),
                )
            }
            Action::Quarantine { reason } => (
                EntryChange::Quarantine(reason.clone()),
                format!("quarantined {server} in the fleet's plugin configuration"),
            ),
            Action::Release => {
                if config
                    .agents
                    .server_entry(server)
                    .and_then(|e| e.get("quarantine"))
                    .is_none()
                {
                    return Err((
                        409,
                        format!(
                            "refused: {server} has no quarantine in the fleet's plugin configuration (a quarantine set through one instance's admin API is released there)"
                        ),
                    ));
                }
                (
                    EntryChange::Release,
                    format!("released {server} in the fleet's plugin configuration"),
                )
            }
        };
        let versions = config
            .write_change(server, &change)
            .map_err(|e| (if e.starts_with("refused:") { 409 } else { 500 }, e))?;
        let message = format!("{message} (ECDS version {})", versions.agents);
        Ok((versions, message))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const FP_A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const FP_B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn view(instance: &str, live: Option<&str>) -> Value {
        json!({"instance": instance, "view": {"schema_status": "changed", "live_fingerprint": live, "live_invalid": false}})
    }

    #[test]
    fn a_candidate_that_differs_only_in_a_views_names_is_not_approved_by_a_lock() {
        let names_only = json!({"instance": "a", "view": {"schema_status": "changed",
            "baseline_fingerprint": FP_A, "live_fingerprint": FP_A,
            "drifted_view": {"key": "k", "names": ["x"]}}});
        let grown = json!({"instance": "b", "view": {"schema_status": "changed",
            "baseline_fingerprint": FP_B, "live_fingerprint": FP_A,
            "drifted_view": {"key": "k", "names": ["x"]}}});
        let why = names_only_candidate(&[names_only.clone(), grown.clone()], "srv", FP_A).unwrap();
        assert!(
            why.starts_with(&format!("{FP_A} is already the baseline on a: ")),
            "{why}"
        );
        assert!(why.contains("POST {prefix}servers/srv/approve"), "{why}");
        // A new catalogue on every instance: the lock approves it.
        assert_eq!(names_only_candidate(&[grown], "srv", FP_A), None);
        // The baseline with no list awaiting review: nothing to refuse.
        let settled = json!({"instance": "c", "view": {"schema_status": "verified",
            "baseline_fingerprint": FP_A, "live_fingerprint": FP_A, "drifted_view": null}});
        assert_eq!(names_only_candidate(&[settled], "srv", FP_A), None);
    }

    #[test]
    fn an_approval_is_bound_to_the_reviewed_fingerprint_on_every_instance() {
        assert_eq!(
            approval_conflict(&[view("a", Some(FP_A)), view("b", Some(FP_A))], FP_A),
            None
        );
        // An instance that has not listed the server yet has not moved on.
        assert_eq!(
            approval_conflict(&[view("a", Some(FP_A)), view("b", None)], FP_A),
            None
        );
        let moved =
            approval_conflict(&[view("a", Some(FP_A)), view("b", Some(FP_B))], FP_A).unwrap();
        assert!(
            moved.starts_with("b has moved on: its live tool set is sha256:bbbb"),
            "{moved}"
        );
        let nobody = approval_conflict(&[view("a", None)], FP_A).unwrap();
        assert!(nobody.contains("no instance reports"), "{nobody}");
        let invalid =
            json!({"instance": "a", "view": {"live_invalid": true, "live_fingerprint": FP_A}});
        assert!(
            approval_conflict(&[invalid], FP_A)
                .unwrap()
                .contains("invalid live tool set")
        );
    }

    #[test]
    fn actions_are_read_from_the_page_strictly() {
        assert_eq!(
            Action::parse("approve", &json!({"fingerprint": FP_A})).unwrap(),
            Action::Approve {
                fingerprint: FP_A.into()
            }
        );
        assert!(Action::parse("approve", &json!({"fingerprint": "sha256:xyz"})).is_err());
        assert!(Action::parse("approve", &json!({})).is_err());
        assert_eq!(
            Action::parse("quarantine", &json!({"reason": " incident 42 "})).unwrap(),
            Action::Quarantine {
                reason: "incident 42".into()
            }
        );
        assert!(Action::parse("quarantine", &json!({"reason": "  "})).is_err());
        assert!(Action::parse("quarantine", &json!({"reason": "x".repeat(501)})).is_err());
        assert_eq!(
            Action::parse("release", &json!({})).unwrap(),
            Action::Release
        );
        assert!(
            Action::parse("delete", &json!({}))
                .unwrap_err()
                .contains("unknown action")
        );
    }
}
