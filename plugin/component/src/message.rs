//! One message through the engine: the context the host gives becomes the core's
//! [`RequestInfo`] or response framing, and the core's answer becomes a [`Verdict`].
//!
//! Main design decision: stdio and HTTP differ only in framing. A stdio body is one whole
//! JSON-RPC message, always inspected ([`Engine::server_message_bytes`]); an HTTP body is
//! read as its `content-type` says (JSON buffered, Server-Sent Events parsed event by event),
//! exactly as the Envoy filter reads it.

use crate::bindings::{LocalReply, MessageContext, Transport, Verdict};
use crate::exchanges::Exchanges;
use crate::host::{Headers, HostOutputs, HostStore};
use toolseal_core::gateway::engine::{Engine, Exchange, RequestInfo, RequestVerdict};
use toolseal_core::gateway::response::BodyPlan;
use toolseal_core::wire::revision::{RoutingHeaders, is_stateless, routing_repeated};

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
    match engine.request_body(
        &mut HostStore,
        &mut HostOutputs,
        now_ms,
        &mut exchange,
        &info,
        body,
    ) {
        RequestVerdict::Forward => {
            exchanges.merge(exchange);
            Verdict::Pass
        }
        RequestVerdict::Reply(reply) => Verdict::Reply(LocalReply {
            status: reply.status,
            body: reply.body,
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
        Transport::Stdio => engine.server_message_bytes(
            &mut HostStore,
            &mut HostOutputs,
            now_ms,
            &mut exchange,
            body,
        ),
        Transport::Http => {
            http_response(engine, &mut exchange, &Headers(&ctx.headers), body, now_ms)
        }
    };
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
        BodyPlan::Buffer => {
            engine.response_json(&mut HostStore, &mut HostOutputs, now_ms, exchange, body)
        }
        BodyPlan::Stream => engine.response_sse(
            &mut HostStore,
            &mut HostOutputs,
            now_ms,
            exchange,
            body,
            true,
        ),
    }
}
