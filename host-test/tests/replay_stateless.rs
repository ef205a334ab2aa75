//! The built plugin `.wasm` on wasmtime against real MCP 2026-07-28 recordings: the decision
//! records are the core's golden records (the same files `toolseal-core` is held to), and
//! what the client receives (forwarded bodies, local answers) is byte for byte what the
//! native engine produces. A snapshot key read from Envoy dynamic metadata finds a stale
//! caller without a session.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use serde_json::{Value, json};
use std::path::PathBuf;
use toolseal::replay::records::PluginRecord;
use toolseal::replay::{ExchangeReport, Replay, ReplayOptions, Transcript};
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay, parse_transcript};

fn core_data(name: &str) -> PathBuf {
    common::workspace()
        .join("plugin/core/tests/data")
        .join(name)
}

fn transcript(name: &str) -> Vec<HttpExchange> {
    parse_transcript(&std::fs::read(common::transcript(name)).unwrap()).unwrap()
}

fn options(server: &str, config: &Value, chunk: usize) -> ReplayOptions {
    let config = match config {
        Value::Null => Vec::new(),
        config => config.to_string().into_bytes(),
    };
    common::replay_options(Some(server), &config, chunk)
}

fn run(options: ReplayOptions, names: &[&str]) -> Vec<ExchangeReport> {
    let mut replay = Replay::start(options).unwrap();
    let mut reports = Vec::new();
    for name in names {
        let transcript = Transcript {
            name: (*name).into(),
            exchanges: transcript(name),
        };
        reports.extend(replay.run(&transcript).unwrap());
    }
    reports
}

/// The decision records of `reports` in the core golden files' form.
fn golden_form(reports: &[ExchangeReport], names: &[&str]) -> Vec<Value> {
    let seqs: Vec<String> = names
        .iter()
        .flat_map(|n| transcript(n).into_iter().map(|e| e.seq))
        .collect();
    golden_form_of(reports, &seqs)
}

fn golden(name: &str) -> Vec<Value> {
    std::fs::read_to_string(core_data(&format!("golden/{name}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the native engine gives the client for each exchange: (local answer, body).
fn native(
    server: &str,
    config: &Value,
    names: &[&str],
    chunk: usize,
) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    let config = if config.is_null() {
        Config::default()
    } else {
        Config::parse(config.to_string().as_bytes()).unwrap()
    };
    let mut gw = NativeReplay::new(config);
    names
        .iter()
        .flat_map(|n| transcript(n))
        .map(|ex| {
            let out = gw.exchange(server, &ex, chunk);
            (out.local_reply.map(|r| r.body), out.response_body)
        })
        .collect()
}

fn assert_same_bytes(
    reports: &[ExchangeReport],
    native: &[(Option<Vec<u8>>, Vec<u8>)],
    what: &str,
) {
    assert_eq!(reports.len(), native.len(), "{what}");
    for (i, (report, (local, body))) in reports.iter().zip(native).enumerate() {
        let wasm_local = report
            .outcome
            .local_response
            .as_ref()
            .map(|r| r.body.clone());
        assert_eq!(&wasm_local, local, "{what} exchange {i}: local answer");
        if local.is_none() {
            assert_eq!(
                String::from_utf8_lossy(&report.outcome.response_body),
                String::from_utf8_lossy(body),
                "{what} exchange {i}: body"
            );
        }
    }
}

#[test]
fn each_2026_recording_gives_the_core_golden_records_and_bytes() {
    for name in [
        "python-sdk-2.3.0-rev1-json",
        "python-sdk-2.3.0-rev1-sse",
        "python-sdk-2.3.0-rev2-json",
        "typescript-sdk-2.4.0-rev1",
    ] {
        let reports = run(options(name, &Value::Null, 7), &[name]);
        assert_eq!(golden_form(&reports, &[name]), golden(name), "{name}");
        assert_same_bytes(&reports, &native(name, &Value::Null, &[name], 7), name);
    }
}

#[test]
fn release_a_then_b_gives_the_core_golden_records_and_bytes() {
    let names = ["python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json"];
    let reports = run(options("rugpull", &Value::Null, 13), &names);
    assert_eq!(
        golden_form(&reports, &names),
        golden("python-sdk-2.3.0-a-then-b")
    );
    assert_same_bytes(
        &reports,
        &native("rugpull", &Value::Null, &names, 13),
        "a then b",
    );
    // The refused calls never reached the server, and were answered in the revision's shape.
    let refused: Vec<&ExchangeReport> = reports
        .iter()
        .filter(|r| r.outcome.local_response.is_some())
        .collect();
    assert_eq!(refused.len(), 2);
    for report in refused {
        assert!(!report.outcome.upstream_contacted);
        let reply = report.outcome.local_response.as_ref().unwrap();
        assert_eq!(reply.status, 200);
        let body: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(body["result"]["resultType"], "complete");
        assert_eq!(
            body["result"]["structuredContent"]["error_code"],
            "SCHEMA_CHANGED"
        );
    }
}

#[test]
fn the_confirmation_round_passes_the_wasm_under_an_enforced_contract() {
    let name = "python-sdk-2.3.0-rev1-sse";
    let config = json!({"servers": {"rugpull": {"results": "enforce"}}});
    let reports = run(options("rugpull", &config, 5), &[name]);
    assert_same_bytes(&reports, &native("rugpull", &config, &[name], 5), name);
    let interim = reports
        .iter()
        .filter(|r| {
            String::from_utf8_lossy(&r.outcome.response_body).contains("\"input_required\"")
        })
        .count();
    assert_eq!(interim, 1);
    for report in &reports {
        assert!(report.outcome.local_response.is_none());
        for record in &report.records {
            if let PluginRecord::Audit(a) = record {
                assert_ne!(a["event"], "result.mismatch", "{a}");
            }
        }
    }
}

/// A 2026-07-28 exchange: `body` answered with `result` (JSON).
fn exchange_2026(id: u64, method: &str, params: Value, result: &Value) -> HttpExchange {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("mcp-protocol-version".to_string(), "2026-07-28".to_string()),
        ("mcp-method".to_string(), method.to_string()),
    ];
    if let Some(name) = params["name"].as_str() {
        headers.push(("mcp-name".to_string(), name.to_string()));
    }
    HttpExchange {
        seq: id.to_string(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: headers,
        request_body: body.to_string().into_bytes(),
        status: 200,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: json!({"jsonrpc": "2.0", "id": id, "result": result})
            .to_string()
            .into_bytes(),
    }
}

#[test]
fn a_snapshot_key_from_dynamic_metadata_finds_a_stale_caller() {
    let token = "s3cret";
    let tool = |schema: Value| json!({"name": "deploy_preview", "description": "Deploy.", "inputSchema": schema});
    let a = tool(json!({"type": "object", "properties": {"branch": {"type": "string"}}}));
    let b = tool(
        json!({"type": "object", "properties": {"branch": {"type": "string"}, "region": {"type": "string"}}}),
    );
    let list = |id, t: &Value| {
        exchange_2026(
            id,
            "tools/list",
            json!({}),
            &json!({"tools": [t], "ttlMs": 0,
            "cacheScope": "private", "resultType": "complete"}),
        )
    };
    let fp_b = toolseal_core::policy::fingerprint::digest_tools(
        &json!([b.clone()]),
        &toolseal_core::policy::fingerprint::FingerprintFields::default(),
    )
    .unwrap()
    .fingerprint();
    let approve = HttpExchange {
        seq: "approve".into(),
        http_method: "POST".into(),
        path: "/toolseal/servers/deploy/approve".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {token}")),
        ],
        request_body: json!({"fingerprint": fp_b}).to_string().into_bytes(),
        status: 200,
        response_headers: vec![],
        response_body: vec![],
    };
    let call = exchange_2026(
        4,
        "tools/call",
        json!({"name": "deploy_preview",
        "arguments": {"branch": "main"}}),
        &json!({"content": [], "resultType": "complete"}),
    );
    let story = Transcript {
        name: "story".into(),
        exchanges: vec![list(1, &a), list(2, &b), approve, call],
    };
    let config = json!({
        "admin": {"token_sha256": toolseal_core::policy::fingerprint::sha256_hex(token.as_bytes())},
        "snapshots": {"key": [{"metadata": "envoy.filters.http.jwt_authn/payload/sub"}]}
    });
    let verdict = |metadata: Value| {
        let mut options = options("deploy", &config, 0);
        options.dynamic_metadata = metadata.as_object().unwrap().clone();
        let mut replay = Replay::start(options).unwrap();
        let reports = replay.run(&story).unwrap();
        let last = reports.last().unwrap();
        let audit = last.records.iter().find_map(|r| match r {
            PluginRecord::Audit(a) if a["event"] == "call.denied" => Some(a.clone()),
            _ => None,
        });
        (last.outcome.upstream_contacted, audit)
    };
    let (contacted, audit) =
        verdict(json!({"envoy.filters.http.jwt_authn": {"payload": {"sub": "agent-7"}}}));
    assert!(!contacted, "the stale call never reached the server");
    let audit = audit.unwrap();
    assert_eq!(audit["error_code"], "STALE_TOOL_SCHEMA");
    assert_eq!(
        audit["snapshot"],
        "metadata:envoy.filters.http.jwt_authn/payload/sub"
    );
    assert_eq!(audit["protocol_version"], "2026-07-28");
    // Without the claim there is no key: the call is checked against the baseline alone.
    let (contacted, audit) = verdict(json!({}));
    assert!(contacted);
    assert_eq!(audit, None);
}

/// Release A, release B, then release A's calls again (an agent that keeps working after
/// the rug pull), as the core's tool-scope golden replays them: the transcripts and the
/// `seq` of every exchange.
fn a_then_b_then_calls() -> (Vec<Transcript>, Vec<String>) {
    let (a, b) = ("python-sdk-2.3.0-rev1-json", "python-sdk-2.3.0-rev2-json");
    let calls: Vec<HttpExchange> = transcript(a)
        .into_iter()
        .filter(|ex| String::from_utf8_lossy(&ex.request_body).contains("\"tools/call\""))
        .collect();
    let transcripts = vec![
        Transcript {
            name: a.into(),
            exchanges: transcript(a),
        },
        Transcript {
            name: b.into(),
            exchanges: transcript(b),
        },
        Transcript {
            name: a.into(),
            exchanges: calls,
        },
    ];
    let seqs = transcripts
        .iter()
        .flat_map(|t| t.exchanges.iter().map(|e| e.seq.clone()))
        .collect();
    (transcripts, seqs)
}

/// The decision records of `reports` in the core golden files' form, with the `seq` of each
/// exchange given.
fn golden_form_of(reports: &[ExchangeReport], seqs: &[String]) -> Vec<Value> {
    reports
        .iter()
        .zip(seqs)
        .flat_map(|(report, seq)| {
            report.records.iter().filter_map(move |r| match r {
                PluginRecord::Decision(d) => {
                    let mut d = d.clone();
                    d.remove("session");
                    d.insert("transcript".into(), json!(report.transcript));
                    d.insert("seq".into(), json!(seq));
                    Some(Value::Object(d))
                }
                PluginRecord::Audit(_) => None,
            })
        })
        .collect()
}

#[test]
fn under_tool_scope_the_wasm_serves_the_unchanged_tools_through_a_rug_pull() {
    let config = json!({"servers": {"rugpull": {"drift_scope": "tool"}}});
    let (transcripts, seqs) = a_then_b_then_calls();
    let mut replay = Replay::start(options("rugpull", &config, 13)).unwrap();
    let mut reports = Vec::new();
    for t in &transcripts {
        reports.extend(replay.run(t).unwrap());
    }
    assert_eq!(
        golden_form_of(&reports, &seqs),
        golden("python-sdk-2.3.0-a-then-b-tool-scope")
    );
    // What each client received is what the native engine gives, byte for byte.
    let mut gw = NativeReplay::new(Config::parse(config.to_string().as_bytes()).unwrap());
    let native: Vec<(Option<Vec<u8>>, Vec<u8>)> = transcripts
        .iter()
        .flat_map(|t| t.exchanges.iter())
        .map(|ex| {
            let out = gw.exchange("rugpull", ex, 13);
            (out.local_reply.map(|r| r.body), out.response_body)
        })
        .collect();
    assert_same_bytes(&reports, &native, "tool scope");
    // After the pull: the changed tools' calls never reached the server, the others did.
    let after_pull = &reports[transcripts[0].exchanges.len() + 2..];
    let reached: Vec<(String, bool)> = after_pull
        .iter()
        .map(|r| {
            let tool = r.records.iter().find_map(|rec| match rec {
                PluginRecord::Decision(d) if d["direction"] == "request" => {
                    d["tool"].as_str().map(str::to_string)
                }
                _ => None,
            });
            (tool.unwrap(), r.outcome.upstream_contacted)
        })
        .collect();
    let expected: Vec<(String, bool)> = [
        ("get_weather", false),
        ("deploy_preview", false),
        ("add", true),
        ("get_weather", false),
        ("rollback_preview", true),
        ("rollback_preview", true),
        ("deploy_preview", false),
    ]
    .into_iter()
    .map(|(t, c)| (t.to_string(), c))
    .collect();
    assert_eq!(reached, expected);
}

#[test]
fn the_wasm_hides_from_a_caller_what_policy_never_lets_it_call() {
    let name = "python-sdk-2.3.0-rev1-json";
    let config: Value = serde_json::from_str(
        r#"{"policy": {"rules": [
            {"action": "allow", "tool": "rollback_preview",
             "principal": {"metadata": "envoy.filters.http.jwt_authn/payload/groups", "in": ["ops"]}},
            {"action": "deny", "tool": "rollback_preview"}]}}"#,
    )
    .unwrap();
    let reports = run(options("rugpull", &config, 13), &[name]);
    assert_eq!(
        golden_form(&reports, &[name]),
        golden("python-sdk-2.3.0-rev1-caller-scoped")
    );
    assert_same_bytes(&reports, &native("rugpull", &config, &[name], 13), name);
    // The same recording for a caller whose verified token names the ops group.
    let mut ops = options("rugpull", &config, 13);
    ops.dynamic_metadata =
        json!({"envoy.filters.http.jwt_authn": {"payload": {"groups": ["staff", "ops"]}}})
            .as_object()
            .unwrap()
            .clone();
    let reports = run(ops, &[name]);
    let listed: Vec<u64> = reports
        .iter()
        .flat_map(|r| r.records.iter())
        .filter_map(|rec| match rec {
            PluginRecord::Decision(d)
                if d["method"] == "tools/list" && d["direction"] == "response" =>
            {
                d["tools_out"].as_u64()
            }
            _ => None,
        })
        .collect();
    assert_eq!(listed, [4, 4]);
    assert!(reports.iter().all(|r| r.outcome.local_response.is_none()));
}
