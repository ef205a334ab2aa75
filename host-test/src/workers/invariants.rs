//! What every schedule of a multi-worker replay must hold, checked after it ran.
//!
//! Main design decision: two kinds of checks. Absolute ones need no reference: no
//! `schema.changed` whose live set is its baseline, no server closed as `changed` against
//! the only tool set it was ever listed, no worker faulted. Relative ones compare with the
//! single-worker [`Reference`]: every exchange (a list served whole, filtered or refused; a
//! call forwarded or refused) must be answered as one worker answers it in some order of
//! the same exchanges, no request may reach the upstream that every order refuses, no tool
//! may reach a client that no order delivers, and the records must end as some order ends
//! them (no update lost).

use super::reference::{Found, Reference};
use super::scenario::Scenario;
use super::schedule_run::ScheduleRun;
use super::signature::{delivered_tools, exchange_signature, final_state, records};
use crate::cli::tool_source::{listed_tools, tools_from_transcript};
use crate::replay::records::PluginRecord;
use anyhow::Result;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};

/// One invariant a schedule broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant (docs/host-test.md lists them).
    pub invariant: &'static str,
    /// The worker and exchange it is about, when it is about one.
    pub at: Option<At>,
    /// What happened.
    pub detail: String,
}

/// Where a violation happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    /// The worker.
    pub worker: usize,
    /// The transcript.
    pub transcript: String,
    /// The exchange's `seq`.
    pub seq: Value,
}

/// What the checks need besides the run.
pub struct Checks<'a, 'r> {
    /// The scenario the run replayed.
    pub scenario: &'a Scenario,
    /// The server id every exchange is answered as, when one is set (`--server`).
    pub server: Option<&'a str>,
    /// The fingerprint fields of the configuration.
    pub fields: &'a FingerprintFields,
    /// The single-worker reference.
    pub reference: &'a mut Reference<'r>,
}

impl Checks<'_, '_> {
    /// Every invariant `run` broke.
    pub fn violations(&mut self, run: &ScheduleRun) -> Result<Vec<Violation>> {
        let mut found = Vec::new();
        for (worker, why) in &run.failures {
            found.push(Violation {
                invariant: "worker-failed",
                at: None,
                detail: format!("worker {worker}: {why}"),
            });
        }
        found.extend(false_drifts(run));
        found.extend(self.closed_unchanged(run));
        for unit in &run.units {
            found.extend(self.unit_violations(unit)?);
        }
        if run.failures.is_empty() {
            let state = final_state(&run.store);
            if let Some(why) = missing(self.reference.ends_with(&state)?) {
                found.push(Violation {
                    invariant: "lost-update",
                    at: None,
                    detail: format!("the records end as {state}, which {why}"),
                });
            }
        }
        Ok(found)
    }

    fn unit_violations(
        &mut self,
        unit: &super::schedule_run::UnitReport,
    ) -> Result<Vec<Violation>> {
        let mut found = Vec::new();
        let at = At {
            worker: unit.worker,
            transcript: unit.report.transcript.clone(),
            seq: unit.report.seq.clone(),
        };
        let Some((_, recorded)) = self.scenario.unit(unit.unit) else {
            return Ok(found);
        };
        let id = unit.unit;
        if unit.report.outcome.upstream_contacted
            && let Some(why) = missing(self.reference.forwards(id)?)
        {
            found.push(violation(
                "forwarded-refused",
                &at,
                format!("the request reached the upstream, which {why}"),
            ));
        }
        if let Some(tools) = delivered_tools(recorded, &unit.report, self.fields) {
            for (name, digest) in tools {
                if let Some(why) = missing(self.reference.delivers(id, &digest)?) {
                    found.push(violation(
                        "drifted-tool-delivered",
                        &at,
                        format!("the client received tool {name:?} ({digest}), which {why}"),
                    ));
                }
            }
        }
        let signature = exchange_signature(&unit.report);
        if let Some(why) = missing(self.reference.has_signature(id, &signature)?) {
            let invariant = if listed_tools(recorded).1 {
                "list-not-sequential"
            } else {
                "exchange-not-sequential"
            };
            found.push(violation(
                invariant,
                &at,
                format!("the exchange ended as {signature}, which {why}"),
            ));
        }
        Ok(found)
    }

    /// A server closed as `changed` whose baseline is the only tool set any of its lists
    /// ever had.
    fn closed_unchanged(&self, run: &ScheduleRun) -> Vec<Violation> {
        let listed = self.listed_fingerprints();
        records(&run.store)
            .into_iter()
            .filter(|(_, record)| record.get("status").and_then(Value::as_str) == Some("changed"))
            .filter_map(|(server, record)| {
                let seen = listed.get(&server)?;
                let only = seen.iter().next().filter(|_| seen.len() == 1)?;
                let baseline = record.get("baseline").and_then(Value::as_str)?;
                (baseline == only).then(|| Violation {
                    invariant: "closed-unchanged",
                    at: None,
                    detail: format!(
                        "server {server:?} ends `changed` though every list it answered had the fingerprint {only}, its baseline: {record}"
                    ),
                })
            })
            .collect()
    }

    /// The fingerprints of every complete listing the scenario's recordings hold, by
    /// server id (the upstream's answers, read natively).
    fn listed_fingerprints(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for step in self.scenario.phases.iter().flatten() {
            let server = self
                .server
                .map_or_else(|| step.transcript.clone(), str::to_owned);
            for end in 1..=step.exchanges.len() {
                let Some(prefix) = step.exchanges.get(..end) else {
                    continue;
                };
                let answers_list = prefix.last().is_some_and(|e| listed_tools(e).1);
                let Some(tools) = answers_list
                    .then(|| tools_from_transcript(prefix).ok())
                    .flatten()
                else {
                    continue;
                };
                let fingerprint = digest_tools(&Value::Array(tools), self.fields)
                    .map_or_else(|e| format!("invalid: {e}"), |d| d.fingerprint());
                listed
                    .entry(server.clone())
                    .or_default()
                    .insert(fingerprint);
            }
        }
        listed
    }
}

fn violation(invariant: &'static str, at: &At, detail: String) -> Violation {
    Violation {
        invariant,
        at: Some(at.clone()),
        detail,
    }
}

/// Why a reference answer is a violation, or `None` when some order agrees.
fn missing(found: Found) -> Option<String> {
    match found {
        Found::Yes => None,
        Found::No => Some("no single-worker order of the same exchanges does".into()),
        Found::NotWithin(n) => Some(format!(
            "none of the {n} single-worker orders replayed does (the bound stopped the search)"
        )),
    }
}

/// `schema.changed` events whose live fingerprint is their baseline: a drift that is none.
fn false_drifts(run: &ScheduleRun) -> Vec<Violation> {
    let mut found = Vec::new();
    for unit in &run.units {
        for record in &unit.report.records {
            let PluginRecord::Audit(event) = record else {
                continue;
            };
            let live = event.get("live").and_then(Value::as_str);
            if event.get("event").and_then(Value::as_str) == Some("schema.changed")
                && live.is_some()
                && live == event.get("baseline").and_then(Value::as_str)
            {
                found.push(Violation {
                    invariant: "false-drift",
                    at: Some(At {
                        worker: unit.worker,
                        transcript: unit.report.transcript.clone(),
                        seq: unit.report.seq.clone(),
                    }),
                    detail: format!("schema.changed with live = baseline: {event}"),
                });
            }
        }
    }
    found
}
