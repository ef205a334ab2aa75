//! `toolseal replay --workers N` and `--scenario FILE` end to end: the lines of one
//! schedule carry their worker, several schedules print only what broke and a summary, a
//! seed prints the same lines in every process, a scenario file with an inline admin
//! exchange runs, and every unusable invocation exits 2 with what to fix.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

use common::{path_str, plugin_wasm, scratch, text, toolseal, transcript};
use serde_json::{Value, json};
use toolseal_core::policy::fingerprint::sha256_hex;

fn lines(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn replay(args: &[&str]) -> std::process::Output {
    let wasm = path_str(&plugin_wasm());
    let mut all = vec!["replay", "--wasm", wasm.as_str(), "--chunk", "0"];
    all.extend_from_slice(args);
    toolseal(&all)
}

#[test]
fn one_schedule_prints_the_usual_lines_with_their_worker_and_a_summary() {
    let fastmcp = path_str(&transcript("fastmcp-4.2.3-json"));
    let out = replay(&[
        "--workers",
        "2",
        "--server",
        "srv",
        "--schedule",
        "fixed:",
        &fastmcp,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    let (summary, records) = lines.split_last().unwrap();
    assert_eq!(summary["schedules"], 1);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["workers"], 2);
    assert!(records.iter().all(|l| l["worker"] == 0 || l["worker"] == 1));
    // Both workers replayed the whole transcript: each listed, and each call was allowed.
    for worker in [0, 1] {
        let mine: Vec<&Value> = records.iter().filter(|l| l["worker"] == worker).collect();
        assert!(
            mine.iter()
                .any(|l| l["method"] == "tools/list" && l["tools_out"] == 4)
        );
        assert_eq!(
            mine.iter()
                .filter(|l| l["method"] == "tools/call" && l["decision"] == "allow")
                .count(),
            3
        );
    }
    // Worker 1 is its own agent: its session id is the recording's with ".1".
    assert!(
        records
            .iter()
            .any(|l| l["worker"] == 1 && l["session"].as_str().is_some_and(|s| s.ends_with(".1")))
    );
}

#[test]
fn a_seed_prints_the_same_lines_in_every_process_and_many_seeds_print_a_summary() {
    let list = path_str(&transcript("python-sdk-2.3.0-rev1-json"));
    let args = [
        "--workers",
        "2",
        "--server",
        "srv",
        "--schedule",
        "random:9",
        "--audit",
    ];
    let mut with_list: Vec<&str> = args.to_vec();
    with_list.push(&list);
    let first = replay(&with_list);
    let again = replay(&with_list);
    assert_eq!(text(&first.stdout), text(&again.stdout));
    assert!(lines(&first.stdout).len() > 10);
    let many = replay(&[
        "--workers",
        "2",
        "--server",
        "srv",
        "--schedule",
        "random:0",
        "--schedules",
        "5",
        "--keep-going",
        &list,
    ]);
    let out = lines(&many.stdout);
    let (summary, rest) = out.split_last().unwrap();
    assert_eq!(summary["schedules"], 5);
    assert_eq!(summary["plan"], "random:0 x5");
    // Several schedules print no decision lines: only what broke, then the summary.
    assert!(rest.iter().all(|l| l.get("violation").is_some()));
    assert_eq!(
        many.status.code(),
        Some(if summary["failed"] == 0 { 0 } else { 1 })
    );
}

#[test]
fn a_scenario_races_an_inline_admin_exchange_against_a_list() {
    let token = "cli-token";
    let config = scratch("workers-admin-config.json");
    std::fs::write(
        &config,
        json!({"admin": {"token_sha256": [sha256_hex(token.as_bytes())]}}).to_string(),
    )
    .unwrap();
    let quarantine = json!({
        "seq": "quarantine", "http_method": "POST", "path": "/toolseal/servers/srv/quarantine",
        "request_headers": [["content-type", "application/json"],
                            ["authorization", format!("Bearer {token}")]],
        "request_body": "{\"reason\":\"drill\"}", "status": 200
    });
    let scenario = scratch("workers-quarantine.json");
    let release = |name: &str| path_str(&transcript(name));
    std::fs::write(
        &scenario,
        json!({"workers": 2, "server": "srv", "phases": [
            [{"worker": 0, "transcript": release("python-sdk-2.3.0-rev1-json"), "seq": [1]}],
            [{"worker": 0, "name": "admin", "exchanges": [quarantine]},
             {"worker": 1, "transcript": release("python-sdk-2.3.0-rev2-json"), "seq": [1]}]
        ]})
        .to_string(),
    )
    .unwrap();
    let out = replay(&[
        "--config",
        &path_str(&config),
        "--scenario",
        &path_str(&scenario),
        "--schedule",
        "exhaustive:200",
        "--preemptions",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["complete"], true);
    assert!(summary["schedules"].as_u64().unwrap() > 2, "{summary}");
}

#[test]
fn unusable_multi_worker_invocations_exit_2_saying_what_to_fix() {
    let list = path_str(&transcript("fastmcp-4.2.3-json"));
    let bad_scenario = scratch("workers-bad-scenario.json");
    std::fs::write(
        &bad_scenario,
        r#"{"workers": 2, "phases": [[{"worker": 5, "transcript": "x.json"}]]}"#,
    )
    .unwrap();
    let bad_scenario = path_str(&bad_scenario);
    for (args, says) in [
        (
            vec!["--workers", "0", &list],
            "--workers must be from 1 to 64",
        ),
        (vec!["--workers", "two", &list], "--workers needs a number"),
        (
            vec!["--workers", "2", "--schedule", "sometimes", &list],
            "--schedule must be",
        ),
        (
            vec!["--workers", "2", "--schedule", "random:x", &list],
            "whole number",
        ),
        (
            vec!["--workers", "2", "--assign", "by-hash", &list],
            "--assign must be",
        ),
        (
            vec!["--workers", "2", "--schedules", "3", "--expect", "x", &list],
            "--expect compares",
        ),
        (
            vec!["--workers", "2", "--preemptions", "1", &list],
            "--preemptions goes with",
        ),
        (
            vec![
                "--workers",
                "2",
                "--schedule",
                "fixed:",
                "--schedules",
                "2",
                &list,
            ],
            "--schedules goes with",
        ),
        (
            vec!["--workers", "2", "--fail-hostcall", "proxy_log", &list],
            "do not combine",
        ),
        (vec!["--workers", "2"], "needs at least one TRANSCRIPT"),
        (
            vec!["--scenario", &bad_scenario],
            "`worker` must be a number from 0 to 1",
        ),
        (
            vec!["--scenario", &bad_scenario, &list],
            "give no TRANSCRIPT",
        ),
    ] {
        let out = replay(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
