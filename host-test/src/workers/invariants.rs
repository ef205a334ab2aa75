//! What every schedule of a multi-worker replay must hold, checked after it ran.
//!
//! Main design decision: two kinds of checks. Absolute ones need no reference: no
//! `schema.changed` that closes a server on its own baseline, no server closed as
//! `changed` against the only tool set it was ever listed, no worker faulted. The relative
//! one asks the single-worker [`Reference`] for one interleaving of the same exchanges
//! that serves every list as the schedule did (whole, filtered or refused), forwards every
//! request it forwarded, delivers every tool it delivered and ends with the same records.
//! When there is none, the violation is named after where the closest interleaving parts
//! from the schedule: a request forwarded that it refuses, a tool delivered that it
//! withholds, a list served otherwise, or the same answers ending in other records (an
//! update lost).

use super::reference::{
    Mismatch, Reference, Step, Target, departure, request_outcome, response_outcome,
};
use super::scenario::Scenario;
use super::schedule_run::ScheduleRun;
use super::signature::{RECORD_PREFIX, final_state, records};
use crate::cli::tool_source::{listed_tools, tools_from_transcript};
use crate::replay::records::PluginRecord;
use anyhow::Result;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};

/// The most steps the reference replays for a schedule that already broke an absolute
/// invariant.
const BROKEN_SCHEDULE_BUDGET: usize = 256;

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
        if run.failures.is_empty() {
            // A schedule already known broken is not worth a long search for a reference.
            let budget = if found.is_empty() {
                usize::MAX
            } else {
                BROKEN_SCHEDULE_BUDGET
            };
            let target = self.target(run);
            if let Some(mismatch) = self.reference.explain(&target, budget)? {
                found.push(self.not_sequential(run, &target, &mismatch));
            }
        }
        Ok(found)
    }

    /// What the schedule did, phase by phase.
    fn target(&self, run: &ScheduleRun) -> Target {
        let mut target = Target {
            final_state: final_state(&run.store),
            ..Target::default()
        };
        for unit in &run.units {
            let Some((_, recorded)) = self.scenario.unit(unit.unit) else {
                continue;
            };
            let outcome = &unit.report.outcome;
            let request = Step {
                unit: unit.unit,
                response: false,
            };
            let response = Step {
                unit: unit.unit,
                response: true,
            };
            target.phases.insert(request, request_outcome(outcome));
            target
                .phases
                .insert(response, response_outcome(recorded, outcome, self.fields));
            target.order.insert(
                request,
                effect(run, unit.worker, unit.request_accesses.clone()),
            );
            target.order.insert(
                response,
                effect(run, unit.worker, unit.response_accesses.clone()),
            );
        }
        target
    }

    /// The violation for a schedule no single-worker interleaving explains, named after
    /// where the closest interleaving parts from it.
    fn not_sequential(&self, run: &ScheduleRun, target: &Target, m: &Mismatch) -> Violation {
        let bound = if m.bounded {
            " (the search stopped at its budget; not every interleaving was tried)"
        } else {
            ""
        };
        let Some(step) = m.step else {
            return Violation {
                invariant: "lost-update",
                at: None,
                detail: format!(
                    "the records end as {}; the closest single-worker interleaving agrees on all {} phases but ends with {}{bound}",
                    target.final_state, m.agreed, m.reference.signature
                ),
            };
        };
        let at = run.units.iter().find(|u| u.unit == step.unit).map(|u| At {
            worker: u.worker,
            transcript: u.report.transcript.clone(),
            seq: u.report.seq.clone(),
        });
        let ours = target.phases.get(&step).cloned().unwrap_or_default();
        let invariant = departure(&ours, &m.reference).unwrap_or("list-not-sequential");
        let phase = if step.response { "response" } else { "request" };
        Violation {
            invariant,
            at,
            detail: format!(
                "no single-worker interleaving of these exchanges explains this schedule: the closest agrees on {} phases, then decides this {phase} as {} where the schedule decided {}{bound}",
                m.agreed, m.reference.signature, ours.signature
            ),
        }
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

/// Where a phase of `worker` (its accesses lie in `range`) took effect: its last write to
/// a server record, else its last read of one, else its end.
fn effect(run: &ScheduleRun, worker: usize, range: Range<usize>) -> usize {
    let on_record = |i: &usize| {
        run.trace
            .get(*i)
            .is_some_and(|a| a.worker == worker && a.key.starts_with(RECORD_PREFIX))
    };
    let written = |i: &usize| {
        run.trace
            .get(*i)
            .is_some_and(|a| a.op == "set" && a.answer.starts_with("written"))
    };
    let end = range.end;
    range
        .clone()
        .rev()
        .find(|i| on_record(i) && written(i))
        .or_else(|| range.rev().find(on_record))
        .unwrap_or(end)
}

/// `schema.changed` events that close a server (from any status but `changed`) on a live
/// set that is its baseline: a drift that is none. (A server already `changed` stays so
/// when its baseline is listed again: `changed` is sticky, and that event is no new drift.)
fn false_drifts(run: &ScheduleRun) -> Vec<Violation> {
    let mut found = Vec::new();
    for unit in &run.units {
        for record in &unit.report.records {
            let PluginRecord::Audit(event) = record else {
                continue;
            };
            let live = event.get("live").and_then(Value::as_str);
            if event.get("event").and_then(Value::as_str) == Some("schema.changed")
                && event.get("status_before").and_then(Value::as_str) != Some("changed")
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
