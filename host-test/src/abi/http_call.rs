//! HTTP callouts (`proxy_http_call`) and the answer's buffers: what the plugin sends to an
//! upstream cluster (toolseal: etcd's JSON API on the fleet store's cluster), held until the
//! runner answers it through `proxy_on_http_call_response`.
//!
//! Main design decision: the hostcall only records the call, as Envoy only starts it; when
//! and how it is answered (at once, later, after another instance's write, never, as a
//! failure) is the runner's to decide, so a replay can put a callout's answer anywhere
//! between two callbacks. Envoy's rules are kept (some measured on Envoy 1.40 by the
//! adapter's author): only a cluster the host knows is served (another one answers
//! [`Status::BadArgument`], as Envoy does for an unknown cluster), a call without `:method`,
//! `:path` or `:authority` is refused the same way, tokens are unique per VM, every answer
//! arrives on the root context (whichever stream asked), a stream's body cannot be read
//! while an answer is delivered, and a call that fails is delivered with no headers and no
//! body (its header map and body buffer then do not exist: [`Status::BadArgument`] and
//! [`Status::NotFound`]).

use super::guest::{Fail, Guest, HostcallResult, finish, read_lossy, write_u32};
use super::header_map::HeaderMap;
use super::types::Status;

/// One callout the plugin made and the host has not answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// The token the plugin got back (and is answered with).
    pub token: u32,
    /// The context that was effective when it was made (the answer arrives on the root
    /// context all the same).
    pub context_id: u32,
    /// The cluster it was sent to.
    pub cluster: String,
    /// Its headers (`:method`, `:path`, `:authority`, ...).
    pub headers: HeaderMap,
    /// Its body.
    pub body: Vec<u8>,
    /// The timeout the plugin gave it.
    pub timeout_ms: u32,
}

impl HttpCall {
    /// The `:path` header (lossy text).
    pub fn path(&self) -> String {
        String::from_utf8_lossy(self.headers.get(b":path").unwrap_or_default()).into_owned()
    }
}

/// The answer being delivered (during `proxy_on_http_call_response`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAnswer {
    /// The answer's headers (with `:status`).
    pub headers: HeaderMap,
    /// The answer's body.
    pub body: Vec<u8>,
}

/// The VM's callouts: which cluster is served, the calls in flight, the answer being read.
#[derive(Debug, Clone, Default)]
pub struct Callouts {
    /// The only cluster the host serves (`None`: none; every call is refused).
    pub cluster: Option<String>,
    /// Calls made and not answered yet, in the order they were made.
    pub pending: Vec<HttpCall>,
    /// Every call made over the VM's life (answered or not).
    pub made: u64,
    /// The answer of the call being delivered: `Some(None)` while a failed call is
    /// delivered (no headers, no body), `None` outside a delivery.
    pub delivering: Option<Option<CallAnswer>>,
    last_token: u32,
}

impl Callouts {
    /// The next token: 1, 2, ... skipping 0 on wrap-around.
    fn next_token(&mut self) -> u32 {
        self.last_token = self.last_token.wrapping_add(1);
        if self.last_token == 0 {
            self.last_token = 1;
        }
        self.last_token
    }

    /// Takes the pending call `token` out (to answer it).
    pub fn take(&mut self, token: u32) -> Option<HttpCall> {
        let at = self.pending.iter().position(|c| c.token == token)?;
        Some(self.pending.remove(at))
    }

    /// Drops the calls made while `context_id` was effective (a runner that models a host
    /// cancelling them). Returns them.
    pub fn cancel_context(&mut self, context_id: u32) -> Vec<HttpCall> {
        let (gone, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|c| c.context_id == context_id);
        self.pending = kept;
        gone
    }

    /// The headers of the answer being delivered, if it has any.
    pub fn answer_headers(&self) -> Option<&HeaderMap> {
        self.delivering.as_ref()?.as_ref().map(|a| &a.headers)
    }

    /// The body of the answer being delivered, if it has one.
    pub fn answer_body(&self) -> Option<&[u8]> {
        self.delivering
            .as_ref()?
            .as_ref()
            .map(|a| a.body.as_slice())
    }
}

/// Headers without which Envoy refuses a callout.
const REQUIRED: [&[u8]; 3] = [b":method", b":path", b":authority"];

/// `proxy_http_call(upstream, upstream_size, headers, headers_size, body, body_size,
/// trailers, trailers_size, timeout_ms, *token)`: recorded for the runner to answer.
#[allow(clippy::too_many_arguments)]
pub fn http_call(
    g: &mut impl Guest,
    upstream: (u32, u32),
    headers: (u32, u32),
    body: (u32, u32),
    trailers: (u32, u32),
    timeout_ms: u32,
    token_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let cluster = read_lossy(g, upstream.0, upstream.1)?;
        let header_bytes = g.read(headers.0, headers.1)?;
        let body = g.read(body.0, body.1)?;
        let trailer_bytes = g.read(trailers.0, trailers.1)?;
        let headers = HeaderMap::deserialize(&header_bytes).map_err(|_| Status::ParseFailure)?;
        HeaderMap::deserialize(&trailer_bytes).map_err(|_| Status::ParseFailure)?;
        // The out-pointer is checked before anything is recorded: a bad one starts no call.
        write_u32(g, token_ptr, 0)?;
        let vm = &mut g.host().vm;
        if vm.callouts.cluster.as_deref() != Some(cluster.as_str()) {
            vm.unsupported_calls.push("proxy_http_call");
            return Err(Fail::Status(Status::BadArgument));
        }
        if REQUIRED.iter().any(|h| headers.get(h).is_none()) {
            return Err(Fail::Status(Status::BadArgument));
        }
        let context_id = vm.effective_context;
        let token = vm.callouts.next_token();
        vm.callouts.made = vm.callouts.made.saturating_add(1);
        vm.callouts.pending.push(HttpCall {
            token,
            context_id,
            cluster,
            headers,
            body,
            timeout_ms,
        });
        write_u32(g, token_ptr, token)
    })())
}
