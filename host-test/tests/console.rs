//! `toolseal console` as a process: invocation errors exit 2 naming what to fix; a running
//! console serves its page under a strict policy, reports an unreachable instance as such, and
//! refuses requests that fail its Host, token or Origin checks. (The console against real
//! Envoys, clicked in a browser: envoy/tests/test_console.py.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use toolseal::console::http_client::{self, HttpUrl, Response};

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolseal-console-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fleet file in `dir` with one instance at `admin_url` and the two ECDS files beside it.
fn write_fleet(dir: &Path, admin_url: &str) -> PathBuf {
    let ecds = dir.join("toolseal.ecds.json");
    let admin_ecds = dir.join("admin-toolseal.ecds.json");
    let write = |path: &Path, name: &str, config: serde_json::Value, version: &str| {
        let doc = serde_json::json!({"version_info": version, "resources": [{"name": name,
            "typed_config": {"config": {"configuration": {"value": config.to_string()}}}}]});
        std::fs::write(path, doc.to_string()).unwrap();
    };
    write(
        &ecds,
        "toolseal",
        serde_json::json!({"posture": "strict"}),
        "1",
    );
    let hash = "ab".repeat(32);
    let admin = serde_json::json!({"posture": "strict", "admin": {"token_sha256": hash}});
    write(&admin_ecds, "toolseal-admin", admin, "5");
    let fleet = dir.join("fleet.json");
    let text = serde_json::json!({
        "instances": [{"name": "edge-a", "admin_url": admin_url, "token": {"env": "TOOLSEAL_CONSOLE_TEST_TOKEN"}}],
        "plugin_config": {"ecds_file": ecds, "admin_ecds_file": admin_ecds},
        "audit_log": "audit.jsonl",
    });
    std::fs::write(&fleet, text.to_string()).unwrap();
    fleet
}

fn console(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolseal"));
    command
        .arg("console")
        .args(args)
        .env("TOOLSEAL_CONSOLE_TEST_TOKEN", "s3cret-admin-token");
    command
}

#[test]
fn invocation_errors_exit_2_and_say_what_to_fix() {
    let help = console(&["--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--allow-non-loopback"));
    let dir = scratch("errors");
    let fleet = write_fleet(&dir, "http://127.0.0.1:9/toolseal/");
    let fleet = fleet.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&[], "usage: toolseal console FLEET.json"),
        (&["/nonexistent/fleet.json"], "cannot read the fleet file"),
        (
            &[fleet, "--operator", "ci", "--listen", "0.0.0.0:0"],
            "bind one address",
        ),
        (
            &[fleet, "--operator", "ci", "--listen", "192.0.2.1:0"],
            "not a loopback address",
        ),
        (
            &[fleet, "--operator", "ci", "--listen", "nonsense"],
            "expected ADDR:PORT",
        ),
        (
            &[fleet, "--operator", "ci", "--timeout-ms", "5"],
            "--timeout-ms",
        ),
        (&[fleet, "--operator", " "], "--operator: 1 to 128"),
    ];
    for (args, expected) in cases {
        let out = console(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let bad = dir.join("fleet-bad.json");
    std::fs::write(&bad, r#"{"instances": [{"name": "a"}]}"#).unwrap();
    let out = console(&[bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("field `instances[0].admin_url`: missing")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(url: &HttpUrl, path: &str, headers: &[(&str, &str)]) -> Response {
    http_client::request(url, "GET", path, headers, b"", Duration::from_secs(30)).unwrap()
}

#[test]
fn a_running_console_serves_its_page_and_guards_its_api() {
    // The only instance answers nothing (port 9, discard): the console shows it unreachable.
    let dir = scratch("running");
    let fleet = write_fleet(&dir, "http://127.0.0.1:9/toolseal/");
    let mut child = console(&[
        fleet.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--operator",
        "ci",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    let url = HttpUrl::parse(&first).unwrap();
    let host = url.authority();

    let page = get(&url, "/", &[]);
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self'; style-src 'self';"),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    let html = String::from_utf8(page.body).unwrap();
    let token = html
        .split("name=\"toolseal-console-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert_eq!(token.len(), 64);

    let state = get(&url, "/api/state", &[("X-Toolseal-Console", &token)]);
    assert_eq!(state.status, 200);
    let body: serde_json::Value = serde_json::from_slice(&state.body).unwrap();
    assert_eq!(body["operator"], "ci");
    assert_eq!(
        (&body["ecds"]["version"], &body["ecds"]["admin_version"]),
        (&serde_json::json!("1"), &serde_json::json!("5"))
    );
    assert_eq!(body["ecds"]["error"], serde_json::Value::Null);
    assert_eq!(body["instances"][0]["name"], "edge-a");
    assert!(
        body["instances"][0]["error"]
            .as_str()
            .unwrap()
            .contains("cannot connect")
    );
    assert!(!String::from_utf8_lossy(&state.body).contains("s3cret-admin-token"));

    // No token, a foreign Host (DNS rebinding), a change from another origin: 403.
    assert_eq!(get(&url, "/api/state", &[]).status, 403);
    assert_eq!(get(&url, "/", &[("Host", "evil.example")]).status, 403);
    let change = |origin: &str| {
        http_client::request(
            &url,
            "POST",
            "/api/servers/demo/release",
            &[
                ("X-Toolseal-Console", &token),
                ("Origin", origin),
                ("Content-Type", "application/json"),
            ],
            b"{}",
            Duration::from_secs(30),
        )
        .unwrap()
    };
    assert_eq!(change("http://evil.example").status, 403);
    // From the console's own origin the change is decided (here: refused, nothing to release;
    // the instance cannot be read, so nothing is written).
    let own = change(&format!("http://{host}"));
    assert_eq!(own.status, 502, "{}", String::from_utf8_lossy(&own.body));
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let event: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(
        (
            event["operator"].as_str(),
            event["action"].as_str(),
            event["result"].as_str()
        ),
        (Some("ci"), Some("release"), Some("refused"))
    );
    drop(running);
    std::fs::remove_dir_all(&dir).unwrap();
}
