//! Admin actions racing the data path across two Envoy workers (two plugin VMs over one
//! shared data store, every schedule of their shared-data accesses with at most two
//! interruptions mid-exchange): an approval racing a list of the very set approved must
//! end approved, never reverted to `changed` by a list decided against the record before
//! the approval; a quarantine racing a drift must end quarantined. Each schedule must end
//! as one worker doing both in some order ends (no update lost), and answer every exchange
//! as that worker would.
//!
//! The server is the MCP 2026-07-28 rug-pull recording: release A (`python-sdk-2.3.0-rev1`)
//! then release B (`-rev2`), both answered with JSON.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

use common::workers::{SERVER, assert_every_schedule_holds, exchanges, explore, scenario, step};
use serde_json::{Value, json};
use toolseal::cli::tool_source::tools_from_transcript;
use toolseal::workers::explore::Plan;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools, sha256_hex};
use toolseal_core::transcript::HttpExchange;

const TOKEN: &str = "race-token";
const RELEASE_A: &str = "python-sdk-2.3.0-rev1-json";
const RELEASE_B: &str = "python-sdk-2.3.0-rev2-json";

fn config() -> Value {
    json!({"admin": {"token_sha256": [sha256_hex(TOKEN.as_bytes())]}})
}

/// The `tools/list` exchange of a release.
fn list(release: &str) -> Vec<HttpExchange> {
    exchanges(release, &["1"])
}

/// The fingerprint of a release's tool set, computed natively.
fn fingerprint(release: &str) -> String {
    let tools = tools_from_transcript(&list(release)).unwrap();
    digest_tools(&Value::Array(tools), &FingerprintFields::default())
        .unwrap()
        .fingerprint()
}

/// An admin API request, as the admin listener would pass it to the plugin.
fn admin(action: &str, body: &Value) -> Vec<HttpExchange> {
    vec![HttpExchange {
        seq: action.into(),
        http_method: "POST".into(),
        path: format!("/toolseal/servers/{SERVER}/{action}"),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {TOKEN}")),
        ],
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: Vec::new(),
        response_body: Vec::new(),
    }]
}

fn every_schedule() -> Plan {
    Plan::Exhaustive {
        max_schedules: 5_000,
        preemptions: Some(2),
    }
}

#[test]
fn an_approval_racing_a_list_of_the_approved_set_stays_approved() {
    let race = scenario(
        2,
        vec![
            vec![step(0, RELEASE_A, list(RELEASE_A))],
            vec![step(0, RELEASE_B, list(RELEASE_B))],
            vec![
                step(
                    0,
                    "admin",
                    admin("approve", &json!({"fingerprint": fingerprint(RELEASE_B)})),
                ),
                step(1, RELEASE_B, list(RELEASE_B)),
            ],
        ],
    );
    let report = explore(&config(), 0, race, &every_schedule(), true);
    assert_every_schedule_holds("approve racing a list", &report);
    let run = report.exploration.first.as_ref().unwrap();
    let record = &toolseal::workers::signature::records(&run.store)[SERVER];
    assert_eq!(record["status"], "verified", "{record}");
    assert_eq!(record["baseline"], fingerprint(RELEASE_B).as_str());
}

#[test]
fn a_quarantine_racing_a_drift_stays_quarantined() {
    let race = scenario(
        2,
        vec![
            vec![step(0, RELEASE_A, list(RELEASE_A))],
            vec![
                step(0, "admin", admin("quarantine", &json!({"reason": "drill"}))),
                step(1, RELEASE_B, list(RELEASE_B)),
            ],
        ],
    );
    let report = explore(&config(), 0, race, &every_schedule(), true);
    assert_every_schedule_holds("quarantine racing a drift", &report);
    let run = report.exploration.first.as_ref().unwrap();
    let record = &toolseal::workers::signature::records(&run.store)[SERVER];
    assert_eq!(record["status"], "quarantined", "{record}");
}
