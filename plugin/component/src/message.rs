//! One message through the engine: the context the host gives becomes the core's
//! [`RequestInfo`] or response framing, and the core's answer becomes a [`Verdict`].
//!
//! Main design decision: stdio and HTTP differ only in framing. A stdio body is one whole
//! JSON-RPC message, always inspected ([`Engine::server_message_bytes`]); an HTTP body is
//! read as its `content-type` says (JSON buffered, Server-Sent Events parsed event by event),
//! exactly as the Envoy filter reads it. Every body goes through the engine entry a stream
//! host uses ([`Engine::request_body_arrived`], [`Engine::response_body`]) as one whole
//! callback, so with a fleet store the answer waits for it ([`crate::fleet`]) and what it
//! closed is pushed right after.

use crate::bindings::{LocalReply, MessageContext, Transport, Verdict};
use crate::exchanges::Exchanges;
use crate::fleet;
use crate::host::{Headers, HostOutputs, HostStore};
use toolseal_core::gateway::body::BodyVerdict;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::{BodyPlan, Exchange, RequestInfo, ResponseState};
use toolseal_core::gateway::stream::BodyAnswer;
use toolseal_core::wire::jsonrpc;
use toolseal_core::wire::revision::{RoutingHeaders, is_stateless, routing_repeated};

/// Why a message was stopped when the fleet store never let its answer settle.
const NO_STABLE_ANSWER: &str =
    "toolseal: the fleet store gave no stable answer; the message was not forwarded";

fn no_stable_answer() -> Vec<u8> {
    jsonrpc::error_response(
        &serde_json::Value::Null,
        jsonrpc::INTERNAL_ERROR,
        NO_STABLE_ANSWER,
    )
    .to_string()
    .into_bytes()
}

/// A client → server message.
pub fn client(
    engine: &mut Engine,
    exchanges: &mut Exchanges,
    ctx: &MessageContext,
    body: &[u8],
    now_ms: u64,
) -> Verdict {
    let headers = Headers(&ctx.headers);
    let stdio = ctx.transport == Transport::Stdio;
    let info = RequestInfo {
        http_method: if stdio {
            "POST"
        } else {
            headers.get(":method").unwrap_or("POST")
        },
        content_type: if stdio {
            Some("application/json")
        } else {
            headers.get("content-type")
        },
        session: ctx.session_id.as_deref(),
        // Over stdio the revision is in each request's `_meta` only.
        routing: if stdio {
            RoutingHeaders::default()
        } else {
            let version = headers.get("mcp-protocol-version");
            RoutingHeaders {
                present: true,
                version,
                method: headers.get("mcp-method"),
                name: headers.get("mcp-name"),
                // Only the stateless revision's rules look at repeats.
                repeated: version.is_some_and(is_stateless)
                    && routing_repeated(ctx.headers.iter().map(|(k, _)| k.as_str())),
            }
        },
        caller: &headers,
    };
    // A fresh exchange per message: a refused message must not disturb what other messages
    // of the same session are still waiting for.
    let mut exchange = Exchange::new(&ctx.server_id, info.session);
    let answer = fleet::until_decided(engine, &mut exchange, |engine, exchange| {
        let read = &mut |size: usize| Ok(body.get(..size).unwrap_or(body).to_vec());
        match engine.request_body_arrived(
            &mut HostStore,
            &mut HostOutputs,
            now_ms,
            exchange,
            &info,
            body.len(),
            true,
            read,
        ) {
            BodyAnswer::Fleet(call) => Err(call),
            answer => Ok(answer),
        }
    });
    fleet::push_closures(engine);
    match answer {
        Some(BodyAnswer::Forward) => {
            exchanges.merge(exchange);
            Verdict::Pass
        }
        Some(BodyAnswer::Reply(reply)) => Verdict::Reply(LocalReply {
            status: reply.status,
            body: reply.body,
        }),
        // A whole body never waits for more; a store that never settles stops it.
        Some(BodyAnswer::Wait | BodyAnswer::Fleet(_)) | None => Verdict::Reply(LocalReply {
            status: 503,
            body: no_stable_answer(),
        }),
    }
}

/// A server → client message.
pub fn server(
    engine: &mut Engine,
    exchanges: &mut Exchanges,
    ctx: &MessageContext,
    body: &[u8],
    now_ms: u64,
) -> Verdict {
    if ctx.transport == Transport::Http && body.is_empty() {
        // No message in it (a 202 to a notification): nothing to check, nothing to withhold.
        return Verdict::Pass;
    }
    let mut exchange = exchanges.take(&ctx.server_id, ctx.session_id.as_deref());
    // Over stdio the session is the guarded process itself, known from the start: the
    // capabilities an initialize declared are kept for it once the server answers.
    if ctx.transport == Transport::Stdio
        && exchange.awaits_session()
        && let Some(session) = ctx.session_id.as_deref()
    {
        engine.session_assigned(&mut HostStore, &mut exchange, session);
    }
    let replacement = match ctx.transport {
        Transport::Stdio => {
            // One whole message, always inspected (as `Engine::server_message_bytes`).
            exchange.response = ResponseState::Message;
            whole_body(engine, &mut exchange, body, now_ms)
        }
        Transport::Http => {
            http_response(engine, &mut exchange, &Headers(&ctx.headers), body, now_ms)
        }
    };
    fleet::push_closures(engine);
    exchanges.put(exchange);
    match replacement {
        Some(bytes) if bytes != body => Verdict::Rewrite(bytes),
        _ => Verdict::Pass,
    }
}

/// A whole HTTP response body (JSON, or complete Server-Sent Events).
fn http_response(
    engine: &mut Engine,
    exchange: &mut Exchange,
    headers: &Headers<'_>,
    body: &[u8],
    now_ms: u64,
) -> Option<Vec<u8>> {
    // An initialize answer names the session its declared capabilities belong to.
    if exchange.awaits_session()
        && let Some(session) = headers.get("mcp-session-id")
    {
        engine.session_assigned(&mut HostStore, exchange, session);
    }
    let plan = engine.response_headers(
        exchange,
        headers.get("content-type"),
        headers.get("content-encoding"),
    );
    match plan {
        BodyPlan::Pass => None,
        BodyPlan::Buffer | BodyPlan::Stream => whole_body(engine, exchange, body, now_ms),
    }
}

/// A whole response body as one last body callback, framed as `exchange.response` says;
/// returns the body to forward instead, if it changes.
fn whole_body(
    engine: &mut Engine,
    exchange: &mut Exchange,
    body: &[u8],
    now_ms: u64,
) -> Option<Vec<u8>> {
    let verdict = fleet::until_decided(engine, exchange, |engine, exchange| {
        let read = &mut |from: usize| body.get(from..).map(<[u8]>::to_vec);
        match engine.response_body(
            &mut HostStore,
            &mut HostOutputs,
            now_ms,
            exchange,
            body.len(),
            true,
            read,
        ) {
            BodyVerdict::Fleet(call) => Err(call),
            verdict => Ok(verdict),
        }
    });
    match verdict {
        Some(BodyVerdict::Replace(bytes)) => Some(bytes),
        Some(BodyVerdict::Forward | BodyVerdict::PassRest) => None,
        // A whole body is never held for more, nor cut mid-stream: these only come from a
        // store that never settled. Fail closed.
        Some(BodyVerdict::Wait | BodyVerdict::Reset | BodyVerdict::Fleet(_)) | None => {
            exchange.response = ResponseState::Dropped;
            Some(no_stable_answer())
        }
    }
}
