//! An HTTP stream as a proxy-wasm host delivers it: request headers, a request body in
//! callbacks with the size buffered so far, response headers.
//!
//! Main design decision: the host adapter decides nothing about a request. For each callback
//! it gathers what the host holds (headers, or the fact that it could not read them; the
//! server id it can tell; the size buffered so far, and the bytes when asked for) and makes
//! one call here; the answer says exactly what to do: continue, pause, answer locally, or
//! which response headers to change. Which requests are admin requests, a server that cannot
//! be told, a body over its limit, how much of an admin body to read, and a request the host
//! could not hand over are all decided here (the response body is [`super::body`]'s).

use crate::gateway::admin::{AdminRequest, MAX_ADMIN_BODY};
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{
    BodyPlan, Exchange, LocalReply, RequestInfo, RequestVerdict, ResponseState,
};
use crate::state::audit::Outputs;
use crate::state::store::StateStore;

/// The request headers as the host holds them.
pub enum RequestHead<'a> {
    /// Read.
    Read {
        /// `:path` (empty when absent).
        path: &'a str,
        /// The server id the host could tell (from the route, the cluster or a header, as
        /// `server_id` in the config says), if any.
        server: Option<&'a str>,
        /// The facts the checks look at.
        info: &'a RequestInfo<'a>,
    },
    /// The host could not read them.
    Unreadable {
        /// The server id, when it could be told without the headers.
        server: Option<&'a str>,
        /// What could not be read (for the refusal and the audit trail).
        what: &'a str,
    },
}

/// What the host does after the request headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadVerdict {
    /// An MCP request: its headers continue and its body is checked
    /// ([`Engine::request_body_arrived`]). The client's `Accept-Encoding` is removed, so that
    /// a response arrives uncompressed when it must be read.
    Mcp,
    /// An admin API request: its body is read ([`Engine::admin_body_arrived`]), then answered.
    Admin,
    /// Answered locally; the server never sees the request.
    Reply(LocalReply),
}

/// What the host does after one request body callback.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyAnswer {
    /// Keep buffering: nothing leaves yet (proxy-wasm: pause).
    Wait,
    /// Hold the request and send this call to the fleet store; hand its reply (and those of
    /// the calls that follow) to [`Engine::fleet_reply`], then make this callback again.
    Fleet(crate::gateway::fleet_worker::FleetCall),
    /// Send the request on to the server unchanged.
    Forward,
    /// Answer locally; the server never sees the request.
    Reply(LocalReply),
}

/// How the host treats the response headers before they leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// How the body callbacks feed the engine.
    pub plan: BodyPlan,
    /// The body may be rewritten: remove `Content-Length` (the headers leave before it).
    pub remove_content_length: bool,
    /// The body will be replaced by a plain JSON-RPC error: remove `Content-Encoding` and set
    /// `Content-Type: application/json`, or a client inflating gzip or reading SSE cannot
    /// read the error.
    pub plain_json: bool,
}

/// Reads `size` bytes of the body the callback holds, exactly; `Err` says what the host
/// could not hand over.
pub type ReadBody<'r> = dyn FnMut(usize) -> Result<Vec<u8>, String> + 'r;

impl Engine {
    /// The request headers arrived. Sets up `exchange` for the stream.
    pub fn request_head_arrived(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        head: RequestHead<'_>,
    ) -> HeadVerdict {
        let (path, server, info) = match head {
            RequestHead::Read { path, server, info } => (path, server, info),
            RequestHead::Unreadable { server, what } => {
                // Nothing can be checked; the server is named when it could be told.
                *exchange = Exchange::new(server.unwrap_or_default(), None);
                let reply = self.request_unreadable(store, out, now_ms, exchange, what);
                return HeadVerdict::Reply(reply);
            }
        };
        if self.is_admin_path(path) {
            return HeadVerdict::Admin;
        }
        let Some(server) = server else {
            return HeadVerdict::Reply(self.request_without_server(store, out, now_ms, exchange));
        };
        *exchange = Exchange::new(server, info.session);
        if self.config.views_read_path {
            exchange.path = path.split('?').next().unwrap_or_default().to_string();
        }
        match self.request_headers(store, out, now_ms, exchange, info) {
            RequestVerdict::Forward => HeadVerdict::Mcp,
            RequestVerdict::Reply(reply) => HeadVerdict::Reply(reply),
        }
    }

    /// One body callback of an MCP request: `size` bytes are buffered so far and `end` says
    /// the request ends with them. A body over `limits.max_request_bytes` is refused as soon
    /// as it is (HTTP 413); a complete body is read and decided on.
    #[allow(clippy::too_many_arguments)]
    pub fn request_body_arrived(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        info: &RequestInfo<'_>,
        size: usize,
        end: bool,
        read: &mut ReadBody<'_>,
    ) -> BodyAnswer {
        if size > self.config.limits.max_request_bytes {
            return BodyAnswer::Reply(self.request_too_large(store, out, now_ms, exchange));
        }
        if !end {
            return BodyAnswer::Wait;
        }
        let body = match read(size) {
            Ok(body) => body,
            Err(what) => {
                let reply = self.request_unreadable(store, out, now_ms, exchange, &what);
                return BodyAnswer::Reply(reply);
            }
        };
        let decided = self.with_fleet(
            store,
            out,
            now_ms,
            exchange,
            |engine, store, out, exchange| {
                engine.request_body(store, out, now_ms, exchange, info, &body)
            },
        );
        match decided {
            Ok(RequestVerdict::Forward) => BodyAnswer::Forward,
            Ok(RequestVerdict::Reply(reply)) => BodyAnswer::Reply(reply),
            Err(call) => BodyAnswer::Fleet(call),
        }
    }

    /// One body callback of an admin request (`request.body` is ignored: the body is read
    /// here). It is answered at the end of its body, or as soon as the body is over the admin
    /// cap: then only one byte more than the cap is read, and the answer refuses it by its
    /// length.
    #[allow(clippy::too_many_arguments)]
    pub fn admin_body_arrived(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        request: &AdminRequest<'_>,
        size: usize,
        end: bool,
        read: &mut ReadBody<'_>,
    ) -> BodyAnswer {
        let too_large = size > MAX_ADMIN_BODY;
        if !end && !too_large {
            return BodyAnswer::Wait;
        }
        let wanted = if too_large { MAX_ADMIN_BODY + 1 } else { size };
        let body = match read(wanted) {
            Ok(body) => body,
            Err(what) => {
                let reply = self.request_unreadable(store, out, now_ms, exchange, &what);
                return BodyAnswer::Reply(reply);
            }
        };
        let request = AdminRequest {
            body: &body,
            ..*request
        };
        let decided = self.with_fleet(store, out, now_ms, exchange, |engine, store, out, _| {
            engine.admin(store, out, now_ms, &request)
        });
        match decided {
            Ok(reply) => BodyAnswer::Reply(reply),
            Err(call) => BodyAnswer::Fleet(call),
        }
    }

    /// The response headers arrived: `Some((content_type, content_encoding))`, or `None` when
    /// the host could not read them.
    pub fn response_head_arrived(
        &self,
        exchange: &mut Exchange,
        headers: Option<(Option<&str>, Option<&str>)>,
    ) -> ResponseHead {
        let plan = match headers {
            Some((content_type, encoding)) => {
                self.response_headers(exchange, content_type, encoding)
            }
            None => self.response_headers_unreadable(exchange),
        };
        ResponseHead {
            remove_content_length: plan != BodyPlan::Pass,
            plain_json: matches!(exchange.response, ResponseState::Unreadable(_)),
            plan,
        }
    }
}
