//! Shared by the multi-worker tests: scenarios built from the shipped transcripts, the
//! harness over the plugin `.wasm`, and a failure explained well enough to act on (the
//! schedule to run again, what broke, the audit events by worker, the accesses).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use super::{replay_options, transcript};
use serde_json::Value;
use std::fmt::Write;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ReplayOptions, load_transcript};
use toolseal::workers::explore::{Failure, Plan};
use toolseal::workers::scenario::{Scenario, Step};
use toolseal::workers::{Harness, Report};
use toolseal_core::transcript::HttpExchange;

/// The server id every exchange is answered as.
pub const SERVER: &str = "srv";

/// Replay options for the workers: the plugin `.wasm`, `config`, one server id, whole bodies
/// unless `chunk` says otherwise, decision records on, the tests' module cache.
pub fn options(config: &Value, chunk: usize) -> ReplayOptions {
    let config = match config {
        Value::Null => Vec::new(),
        config => config.to_string().into_bytes(),
    };
    replay_options(Some(SERVER), &config, chunk)
}

/// The exchanges labelled `seqs` of the shipped transcript `name` (all without labels).
pub fn exchanges(name: &str, seqs: &[&str]) -> Vec<HttpExchange> {
    let all = load_transcript(&transcript(name)).unwrap().exchanges;
    if seqs.is_empty() {
        return all;
    }
    let picked: Vec<HttpExchange> = all
        .into_iter()
        .filter(|e| seqs.contains(&e.seq.as_str()))
        .collect();
    assert_eq!(picked.len(), seqs.len(), "{name}: seq {seqs:?}");
    picked
}

/// `worker` replays `exchanges`, named `name`.
pub fn step(worker: usize, name: &str, exchanges: Vec<HttpExchange>) -> Step {
    Step {
        worker,
        transcript: name.into(),
        exchanges,
    }
}

/// A scenario of `workers` workers and these phases.
pub fn scenario(workers: usize, phases: Vec<Vec<Step>>) -> Scenario {
    Scenario {
        workers,
        phases,
        server: None,
    }
}

/// Explores `plan` over `scenario` and returns the report; `keep_going` runs every
/// schedule even after one failed (the report then counts them).
pub fn explore(
    config: &Value,
    chunk: usize,
    scenario: Scenario,
    plan: &Plan,
    keep_going: bool,
) -> Report {
    let harness = Harness::new(options(config, chunk), scenario).unwrap();
    harness.explore(plan, keep_going).unwrap()
}

/// Asserts that every schedule held every invariant and that the plan was covered.
pub fn assert_every_schedule_holds(case: &str, report: &Report) {
    let e = &report.exploration;
    if let Some(failure) = e.failures.first() {
        panic!(
            "{case}: {} of {} schedules broke an invariant; the first:\n{}",
            e.failed,
            e.schedules,
            explain(failure)
        );
    }
    assert!(
        e.complete,
        "{case}: the plan was not covered ({} schedules)",
        e.schedules
    );
    assert!(e.schedules > 0, "{case}: no schedule ran");
}

/// A failing schedule in words: how to run it again, what it broke, its audit events by
/// worker, and every shared-data access in the order it was served.
pub fn explain(failure: &Failure) -> String {
    let broken: Vec<&str> = failure.violations.iter().map(|v| v.invariant).collect();
    let mut text = format!(
        "schedule {} ({}) broke: {}\n  audit:\n",
        failure.schedule,
        failure.fixed,
        broken.join(", ")
    );
    for unit in &failure.run.units {
        for record in &unit.report.records {
            if let PluginRecord::Audit(event) = record {
                let _ = writeln!(
                    text,
                    "    worker {} {} {}: {} {}->{} live={} baseline={}",
                    unit.worker,
                    unit.report.transcript,
                    unit.report.seq,
                    event["event"].as_str().unwrap_or(""),
                    event["status_before"].as_str().unwrap_or("-"),
                    event["status_after"].as_str().unwrap_or("-"),
                    short(&event["live"]),
                    short(&event["baseline"]),
                );
            }
        }
    }
    text.push_str("  violations:\n");
    for v in &failure.violations {
        let at = v.at.as_ref().map_or_else(String::new, |at| {
            format!(" worker {} {} {}", at.worker, at.transcript, at.seq)
        });
        let detail: String = v.detail.chars().take(400).collect();
        let _ = writeln!(text, "    {}{at}: {detail}", v.invariant);
    }
    text.push_str("  shared-data accesses, in the order they were served:\n");
    for access in &failure.run.trace {
        let _ = writeln!(text, "    {access}");
    }
    text
}

fn short(fingerprint: &Value) -> String {
    fingerprint
        .as_str()
        .map_or_else(|| "-".into(), |f| f.chars().take(15).collect())
}
