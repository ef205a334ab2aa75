//! Seeded random schedules of several Envoy workers (plugin VMs over one shared data store)
//! replaying the shipped recordings, whole: every invariant of docs/host-test.md holds in
//! every schedule. Two agents running the same recorded session on two workers (each
//! recording, both MCP eras); a rug pull racing the first contact (release A on one worker
//! while release B reaches the other); sixteen agents' first `tools/list` at once on
//! sixteen workers. A seed always gives the same schedule.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

use common::workers::{assert_every_schedule_holds, exchanges, explore, options, scenario, step};
use serde_json::Value;
use toolseal::workers::Harness;
use toolseal::workers::explore::Plan;
use toolseal::workers::scenario::as_agent;

/// Every recording of examples/transcripts, both eras.
const RECORDINGS: [&str; 8] = [
    "everything-2025.11.25",
    "everything-2026.1.26",
    "fastmcp-4.2.3-json",
    "fastmcp-4.2.3-paginated",
    "python-sdk-2.3.0-rev1-json",
    "python-sdk-2.3.0-rev1-sse",
    "python-sdk-2.3.0-rev2-json",
    "typescript-sdk-2.4.0-rev1",
];

fn random(seed: u64, count: u64) -> Plan {
    Plan::Random { seed, count }
}

#[test]
fn two_agents_replaying_each_recording_at_once() {
    for (i, name) in RECORDINGS.into_iter().enumerate() {
        let mine = exchanges(name, &[]);
        let both = scenario(
            2,
            vec![vec![
                step(0, name, mine.clone()),
                step(1, name, as_agent(&mine, 1)),
            ]],
        );
        let seed = 1000 * u64::try_from(i).unwrap();
        let report = explore(&Value::Null, 0, both, &random(seed, 100), false);
        assert_every_schedule_holds(name, &report);
    }
}

#[test]
fn a_rug_pull_racing_the_first_contact() {
    for (a, b) in [
        ("everything-2025.11.25", "everything-2026.1.26"),
        ("python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json"),
    ] {
        let race = scenario(
            2,
            vec![vec![
                step(0, a, exchanges(a, &[])),
                step(1, b, exchanges(b, &[])),
            ]],
        );
        let report = explore(&Value::Null, 0, race, &random(7, 200), false);
        assert_every_schedule_holds(&format!("{a} racing {b}"), &report);
    }
}

#[test]
fn sixteen_agents_first_tools_list_at_once() {
    let name = "python-sdk-2.3.0-rev1-json";
    let list = exchanges(name, &["1"]);
    let agents = (0..16).map(|w| step(w, name, as_agent(&list, w))).collect();
    let report = explore(
        &Value::Null,
        0,
        scenario(16, vec![agents]),
        &random(16, 30),
        false,
    );
    assert_every_schedule_holds("16 agents", &report);
}

#[test]
fn a_seed_replays_the_same_schedule_with_the_same_answers() {
    let name = "fastmcp-4.2.3-json";
    let mine = exchanges(name, &[]);
    let both = scenario(
        2,
        vec![vec![step(0, name, mine.clone()), step(1, name, mine)]],
    );
    let harness = Harness::new(options(&Value::Null, 61), both).unwrap();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let report = harness.explore(&random(42, 1), true).unwrap();
            report.exploration.first.unwrap()
        })
        .collect();
    let [first, again] = &runs[..] else {
        panic!("two runs")
    };
    assert_eq!(first.trace, again.trace);
    assert_eq!(first.choices, again.choices);
    let bodies = |run: &toolseal::workers::schedule_run::ScheduleRun| -> Vec<(usize, Vec<u8>)> {
        run.units
            .iter()
            .map(|u| (u.worker, u.report.outcome.response_body.clone()))
            .collect()
    };
    assert_eq!(bodies(first), bodies(again));
    // The schedule interleaves the workers: some access of each lies between two of the
    // other's.
    let switches = first
        .trace
        .windows(2)
        .filter(|w| w[0].worker != w[1].worker)
        .count();
    assert!(switches > 2, "{switches} switches");
}
