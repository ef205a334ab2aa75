//! Server → client: tool lists the server tries to get past the check (malformed, split,
//! compressed, oversized, smuggled under another id or in another exchange).

use super::*;

/// Sends `response` (raw bytes, `ctype`) as the answer to a tools/list with id 1 from a
/// gateway whose baseline is [echo, read_file]; returns the tools the client can read and
/// the forwarded body.
fn answer_list(
    gw: &mut NativeReplay,
    ctype: &str,
    response: &[u8],
    chunk: usize,
) -> (Vec<Value>, Vec<u8>) {
    let out = gw.exchange(
        SERVER,
        &exchange("s1", &list_request(json!(1)), ctype, response),
        chunk,
    );
    assert!(out.local_reply.is_none());
    (served_tools(ctype, &out.response_body), out.response_body)
}

/// The forwarded body is one JSON-RPC error for the list (fail closed).
fn assert_failed_closed(ctype: &str, body: &[u8], what: &str) {
    let messages = delivered(ctype, body);
    assert!(
        !messages.is_empty(),
        "{what}: nothing readable forwarded: {:?}",
        String::from_utf8_lossy(body)
    );
    for m in &messages {
        assert!(
            m.get("result").is_none(),
            "{what}: a result was forwarded: {m}"
        );
        assert_eq!(m["error"]["code"], -32603, "{what}: {m}");
        assert!(
            m["error"]["message"]
                .as_str()
                .unwrap()
                .contains("fail closed"),
            "{what}: {m}"
        );
    }
}

#[test]
fn duplicate_keys_in_a_tools_list_response_fail_closed() {
    let bodies: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"tools":[{"name":"evil"}]}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","name":"rm"}]}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"result":{"tools":[{"name":"evil"}]}}"#,
    ];
    for body in bodies {
        let mut gw = verified_gateway();
        let (tools, raw) = answer_list(&mut gw, "application/json", body, 7);
        assert!(tools.is_empty());
        assert_failed_closed("application/json", &raw, "json");
        let mut event = b"data: ".to_vec();
        event.extend_from_slice(body);
        event.extend_from_slice(b"\n\n");
        let (tools, raw) = answer_list(&mut gw, "text/event-stream", &event, 5);
        assert!(tools.is_empty());
        assert_failed_closed("text/event-stream", &raw, "sse");
    }
}

#[test]
fn duplicate_tool_names_are_an_invalid_set() {
    let mut gw = verified_gateway();
    let tools = list(&mut gw, "s1", &[echo(), read_file(), evil()]);
    assert!(tools.is_empty());
    assert_eq!(status(&mut gw), "changed");
    assert_eq!(error_code(&call(&mut gw, "s1", "echo")), "SCHEMA_CHANGED");
}

#[test]
fn deep_nesting_huge_numbers_and_lone_surrogates_in_a_tools_list_fail_closed() {
    let deep = format!(
        "{}{}",
        "{\"not\":".repeat(200),
        "{}".to_string() + &"}".repeat(200)
    );
    for schema in [
        deep.as_str(),
        r#"{"maximum":1e400}"#,
        r#"{"description":"\udfff"}"#,
    ] {
        let mut gw = verified_gateway();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"echo","inputSchema":{schema}}}]}}}}"#
        );
        let (tools, raw) = answer_list(&mut gw, "application/json", body.as_bytes(), 7);
        assert!(tools.is_empty(), "{schema}");
        assert_failed_closed("application/json", &raw, schema);
    }
}

#[test]
fn invalid_utf8_in_a_tools_list_event_fails_closed() {
    let mut gw = verified_gateway();
    let body = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"ec\xffho\"}]}}\n\n".to_vec();
    let (tools, raw) = answer_list(&mut gw, "text/event-stream", &body, 3);
    assert!(tools.is_empty());
    assert_failed_closed("text/event-stream", &raw, "invalid utf-8");
}

#[test]
fn byte_order_mark_on_an_event_stream_does_not_hide_a_drift() {
    let mut gw = verified_gateway();
    let mut body = b"\xef\xbb\xbf".to_vec();
    body.extend(sse(&list_response(json!(1), &[evil(), read_file()])));
    let (tools, _) = answer_list(&mut gw, "text/event-stream", &body, 2);
    assert!(tools.is_empty());
    assert_eq!(status(&mut gw), "changed");
}

#[test]
fn crlf_sse_split_at_every_byte_boundary_gives_the_same_bytes() {
    let good = [
        b": keepalive\r\n\r\nid: 9\r\nretry: 100\r\n".as_slice(),
        &sse(&list_response(json!(1), &[echo(), read_file()])),
    ]
    .concat();
    let bad = [
        b"id: 9\r\n".as_slice(),
        &sse(&list_response(json!(1), &[evil(), read_file()])),
    ]
    .concat();
    let mut reference = None;
    for chunk in 1..=good.len() {
        let mut gw = verified_gateway();
        let (tools, raw) = answer_list(&mut gw, "text/event-stream", &good, chunk);
        assert_eq!(tools.len(), 2, "chunk {chunk}");
        assert_eq!(
            raw, good,
            "an unchanged list is forwarded byte for byte (chunk {chunk})"
        );
        let mut gw = verified_gateway();
        let (tools, raw) = answer_list(&mut gw, "text/event-stream", &bad, chunk);
        assert!(tools.is_empty(), "chunk {chunk}");
        assert_eq!(
            reference.get_or_insert_with(|| raw.clone()),
            &raw,
            "rewrite depends on chunking ({chunk})"
        );
    }
}

#[test]
fn id_type_confusion_does_not_let_a_drifted_list_through() {
    // TypeScript clients file responses under Number(id): "1", 1.0 and 1 are one request.
    for id in [json!("1"), json!(1.0), json!(" 1")] {
        let mut gw = verified_gateway();
        let body = list_response(id.clone(), &[evil(), read_file()]).to_string();
        let (tools, _) = answer_list(&mut gw, "application/json", body.as_bytes(), 7);
        assert!(tools.is_empty(), "id {id}");
        let (tools, _) = answer_list(
            &mut gw,
            "text/event-stream",
            &sse(&list_response(id.clone(), &[evil()])),
            4,
        );
        assert!(tools.is_empty(), "id {id}");
    }
}

#[test]
fn tool_list_smuggled_into_another_exchange_is_checked() {
    // The list request waits on one stream; the server answers its id on another exchange
    // (a ping, a call) where the gateway expects no tools.
    let smuggled = list_response(json!(1), &[evil(), read_file()]);
    let escaped = smuggled.to_string().replace("\"tools\"", "\"\\u0074ools\"");
    let duplicated = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[]}},"result":{}}}"#,
        json!({"tools": [evil()]})
    );
    let cases: [(&str, Vec<u8>); 5] = [
        ("application/json", smuggled.to_string().into_bytes()),
        ("application/json", escaped.clone().into_bytes()),
        ("application/json", duplicated.clone().into_bytes()),
        (
            "text/event-stream",
            format!("data: {escaped}\n\n").into_bytes(),
        ),
        (
            "text/event-stream",
            format!("data: {duplicated}\n\n").into_bytes(),
        ),
    ];
    for (ctype, body) in cases {
        let mut gw = verified_gateway();
        let ping = br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let out = gw.exchange(SERVER, &exchange("s1", ping, ctype, &body), 5);
        let leaked: Vec<Value> = served_tools(ctype, &out.response_body);
        assert!(
            leaked
                .iter()
                .all(|t| t["description"] != evil()["description"]),
            "{ctype}: a drifted tool reached the client: {}",
            String::from_utf8_lossy(&out.response_body)
        );
    }
}

#[test]
fn notification_that_looks_like_a_response_does_not_carry_tools() {
    let fakes = [
        json!({"jsonrpc": "2.0", "method": "notifications/message", "id": 1, "result": {"tools": [evil()]}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "result": {"tools": [evil()]}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [evil()]}, "error": {"code": 1, "message": "x"}}),
    ];
    for fake in fakes {
        let mut gw = verified_gateway();
        let (tools, raw) = answer_list(&mut gw, "text/event-stream", &sse(&fake), 6);
        assert!(tools.is_empty(), "{fake}");
        assert_failed_closed("text/event-stream", &raw, &fake.to_string());
    }
}

#[test]
fn gzip_tools_list_response_fails_closed() {
    for ctype in ["application/json", "text/event-stream"] {
        let mut gw = verified_gateway();
        let mut ex = exchange(
            "s1",
            &list_request(json!(1)),
            ctype,
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0],
        );
        ex.response_headers
            .push(("content-encoding".into(), "gzip".into()));
        let out = gw.exchange(SERVER, &ex, 3);
        // The error replaces the body after the headers left: it is plain JSON whatever the
        // announced type (see docs/robustness.md, known limits).
        assert_failed_closed("application/json", &out.response_body, ctype);
    }
}

#[test]
fn tools_list_response_larger_than_the_limit_fails_closed() {
    let filler = "x".repeat(5000);
    let big = json!({"name": "echo", "description": filler, "inputSchema": {"type": "object"}});
    for ctype in ["application/json", "text/event-stream"] {
        let mut gw = gateway(json!({"limits": {"max_response_bytes": 4096}}));
        let body = match ctype {
            "application/json" => list_response(json!(1), std::slice::from_ref(&big))
                .to_string()
                .into_bytes(),
            _ => sse(&list_response(json!(1), std::slice::from_ref(&big))),
        };
        let out = gw.exchange(
            SERVER,
            &exchange("s1", &list_request(json!(1)), ctype, &body),
            512,
        );
        assert!(
            served_tools(ctype, &out.response_body).is_empty(),
            "{ctype}"
        );
        assert_failed_closed(ctype, &out.response_body, ctype);
    }
}

#[test]
fn pagination_with_drift_only_on_page_two_is_caught() {
    let page = |id: u64, cursor: Option<&str>, tools: &[Value], next: Option<&str>| {
        let mut params = json!({});
        if let Some(c) = cursor {
            params["cursor"] = json!(c);
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
            .to_string();
        let mut result = json!({"tools": tools});
        if let Some(n) = next {
            result["nextCursor"] = json!(n);
        }
        let response = sse(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
        exchange("s1", request.as_bytes(), "text/event-stream", &response)
    };
    let mut gw = gateway(json!({}));
    let out = gw.exchange(SERVER, &page(1, None, &[echo()], Some("p2")), 9);
    assert_eq!(
        served_tools("text/event-stream", &out.response_body).len(),
        1
    );
    let out = gw.exchange(SERVER, &page(2, Some("p2"), &[read_file()], None), 9);
    assert_eq!(
        served_tools("text/event-stream", &out.response_body).len(),
        1
    );
    assert_eq!(status(&mut gw), "verified");
    assert_eq!(error_code(&call(&mut gw, "s1", "read_file")), "FORWARDED");
    // Release 2: page 1 identical, page 2 drifted.
    let out = gw.exchange(SERVER, &page(3, None, &[echo()], Some("p2")), 9);
    assert_eq!(
        served_tools("text/event-stream", &out.response_body).len(),
        1
    );
    let drifted = json!({"name": "read_file", "description": "Read any file on the host.", "inputSchema": {"type": "object"}});
    let out = gw.exchange(SERVER, &page(4, Some("p2"), &[drifted], None), 9);
    assert!(served_tools("text/event-stream", &out.response_body).is_empty());
    assert_eq!(status(&mut gw), "changed");
    assert_eq!(
        error_code(&call(&mut gw, "s1", "read_file")),
        "SCHEMA_CHANGED"
    );
    assert_eq!(error_code(&call(&mut gw, "s1", "echo")), "SCHEMA_CHANGED");
    let out = gw.exchange(SERVER, &page(5, None, &[echo()], Some("p2")), 9);
    assert!(
        served_tools("text/event-stream", &out.response_body).is_empty(),
        "page 1 of a changed server"
    );
}

#[test]
fn confusable_tool_names_are_drift_and_never_callable() {
    for name in [
        "read_fiIe",
        "r\u{0435}ad_file",
        "read_file\u{200b}",
        "READ_FILE",
    ] {
        let mut gw = verified_gateway();
        let mut twin = read_file();
        twin["name"] = json!(name);
        assert!(
            list(&mut gw, "s1", &[echo(), read_file(), twin]).is_empty(),
            "{name}"
        );
        assert_eq!(status(&mut gw), "changed");
        assert_eq!(error_code(&call(&mut gw, "s1", name)), "SCHEMA_CHANGED");
        let mut gw = verified_gateway();
        assert_eq!(
            error_code(&call(&mut gw, "s1", name)),
            "TOOL_NOT_APPROVED",
            "{name}"
        );
    }
}

/// Found by the engine fuzz target: with a baseline pinned by fingerprint only (no
/// definitions), the pages of a paginated list before the last one were served unchecked.
#[test]
fn paginated_list_under_a_fingerprint_pin_is_not_served_unchecked() {
    let page = |id: u64, cursor: Option<&str>, tools: &[Value], next: Option<&str>| {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
            .to_string();
        let mut result = json!({"tools": tools});
        if let Some(n) = next {
            result["nextCursor"] = json!(n);
        }
        exchange(
            "s1",
            request.as_bytes(),
            "application/json",
            json!({"jsonrpc": "2.0", "id": id, "result": result})
                .to_string()
                .as_bytes(),
        )
    };
    let pin = fp(&[echo(), read_file()]);
    let mut gw = gateway(json!({"posture": "strict", "servers": {SERVER: {"pin": pin}}}));
    // A drifted first page must not reach the client while the definitions are unknown.
    let out = gw.exchange(SERVER, &page(1, None, &[evil()], Some("p2")), 7);
    assert!(served_tools("application/json", &out.response_body).is_empty());
    let out = gw.exchange(SERVER, &page(2, Some("p2"), &[read_file()], None), 7);
    assert!(served_tools("application/json", &out.response_body).is_empty());
    assert_eq!(status(&mut gw), "changed");
    // The pinned set, paginated: the first listing completes the check, later ones pass page by page.
    let mut gw = gateway(
        json!({"posture": "strict", "servers": {SERVER: {"pin": fp(&[echo(), read_file()])}}}),
    );
    let out = gw.exchange(SERVER, &page(1, None, &[echo()], Some("p2")), 7);
    assert!(
        served_tools("application/json", &out.response_body).is_empty(),
        "unverifiable page withheld"
    );
    let out = gw.exchange(SERVER, &page(2, Some("p2"), &[read_file()], None), 7);
    assert_eq!(
        served_tools("application/json", &out.response_body).len(),
        1
    );
    assert_eq!(status(&mut gw), "verified");
    let out = gw.exchange(SERVER, &page(3, None, &[echo()], Some("p2")), 7);
    assert_eq!(
        served_tools("application/json", &out.response_body).len(),
        1,
        "definitions now known"
    );
}

/// Found by the sse_chunks fuzz target: an event whose lines mix CR and LF endings
/// (`event: x\r` then `data: ...\n\n`) was rewritten with CR-ended data lines before the
/// blank line's LF, which a client reads as one CRLF: the rewritten event never ended and
/// swallowed the next one.
#[test]
fn sse_event_with_mixed_line_endings_stays_one_event_when_rewritten() {
    for raw in [
        &b"event: message\rdata: old\n\n"[..],
        b"event: message\rid: 1\n\n",
        b"data: a\rdata: b\n\r\n",
    ] {
        let mut parser = SseParser::new(usize::MAX);
        let events = parser.push(raw).unwrap();
        assert_eq!(events.len(), 1);
        let rewritten = events[0].with_data("{\"x\":1}");
        let mut again = SseParser::new(usize::MAX);
        let mut back = again.push(&rewritten).unwrap();
        back.extend(again.close().unwrap());
        assert_eq!(
            again.finish(),
            None,
            "rewritten event not terminated: {:?}",
            String::from_utf8_lossy(&rewritten)
        );
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].data.as_deref(), Some("{\"x\":1}"));
    }
    // Through the engine: a drifted list in such an event is filtered and the client can read it.
    let mut gw = verified_gateway();
    let body = format!(
        "event: message\rdata: {}\n\n",
        list_response(json!(1), &[evil()])
    );
    let out = gw.exchange(
        SERVER,
        &exchange(
            "s1",
            &list_request(json!(1)),
            "text/event-stream",
            body.as_bytes(),
        ),
        4,
    );
    let messages = delivered("text/event-stream", &out.response_body);
    assert_eq!(
        messages.len(),
        1,
        "{:?}",
        String::from_utf8_lossy(&out.response_body)
    );
    assert_eq!(messages[0]["result"]["tools"], json!([]));
}

/// Found by the sse_chunks fuzz target: a BOM that opens a later event (line content, not
/// the stream's BOM) was stripped by the rewrite as if it were the stream's, so a line
/// holding only that BOM became a blank line: the rewritten event lost its data.
#[test]
fn sse_event_opening_with_a_mid_stream_bom_keeps_its_data_when_rewritten() {
    let mut gw = verified_gateway();
    let body = format!(
        ": hello\n\n\u{feff}\ndata: {}\n\n",
        list_response(json!(1), &[evil()])
    );
    let out = gw.exchange(
        SERVER,
        &exchange(
            "s1",
            &list_request(json!(1)),
            "text/event-stream",
            body.as_bytes(),
        ),
        5,
    );
    let messages = delivered("text/event-stream", &out.response_body);
    assert_eq!(
        messages.len(),
        1,
        "{:?}",
        String::from_utf8_lossy(&out.response_body)
    );
    assert_eq!(messages[0]["result"]["tools"], json!([]));
}

/// Found by the sse_chunks fuzz target after the first CR/LF fix: dropping a later data line
/// left a CR-ended line right before an LF-ended blank line (`data: a\r` … `data:\r\n\n`).
#[test]
fn sse_rewrite_that_drops_data_lines_never_merges_cr_and_lf() {
    for raw in [
        &b"data: a\rdata:\r\n\n"[..],
        b"data: a\rid: 1\rdata: b\n\n",
        b"event: m\r\ndata: a\rdata: b\r\n\r\n",
    ] {
        let mut parser = SseParser::new(usize::MAX);
        let events = parser.push(raw).unwrap();
        assert_eq!(events.len(), 1, "{raw:?}");
        let rewritten = events[0].with_data("x\ny");
        let mut again = SseParser::new(usize::MAX);
        let mut back = again.push(&rewritten).unwrap();
        back.extend(again.close().unwrap());
        assert_eq!(
            again.finish(),
            None,
            "not terminated: {:?}",
            String::from_utf8_lossy(&rewritten)
        );
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].data.as_deref(), Some("x\ny"));
        assert_eq!(back[0].id, events[0].id);
    }
}

/// Answers the request `body` with `response` (`ctype`, optional `content-encoding`) on a
/// verified gateway; returns what the client can read and the gateway's outputs after it.
fn answer_requests(
    request: &[u8],
    ctype: &str,
    encoding: Option<&str>,
    response: &[u8],
) -> (Vec<Value>, NativeReplay) {
    let mut gw = verified_gateway();
    gw.out = Default::default();
    let mut ex = exchange("s1", request, ctype, response);
    if let Some(encoding) = encoding {
        ex.response_headers
            .push(("content-encoding".into(), encoding.into()));
    }
    let out = gw.exchange(SERVER, &ex, 5);
    assert!(out.local_reply.is_none());
    (delivered("application/json", &out.response_body), gw)
}

/// Every message is a fail-closed error; returns their ids in order.
fn failed_closed_ids(messages: &[Value], what: &str) -> Vec<Value> {
    assert!(!messages.is_empty(), "{what}: nothing readable forwarded");
    for m in messages {
        assert!(m.get("result").is_none(), "{what}: a result passed: {m}");
        assert_eq!(m["error"]["code"], -32603, "{what}: {m}");
        let text = m["error"]["message"].as_str().unwrap();
        assert!(text.starts_with("toolseal: "), "{what}: {m}");
        assert!(text.ends_with("was withheld (fail closed)"), "{what}: {m}");
    }
    messages.iter().map(|m| m["id"].clone()).collect()
}

#[test]
fn tools_call_answered_as_text_plain_is_withheld_not_passed_unread() {
    let smuggled =
        br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    for ctype in ["text/plain", "application/octet-stream", ""] {
        let (messages, gw) = answer_requests(&call_request(5, "echo"), ctype, None, smuggled);
        assert_eq!(
            failed_closed_ids(&messages, ctype),
            vec![json!(5)],
            "{ctype}"
        );
        let text = messages[0]["error"]["message"].as_str().unwrap();
        assert!(text.contains("not JSON or an event stream"), "{text}");
        let events: Vec<&str> = gw.out.audits.iter().map(|e| e.event).collect();
        assert_eq!(events, ["response.withheld"], "{ctype}");
        let record = gw.out.decisions.last().unwrap();
        assert_eq!(
            (
                record.method.as_str(),
                record.tool.as_deref(),
                record.decision,
                record.error_code
            ),
            (
                "tools/call",
                Some("echo"),
                "rewrite",
                Some("UNINSPECTABLE_RESPONSE")
            ),
            "{ctype}"
        );
    }
}

#[test]
fn empty_answer_without_a_content_type_passes() {
    // HTTP 202 to notifications, or an error status without a body: nothing to hide.
    let (messages, gw) = answer_requests(&call_request(5, "echo"), "", None, b"");
    assert!(messages.is_empty());
    assert!(gw.out.audits.iter().all(|e| e.event != "response.withheld"));
}

#[test]
fn duplicate_keys_in_a_tools_call_result_are_withheld_even_in_observe_mode() {
    // A last-wins client would read the second result, which the gateway never parsed.
    let body = br#"{"jsonrpc":"2.0","id":5,"result":{"content":[]},"result":{"content":[{"type":"text","text":"x"}]}}"#;
    let (messages, _) = answer_requests(&call_request(5, "echo"), "application/json", None, body);
    assert_eq!(
        failed_closed_ids(&messages, "duplicate keys"),
        vec![json!(5)]
    );
}

#[test]
fn compressed_batch_answer_fails_closed_for_every_request_it_answers() {
    // Before: only the list's id got the error; the call's client waited forever.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    ])
    .to_string();
    let gzip = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0];
    let (messages, gw) = answer_requests(batch.as_bytes(), "application/json", Some("gzip"), &gzip);
    assert_eq!(
        failed_closed_ids(&messages, "gzip batch"),
        vec![json!(1), json!(2), json!(3)]
    );
    assert!(
        messages[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the tool list was withheld")
    );
    let methods: Vec<&str> = gw
        .out
        .decisions
        .iter()
        .filter(|d| d.error_code == Some("UNINSPECTABLE_RESPONSE"))
        .map(|d| d.method.as_str())
        .collect();
    assert_eq!(methods, ["tools/list", "tools/call", "ping"]);
}

#[test]
fn oversized_tools_call_result_still_passes() {
    // A large tool result is legitimate: only what must be inspected fails closed at the limit.
    let mut gw = gateway(json!({"limits": {"max_response_bytes": 4096}}));
    assert_eq!(list(&mut gw, "s1", &[echo(), read_file()]).len(), 2);
    let body = json!({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "x".repeat(6000)}]}})
        .to_string();
    let out = gw.exchange(
        SERVER,
        &exchange(
            "s1",
            &call_request(5, "echo"),
            "application/json",
            body.as_bytes(),
        ),
        512,
    );
    assert_eq!(out.response_body, body.as_bytes());
}
