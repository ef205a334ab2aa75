//! `jsonrpc::parse_payload`: never panics; an accepted payload survives a round trip through
//! its own JSON form unchanged; reading `tools/call` params never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolseal_core::wire::jsonrpc::{Message, Payload, error_response, message_from_value, parse_payload, tool_call};

fuzz_target!(|data: &[u8]| {
    let Some((&depth, body)) = data.split_first() else { return };
    let max_depth = usize::from(depth % 80);
    let payload = match parse_payload(body, max_depth) {
        Ok(p) => p,
        Err(e) => {
            let _ = (e.code(), e.to_string());
            return;
        }
    };
    for message in payload.messages() {
        let value = message.to_value();
        assert_eq!(message_from_value(value.clone()).as_ref(), Ok(message), "message round trip");
        if let Message::Request { id, method, params } = message {
            if method == "tools/call" {
                let _ = tool_call(params.as_ref());
            }
            let _ = error_response(id, -32600, "x");
        }
    }
    let whole = match &payload {
        Payload::Single(m) => m.to_value(),
        Payload::Batch(ms) => serde_json::Value::Array(ms.iter().map(Message::to_value).collect()),
    };
    let bytes = serde_json::to_vec(&whole).expect("serialize");
    assert_eq!(parse_payload(&bytes, 128).as_ref(), Ok(&payload), "payload round trip");
});
