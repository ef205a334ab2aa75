//! The schema_status lifecycle, exhaustively: every state × every event × both postures,
//! with the next status, what is audited, and which events are refused.

use crate::policy::status::Posture::{self, Discovery, Strict};
use crate::policy::status::{Actor, Event, LiveSet, Refusal, SchemaStatus, ServerRecord, apply};

const A: &str = "sha256:aaaa";
const B: &str = "sha256:bbbb";
const C: &str = "sha256:cccc";
const NOW: u64 = 5_000;

fn state(name: &str, posture: Posture) -> ServerRecord {
    let mut r = ServerRecord::new(1);
    match name {
        "unbaselined" => {}
        "verified" => {
            r = apply(&r, &live(A, false), Discovery, 2).unwrap().0;
        }
        "changed" => {
            r = apply(&r, &live(A, false), Discovery, 2).unwrap().0;
            r = apply(&r, &live(B, false), Discovery, 3).unwrap().0;
        }
        "pending" => {
            r = apply(&r, &live(A, false), Strict, 2).unwrap().0;
        }
        "quarantined" => {
            r = apply(&r, &live(A, false), Discovery, 2).unwrap().0;
            r = apply(
                &r,
                &Event::Quarantine {
                    reason: "held".into(),
                    by: Actor::Admin,
                },
                posture,
                3,
            )
            .unwrap()
            .0;
        }
        other => panic!("{other}"),
    }
    assert_eq!(r.status.as_str(), name, "fixture {name}");
    r
}

fn live(fp: &str, matches: bool) -> Event {
    Event::Live(LiveSet::Valid {
        fingerprint: fp.into(),
        matches,
        findings: vec![],
        reach: crate::policy::containment::DriftReach::Unknown,
        view: None,
        grows: false,
    })
}

fn events() -> Vec<(&'static str, Event)> {
    vec![
        ("live A (matches baseline A)", live(A, true)),
        ("live B (differs)", live(B, false)),
        (
            "live invalid",
            Event::Live(LiveSet::Invalid {
                reason: "INVALID_TOOL_SET: duplicate".into(),
            }),
        ),
        ("list_changed", Event::ListChanged),
        (
            "approve A",
            Event::Approve {
                fingerprint: A.into(),
            },
        ),
        (
            "approve B",
            Event::Approve {
                fingerprint: B.into(),
            },
        ),
        (
            "quarantine",
            Event::Quarantine {
                reason: "why".into(),
                by: Actor::Admin,
            },
        ),
        ("release", Event::Release { by: Actor::Admin }),
        (
            "pin C",
            Event::Pin {
                fingerprint: C.into(),
                lock: false,
            },
        ),
        (
            "lock A",
            Event::Pin {
                fingerprint: A.into(),
                lock: true,
            },
        ),
    ]
}

/// `Ok((status, audit events))` or `Err(refusal kind)`.
type Outcome = Result<(&'static str, &'static [&'static str]), &'static str>;

fn expected(state: &str, event: &str, posture: Posture) -> Outcome {
    let strict = posture == Strict;
    match (state, event) {
        ("unbaselined", "live A (matches baseline A)" | "live B (differs)") if strict => {
            Ok(("pending", &["schema.pending"]))
        }
        ("unbaselined", "live A (matches baseline A)" | "live B (differs)") => {
            Ok(("verified", &["schema.baselined"]))
        }
        ("unbaselined", "live invalid") => Ok(("changed", &["schema.changed"])),
        ("unbaselined", "approve A" | "approve B") => Err("conflict"),
        ("unbaselined", "pin C") => Ok(("verified", &["schema.approved"])),
        ("unbaselined", "lock A") => Ok(("verified", &["schema.approved"])),

        ("verified", "live A (matches baseline A)") => Ok(("verified", &[])),
        ("verified", "live B (differs)" | "live invalid") => Ok(("changed", &["schema.changed"])),
        ("verified", "approve A") => Ok(("verified", &["schema.approved"])),
        ("verified", "approve B") => Err("conflict"),
        ("verified", "pin C") => Ok(("changed", &["schema.approved"])),
        ("verified", "lock A") => Ok(("verified", &[])),

        // Sticky: even the old set again keeps the server changed.
        ("changed", "live A (matches baseline A)" | "live invalid") => {
            Ok(("changed", &["schema.changed"]))
        }
        ("changed", "live B (differs)") => Ok(("changed", &[])),
        ("changed", "approve B") => Ok(("verified", &["schema.approved"])),
        ("changed", "approve A") => Err("conflict"),
        ("changed", "pin C") => Ok(("changed", &["schema.approved"])),
        ("changed", "lock A") => Ok(("changed", &[])),

        ("pending", "live A (matches baseline A)" | "live invalid") => Ok(("pending", &[])),
        ("pending", "live B (differs)") => Ok(("pending", &["schema.pending"])),
        ("pending", "approve A") => Ok(("verified", &["schema.approved"])),
        ("pending", "approve B") => Err("conflict"),
        ("pending", "pin C") => Ok(("changed", &["schema.approved"])),
        ("pending", "lock A") => Ok(("verified", &["schema.approved"])),

        ("quarantined", e) if e.starts_with("live") => Ok(("quarantined", &[])),
        ("quarantined", "approve A") => Ok(("quarantined", &["schema.approved"])),
        ("quarantined", "approve B") => Err("conflict"),
        ("quarantined", "release") => Ok(("verified", &["server.released"])),
        ("quarantined", "pin C") => Ok(("quarantined", &["schema.approved"])),
        ("quarantined", "lock A") => Ok(("quarantined", &[])),

        (_, "list_changed") => Ok((leak(state), &["schema.reverify"])),
        (_, "quarantine") => Ok(("quarantined", &["server.quarantined"])),
        (_, "release") => Err("not quarantined"),
        (s, e) => panic!("no expectation for {s} × {e}"),
    }
}

fn leak(s: &str) -> &'static str {
    SchemaStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .find(|n| *n == s)
        .unwrap()
}

fn refusal(r: &Refusal) -> &'static str {
    match r {
        Refusal::Conflict { .. } => "conflict",
        Refusal::NotQuarantined => "not quarantined",
        Refusal::HeldByConfig => "held by config",
        Refusal::HeldByAdmin => "held by admin",
    }
}

#[test]
fn every_state_times_every_event_in_both_postures() {
    let mut checked = 0;
    for posture in [Discovery, Strict] {
        for name in SchemaStatus::ALL.map(SchemaStatus::as_str) {
            for (label, event) in events() {
                let before = state(name, posture);
                let got = apply(&before, &event, posture, NOW);
                let want = expected(name, label, posture);
                match (&got, want) {
                    (Ok((after, notes)), Ok((status, audits))) => {
                        let names: Vec<&str> = notes.iter().map(|n| n.event).collect();
                        assert_eq!(
                            (after.status.as_str(), names.as_slice()),
                            (status, audits),
                            "{name} × {label} ({posture:?})"
                        );
                        if after.status == SchemaStatus::Changed {
                            assert!(
                                after.drift_at_ms.is_some(),
                                "{name} × {label}: drift time recorded"
                            );
                        }
                    }
                    (Err(r), Err(kind)) => {
                        assert_eq!(refusal(r), kind, "{name} × {label} ({posture:?})")
                    }
                    (got, want) => {
                        panic!("{name} × {label} ({posture:?}): got {got:?}, want {want:?}")
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 5 * 10);
}

#[test]
fn a_refused_event_changes_nothing() {
    let before = state("changed", Discovery);
    assert!(matches!(
        apply(&before, &Event::Approve { fingerprint: A.into() }, Discovery, NOW),
        Err(Refusal::Conflict { candidate: Some(c) }) if c == B
    ));
}

#[test]
fn list_changed_holds_until_a_fresh_list_verifies() {
    let r = state("verified", Discovery);
    let (r, _) = apply(&r, &Event::ListChanged, Discovery, NOW).unwrap();
    assert!(r.awaiting_verification());
    let (r, notes) = apply(&r, &live(A, true), Discovery, NOW).unwrap();
    assert!(!r.awaiting_verification());
    assert_eq!(notes[0].event, "schema.verified");
}

#[test]
fn a_fingerprint_pin_waits_for_a_live_list_and_a_lock_does_not() {
    let fresh = ServerRecord::new(1);
    let (pinned, _) = apply(
        &fresh,
        &Event::Pin {
            fingerprint: A.into(),
            lock: false,
        },
        Strict,
        NOW,
    )
    .unwrap();
    assert!(pinned.awaiting_verification());
    let (locked, _) = apply(
        &fresh,
        &Event::Pin {
            fingerprint: A.into(),
            lock: true,
        },
        Strict,
        NOW,
    )
    .unwrap();
    assert!(!locked.awaiting_verification());
}

#[test]
fn a_config_quarantine_is_lifted_by_config_only() {
    let r = state("verified", Discovery);
    let (held, _) = apply(
        &r,
        &Event::Quarantine {
            reason: "ops".into(),
            by: Actor::Config,
        },
        Discovery,
        NOW,
    )
    .unwrap();
    assert_eq!(
        apply(&held, &Event::Release { by: Actor::Admin }, Discovery, NOW).unwrap_err(),
        Refusal::HeldByConfig
    );
    let (released, _) =
        apply(&held, &Event::Release { by: Actor::Config }, Discovery, NOW).unwrap();
    assert_eq!(released.status, SchemaStatus::Verified);
}

#[test]
fn an_admin_quarantine_is_not_lifted_by_config() {
    let r = state("verified", Discovery);
    let (held, _) = apply(
        &r,
        &Event::Quarantine {
            reason: "exfiltration suspected".into(),
            by: Actor::Admin,
        },
        Discovery,
        NOW,
    )
    .unwrap();
    assert_eq!(
        apply(&held, &Event::Release { by: Actor::Config }, Discovery, NOW).unwrap_err(),
        Refusal::HeldByAdmin
    );
    let (released, _) = apply(&held, &Event::Release { by: Actor::Admin }, Discovery, NOW).unwrap();
    assert_eq!(released.status, SchemaStatus::Verified);
}

#[test]
fn release_reevaluates_without_a_baseline_by_posture() {
    let fresh = ServerRecord::new(1);
    for (posture, want) in [
        (Discovery, SchemaStatus::Unbaselined),
        (Strict, SchemaStatus::Pending),
    ] {
        let (held, _) = apply(
            &fresh,
            &Event::Quarantine {
                reason: "x".into(),
                by: Actor::Admin,
            },
            posture,
            2,
        )
        .unwrap();
        let (released, _) = apply(&held, &Event::Release { by: Actor::Admin }, posture, 3).unwrap();
        assert_eq!(released.status, want, "{posture:?}");
    }
}
