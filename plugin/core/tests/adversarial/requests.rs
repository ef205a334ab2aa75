//! Client → server: bodies a second parser could read differently, and requests that try to
//! slip a call past the checks.

use super::*;

#[test]
fn duplicate_key_first_vs_last_wins_in_tools_call_name_is_refused() {
    let mut gw = verified_gateway();
    // A last-wins server would run delete_file; a first-wins checker would see echo.
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","name":"delete_file","arguments":{}}}"#;
    assert_refused_400(raw_request(&mut gw, body), -32700, "duplicate params.name");
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call","params":{"name":"delete_file"}}"#;
    assert_refused_400(raw_request(&mut gw, body), -32700, "duplicate method");
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a","m\u0065ssage":"b"}}}"#;
    assert_refused_400(
        raw_request(&mut gw, body),
        -32700,
        "duplicate argument spelled with an escape",
    );
}

#[test]
fn deep_nesting_in_arguments_is_refused_before_the_server() {
    let mut gw = verified_gateway();
    for depth in [62, 200, 5000] {
        let args = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":{args}}}}}}}"#
        );
        assert_refused_400(
            raw_request(&mut gw, body.as_bytes()),
            -32700,
            &format!("depth {depth}"),
        );
    }
}

#[test]
fn number_out_of_range_1e400_is_refused_not_read_as_infinity() {
    let mut gw = verified_gateway();
    for n in ["1e400", "-1e400", "1E+999"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":{n}}}}}}}"#
        );
        assert_refused_400(raw_request(&mut gw, body.as_bytes()), -32700, n);
    }
}

#[test]
fn huge_integer_argument_is_checked_against_the_schema_not_truncated() {
    let mut gw = verified_gateway();
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":123456789012345678901234567890}}}"#;
    let reply = raw_request(&mut gw, body);
    assert_eq!(error_code(&reply), "INVALID_ARGUMENTS");
    assert_eq!(reply.unwrap().0, 200);
}

#[test]
fn lone_surrogate_escape_is_refused() {
    let mut gw = verified_gateway();
    for s in [r"\ud800", r"\udc00", r"\ud800\u0041"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{s}"}}}}}}"#
        );
        assert_refused_400(raw_request(&mut gw, body.as_bytes()), -32700, s);
    }
}

#[test]
fn invalid_utf8_and_encoded_surrogates_are_refused() {
    let mut gw = verified_gateway();
    for bad in [
        &b"\xff"[..],
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
    ] {
        let mut body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":""#.to_vec();
        body.extend_from_slice(bad);
        body.extend_from_slice(br#""}}}"#);
        assert_refused_400(raw_request(&mut gw, &body), -32700, &format!("{bad:?}"));
    }
}

#[test]
fn byte_order_mark_before_a_request_is_refused() {
    let mut gw = verified_gateway();
    let mut body = b"\xef\xbb\xbf".to_vec();
    body.extend_from_slice(&call_request(7, "echo"));
    assert_refused_400(raw_request(&mut gw, &body), -32700, "BOM");
}

#[test]
fn tools_call_sent_as_text_plain_is_refused_415() {
    let mut gw = verified_gateway();
    for ctype in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json-seq"),
        None,
    ] {
        let mut ex = exchange(
            "s1",
            &call_request(7, "delete_file"),
            "application/json",
            b"{}",
        );
        ex.request_headers.retain(|(k, _)| k != "content-type");
        if let Some(ct) = ctype {
            ex.request_headers.push(("content-type".into(), ct.into()));
        }
        let reply = gw
            .exchange(SERVER, &ex, 7)
            .local_reply
            .unwrap_or_else(|| panic!("{ctype:?} forwarded"));
        assert_eq!(reply.status, 415, "{ctype:?}");
    }
    let rejected = gw
        .out
        .audits
        .iter()
        .filter(|a| a.event == "request.rejected")
        .count();
    assert_eq!(rejected, 4);
}

#[test]
fn batch_mixing_allowed_and_denied_calls_is_answered_locally_as_a_whole() {
    let mut gw = verified_gateway();
    let batch = format!(
        "[{},{},{}]",
        String::from_utf8(call_request(1, "echo")).unwrap(),
        String::from_utf8(call_request(2, "delete_file")).unwrap(),
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#
    );
    let (status, body) =
        raw_request(&mut gw, batch.as_bytes()).expect("a batch with a denied call was forwarded");
    assert_eq!(status, 200);
    let answers = body.as_array().unwrap();
    assert_eq!(
        answers.len(),
        2,
        "one answer per request, none for the notification: {body}"
    );
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(
        answers[1]["result"]["structuredContent"]["error_code"],
        "TOOL_NOT_APPROVED"
    );
    assert_eq!(
        answers[1]["result"]["structuredContent"]["side_effect_started"],
        false
    );
}

#[test]
fn mcp_method_header_that_contradicts_the_body_is_refused() {
    let mut gw = verified_gateway();
    type Case = (&'static [(&'static str, &'static str)], Vec<u8>);
    let cases: [Case; 4] = [
        (&[("mcp-method", "tools/list")], call_request(7, "echo")),
        (
            &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
            call_request(7, "delete_file"),
        ),
        (&[("mcp-name", "echo")], call_request(7, "read_file")),
        (
            &[("mcp-method", "tools/call")],
            format!("[{}]", String::from_utf8(call_request(7, "echo")).unwrap()).into_bytes(),
        ),
    ];
    for (headers, body) in cases {
        let mut ex = exchange("s1", &body, "application/json", b"{}");
        ex.request_headers
            .extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let reply = gw
            .exchange(SERVER, &ex, 7)
            .local_reply
            .unwrap_or_else(|| panic!("{headers:?} forwarded"));
        assert_eq!(reply.status, 400, "{headers:?}");
        let body: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(body["error"]["code"], -32600);
    }
}

#[test]
fn tools_call_sent_as_a_notification_is_refused() {
    // No id: JSON-RPC lets a server run it anyway, and nobody would see the answer.
    let mut gw = verified_gateway();
    let body = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_file","arguments":{"path":"/"}}}"#;
    let reply = raw_request(&mut gw, body);
    let (status, body) = reply.expect("a tools/call without an id reached the server");
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], -32600);
    let batch = br#"[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_file"}}]"#;
    assert!(raw_request(&mut gw, batch).is_some(), "in a batch too");
}

#[test]
fn request_over_the_size_limit_is_refused_413() {
    let mut gw = gateway(json!({"limits": {"max_request_bytes": 1024}}));
    list(&mut gw, "s1", &[echo()]);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{}"}}}}}}"#,
        "a".repeat(2000)
    );
    let (status, _) = raw_request(&mut gw, big.as_bytes()).expect("oversized body forwarded");
    assert_eq!(status, 413);
}

#[test]
fn null_and_structured_ids_are_refused() {
    let mut gw = verified_gateway();
    for id in ["null", "[1]", "{\"a\":1}", "true"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"x"}}}}}}"#
        );
        assert_refused_400(raw_request(&mut gw, body.as_bytes()), -32600, id);
    }
}
