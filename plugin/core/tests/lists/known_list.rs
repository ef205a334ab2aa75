//! A `tools/list` result served again byte for byte skips the parse, never a decision: a
//! byte of difference takes the full path, a status that changed in between filters, and
//! every envelope around remembered result bytes decides exactly as a worker with cold caches
//! decides (the oracle: the same traffic with the engine replaced by a fresh one).

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::transcript::{HttpExchange, NativeReplay, Replayed};
use toolseal_core::wire::envelope::{Envelope, ResultBytes, equal_by_words, split_response};

use crate::support;
use crate::support::gateway::{config, config_with};

fn tools() -> Value {
    json!([
        {"name": "get_weather", "description": "Weather for a city.",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"name": "get_time", "description": "The time in a city.",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    ])
}

/// The bytes of the `result` every list below is answered with.
fn result_bytes() -> String {
    json!({"tools": tools()}).to_string()
}

#[derive(Clone, Copy, PartialEq)]
enum Framing {
    Json,
    Sse,
}

/// A `tools/list` request (`cursor`: sent with a cursor) answered with `answer` verbatim.
fn list_exchange(id: Value, cursor: bool, answer: &[u8], framing: Framing) -> HttpExchange {
    let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    if cursor {
        request["params"] = json!({"cursor": "c1"});
    }
    let (content_type, body) = match framing {
        Framing::Json => ("application/json", answer.to_vec()),
        Framing::Sse => {
            let mut b = b"event: message\ndata: ".to_vec();
            b.extend_from_slice(answer);
            b.extend_from_slice(b"\n\n");
            ("text/event-stream", b)
        }
    };
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "s1".into()),
        ],
        request_body: request.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), content_type.into())],
        response_body: body,
    }
}

fn plain_answer(id: u64, result: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#).into_bytes()
}

/// The tools a client received from a forwarded list answer.
fn served_tools(out: &Replayed, framing: Framing) -> usize {
    assert!(out.local_reply.is_none());
    let text = String::from_utf8(out.response_body.clone()).unwrap();
    let json = match framing {
        Framing::Json => text,
        Framing::Sse => text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap()
            .to_string(),
    };
    let v: Value = serde_json::from_str(&json).unwrap();
    v["result"]["tools"].as_array().unwrap().len()
}

/// A POST to the admin API: its status.
fn admin(gw: &mut NativeReplay, path: &str, body: Value) -> u16 {
    support::admin::admin(gw, "srv", "POST", path, body).0
}

/// A gateway that has served the list once (and so remembers its result bytes).
fn served_once(framing: Framing) -> NativeReplay {
    let mut gw = NativeReplay::new(config());
    let first = list_exchange(json!(1), false, &plain_answer(1, &result_bytes()), framing);
    let out = gw.exchange("srv", &first, 4096);
    assert_eq!(served_tools(&out, framing), 2);
    gw
}

#[test]
fn a_list_one_byte_different_takes_the_full_path() {
    for framing in [Framing::Json, Framing::Sse] {
        let mut gw = served_once(framing);
        let same = plain_answer(2, &result_bytes());
        let out = gw.exchange("srv", &list_exchange(json!(2), false, &same, framing), 4096);
        assert_eq!(
            out.response_body,
            list_exchange(json!(2), false, &same, framing).response_body
        );
        // One byte of one description changes: drift, whatever was remembered.
        let changed = result_bytes().replacen("Weather for", "Weather fOr", 1);
        assert_eq!(changed.len(), result_bytes().len());
        let ex = list_exchange(json!(3), false, &plain_answer(3, &changed), framing);
        assert_eq!(served_tools(&gw.exchange("srv", &ex, 4096), framing), 0);
        assert_eq!(gw.out.audits.last().unwrap().event, "list.filtered");
        // And the remembered bytes, served again, stay filtered (drift is sticky).
        let ex = list_exchange(json!(4), false, &plain_answer(4, &result_bytes()), framing);
        assert_eq!(served_tools(&gw.exchange("srv", &ex, 4096), framing), 0);
    }
}

#[test]
fn a_quarantine_between_two_identical_lists_filters_the_second() {
    for framing in [Framing::Json, Framing::Sse] {
        let mut gw = served_once(framing);
        // Another worker (a second engine on the same store) quarantines the server.
        let other = std::mem::replace(&mut gw.engine, Engine::new(config()));
        assert_eq!(
            admin(
                &mut gw,
                "servers/srv/quarantine",
                json!({"reason": "incident"})
            ),
            200
        );
        gw.engine = other;
        let ex = list_exchange(json!(2), false, &plain_answer(2, &result_bytes()), framing);
        let out = gw.exchange("srv", &ex, 4096);
        assert_eq!(served_tools(&out, framing), 0);
        let text = String::from_utf8(out.response_body).unwrap();
        assert!(text.contains(r#""schema_status":"quarantined""#), "{text}");
        assert!(text.contains("incident"), "{text}");
        // Released: the same bytes are served again.
        assert_eq!(admin(&mut gw, "servers/srv/release", json!({})), 200);
        let ex = list_exchange(json!(3), false, &plain_answer(3, &result_bytes()), framing);
        assert_eq!(served_tools(&gw.exchange("srv", &ex, 4096), framing), 2);
    }
}

/// Envelopes around the remembered result bytes, each with what the request asked.
fn envelopes(r: &str) -> Vec<(Value, bool, String)> {
    let plain =
        |id: &str, rest: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{r}{rest}}}"#);
    vec![
        (json!(2), false, plain("2", "")),
        (json!(2), false, format!(" \r\n\t{}\n ", plain("2", ""))),
        (
            json!(2),
            false,
            format!(r#"{{"result":{r},"id":2,"jsonrpc":"2.0"}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":2,"re\u0073ult":{r}}}"#),
        ),
        (json!(2), false, plain("2.0", "")),
        (json!(2), true, plain("2", "")),
        (json!(2), false, plain("3", "")),
        (json!(2), true, plain("3", "")),
        (json!(2), false, plain(r#""2""#, "")),
        (json!("2"), false, plain(r#""2""#, "")),
        (json!("2"), false, plain(r#""\u0032""#, "")),
        (json!(2), false, plain("2", r#","result":{"tools":[]}"#)),
        (json!(2), false, plain("2", r#","jsonrpc":"2.0""#)),
        (
            json!(2),
            false,
            plain("2", r#","error":{"code":1,"message":"x"}"#),
        ),
        (json!(2), false, plain("2", r#","method":"x""#)),
        (json!(2), false, plain("2", r#","_meta":{"a":1,"a":2}"#)),
        (json!(2), false, plain("2", r#","_meta":{}"#)),
        (json!(2), false, plain("2", ",")),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"1.0","id":2,"result":{r}}}"#),
        ),
        (json!(2), false, format!(r#"{{"id":2,"result":{r}}}"#)),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","result":{r}}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":null,"result":{r}}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":[2],"result":{r}}}"#),
        ),
        (json!(2), false, format!("{} x", plain("2", ""))),
        (json!(2), false, format!("\u{feff}{}", plain("2", ""))),
        (json!(2), false, format!("[{}]", plain("2", ""))),
        (
            json!(2),
            false,
            plain("2", "").trim_end_matches('}').to_string(),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":2,"result":{r}x}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":"\x","result":{r}}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":2 ,"result" : {r} }}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":02,"result":{r}}}"#),
        ),
        (
            json!(2),
            false,
            format!(r#"{{"jsonrpc":"2.0","id":1e400,"result":{r}}}"#),
        ),
    ]
}

#[test]
fn every_envelope_around_remembered_bytes_decides_as_a_cold_worker() {
    for framing in [Framing::Json, Framing::Sse] {
        for (id, cursor, answer) in envelopes(&result_bytes()) {
            let ex = list_exchange(id, cursor, answer.as_bytes(), framing);
            let mut warm = served_once(framing);
            let mut cold = served_once(framing);
            cold.engine = Engine::new(config());
            let (audits, decisions) = (warm.out.audits.len(), warm.out.decisions.len());
            let got = warm.exchange("srv", &ex, 4096);
            let want = cold.exchange("srv", &ex, 4096);
            assert_eq!(got, want, "{answer}");
            assert_eq!(
                warm.out.audits[audits..],
                cold.out.audits[audits..],
                "{answer}"
            );
            assert_eq!(
                warm.out.decisions[decisions..],
                cold.out.decisions[decisions..]
            );
            assert_eq!(warm.out.counts, cold.out.counts, "{answer}");
            let entries = |gw: &NativeReplay| -> Vec<(String, Vec<u8>)> {
                gw.store
                    .entries()
                    .map(|(k, v)| (k.to_string(), v.to_vec()))
                    .collect()
            };
            assert_eq!(entries(&warm), entries(&cold), "{answer}");
        }
    }
}

#[test]
fn the_scanner_reads_only_the_plain_envelope() {
    let r = result_bytes();
    let known = ResultBytes::known(r.as_bytes());
    let accepted: Vec<(String, Option<Envelope>)> = envelopes(&r)
        .into_iter()
        .map(|(_, _, answer)| {
            let found = split_response(answer.as_bytes(), known);
            (answer, found)
        })
        .filter(|(_, found)| found.is_some())
        .collect();
    let ids: Vec<Value> = accepted
        .iter()
        .map(|(_, e)| e.clone().unwrap().id)
        .collect();
    // Plain, with whitespace, reordered, escaped key, 2.0, cursor, 3, 3, "2", "2", "\u0032", spaced.
    assert_eq!(
        ids,
        vec![
            json!(2),
            json!(2),
            json!(2),
            json!(2),
            json!(2.0),
            json!(2),
            json!(3),
            json!(3),
            json!("2"),
            json!("2"),
            json!("2"),
            json!(2)
        ]
    );
    for (answer, found) in &accepted {
        let span = found.clone().unwrap().result;
        assert_eq!(&answer.as_bytes()[span], r.as_bytes());
    }
    // Bytes that passed the strict parser: the result's end is found by its brackets.
    let tricky = r#"{"id":1,"result":{"a":"}]\"{[","b":[{}]},"jsonrpc":"2.0"}"#;
    let found = split_response(tricky.as_bytes(), ResultBytes::Parsed).unwrap();
    assert_eq!(&tricky[found.result], r#"{"a":"}]\"{[","b":[{}]}"#);
    // One byte short of the known result is not it.
    let short = &r.as_bytes()[..r.len() - 1];
    let answer = plain_answer(1, &r);
    assert_eq!(split_response(&answer, ResultBytes::known(short)), None);
}

#[test]
fn bytes_compared_as_the_body_arrived_are_not_compared_again_where_they_were_compared() {
    let r = result_bytes();
    let answer = plain_answer(1, &r);
    let at = answer.windows(9).position(|w| w == b"\"result\":").unwrap() + 9;
    // The body's first result byte differs from the known bytes, but a held scan is said to
    // have compared it: only the bytes after it are compared.
    let mut other = r.clone().into_bytes();
    other[0] = b'[';
    fn said(known: &[u8], at: usize, compared: usize) -> ResultBytes<'_> {
        ResultBytes::Known {
            known,
            at,
            compared,
        }
    }
    let found = split_response(&answer, said(&other, at, 1)).unwrap();
    assert_eq!(&answer[found.result], r.as_bytes());
    // Anywhere else, or with nothing compared, every byte is.
    assert_eq!(split_response(&answer, said(&other, at + 1, 1)), None);
    assert_eq!(split_response(&answer, said(&other, at, 0)), None);
    // The rest is still compared: a byte after those compared differs.
    other[0] = r.as_bytes()[0];
    let last = other.len() - 1;
    other[last] = b' ';
    assert_eq!(split_response(&answer, said(&other, at, last)), None);
    assert!(split_response(&answer, said(&other, at, last + 1)).is_some());
}

#[test]
fn the_word_compare_of_the_wasm_build_is_byte_equality() {
    let base: Vec<u8> = (0..200u32).map(|i| (i * 7 % 251) as u8).collect();
    for len in 0..base.len() {
        let a = &base[..len];
        assert!(equal_by_words(a, a));
        assert!(!equal_by_words(a, &base[..len + 1]));
        for at in 0..len {
            let mut b = a.to_vec();
            b[at] ^= 0x20;
            assert!(!equal_by_words(a, &b), "len {len}, byte {at}");
        }
    }
}

/// One step of the lockstep replay below.
enum Step {
    List(u64, String),
    Approve,
}

#[test]
fn a_drifted_list_checked_again_is_remembered_and_decides_as_a_cold_worker() {
    for framing in [Framing::Json, Framing::Sse] {
        let drifted = result_bytes().replacen("Weather for", "Weather fOr", 1);
        // Refused three times, approved, served, then the old bytes drift from the new
        // baseline: every step must decide as a worker whose caches are cold.
        let steps = [
            Step::List(2, drifted.clone()),
            Step::List(3, drifted.clone()),
            Step::List(4, drifted.clone()),
            Step::Approve,
            Step::List(5, drifted.clone()),
            Step::List(6, result_bytes()),
            Step::List(7, result_bytes()),
        ];
        let mut warm = served_once(framing);
        let mut cold = served_once(framing);
        let served_fp = warm.engine.remembered_list("srv").unwrap();
        let mut drifted_fp = None;
        let mut served = Vec::new();
        for step in &steps {
            let (audits, decisions) = (warm.out.audits.len(), warm.out.decisions.len());
            cold.engine = Engine::new(config());
            match step {
                Step::Approve => {
                    let body = json!({"fingerprint": drifted_fp.clone().unwrap()});
                    assert_eq!(admin(&mut warm, "servers/srv/approve", body.clone()), 200);
                    assert_eq!(admin(&mut cold, "servers/srv/approve", body), 200);
                }
                Step::List(id, result) => {
                    let ex = list_exchange(json!(id), false, &plain_answer(*id, result), framing);
                    let got = warm.exchange("srv", &ex, 4096);
                    let want = cold.exchange("srv", &ex, 4096);
                    assert_eq!(got, want, "list {id}");
                    served.push(served_tools(&got, framing));
                    // Whatever the verdict, the worker remembers these bytes' fingerprint.
                    let remembered = warm.engine.remembered_list("srv").unwrap();
                    if *result == drifted {
                        assert_ne!(remembered, served_fp);
                        assert_eq!(*drifted_fp.get_or_insert(remembered.clone()), remembered);
                    } else {
                        assert_eq!(remembered, served_fp);
                    }
                }
            }
            assert_eq!(warm.out.audits[audits..], cold.out.audits[audits..]);
            assert_eq!(
                warm.out.decisions[decisions..],
                cold.out.decisions[decisions..]
            );
            assert_eq!(warm.out.counts, cold.out.counts);
            let entries = |gw: &NativeReplay| -> Vec<(String, Vec<u8>)> {
                gw.store
                    .entries()
                    .map(|(k, v)| (k.to_string(), v.to_vec()))
                    .collect()
            };
            assert_eq!(entries(&warm), entries(&cold));
        }
        // Filtered, filtered, filtered; approved and served; the old set is now drift.
        assert_eq!(served, [0, 0, 0, 2, 0, 0]);
    }
}

/// A config whose server `srv` has `drift_scope: "tool"` and whose policy lets only the ops
/// group call `get_time` (so a list is cut per caller).
fn scoped_config() -> Config {
    config_with(json!({"servers": {"srv": {"drift_scope": "tool"}},
        "policy": {"rules": [
            {"action": "allow", "tool": "get_time", "principal": {"header": "x-user-group", "in": ["ops"]}},
            {"action": "deny", "tool": "get_time"}]}}))
}

#[test]
fn a_list_served_again_is_cut_per_caller_and_decides_as_a_cold_worker() {
    for framing in [Framing::Json, Framing::Sse] {
        let drifted = result_bytes().replacen("Weather for", "Weather fOr", 1);
        // (id, caller group, result): the same bytes to callers who see different lists,
        // then a drift contained to get_weather, then both again.
        let steps = [
            (1, Some("ops"), result_bytes()),
            (2, None, result_bytes()),
            (3, Some("ops"), result_bytes()),
            (4, None, drifted.clone()),
            (5, Some("ops"), drifted.clone()),
            (6, None, drifted.clone()),
            (7, Some("ops"), result_bytes()),
        ];
        let mut warm = NativeReplay::new(scoped_config());
        let mut cold = NativeReplay::new(scoped_config());
        let mut served = Vec::new();
        for (id, group, result) in &steps {
            let (audits, decisions) = (warm.out.audits.len(), warm.out.decisions.len());
            cold.engine = Engine::new(scoped_config());
            let mut ex = list_exchange(json!(id), false, &plain_answer(*id, result), framing);
            if let Some(group) = group {
                ex.request_headers
                    .push(("x-user-group".into(), (*group).into()));
            }
            let got = warm.exchange("srv", &ex, 4096);
            let want = cold.exchange("srv", &ex, 4096);
            assert_eq!(got, want, "list {id}");
            served.push(served_tools(&got, framing));
            assert_eq!(warm.out.audits[audits..], cold.out.audits[audits..]);
            assert_eq!(
                warm.out.decisions[decisions..],
                cold.out.decisions[decisions..]
            );
            assert_eq!(warm.out.counts, cold.out.counts);
            let entries = |gw: &NativeReplay| -> Vec<(String, Vec<u8>)> {
                gw.store
                    .entries()
                    .map(|(k, v)| (k.to_string(), v.to_vec()))
                    .collect()
            };
            assert_eq!(entries(&warm), entries(&cold));
        }
        // ops sees both, others only get_weather; after the drift get_weather is withheld
        // (ops still sees get_time, others nothing); the baseline's bytes serve both to ops.
        assert_eq!(served, [2, 1, 2, 0, 1, 0, 2]);
        // The remembered fingerprint is always the full list's, never a caller's view.
        let full = toolseal_core::policy::fingerprint::digest_tools(
            &serde_json::from_str::<Value>(&result_bytes()).unwrap()["tools"],
            &toolseal_core::policy::fingerprint::FingerprintFields::default(),
        )
        .unwrap()
        .fingerprint();
        assert_eq!(warm.engine.remembered_list("srv"), Some(full));
    }
}
