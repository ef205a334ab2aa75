//! Issue 24: two Envoy workers making first contact with one unchanged tool list at once
//! must never close the server as drifted. Two plugin VMs over one shared data store replay
//! the same recorded list (and the call that follows it), and every schedule of their
//! shared-data accesses is run that takes the turn from a worker that could go on at most
//! twice (once over a whole session). Each must end as one worker replaying the same
//! exchanges in some interleaving ends: one baseline, the server `verified`, both lists
//! served whole, both calls forwarded, no `schema.changed` with live = baseline.
//!
//! The cases cover both MCP eras and both response framings: a 2025 session answered with
//! JSON (FastMCP) and with SSE (server-everything), MCP 2026-07-28 stateless answers from
//! the Python and the TypeScript SDKs, and a listing paginated over two SSE pages.
//!
//! Needs the module: `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm`
//! (or `TOOLSEAL_WASM=path`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

use common::workers::{assert_every_schedule_holds, exchanges, explore, scenario, step};
use serde_json::Value;
use toolseal::workers::explore::Plan;
use toolseal::workers::scenario::as_agent;

/// Both workers replay the exchanges `seqs` of transcript `name` (all without labels; the
/// second one as an agent of its own), at once, from a fresh start; every schedule with at
/// most `preemptions` preemptions.
fn tofu_race(name: &str, seqs: &[&str], preemptions: usize) {
    let mine = exchanges(name, seqs);
    let race = scenario(
        2,
        vec![vec![
            step(0, name, mine.clone()),
            step(1, name, as_agent(&mine, 1)),
        ]],
    );
    let plan = Plan::Exhaustive {
        max_schedules: 5_000,
        preemptions: Some(preemptions),
    };
    let report = explore(&Value::Null, 0, race, &plan, true);
    assert_every_schedule_holds(&format!("{name} {seqs:?}"), &report);
}

#[test]
fn tofu_racing_tofu_json_session_list_and_call() {
    tofu_race("fastmcp-4.2.3-json", &["3", "4"], 2);
}

#[test]
fn tofu_racing_tofu_json_whole_session_one_preemption() {
    tofu_race("fastmcp-4.2.3-json", &[], 1);
}

#[test]
fn tofu_racing_tofu_sse_session_list_and_call() {
    tofu_race("everything-2025.11.25", &["3", "4"], 2);
}

#[test]
fn tofu_racing_tofu_stateless_python_list_and_call() {
    tofu_race("python-sdk-2.3.0-rev1-json", &["1", "2"], 2);
}

#[test]
fn tofu_racing_tofu_stateless_typescript_list_and_call() {
    tofu_race("typescript-sdk-2.4.0-rev1", &["1", "2"], 2);
}

#[test]
fn tofu_racing_tofu_paginated_sse_listing() {
    tofu_race("fastmcp-4.2.3-paginated", &["3", "4"], 2);
}
