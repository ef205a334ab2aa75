//! Policy rules about prompts and resources (`prompt`, `resource` conditions): they decide
//! `prompts/get` and `resources/read` as the rules about tools decide calls, after every other
//! check, and the server never sees a use they refuse. A rule without either condition, and
//! `policy.default`, still decide tool calls only.

use serde_json::{Value, json};
use toolseal_core::transcript::{HttpExchange, NativeReplay};

use super::sealed_sections::{ask_as, audited, summarize, weather};

const STATELESS: &str = "2026-07-28";

fn triage() -> Value {
    json!({"name": "triage_issue", "description": "Triage one issue.",
        "arguments": [{"name": "issue", "required": true}]})
}

/// A gateway whose server `docs` seals its prompts, with `policy`; tools and prompts listed
/// once in `version` (a 2025 session when `None`), the prompts by an `ops` caller.
fn listed(policy: Value, version: Option<&str>) -> NativeReplay {
    let mut gw = crate::support::gateway::gateway(
        json!({"servers": {"docs": {"seal": ["prompts"]}}, "policy": policy}),
    );
    let who = (version, None);
    let tools = json!({"tools": [weather("Weather for a city.")]});
    // Listed (a policy that refuses every call hides the tool from the list).
    let got = ask_as(&mut gw, who, "tools/list", json!({}), tools);
    assert!(got["tools"].is_array(), "{got}");
    // Sealed whole, whatever policy hides from this caller's list.
    let got = ask_as(
        &mut gw,
        (version, Some("ops")),
        "prompts/list",
        json!({}),
        prompts(),
    );
    assert!(got["prompts"].is_array(), "{got}");
    gw
}

fn prompts() -> Value {
    json!({"prompts": [summarize("Summarize a page."), triage()]})
}

/// The names (or URIs) a list answer shows, and how many policy hid (its `_meta` note).
fn shown(got: &Value, member: &str, key: &str) -> (Vec<String>, u64) {
    let items = got[member].as_array().unwrap();
    let names = items
        .iter()
        .map(|i| i[key].as_str().unwrap().to_string())
        .collect();
    let hidden = got["_meta"]["io.toolseal/status"]["hidden_by_policy"]
        .as_u64()
        .unwrap_or(0);
    (names, hidden)
}

/// The error code of the local answer to a use, or `None` when the server was asked (its
/// canned answer came back).
fn refused(
    gw: &mut NativeReplay,
    who: (Option<&str>, Option<&str>),
    method: &str,
    params: Value,
) -> Option<String> {
    let answer = json!({"served": true});
    let got = ask_as(gw, who, method, params, answer);
    match got.get("served") {
        Some(_) => None,
        None => Some(
            got["error"]["data"]["error_code"]
                .as_str()
                .unwrap()
                .to_string(),
        ),
    }
}

/// Rules about prompts (a triage prompt for `ops` callers only, a summary refused for plain
/// HTTP URLs) and resources (nothing under `file:///secrets/`).
fn rules() -> Value {
    json!({"rules": [
        {"action": "allow", "prompt": "triage_*", "principal": {"header": "x-mcp-toolsets", "in": ["ops"]}},
        {"action": "deny", "prompt": "triage_*"},
        {"action": "deny", "prompt": "summarize", "arguments": {"/url": {"prefix": "http://"}}},
        {"action": "deny", "resource": "file:///secrets/*"},
    ]})
}

#[test]
fn rules_about_prompts_and_resources_refuse_their_uses_before_the_server_in_both_eras() {
    let policy = rules();
    for version in [None, Some(STATELESS)] {
        let mut gw = listed(policy.clone(), version);
        let (anyone, ops) = ((version, None), (version, Some("ops")));
        let issue = json!({"name": "triage_issue", "arguments": {"issue": "7"}});
        assert_eq!(
            refused(&mut gw, anyone, "prompts/get", issue.clone()).as_deref(),
            Some("POLICY_DENIED"),
            "{version:?}"
        );
        assert_eq!(
            refused(&mut gw, ops, "prompts/get", issue),
            None,
            "{version:?}"
        );
        let plain = json!({"name": "summarize", "arguments": {"url": "http://example.test/"}});
        let safe = json!({"name": "summarize", "arguments": {"url": "https://example.test/"}});
        assert_eq!(
            refused(&mut gw, anyone, "prompts/get", plain).as_deref(),
            Some("POLICY_DENIED")
        );
        assert_eq!(refused(&mut gw, anyone, "prompts/get", safe), None);
        let secret = json!({"uri": "file:///secrets/keys.txt"});
        assert_eq!(
            refused(&mut gw, anyone, "resources/read", secret).as_deref(),
            Some("POLICY_DENIED")
        );
        let note = json!({"uri": "file:///notes/today.md"});
        assert_eq!(refused(&mut gw, anyone, "resources/read", note), None);
        // The rules about prompts have no `tool` condition, and still never decide a call.
        let call = json!({"name": "get_weather", "arguments": {"city": "Oslo"}});
        assert_eq!(refused(&mut gw, anyone, "tools/call", call), None);
        assert_eq!(audited(&gw, "use.denied"), 3, "{version:?}");
    }
}

#[test]
fn a_refused_use_names_its_rule_and_asks_nothing_of_the_agent() {
    let policy = json!({"rules": [{"action": "deny", "prompt": "triage_*"}]});
    let mut gw = listed(policy, None);
    let issue = json!({"name": "triage_issue", "arguments": {"issue": "7"}});
    let got = ask_as(
        &mut gw,
        (None, None),
        "prompts/get",
        issue,
        json!({"served": true}),
    );
    let error = &got["error"];
    assert_eq!(error["data"]["error_code"], "POLICY_DENIED", "{got}");
    assert_eq!(error["data"]["required_action"], "none", "{got}");
    assert_eq!(error["data"]["side_effect_started"], false, "{got}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(r#"rule 0 denies prompt "triage_issue" when prompt matches "triage_*""#),
        "{message}"
    );
}

#[test]
fn the_default_and_the_rules_without_a_prompt_or_resource_still_decide_tool_calls_only() {
    // A configuration written before rules could name prompts keeps its meaning: a default
    // deny and a rule matching every call refuse calls, never a prompt or a read.
    let policy = json!({"default": "deny", "rules": [{"action": "deny", "server": "docs"}]});
    let mut gw = listed(policy, None);
    let anyone = (None, None);
    let call = json!({"name": "get_weather", "arguments": {"city": "Oslo"}});
    let got = ask_as(&mut gw, anyone, "tools/call", call, json!({"served": true}));
    assert_eq!(
        got["result"]["structuredContent"]["error_code"], "POLICY_DENIED",
        "{got}"
    );
    let issue = json!({"name": "triage_issue", "arguments": {"issue": "7"}});
    assert_eq!(refused(&mut gw, anyone, "prompts/get", issue), None);
    let note = json!({"uri": "file:///notes/today.md"});
    assert_eq!(refused(&mut gw, anyone, "resources/read", note), None);
}

#[test]
fn a_caller_is_not_listed_the_prompts_and_resources_policy_refuses_it_in_both_eras() {
    let policy = rules();
    let resources = json!({"resources": [
        {"uri": "file:///notes/today.md", "name": "today"},
        {"uri": "file:///secrets/keys.txt", "name": "keys"},
    ]});
    for version in [None, Some(STATELESS)] {
        let mut gw = listed(policy.clone(), version);
        let (anyone, ops) = ((version, None), (version, Some("ops")));
        // A prompt refused whatever the arguments is left out; one refused for some
        // arguments only stays.
        let got = ask_as(&mut gw, anyone, "prompts/list", json!({}), prompts());
        assert_eq!(
            shown(&got, "prompts", "name"),
            (vec!["summarize".into()], 1),
            "{got}"
        );
        // Recorded as what it was: an answer served rewritten.
        let record = gw.out.decisions.last().unwrap();
        assert_eq!(
            (record.direction, record.method.as_str(), record.decision),
            ("response", "prompts/list", "rewrite")
        );
        if version.is_some() {
            assert_eq!(
                (&got["cacheScope"], &got["ttlMs"]),
                (&json!("private"), &json!(0))
            );
        }
        let got = ask_as(&mut gw, ops, "prompts/list", json!({}), prompts());
        let both = vec!["summarize".to_string(), "triage_issue".to_string()];
        assert_eq!(shown(&got, "prompts", "name"), (both, 0), "{got}");
        let got = ask_as(
            &mut gw,
            anyone,
            "resources/list",
            json!({}),
            resources.clone(),
        );
        let notes = vec!["file:///notes/today.md".to_string()];
        assert_eq!(shown(&got, "resources", "uri"), (notes, 1), "{got}");
        // Hiding is the caller's list, never the server's: nothing drifts.
        assert_eq!(
            crate::support::admin::schema_status(&mut gw, "docs"),
            "verified"
        );
        assert_eq!(audited(&gw, "schema.changed"), 0, "{version:?}");
    }
}

#[test]
fn a_list_withheld_in_part_and_cut_for_its_caller_says_both() {
    // A later page not seen from its first is checked against the catalogue alone: its
    // prompt the catalogue lacks is withheld, and the prompt policy refuses this caller is
    // cut; the note keeps the first reason and counts both.
    let mut gw = listed(rules(), None);
    let page = json!({"prompts": [triage(), {"name": "exfiltrate", "description": "Mail it."}]});
    let got = ask_as(
        &mut gw,
        (None, None),
        "prompts/list",
        json!({"cursor": "page-9"}),
        page,
    );
    assert_eq!(got["prompts"], json!([]), "{got}");
    let note = &got["_meta"]["io.toolseal/status"];
    assert_eq!(
        (&note["withheld"], &note["hidden_by_policy"]),
        (&json!(1), &json!(1)),
        "{got}"
    );
    assert!(
        !note["reason"].as_str().unwrap().contains("policy"),
        "{got}"
    );
}

#[test]
fn a_list_answered_on_a_resumed_stream_is_cut_for_a_caller_it_cannot_tell() {
    let mut gw = listed(rules(), None);
    // The server closes the POST stream after a priming event (SSE polling) and answers on
    // the GET stream the client reopens with Last-Event-ID.
    let request = json!({"jsonrpc": "2.0", "id": 9, "method": "prompts/list", "params": {}});
    let headers = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let sse = |body: &str| -> (Vec<(String, String)>, Vec<u8>) {
        (
            headers(&[("content-type", "text/event-stream")]),
            body.as_bytes().to_vec(),
        )
    };
    let (response_headers, response_body) = sse("id: 4\ndata: \n\n");
    let post = HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: headers(&[
            ("content-type", "application/json"),
            ("mcp-session-id", "s1"),
            ("x-mcp-toolsets", "ops"),
        ]),
        request_body: request.to_string().into_bytes(),
        status: 200,
        response_headers,
        response_body,
    };
    let out = gw.exchange("docs", &post, 64);
    assert_eq!(out.response_body, b"id: 4\ndata: \n\n");
    let answer = json!({"jsonrpc": "2.0", "id": 9, "result": prompts()});
    let (response_headers, response_body) = sse(&format!("id: 5\ndata: {answer}\n\n"));
    let get = HttpExchange {
        seq: "1".into(),
        http_method: "GET".into(),
        path: "/mcp".into(),
        request_headers: headers(&[("mcp-session-id", "s1"), ("last-event-id", "4")]),
        request_body: Vec::new(),
        status: 200,
        response_headers,
        response_body,
    };
    let out = gw.exchange("docs", &get, 64);
    let text = String::from_utf8(out.response_body).unwrap();
    let data = text
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap();
    let got: Value = serde_json::from_str(data).unwrap();
    // Even the `ops` caller that asked is not told apart there: the prompt only a principal
    // would allow is left out, the others stay, and the use is checked as ever.
    assert_eq!(
        shown(&got["result"], "prompts", "name"),
        (vec!["summarize".into()], 1),
        "{got}"
    );
    assert_eq!(audited(&gw, "schema.changed"), 0);
}
