//! The stream as a proxy-wasm host delivers it: the engine, not the adapter, decides which
//! requests are admin requests, refuses a request whose server cannot be told or whose
//! headers or body the host could not hand over, refuses a body over its limit before its
//! end, reads an oversized admin body one byte past the cap, and says which response headers
//! to change.

use serde_json::{Value, json};
use toolseal_core::config::Config;
use toolseal_core::gateway::admin::{AdminRequest, MAX_ADMIN_BODY};
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::{BodyPlan, Exchange, LocalReply, RequestInfo};
use toolseal_core::gateway::stream::{BodyAnswer, HeadVerdict, RequestHead};
use toolseal_core::state::audit::CollectedOutputs;
use toolseal_core::state::store::MemoryStore;
use toolseal_core::wire::revision::RoutingHeaders;

use crate::support::host::NoCaller;

fn info(caller: &NoCaller) -> RequestInfo<'_> {
    RequestInfo {
        http_method: "POST",
        content_type: Some("application/json"),
        session: Some("s1"),
        routing: RoutingHeaders::default(),
        caller,
    }
}

struct Worker {
    engine: Engine,
    store: MemoryStore,
    out: CollectedOutputs,
}

fn worker(config: Value) -> Worker {
    let mut w = Worker {
        engine: Engine::new(Config::parse(config.to_string().as_bytes()).unwrap()),
        store: MemoryStore::new(),
        out: CollectedOutputs::default(),
    };
    w.engine.configure(&mut w.store, &mut w.out, 1).unwrap();
    w
}

impl Worker {
    fn head(&mut self, exchange: &mut Exchange, head: RequestHead<'_>) -> HeadVerdict {
        self.engine
            .request_head_arrived(&mut self.store, &mut self.out, 2, exchange, head)
    }
}

fn reply_status(verdict: &HeadVerdict) -> u16 {
    match verdict {
        HeadVerdict::Reply(LocalReply { status, .. }) => *status,
        other => panic!("expected a local reply, got {other:?}"),
    }
}

fn reply_text(reply: &LocalReply) -> String {
    String::from_utf8(reply.body.clone()).unwrap()
}

#[test]
fn the_head_decides_admin_mcp_or_a_refusal() {
    let mut w = worker(json!({}));
    let caller = NoCaller;
    let info = info(&caller);
    let mut exchange = Exchange::default();
    let admin = RequestHead::Read {
        path: "/toolseal/servers",
        server: None,
        info: &info,
    };
    assert_eq!(w.head(&mut exchange, admin), HeadVerdict::Admin);

    let mut exchange = Exchange::default();
    let mcp = RequestHead::Read {
        path: "/mcp",
        server: Some("weather"),
        info: &info,
    };
    assert_eq!(w.head(&mut exchange, mcp), HeadVerdict::Mcp);
    assert_eq!(exchange.server, "weather");
    assert_eq!(exchange.session.as_deref(), Some("s1"));

    let mut exchange = Exchange::default();
    let unnamed = RequestHead::Read {
        path: "/mcp",
        server: None,
        info: &info,
    };
    let verdict = w.head(&mut exchange, unnamed);
    assert_eq!(reply_status(&verdict), 503);
    let HeadVerdict::Reply(reply) = verdict else {
        unreachable!()
    };
    assert!(
        reply_text(&reply).contains("server_id"),
        "{}",
        reply_text(&reply)
    );
    assert_eq!(exchange.server, "");
}

#[test]
fn unreadable_headers_are_refused_under_the_server_that_could_be_told() {
    let mut w = worker(json!({}));
    let mut exchange = Exchange::default();
    let head = RequestHead::Unreadable {
        server: Some("weather"),
        what: "the request headers (status 2)",
    };
    let verdict = w.head(&mut exchange, head);
    assert_eq!(reply_status(&verdict), 503);
    assert_eq!(exchange.server, "weather");
    let HeadVerdict::Reply(reply) = verdict else {
        unreachable!()
    };
    assert!(
        reply_text(&reply).contains("the request headers (status 2)"),
        "{}",
        reply_text(&reply)
    );
}

#[test]
fn a_body_over_the_limit_is_refused_before_its_end_without_reading_it() {
    let mut w = worker(json!({"limits": {"max_request_bytes": 1000}}));
    let caller = NoCaller;
    let mut exchange = Exchange::new("weather", Some("s1"));
    let mut never = |_: usize| -> Result<Vec<u8>, String> { panic!("read a body it refuses") };
    let answer = w.engine.request_body_arrived(
        &mut w.store,
        &mut w.out,
        2,
        &mut exchange,
        &info(&caller),
        1001,
        false,
        &mut never,
    );
    let BodyAnswer::Reply(reply) = answer else {
        panic!("expected a 413, got {answer:?}")
    };
    assert_eq!(reply.status, 413);
    // Under the limit and not at its end: wait, still without reading.
    let answer = w.engine.request_body_arrived(
        &mut w.store,
        &mut w.out,
        2,
        &mut exchange,
        &info(&caller),
        1000,
        false,
        &mut never,
    );
    assert_eq!(answer, BodyAnswer::Wait);
}

#[test]
fn a_body_the_host_cannot_hand_over_is_refused() {
    let mut w = worker(json!({}));
    let caller = NoCaller;
    let mut exchange = Exchange::new("weather", Some("s1"));
    let mut failing = |size: usize| -> Result<Vec<u8>, String> {
        assert_eq!(size, 40);
        Err("the request body (status 2)".into())
    };
    let answer = w.engine.request_body_arrived(
        &mut w.store,
        &mut w.out,
        2,
        &mut exchange,
        &info(&caller),
        40,
        true,
        &mut failing,
    );
    let BodyAnswer::Reply(reply) = answer else {
        panic!("expected a 503, got {answer:?}")
    };
    assert_eq!(reply.status, 503);
    assert!(reply_text(&reply).contains("the request body (status 2)"));
}

#[test]
fn an_oversized_admin_body_is_read_one_byte_past_the_cap_and_refused() {
    // sha256("secret")
    let token = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
    let mut w = worker(json!({"admin": {"token_sha256": [token]}}));
    let caller = NoCaller;
    let mut exchange = Exchange::default();
    let request = AdminRequest {
        method: "POST",
        path: "/toolseal/servers/weather/approve",
        authorization: Some("Bearer secret"),
        source: None,
        caller: &caller,
        body: &[],
    };
    let mut asked = Vec::new();
    let mut read = |size: usize| -> Result<Vec<u8>, String> {
        asked.push(size);
        Ok(vec![b' '; size])
    };
    let answer = w.engine.admin_body_arrived(
        &mut w.store,
        &mut w.out,
        2,
        &mut exchange,
        &request,
        MAX_ADMIN_BODY,
        false,
        &mut read,
    );
    assert_eq!(answer, BodyAnswer::Wait);
    let answer = w.engine.admin_body_arrived(
        &mut w.store,
        &mut w.out,
        2,
        &mut exchange,
        &request,
        MAX_ADMIN_BODY + 5000,
        false,
        &mut read,
    );
    assert_eq!(asked, vec![MAX_ADMIN_BODY + 1]);
    let BodyAnswer::Reply(reply) = answer else {
        panic!("expected an answer, got {answer:?}")
    };
    assert_eq!(reply.status, 413, "{}", reply_text(&reply));
}

#[test]
fn response_heads_say_which_headers_change() {
    let w = worker(json!({}));
    let mut exchange = Exchange::new("weather", Some("s1"));
    let head = w.engine.response_head_arrived(&mut exchange, None);
    assert_eq!(head.plan, BodyPlan::Buffer);
    assert!(head.remove_content_length);
    assert!(head.plain_json);

    // JSON is read whole and may be rewritten.
    let mut exchange = Exchange::new("weather", Some("s1"));
    let head = w
        .engine
        .response_head_arrived(&mut exchange, Some((Some("application/json"), None)));
    assert_eq!(head.plan, BodyPlan::Buffer);
    assert!(head.remove_content_length);
    assert!(!head.plain_json);

    // Another content type answering nothing awaited passes as it comes, headers untouched.
    let mut exchange = Exchange::new("weather", Some("s1"));
    let head = w
        .engine
        .response_head_arrived(&mut exchange, Some((Some("text/html"), None)));
    assert_eq!(head.plan, BodyPlan::Pass);
    assert!(!head.remove_content_length);
    assert!(!head.plain_json);
}
