//! The command line's contract: every subcommand answers `--help`, exit statuses tell drift
//! from unusable input, `pin` prints a document that merges into a config as is, and
//! `--config` makes `fingerprint`, `pin` and `diff` use the config's fingerprint fields.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{path_str, scratch, text, toolseal};

use serde_json::{Value, json};
use std::ffi::OsStr;
use std::process::Output;

fn write_json(name: &str, value: &Value) -> String {
    let path = scratch(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path_str(&path)
}

/// A config whose fingerprint also covers `title` and `annotations`.
fn extra_fields_config() -> Value {
    json!({"fingerprint": {"fields": ["name", "description", "inputSchema", "title", "annotations"]}})
}

const COMMANDS: [&str; 8] = [
    "replay",
    "fingerprint",
    "diff",
    "pin",
    "report",
    "check-config",
    "console",
    "bench",
];

#[test]
fn every_subcommand_answers_help_with_its_own_usage() {
    for command in COMMANDS {
        let long = toolseal(&[command, "--help"]);
        assert_eq!(
            long.status.code(),
            Some(0),
            "{command}: {}",
            text(&long.stderr)
        );
        let usage = text(&long.stdout);
        let first_lines: String = usage.lines().take(2).collect::<Vec<_>>().join("\n");
        assert!(
            first_lines.contains(&format!("toolseal {command}")),
            "{command}: {usage}"
        );
        // The same text after other arguments, with -h, and through `toolseal help COMMAND`.
        let before_help = if command == "bench" {
            "--quick"
        } else {
            "some-file.json"
        };
        for args in [
            vec![command, "-h"],
            vec![command, before_help, "--help"],
            vec!["help", command],
        ] {
            let out = toolseal(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            assert_eq!(text(&out.stdout), usage, "{args:?}");
        }
    }
    let top = toolseal(&["--help"]);
    assert_eq!(top.status.code(), Some(0));
    for command in COMMANDS {
        assert!(
            text(&top.stdout).contains(&format!("\n  {command} ")),
            "{command} listed"
        );
    }
    let unknown = toolseal(&["help", "frobnicate"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("unknown command \"frobnicate\""));
}

#[test]
fn an_option_after_the_end_of_options_is_a_file() {
    let out = toolseal(&["fingerprint", "--", "--help"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot read --help"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn arguments_that_are_not_utf8_get_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"caf\xe9");
    let listing = write_json("one.tools.json", &json!({"tools": [{"name": "a"}]}));
    let cases: [(Vec<&OsStr>, i32, &str); 4] = [
        (vec![bad], 2, "unknown command \"caf\\xE9\""),
        (
            vec![
                OsStr::new("pin"),
                OsStr::new("--server"),
                bad,
                OsStr::new(&listing),
            ],
            2,
            "--server needs a UTF-8 value, not \"caf\\xE9\" (see `toolseal pin --help`)",
        ),
        (
            vec![
                OsStr::new("replay"),
                OsStr::new("--chunk"),
                bad,
                OsStr::new(&listing),
            ],
            2,
            "--chunk needs a UTF-8 value",
        ),
        // A path needs no UTF-8: this one is read, and is simply missing.
        (vec![OsStr::new("diff"), bad, bad], 3, "cannot read caf"),
    ];
    for (args, code, message) in cases {
        let out = toolseal(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn diff_exits_0_1_2_for_drift_classes_and_3_for_unusable_input() {
    let tool = |description: &str| {
        json!({"name": "deploy", "description": description,
               "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}}})
    };
    let old = write_json("d-old.json", &json!({"tools": [tool("Deploys.")]}));
    let added = write_json(
        "d-added.json",
        &json!({"tools": [tool("Deploys."), {"name": "status", "inputSchema": {"type": "object"}}]}),
    );
    let reworded = write_json("d-reworded.json", &json!({"tools": [tool("Deploys now.")]}));
    let drift = |a: &str, b: &str| toolseal(&["diff", a, b]).status.code();
    assert_eq!(drift(&old, &old), Some(0));
    assert_eq!(drift(&old, &added), Some(1), "a new tool is additive");
    assert_eq!(
        drift(&old, &reworded),
        Some(2),
        "a new description is semantic"
    );

    let not_json = scratch("d-not-json.json");
    std::fs::write(&not_json, "{\"tools\": [").unwrap();
    let duplicate_keys = scratch("d-dup.json");
    std::fs::write(&duplicate_keys, r#"{"tools": [], "tools": []}"#).unwrap();
    let refused_config = write_json("d-refused.json", &json!({"posture": "bogus"}));
    let unusable: [(Vec<&str>, &str); 7] = [
        (
            vec![&old, "/nonexistent/new.json"],
            "cannot read /nonexistent/new.json",
        ),
        (vec![&old, not_json.to_str().unwrap()], "is not usable JSON"),
        (
            vec![&old, duplicate_keys.to_str().unwrap()],
            "is not usable JSON",
        ),
        (vec![&old], "usage: toolseal diff"),
        (vec![&old, &old, &old], "usage: toolseal diff"),
        (vec!["--jsn", &old, &old], "unknown option --jsn"),
        (vec!["--config", &refused_config, &old, &old], "posture"),
    ];
    for (args, message) in unusable {
        let mut full = vec!["diff"];
        full.extend(args.iter());
        let out = toolseal(&full);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{full:?}: {stderr}");
        assert!(stderr.contains(message), "{full:?}: {stderr}");
        assert_eq!(text(&out.stdout), "", "{full:?}");
    }
}

#[test]
fn pin_prints_a_servers_document_that_merges_into_a_config_as_is() {
    let transcript = path_str(&common::transcript("everything-2026.1.26"));
    let out = toolseal(&["pin", &transcript, "--server", "everything"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pinned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = pinned.as_object().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["servers"]);
    let lock = &pinned["servers"]["everything"]["lock"];
    let fingerprint = toolseal(&["fingerprint", &transcript]);
    assert_eq!(
        lock["fingerprint"].as_str(),
        text(&fingerprint.stdout).lines().next()
    );
    assert_eq!(lock["tools"].as_array().unwrap().len(), 13);

    // Merged as is into a config with other settings, the plugin's parser accepts it.
    let mut config = json!({"posture": "strict", "policy": {"default": "allow", "rules": []}});
    config["servers"] = pinned["servers"].clone();
    let file = write_json("merged.json", &config);
    let check = toolseal(&["check-config", &file]);
    assert_eq!(
        (check.status.code(), text(&check.stdout)),
        (
            Some(0),
            "ok: posture strict, 1 configured server(s)\n".to_owned()
        ),
        "{}",
        text(&check.stderr)
    );
    // Without --server, the file's name is the id.
    let unnamed = toolseal(&["pin", &transcript]);
    let unnamed: Value = serde_json::from_slice(&unnamed.stdout).unwrap();
    assert!(unnamed["servers"]["everything-2026.1.26"]["lock"].is_object());
}

#[test]
fn config_with_extra_fingerprint_fields_changes_fingerprint_and_pin() {
    let transcript = path_str(&common::transcript("everything-2026.1.26"));
    let config = write_json("extra-fields.json", &extra_fields_config());
    let default = toolseal(&["fingerprint", &transcript]);
    let extra = toolseal(&["fingerprint", "--config", &config, &transcript]);
    assert_eq!(extra.status.code(), Some(0), "{}", text(&extra.stderr));
    let (default, extra) = (text(&default.stdout), text(&extra.stdout));
    assert_eq!(default.lines().count(), extra.lines().count());
    // Every tool of this release has a title: every digest and the fingerprint move.
    for (a, b) in default.lines().zip(extra.lines()) {
        assert_ne!(a, b);
    }
    let extra_fingerprint = extra.lines().next().unwrap().to_owned();

    // The .wasm under that config baselines to the same fingerprint.
    let replay = toolseal(&[
        "replay",
        "--wasm",
        &path_str(&common::plugin_wasm()),
        "--config",
        &config,
        "--audit",
        &transcript,
    ]);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay.stderr));
    let baselines: Vec<String> = text(&replay.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.pointer("/audit/event") == Some(&Value::from("schema.baselined")))
        .map(|v| {
            v.pointer("/audit/baseline")
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(baselines, std::slice::from_ref(&extra_fingerprint));

    // A pin made with --config merges into that config; one made without is refused there,
    // with the plugin's own message.
    let merged = |pin_args: &[&str]| -> Output {
        let mut args = vec!["pin", "--server", "everything"];
        args.extend_from_slice(pin_args);
        args.push(&transcript);
        let pin = toolseal(&args);
        assert_eq!(pin.status.code(), Some(0), "{}", text(&pin.stderr));
        let pinned: Value = serde_json::from_slice(&pin.stdout).unwrap();
        let mut with_lock = extra_fields_config();
        with_lock["servers"] = pinned["servers"].clone();
        toolseal(&["check-config", &write_json("extra-merged.json", &with_lock)])
    };
    let accepted = merged(&["--config", &config]);
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        text(&accepted.stderr)
    );
    let refused = merged(&[]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("servers.everything.lock"), "{stderr}");
    assert!(stderr.contains(&extra_fingerprint), "{stderr}");
}

#[test]
fn diff_with_config_reports_only_what_that_fingerprint_covers() {
    let tool = |destructive: bool, title: &str| {
        json!({"name": "deploy", "title": title, "description": "Deploys.",
               "inputSchema": {"type": "object"},
               "annotations": {"destructiveHint": destructive}})
    };
    let old = write_json("c-old.json", &json!([tool(false, "Deploy")]));
    let new = write_json("c-new.json", &json!([tool(true, "Deploy!")]));
    let default_fields = write_json("c-default.json", &json!({}));
    let extra = write_json("c-extra.json", &extra_fields_config());
    let titles_only = write_json(
        "c-title.json",
        &json!({"fingerprint": {"fields": ["name", "description", "inputSchema", "title"]}}),
    );
    let diff = |config: Option<&str>| {
        let mut args = vec!["diff"];
        if let Some(config) = config {
            args.extend(["--config", config]);
        }
        args.extend([old.as_str(), new.as_str()]);
        let out = toolseal(&args);
        (out.status.code(), text(&out.stdout))
    };
    let all = (
        Some(2),
        "deploy  /annotations/destructiveHint  annotation_changed  authority\n\
         deploy  /title  title_changed  semantic\n"
            .to_owned(),
    );
    assert_eq!(diff(None), all, "without --config every field is compared");
    assert_eq!(diff(Some(&extra)), all);
    assert_eq!(
        diff(Some(&default_fields)),
        (Some(0), String::new()),
        "the default fingerprint covers neither title nor annotations"
    );
    assert_eq!(
        diff(Some(&titles_only)),
        (
            Some(2),
            "deploy  /title  title_changed  semantic\n".to_owned()
        )
    );
}
