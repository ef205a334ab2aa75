//! `Config::parse`: never panics; an accepted config configures an engine (pins, locks,
//! quarantines applied) and survives a list and a call without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

fn post(body: &str, response: &str) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "s".into()),
            ("x-mcp-server".into(), "deploy".into()),
        ],
        request_body: body.as_bytes().to_vec(),
        status: 200,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: response.as_bytes().to_vec(),
    }
}

fuzz_target!(|data: &[u8]| {
    let config = match Config::parse(data) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let servers: Vec<String> = config.servers.keys().take(2).cloned().chain(["deploy".to_string()]).collect();
    let mut gw = NativeReplay::new(config);
    for server in servers {
        gw.exchange(&server, &post(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}}"#), 7);
        gw.exchange(&server, &post(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#), 7);
    }
});
