//! What every fleet run must hold, checked against the scenario and the reference
//! (unperturbed) run.
//!
//! Main design decision: the checks read what a client and the store would see (the tools a
//! list delivered, whether a request was forwarded, the store's record after each step),
//! never the plugin's word for it, so a plugin that served before the store's yes is caught
//! by what the store held when the list left.

use super::perturb::Perturbation;
use super::{Fleet, Run};
use crate::replay::ExchangeReport;
use crate::replay::exchange::Stop;
use crate::replay::records::PluginRecord;
use serde_json::Value;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};
use toolseal_core::wire::json::parse_strict;

/// One invariant a run broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant (docs/host-test.md lists them).
    pub invariant: &'static str,
    /// The perturbation of the run.
    pub perturbation: String,
    /// The step it is about, when it is about one.
    pub step: Option<usize>,
    /// What happened.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} under {}", self.invariant, self.perturbation)?;
        if let Some(step) = self.step {
            write!(f, " at step {step}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What a client got from one exchange, in a form two runs compare: a local answer (status
/// and error code), the names of the tools a list delivered, `forwarded`, or `stalled`.
pub fn verdict(report: &ExchangeReport) -> String {
    let outcome = &report.outcome;
    if let Some(Stop::Stalled(why)) = &outcome.stop {
        return format!("stalled: {why}");
    }
    if let Some(reply) = &outcome.local_response {
        let body = parse_strict(&reply.body, 128).unwrap_or(Value::Null);
        let code = body
            .pointer("/result/structuredContent/error_code")
            .or_else(|| body.pointer("/error/code"))
            .map_or_else(String::new, Value::to_string);
        return format!("local {} {code}", reply.status);
    }
    match delivered_tools(&outcome.response_body) {
        Some(tools) => {
            let names: Vec<&str> = tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect();
            format!("tools {names:?}")
        }
        None if outcome.upstream_contacted => "forwarded".into(),
        None => "not forwarded".into(),
    }
}

/// The tools of a `tools/list` answer a client received (SSE or JSON), if it is one.
pub fn delivered_tools(body: &[u8]) -> Option<Vec<Value>> {
    let text = String::from_utf8_lossy(body);
    let message = text
        .lines()
        .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .map_or_else(
            || parse_strict(body, 128).ok(),
            |d| parse_strict(d.trim().as_bytes(), 128).ok(),
        )?;
    message.pointer("/result/tools")?.as_array().cloned()
}

/// The tools of the first list the run served: the fleet's baseline, every later list is
/// judged against it. (Not the scenario's first list: under an outage that one is answered
/// closed and recorded nowhere, and the first set the fleet records is a later one.)
fn first_served(run: &Run) -> Vec<Value> {
    run.steps
        .iter()
        .filter_map(|s| s.report.as_ref())
        .filter_map(|r| delivered_tools(&r.outcome.response_body))
        .find(|tools| !tools.is_empty())
        .unwrap_or_default()
}

fn record_field(record: Option<&str>, field: &str) -> Option<String> {
    let value = parse_strict(record?.as_bytes(), 128).ok()?;
    value
        .pointer(&format!("/record/{field}"))?
        .as_str()
        .map(str::to_owned)
}

/// The verdict of every exchange step of `run`, by step index.
fn verdicts(run: &Run) -> std::collections::BTreeMap<usize, String> {
    run.steps
        .iter()
        .filter_map(|s| Some((s.step, verdict(s.report.as_ref()?))))
        .collect()
}

/// Every invariant `run` broke; `reference` is the unperturbed run of the same scenario,
/// `serial` (for an interleaving) the serial order it may stand for instead.
pub fn check(fleet: &Fleet, run: &Run, reference: &Run, serial: Option<&Run>) -> Vec<Violation> {
    let mut checker = Checker {
        run,
        reference,
        found: Vec::new(),
    };
    if let Some(why) = &run.failure {
        checker.broke("run-failed", None, why.clone());
        return checker.found;
    }
    let honest = first_served(run);
    checker.steps(fleet, &honest);
    if let Some(serial) = serial {
        checker.serializable(serial);
    }
    checker.end(&honest, serial);
    checker.found
}

/// One run's checks and what they found.
struct Checker<'a> {
    run: &'a Run,
    reference: &'a Run,
    found: Vec<Violation>,
}

impl Checker<'_> {
    fn broke(&mut self, invariant: &'static str, step: Option<usize>, detail: String) {
        self.found.push(Violation {
            invariant,
            perturbation: self.run.perturbation.to_string(),
            step,
            detail,
        });
    }

    /// What each step delivered, forwarded and audited.
    fn steps(&mut self, fleet: &Fleet, honest: &[Value]) {
        let (run, reference) = (self.run, self.reference);
        let honest_fp = digest_tools(
            &Value::Array(honest.to_vec()),
            &FingerprintFields::default(),
        )
        .map(|d| d.fingerprint())
        .ok();
        // Per instance: whether it has held the server's record since its last start.
        let mut knows = vec![false; fleet.scenario.instances];
        // The store's record before the step being checked.
        let mut previous_record: Option<String> = None;
        for step in &run.steps {
            let Some(scenario_step) = fleet.scenario.steps.get(step.step) else {
                continue;
            };
            let instance = scenario_step.instance;
            if matches!(run.perturbation, Perturbation::Restart { at, instance: i } if at == step.step && i == instance)
                && let Some(known) = knows.get_mut(instance)
            {
                *known = false;
            }
            let Some(report) = &step.report else {
                continue;
            };
            let verdict = verdict(report);
            if verdict.starts_with("stalled") {
                self.broke("stream-stalled", Some(step.step), verdict.clone());
            }
            for record in &report.records {
                let PluginRecord::Audit(event) = record else {
                    continue;
                };
                let live = event.get("live").and_then(Value::as_str);
                if event.get("event").and_then(Value::as_str) == Some("schema.changed")
                    && event.get("status_before").and_then(Value::as_str) != Some("changed")
                    && live.is_some()
                    && live == event.get("baseline").and_then(Value::as_str)
                {
                    self.broke("false-drift", Some(step.step), event.to_string());
                }
            }
            let delivered = delivered_tools(&report.outcome.response_body).unwrap_or_default();
            if let Some(tool) = delivered.iter().find(|t| !honest.contains(t)) {
                self.broke(
                    "drifted-tool-delivered",
                    Some(step.step),
                    format!("a list delivered {tool}, which is not in the baseline"),
                );
            }
            if !delivered.is_empty() {
                let stored = record_field(step.store_record.as_deref(), "baseline");
                if stored != honest_fp {
                    self.broke(
                        "served-without-yes",
                        Some(step.step),
                        format!(
                            "a list delivered {} tools while the store's baseline was {stored:?}",
                            delivered.len()
                        ),
                    );
                }
                let known = knows.get(instance).copied().unwrap_or(false);
                if step.store_down && !known {
                    self.broke(
                        "opened-without-store",
                        Some(step.step),
                        format!(
                            "instance {instance} served a first contact while the store was down"
                        ),
                    );
                }
            }
            // Served with the store up: the instance holds the record from now on.
            if !step.store_down
                && (!delivered.is_empty() || report.outcome.upstream_contacted)
                && let Some(known) = knows.get_mut(instance)
            {
                *known = true;
            }
            if !run.perturbation.may_change_decisions()
                && let Some(expected) = verdicts(reference).get(&step.step)
                && *expected != verdict
                && !closed_by_the_fleet(&verdict, expected, previous_record.as_deref())
            {
                let invariant = match &run.perturbation {
                    Perturbation::Restart { .. } => "restart-changed-decision",
                    _ => "conflict-changed-decision",
                };
                self.broke(
                    invariant,
                    Some(step.step),
                    format!("decided {verdict} where the run without it decided {expected}"),
                );
            }
            previous_record.clone_from(&step.store_record);
        }
    }

    /// An interleaving decides every step as one of the two serial orders of its steps
    /// does. Per step, not as a whole: a closure reaches another instance within sync_ms
    /// (docs/fleet), so an instance whose read came before another's closure landed may
    /// still decide as if it ran first, while the closing instance decides as if it ran
    /// second. A decision neither order makes (a second baseline, a drift that is none) is
    /// not serializable.
    fn serializable(&mut self, serial: &Run) {
        let (run, reference) = (self.run, self.reference);
        let (first, second) = (verdicts(reference), verdicts(serial));
        for (step, ours) in verdicts(run) {
            let (a, b) = (first.get(&step), second.get(&step));
            if a != Some(&ours) && b != Some(&ours) {
                self.broke(
                    "not-serializable",
                    Some(step),
                    format!(
                        "decided {ours}; in the scenario's order {}, in {} {}",
                        a.map_or("nothing", String::as_str),
                        serial.perturbation,
                        b.map_or("nothing", String::as_str)
                    ),
                );
            }
        }
    }

    /// How the store ends.
    fn end(&mut self, honest: &[Value], serial: Option<&Run>) {
        let (run, reference) = (self.run, self.reference);
        let ends_as = |other: &Run| {
            (
                record_field(other.final_record.as_deref(), "status"),
                record_field(other.final_record.as_deref(), "baseline"),
            )
        };
        // Without an outage or a lost answer, the store must end as it ends without the
        // perturbation (or in the serial order an interleaving stands for), when both runs'
        // fleets trusted the same set first. With one, a first contact answered closed is
        // recorded nowhere (by design), so only this holds: a closure some instance made (a
        // call it refused as changed) reaches the store once it is back.
        let lossy = matches!(
            run.perturbation,
            Perturbation::Outage { .. } | Perturbation::Late { .. } | Perturbation::LyingYes { .. }
        );
        if !lossy
            && first_served(reference) == honest
            && serial.is_none_or(|s| ends_as(s) != ends_as(run))
        {
            let (ours, theirs) = (ends_as(run), ends_as(reference));
            if ours != theirs {
                self.broke(
                    "lost-update",
                    None,
                    format!(
                        "the store ends with (status, baseline) {ours:?}, the run without it with {theirs:?}"
                    ),
                );
            }
        }
        let refused_changed = run
            .steps
            .iter()
            .filter_map(|s| s.report.as_ref())
            .any(|r| verdict(r).contains("SCHEMA_CHANGED"));
        if lossy
            && refused_changed
            && !matches!(run.perturbation, Perturbation::LyingYes { .. })
            && ends_as(run).0.as_deref() != Some("changed")
        {
            self.broke(
                "closure-lost",
                None,
                format!(
                    "an instance refused calls as changed, and the store ends {:?}",
                    ends_as(run)
                ),
            );
        }
    }
}

/// Whether a decision that differs from the run without the perturbation is the fleet's
/// closure taking effect sooner: a refusal or an empty list where that run served, while
/// the store's record (before the step) was not `verified`. A restarted instance reads the
/// fleet's record before deciding, so it may close within the sync window in which a
/// running one still serves from its replica (docs/fleet); it never opens what that run
/// closed.
fn closed_by_the_fleet(ours: &str, theirs: &str, store_record: Option<&str>) -> bool {
    let closed = |v: &str| v.starts_with("local ") || v == "tools []";
    closed(ours)
        && !closed(theirs)
        && record_field(store_record, "status").as_deref() != Some("verified")
}
