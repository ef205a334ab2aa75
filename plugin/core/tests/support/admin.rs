//! The admin API driven through the engine, with the token the tests' configurations hash.

use serde_json::Value;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

/// The admin token the tests' configurations hash into `admin.token_sha256`.
pub const TOKEN: &str = "s3cret";

/// `method /toolseal/{path}` with `body` (none when null) and the bearer [`TOKEN`], on the
/// stream of `server`: the local reply's status and JSON body.
pub fn admin(
    gw: &mut NativeReplay,
    server: &str,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let ex = HttpExchange {
        seq: "a".into(),
        http_method: method.into(),
        path: format!("/toolseal/{path}"),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {TOKEN}")),
        ],
        request_body: if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
        status: 200,
        response_headers: vec![],
        response_body: vec![],
    };
    let reply = gw.exchange(server, &ex, 64).local_reply.unwrap();
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

/// `GET servers/{server}`, which must answer 200: the admin view of the server.
pub fn view(gw: &mut NativeReplay, server: &str) -> Value {
    let (status, view) = admin(gw, server, "GET", &format!("servers/{server}"), Value::Null);
    assert_eq!(status, 200, "{view}");
    view
}

/// The `schema_status` of `server` in its admin view.
pub fn schema_status(gw: &mut NativeReplay, server: &str) -> String {
    view(gw, server)["schema_status"]
        .as_str()
        .unwrap()
        .to_string()
}
