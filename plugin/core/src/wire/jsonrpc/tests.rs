//! JSON-RPC frames: valid and invalid messages, batches, ids, tools/call params. Every body
//! of the recorded transcripts is read in `tests/wire/jsonrpc.rs`.

use crate::wire::json::JsonError;
use crate::wire::jsonrpc::{
    FrameError, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, MAX_BATCH, METHOD_NOT_FOUND,
    Message, PARSE_ERROR, Payload, ToolCall, error_response, message_from_value, parse_payload,
    same_id, tool_call,
};
use serde_json::{Value, json};

const DEPTH: usize = 64;

fn single(body: &str) -> Message {
    match parse_payload(body.as_bytes(), DEPTH) {
        Ok(Payload::Single(m)) => m,
        other => panic!("{body}: {other:?}"),
    }
}

#[test]
fn valid_messages() {
    let cases: Vec<(&str, Message)> = vec![
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            Message::Request {
                id: json!(1),
                method: "tools/list".into(),
                params: Some(json!({})),
            },
        ),
        (
            r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#,
            Message::Request {
                id: json!("1"),
                method: "ping".into(),
                params: None,
            },
        ),
        (
            r#"{"method":"x","params":[1,2],"id":-2.5,"jsonrpc":"2.0"}"#,
            Message::Request {
                id: json!(-2.5),
                method: "x".into(),
                params: Some(json!([1, 2])),
            },
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Message::Notification {
                method: "notifications/initialized".into(),
                params: None,
            },
        ),
        (
            r#"{"result":{"tools":[]},"jsonrpc":"2.0","id":2}"#,
            Message::Response {
                id: json!(2),
                result: json!({"tools": []}),
            },
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            Message::Response {
                id: json!("a"),
                result: Value::Null,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            Message::Error {
                id: Value::Null,
                error: json!({"code": -32700, "message": "Parse error"}),
            },
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m","data":{"x":1}},"extra":true}"#,
            Message::Error {
                id: json!(3),
                error: json!({"code": 1, "message": "m", "data": {"x": 1}}),
            },
        ),
    ];
    for (body, want) in cases {
        let got = single(body);
        assert_eq!(got, want, "{body}");
        // to_value gives back an equivalent message.
        assert_eq!(
            message_from_value(got.to_value()).unwrap(),
            want,
            "{body} round trip"
        );
    }
}

#[test]
fn ids_keep_their_json_type() {
    let a = single(r#"{"jsonrpc":"2.0","id":"1","method":"m"}"#);
    let b = single(r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#);
    assert_eq!(a.id(), Some(&json!("1")));
    assert_eq!(b.id(), Some(&json!(1)));
    assert_ne!(a.id(), b.id());
    assert_eq!(a.method(), Some("m"));
    let n = single(r#"{"jsonrpc":"2.0","method":"n"}"#);
    assert_eq!((n.id(), n.method()), (None, Some("n")));
    let r = single(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    assert_eq!((r.id(), r.method()), (Some(&json!(1)), None));
}

#[test]
fn invalid_messages() {
    let not_rpc = |s: &str| FrameError::NotJsonRpc(s.to_owned());
    let cases: Vec<(&str, FrameError)> = vec![
        ("[]", FrameError::EmptyBatch),
        ("1", not_rpc("expected an object")),
        (r#""x""#, not_rpc("expected an object")),
        (
            r#"{"id":1,"method":"m"}"#,
            not_rpc(r#""jsonrpc" must be "2.0""#),
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            not_rpc(r#""jsonrpc" must be "2.0""#),
        ),
        (
            r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
            not_rpc(r#""jsonrpc" must be "2.0""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            not_rpc(r#""method" must be a string"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            not_rpc(r#""id" must be a string or a number"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            not_rpc(r#""id" must be a string or a number"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            not_rpc(r#""id" must be a string or a number"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#,
            not_rpc(r#""params" must be an object or an array"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            not_rpc(r#""params" must be an object or an array"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
            not_rpc(r#"a request cannot have "result" or "error""#),
        ),
        (
            r#"{"jsonrpc":"2.0"}"#,
            not_rpc(r#"expected "method" (request) or "id" (response)"#),
        ),
        (
            r#"{"jsonrpc":"2.0","result":1}"#,
            not_rpc(r#"expected "method" (request) or "id" (response)"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1}"#,
            not_rpc(r#"a response needs "result" or "error""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            not_rpc(r#"a response cannot have both "result" and "error""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
            not_rpc(r#""id" must be a string or a number"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
            not_rpc(r#""error" must be an object with an integer "code" and a string "message""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            not_rpc(r#""error" must be an object with an integer "code" and a string "message""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            not_rpc(r#""error" must be an object with an integer "code" and a string "message""#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":false,"error":{"code":1,"message":"m"}}"#,
            not_rpc(r#""id" must be a string or a number"#),
        ),
        (
            r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1}]"#,
            not_rpc(r#"batch element 1: a response needs "result" or "error""#),
        ),
        (r#"[[]]"#, not_rpc("batch element 0: expected an object")),
    ];
    for (body, want) in cases {
        assert_eq!(parse_payload(body.as_bytes(), DEPTH), Err(want), "{body}");
    }
}

#[test]
fn strict_json_errors_pass_through() {
    let dup = parse_payload(
        br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
        DEPTH,
    );
    assert_eq!(
        dup,
        Err(FrameError::Json(JsonError::DuplicateKey("method".into())))
    );
    let nested = parse_payload(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":{"a":{"a":1}}}}}"#,
        3,
    );
    assert_eq!(nested, Err(FrameError::Json(JsonError::TooDeep(3))));
    assert!(matches!(
        parse_payload(b"{", DEPTH),
        Err(FrameError::Json(JsonError::Syntax(_)))
    ));
    assert!(matches!(
        parse_payload(b"\xFF", DEPTH),
        Err(FrameError::Json(JsonError::Syntax(_)))
    ));
    assert!(matches!(
        parse_payload(b"", DEPTH),
        Err(FrameError::Json(JsonError::Syntax(_)))
    ));
}

#[test]
fn batches() {
    let one = r#"{"jsonrpc":"2.0","method":"n"}"#;
    let batch = |n: usize| format!("[{}]", vec![one; n].join(","));
    match parse_payload(batch(1).as_bytes(), DEPTH).unwrap() {
        Payload::Batch(items) => assert_eq!(items.len(), 1),
        other => panic!("{other:?}"),
    }
    let full = parse_payload(batch(MAX_BATCH).as_bytes(), DEPTH).unwrap();
    assert_eq!(full.messages().len(), 256);
    assert_eq!(
        parse_payload(batch(MAX_BATCH + 1).as_bytes(), DEPTH),
        Err(FrameError::BatchTooLarge)
    );
    let mixed = parse_payload(
        br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        DEPTH,
    )
    .unwrap();
    let methods: Vec<Option<&str>> = mixed.messages().iter().map(Message::method).collect();
    assert_eq!(methods, vec![Some("tools/call"), None]);
    assert_eq!(single(one).method(), Some("n"));
}

#[test]
fn error_codes_and_texts() {
    assert_eq!(
        (
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
            INTERNAL_ERROR
        ),
        (-32700, -32600, -32601, -32602, -32603)
    );
    assert_eq!(
        error_response(&json!("7"), INVALID_PARAMS, "bad"),
        json!({"jsonrpc": "2.0", "id": "7", "error": {"code": -32602, "message": "bad"}})
    );
    assert_eq!(
        serde_json::to_string(&error_response(&Value::Null, PARSE_ERROR, "x")).unwrap(),
        r#"{"error":{"code":-32700,"message":"x"},"id":null,"jsonrpc":"2.0"}"#
    );
    let cases: Vec<(FrameError, i64, &str)> = vec![
        (
            FrameError::EmptyBatch,
            -32600,
            "an empty JSON-RPC batch is invalid",
        ),
        (
            FrameError::BatchTooLarge,
            -32600,
            "a JSON-RPC batch may hold at most 256 messages; send smaller batches",
        ),
        (
            FrameError::NotJsonRpc("expected an object".into()),
            -32600,
            "not a JSON-RPC 2.0 message: expected an object",
        ),
        (
            FrameError::InvalidParams("p".into()),
            -32602,
            "invalid params: p",
        ),
        (
            FrameError::Json(JsonError::TooDeep(64)),
            -32700,
            "the body is not valid JSON: JSON nested deeper than 64 arrays/objects (limits.max_depth)",
        ),
    ];
    for (err, code, text) in cases {
        assert_eq!((err.code(), err.to_string().as_str()), (code, text));
    }
}

#[test]
fn tool_call_params() {
    let ok: Vec<(Value, &str, Option<Value>)> = vec![
        (json!({"name": "echo"}), "echo", None),
        (
            json!({"name": "echo", "arguments": {}}),
            "echo",
            Some(json!({})),
        ),
        (
            json!({"name": "", "arguments": {"a": 1}, "_meta": {"progressToken": 1}}),
            "",
            Some(json!({"a": 1})),
        ),
    ];
    for (params, name, arguments) in ok {
        assert_eq!(
            tool_call(Some(&params)).unwrap(),
            ToolCall {
                name,
                arguments: arguments.as_ref()
            },
            "{params}"
        );
    }
    let bad: Vec<(Option<Value>, &str)> = vec![
        (None, "tools/call needs a params object"),
        (Some(json!([])), "tools/call needs a params object"),
        (Some(json!({})), "tools/call needs a string params.name"),
        (
            Some(json!({"name": 1})),
            "tools/call needs a string params.name",
        ),
        (
            Some(json!({"name": "a", "arguments": null})),
            "tools/call params.arguments must be an object",
        ),
        (
            Some(json!({"name": "a", "arguments": [1]})),
            "tools/call params.arguments must be an object",
        ),
        (
            Some(json!({"name": "a", "arguments": "{}"})),
            "tools/call params.arguments must be an object",
        ),
    ];
    for (params, why) in bad {
        assert_eq!(
            tool_call(params.as_ref()),
            Err(FrameError::InvalidParams(why.into())),
            "{params:?}"
        );
    }
}

#[test]
fn ids_match_as_a_client_files_them() {
    for (request, response) in [
        (json!(7), json!(7.0)),
        (json!(7), json!("7")),
        (json!(7), json!(" 7\n")),
        (json!(-7), json!("-7")),
        (json!(7), json!("+7")),
        (json!("abc"), json!("abc")),
    ] {
        assert!(same_id(&request, &response), "{request} {response}");
    }
    for (request, response) in [
        (json!(7), json!("7x")),
        (json!(7), json!("7.5")),
        (json!(7), json!("0x7")),
        (json!("abc"), json!("abd")),
        (json!(7), json!(null)),
        (json!(1), json!("")),
        (json!(1), json!(true)),
    ] {
        assert!(!same_id(&request, &response), "{request} {response}");
    }
}
