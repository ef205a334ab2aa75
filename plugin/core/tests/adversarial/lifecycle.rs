//! The lifecycle under pressure: approvals racing drift, servers that flip, notifications,
//! restarts (a new engine and an empty store, as after an Envoy restart).

use super::*;

#[test]
fn approval_racing_a_new_drift_is_a_conflict() {
    let mut gw = verified_gateway();
    assert!(list(&mut gw, "s1", &[evil(), read_file()]).is_empty());
    let reviewed = fp(&[evil(), read_file()]);
    // While the admin reviews, the server drifts again.
    assert!(list(&mut gw, "s1", &[evil(), read_file(), delete_file()]).is_empty());
    let (code, body) = admin(
        &mut gw,
        &format!("servers/{SERVER}/approve"),
        json!({"fingerprint": reviewed}),
    );
    assert_eq!(code, 409, "{body}");
    assert_eq!(status(&mut gw), "changed");
    assert_eq!(
        error_code(&call(&mut gw, "s1", "delete_file")),
        "SCHEMA_CHANGED"
    );
    let current = fp(&[evil(), read_file(), delete_file()]);
    let (code, _) = admin(
        &mut gw,
        &format!("servers/{SERVER}/approve"),
        json!({"fingerprint": current}),
    );
    assert_eq!(code, 200);
    assert_eq!(status(&mut gw), "verified");
}

#[test]
fn server_flipping_between_two_tool_sets_stays_changed_with_bounded_state() {
    let mut gw = verified_gateway();
    let flip = |gw: &mut NativeReplay, n: usize| {
        for i in 0..n {
            let set = if i % 2 == 0 {
                vec![evil(), read_file()]
            } else {
                vec![echo(), read_file()]
            };
            assert!(
                list(gw, &format!("s{}", i % 3), &set).is_empty(),
                "flip {i} served tools"
            );
        }
    };
    // 300 flips fill the audit ring (256 events by default); the next 300 must add nothing.
    flip(&mut gw, 300);
    assert_eq!(status(&mut gw), "changed");
    let (keys, bytes) = (gw.store.len(), gw.store.value_bytes());
    flip(&mut gw, 300);
    assert_eq!(
        status(&mut gw),
        "changed",
        "serving the old set again never un-drifts"
    );
    assert_eq!(gw.store.len(), keys, "state keys grow with flips");
    assert!(
        gw.store.value_bytes() <= bytes + bytes / 4,
        "state bytes grow: {} -> {}",
        bytes,
        gw.store.value_bytes()
    );
    // One schema.changed each time the candidate moves (600 flips), each for one of the two sets.
    let changed: Vec<_> = gw
        .out
        .audits
        .iter()
        .filter(|a| a.event == "schema.changed")
        .collect();
    assert_eq!(changed.len(), 600);
    let (a, b) = (fp(&[evil(), read_file()]), fp(&[echo(), read_file()]));
    assert!(changed.iter().all(|e| e.live.as_deref() == Some(a.as_str()) || e.live.as_deref() == Some(b.as_str())));
    assert_eq!(error_code(&call(&mut gw, "s1", "echo")), "SCHEMA_CHANGED");
}

#[test]
fn list_changed_notification_holds_calls_until_a_fresh_list() {
    let mut gw = verified_gateway();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let get = HttpExchange {
        http_method: "GET".into(),
        request_body: Vec::new(),
        ..exchange("s1", b"", "text/event-stream", &sse(&note))
    };
    assert!(gw.exchange(SERVER, &get, 3).local_reply.is_none());
    assert_eq!(
        error_code(&call(&mut gw, "s1", "echo")),
        "SCHEMA_UNVERIFIED"
    );
    // The same notification with its method spelled with escapes is recognized too.
    assert_eq!(list(&mut gw, "s1", &[echo(), read_file()]).len(), 2);
    let escaped =
        b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list\\u005fchanged\"}\n\n";
    let get = HttpExchange {
        http_method: "GET".into(),
        request_body: Vec::new(),
        ..exchange("s1", b"", "text/event-stream", escaped)
    };
    gw.exchange(SERVER, &get, 3);
    assert_eq!(
        error_code(&call(&mut gw, "s1", "echo")),
        "SCHEMA_UNVERIFIED"
    );
}

/// A drift that first-contact screening has nothing to say about.
fn echo_v2() -> Value {
    let mut tool = echo();
    tool["inputSchema"]["properties"]["times"] = json!({"type": "integer"});
    tool
}

#[test]
fn restart_loses_discovery_baselines_and_rebaselines_on_first_list() {
    // The documented risk: runtime TOFU state is per Envoy instance and not persisted.
    let mut gw = verified_gateway();
    assert!(list(&mut gw, "s1", &[echo_v2(), read_file()]).is_empty());
    let mut restarted = gateway(json!({}));
    assert_eq!(
        list(&mut restarted, "s1", &[echo_v2(), read_file()]).len(),
        2,
        "discovery trusts the first list after a restart"
    );
    assert_eq!(status(&mut restarted), "verified");
}

#[test]
fn restart_with_a_strict_lock_filters_the_first_list_after_restart() {
    let lock = json!({"fingerprint": fp(&[echo(), read_file()]), "tools": [echo(), read_file()]});
    let config = json!({"posture": "strict", "servers": {SERVER: {"lock": lock}}});
    let mut gw = gateway(config.clone());
    assert_eq!(
        error_code(&call(&mut gw, "s1", "echo")),
        "FORWARDED",
        "a lock checks calls at once"
    );
    assert!(list(&mut gw, "s1", &[evil(), read_file()]).is_empty());
    let mut restarted = gateway(config);
    assert_eq!(
        error_code(&call(&mut restarted, "s1", "read_file")),
        "FORWARDED"
    );
    assert!(
        list(&mut restarted, "s1", &[evil(), read_file()]).is_empty(),
        "no window after a restart"
    );
    assert_eq!(status(&mut restarted), "changed");
    assert_eq!(
        error_code(&call(&mut restarted, "s1", "echo")),
        "SCHEMA_CHANGED"
    );
}
