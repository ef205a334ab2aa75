//! Canonical JSON and fingerprints: never panic; the canonical text re-parses (strictly) to
//! a numerically equal value and is a fixed point; a tool set's fingerprint does not move
//! when its tools are reordered, its tools' keys are reordered, or it is computed from
//! digest pairs; every tool digest is the SHA-256 of its canonical view.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolseal_core::wire::canonical::to_canonical_string;
use toolseal_core::policy::fingerprint::{
    FingerprintField, FingerprintFields, ToolDigests, canonical_tool_view, digest_tools, normalized_tool_view,
    server_fingerprint, sha256_hex, tool_digest,
};
use toolseal_core::wire::json::parse_strict;
use toolseal_fuzz::numeric_eq;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else { return };
    let Ok(value) = parse_strict(body, 64) else { return };
    let text = to_canonical_string(&value);
    let again = parse_strict(text.as_bytes(), 128).expect("canonical text must parse strictly");
    assert!(numeric_eq(&value, &again), "canonical text changed the value: {text}");
    assert_eq!(to_canonical_string(&again), text, "canonical text is not a fixed point");

    let fields = if flags & 1 == 0 {
        FingerprintFields::default()
    } else {
        FingerprintFields::from_fields(&FingerprintField::ALL)
    };
    let tools = match &value {
        Value::Object(obj) => obj.get("tools").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let digests = digest_tools(&tools, &fields);
    if let Value::Array(list) = &tools {
        for tool in list {
            let view = canonical_tool_view(tool, &fields);
            let digest = tool_digest(tool, &fields);
            let normalized = normalized_tool_view(tool, &fields);
            match (&view, &digest) {
                (Ok(view), Ok(digest)) => {
                    assert_eq!(&sha256_hex(view), digest);
                    let parsed = parse_strict(view, 128).expect("a tool view must parse");
                    assert_eq!(normalized.as_ref(), Some(&parsed));
                    assert_eq!(to_canonical_string(&parsed).as_bytes(), &view[..], "tool view not canonical");
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!("canonical_tool_view and tool_digest disagree"),
            }
        }
        let mut reversed = list.clone();
        reversed.reverse();
        let rotate = usize::from(flags >> 1) % list.len().max(1);
        let mut rotated = list.clone();
        rotated.rotate_left(rotate);
        // Re-reading the canonical text reorders every object's keys.
        let rekeyed = parse_strict(to_canonical_string(&tools).as_bytes(), 128).ok();
        for other in [Some(Value::Array(reversed)), Some(Value::Array(rotated)), rekeyed].into_iter().flatten() {
            let moved = digest_tools(&other, &fields);
            match (&digests, &moved) {
                (Ok(a), Ok(b)) => assert_eq!(a.fingerprint(), b.fingerprint(), "fingerprint moved with order"),
                (Err(_), Err(_)) => {}
                _ => panic!("reordering changed whether the set is valid: {digests:?} vs {moved:?}"),
            }
        }
    }
    if let Ok(d) = &digests {
        let pairs = d.entries.iter().map(|(n, g)| (n.as_str(), g.as_str()));
        assert_eq!(server_fingerprint(pairs), d.fingerprint());
        let mut entries = d.entries.clone();
        entries.reverse();
        assert_eq!(ToolDigests::from_entries(entries).map(|x| x.fingerprint()), Ok(d.fingerprint()));
    }
});
