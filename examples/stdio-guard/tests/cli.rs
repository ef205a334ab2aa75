//! The guard's command line: every form answers `--help`, the server command after `--` is
//! passed on untouched, options a form does not take and arguments that are not UTF-8 are
//! invocation errors (exit 2), never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::{OsStr, OsString};
use std::process::Output;
use toolseal_stdio::cli::{Args, Invocation, parse};

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn guard<S: AsRef<OsStr>>(args: &[S]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolseal-stdio"))
        .args(args)
        .env("TOOLSEAL_CACHE_DIR", "off")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_server_command_after_the_separator_is_passed_on_untouched() {
    let parsed = parse(os(&[
        "--server",
        "fs",
        "--decisions",
        "--",
        "npx",
        "-y",
        "server",
        "--help",
        "--",
        "status",
    ]))
    .unwrap();
    assert_eq!(
        parsed,
        Invocation::Run(Args {
            server: Some("fs".into()),
            decisions: true,
            command: os(&["npx", "-y", "server", "--help", "--", "status"]),
            ..Args::default()
        })
    );
    let admin = parse(os(&[
        "--state",
        "s.json",
        "approve",
        "--server",
        "fs",
        "--fingerprint=sha256:ab",
    ]))
    .unwrap();
    assert_eq!(
        admin,
        Invocation::Run(Args {
            subcommand: Some("approve".into()),
            state: Some("s.json".into()),
            server: Some("fs".into()),
            fingerprint: Some("sha256:ab".into()),
            ..Args::default()
        })
    );
}

#[test]
fn every_form_answers_help_with_its_usage() {
    let forms: [(&[&str], &str); 6] = [
        (&["--help"], "usage:\n  toolseal-stdio [--state FILE]"),
        (
            &["-h", "--", "npx", "x"],
            "usage: toolseal-stdio [--state FILE]",
        ),
        (&["status", "--help"], "usage: toolseal-stdio status "),
        (
            &["--state", "s", "approve", "-h"],
            "usage: toolseal-stdio approve ",
        ),
        (
            &["quarantine", "--help"],
            "usage: toolseal-stdio quarantine ",
        ),
        (&["release", "--help"], "usage: toolseal-stdio release "),
    ];
    for (args, start) in forms {
        let out = guard(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stdout).starts_with(start),
            "{args:?}: {}",
            text(&out.stdout)
        );
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn invocation_errors_exit_2_and_say_what_is_wrong() {
    let cases: [(&[&str], &str); 8] = [
        (&[], "give the server command after --"),
        (&["--bogus"], "unknown option --bogus"),
        (
            &["npx", "server"],
            "unknown subcommand \"npx\" (the server command goes after --)",
        ),
        (&["--state"], "--state needs a value"),
        (
            &["--decisions=yes", "--", "true"],
            "--decisions takes no value",
        ),
        (
            &["status", "--state", "s", "--fingerprint", "sha256:ab"],
            "--fingerprint is not an option of status",
        ),
        (
            &["--reason", "x", "--", "true"],
            "--reason is not an option of guarding a server",
        ),
        (
            &["release", "--state", "s", "--", "true"],
            "an admin subcommand starts no server",
        ),
    ];
    for (args, message) in cases {
        let out = guard(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
    }
}

#[cfg(unix)]
#[test]
fn arguments_that_are_not_utf8_get_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"caf\xe9");
    for args in [
        vec![
            OsStr::new("--server"),
            bad,
            OsStr::new("--"),
            OsStr::new("true"),
        ],
        vec![bad],
    ] {
        let out = guard(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stderr.contains("\"caf\\xE9\" is not valid UTF-8"),
            "{stderr}"
        );
    }
    // A path and the server command need no UTF-8: they go to the OS as they are.
    let parsed = parse(vec![
        OsString::from("--state"),
        bad.to_owned(),
        OsString::from("--"),
        bad.to_owned(),
    ])
    .unwrap();
    let Invocation::Run(args) = parsed else {
        panic!("{parsed:?}")
    };
    assert_eq!(args.state.unwrap().as_os_str(), bad);
    assert_eq!(args.command, [bad.to_owned()]);
}
