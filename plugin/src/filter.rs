//! The proxy-wasm root and HTTP contexts.
//!
//! Envoy specifics this mapping relies on (measured on Envoy 1.40): pausing in a headers
//! callback stops the body callbacks, so headers always continue and bodies pause until the
//! end of stream;
//! `envoy.filters.http.buffer` after this filter keeps the router from opening an upstream
//! request before the plugin has decided; response headers leave before the body callbacks,
//! so `content-length` is removed whenever the body may be rewritten.
//!
//! When the host fails a call, the filter reports the fact to the engine (headers or a body
//! it could not read) and acts on the engine's answer; when acting itself fails, it stops the
//! stream rather than let it go on ([`Http::stop`]): a request the plugin meant to answer
//! locally is reset, never forwarded; a response whose replacement could not be written is
//! reset, never continued with the original bytes.

use crate::abi::{self, Buffer, Level, Map, Stream};
use crate::dispatch::Action;
use crate::host::{self, EnvoyCaller, EnvoyOutputs, Headers, Metrics, SharedData};
use crate::telemetry::Published;
use std::cell::RefCell;
use std::rc::Rc;
use toolseal_core::config::{Config, ServerIdSource};
use toolseal_core::gateway::admin::AdminRequest;
use toolseal_core::gateway::body::BodyVerdict;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::{BodyPlan, Exchange, LocalReply, RequestInfo};
use toolseal_core::gateway::fleet::FleetCall;
use toolseal_core::gateway::stream::{BodyAnswer, HeadVerdict, ReadBody, RequestHead};
use toolseal_core::wire::revision::{ROUTING_HEADERS, RoutingHeaders, is_stateless};

mod held;

use held::{Again, HeldBody, Waiting, call_reply, send_background};

struct Shared {
    engine: Engine,
    metrics: Metrics,
}

/// The root context: holds the engine built from the plugin configuration.
#[derive(Default)]
pub struct Root {
    shared: Option<Rc<RefCell<Shared>>>,
    /// The fleet store call of the background chain in flight (one at a time).
    fleet_call: Option<(u32, FleetCall)>,
}

impl Root {
    /// `proxy_on_configure`: reads, validates and applies the plugin configuration; `false`
    /// refuses it.
    pub fn on_configure(&mut self) -> bool {
        // A configuration that cannot be read is refused, never taken as empty: empty bytes
        // are the defaults (discovery posture), which would turn a strict deployment into
        // trust on first use.
        let bytes = match abi::get_buffer(Buffer::PluginConfiguration, 0, usize::MAX) {
            Ok(bytes) => bytes.unwrap_or_default(),
            Err(abi::Status(code)) => {
                let message = format!(
                    "toolseal: the host could not hand over the plugin configuration (status {code}); refusing it"
                );
                let _logged = abi::log(Level::Critical, &message);
                return false;
            }
        };
        let config = match Config::parse(&bytes) {
            Ok(config) => config,
            Err(e) => {
                let _logged = abi::log(Level::Critical, &format!("toolseal: {e}"));
                return false;
            }
        };
        let mut shared = Shared {
            engine: Engine::new(config),
            metrics: Metrics::define(),
        };
        let mut out = EnvoyOutputs {
            metrics: &mut shared.metrics,
            published: &mut Published::default(),
        };
        let configured = shared
            .engine
            .configure(&mut SharedData, &mut out, host::now_ms());
        if let Err(e) = configured {
            let _logged = abi::log(Level::Critical, &format!("toolseal: {e}"));
            return false;
        }
        if let Some(settings) = shared.engine.fleet_settings() {
            let period = u32::try_from(settings.sync_ms).unwrap_or(u32::MAX);
            if abi::set_tick_period(period).is_err() {
                let _logged = abi::log(
                    Level::Critical,
                    "toolseal: the host refused a timer; without it the fleet store is never read for other instances' changes",
                );
                return false;
            }
        }
        self.shared = Some(Rc::new(RefCell::new(shared)));
        true
    }

    /// `proxy_on_tick`: every `store.etcd.sync_ms`, the worker's background fleet work (what
    /// closed here and was not pushed, what other instances wrote).
    pub fn on_tick(&mut self) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if self.fleet_call.is_some() {
            return;
        }
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut Published::default(),
        };
        let call = engine.fleet_tick(&mut SharedData, &mut out, host::now_ms());
        let cluster = engine.fleet_settings().map(|s| s.cluster.clone());
        drop(shared);
        if let (Some(call), Some(cluster)) = (call, cluster) {
            self.fleet_call = send_background(&self.shared, &cluster, call);
        }
    }

    /// `proxy_on_http_call_response` for a call of the background chain.
    pub fn on_http_call_response(&mut self, token: u32, body_size: usize) {
        let Some((expected, call)) = self.fleet_call.take() else {
            return;
        };
        if expected != token {
            self.fleet_call = Some((expected, call));
            return;
        }
        let Some(shared) = self.shared.clone() else {
            return;
        };
        let reply = call_reply(body_size);
        let mut guard = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *guard;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut Published::default(),
        };
        let next = engine.fleet_reply(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            None,
            &call,
            reply,
        );
        let cluster = engine.fleet_settings().map(|s| s.cluster.clone());
        drop(guard);
        if let (Some(next), Some(cluster)) = (next, cluster) {
            self.fleet_call = send_background(&self.shared, &cluster, next);
        }
    }

    /// A context for one HTTP stream (`None` before a configuration was accepted).
    pub fn create_http_context(&self) -> Option<Http> {
        let shared = self.shared.clone()?;
        let filter_state = shared.borrow().engine.config.telemetry.filter_state;
        Some(Http {
            shared,
            mode: Mode::Mcp,
            headers: Headers::default(),
            exchange: Exchange::default(),
            plan: BodyPlan::Pass,
            published: Published::new(filter_state),
            waiting: None,
            pushing: None,
            held: HeldBody::default(),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An MCP request: checked.
    Mcp,
    /// An admin API request: answered locally at the end of its body.
    Admin,
    /// Answered locally already: nothing more to do (the local answer itself passes the
    /// response callbacks untouched).
    Done,
    /// The plugin could not act on its decision and stopped the stream: nothing more passes.
    Stopped,
}

/// One HTTP stream: a request and its response.
pub struct Http {
    shared: Rc<RefCell<Shared>>,
    mode: Mode,
    headers: Headers,
    exchange: Exchange,
    plan: BodyPlan,
    /// What this stream's filter state holds (see `telemetry`).
    published: Published,
    /// The fleet store call this stream is held for, and the callback to make again.
    waiting: Option<Waiting>,
    /// A closure of this stream's being pushed to the fleet store (its call in flight).
    pushing: Option<(u32, FleetCall)>,
    /// The body as held when the stream was held for the fleet store.
    held: HeldBody,
}

impl Http {
    /// Answers the request locally. Nothing more of the stream passes either way: if the
    /// host cannot send the answer, the stream is stopped ([`Http::stop`]).
    fn reply(&mut self, reply: &LocalReply, stream: Stream) -> Action {
        self.mode = Mode::Done;
        let headers = [
            ("content-type", reply.content_type),
            ("x-toolseal", "local"),
        ];
        if abi::send_local_response(u32::from(reply.status), &headers, &reply.body).is_err() {
            return self.stop(stream);
        }
        Action::Pause
    }

    /// Stops the stream when the plugin cannot act as it decided: resets it (`stream`: the
    /// direction the callback is in; a local reply also resets a response whose headers have
    /// left), and when even that fails, holds it paused, so that nothing unchecked is
    /// forwarded (Envoy then ends it at its timeout or buffer limit).
    fn stop(&mut self, stream: Stream) -> Action {
        self.mode = Mode::Stopped;
        if abi::close_stream(stream).is_err() {
            let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"toolseal: the stream was stopped"}}"#;
            if abi::send_local_response(503, &[], body).is_ok() {
                self.mode = Mode::Done;
            }
        }
        Action::Pause
    }
}

impl Http {
    /// `proxy_on_request_headers`.
    pub fn on_http_request_headers(&mut self, end_of_stream: bool) -> Action {
        let read = host::request_headers();
        let failed = read.as_ref().err().map(|abi::Status(code)| code);
        let what = failed.map(|code| format!("the request headers (status {code})"));
        self.headers = read.unwrap_or_default();
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let server = server_id(&engine.config, &self.headers);
        let caller = EnvoyCaller {
            headers: &self.headers,
        };
        let info = info(&self.headers, &caller);
        let head = match &what {
            None => RequestHead::Read {
                path: self.headers.get(":path").unwrap_or_default(),
                server: server.as_deref(),
                info: &info,
            },
            Some(what) => RequestHead::Unreadable {
                server: server.as_deref(),
                what,
            },
        };
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let verdict = engine.request_head_arrived(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            &mut self.exchange,
            head,
        );
        drop(shared);
        match verdict {
            HeadVerdict::Mcp => {
                // A response that still arrives compressed fails closed when it must be read.
                let _removed = abi::remove_header(Map::RequestHeaders, "accept-encoding");
                Action::Continue
            }
            HeadVerdict::Admin => {
                self.mode = Mode::Admin;
                match end_of_stream {
                    // No body: answered now, on an empty one.
                    true => {
                        let answer = self.admin_body(0, true, &mut |_| Ok(Vec::new()));
                        self.answer(answer, Again::Admin, 0, true)
                    }
                    false => Action::Continue,
                }
            }
            HeadVerdict::Reply(reply) => self.reply(&reply, Stream::Request),
        }
    }

    /// `proxy_on_request_body` (`body_size`: everything buffered so far).
    pub fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if let Some(waiting) = self.waiting.as_mut() {
            // Held for the fleet store: what arrives meanwhile waits with the rest.
            waiting.size = body_size;
            waiting.end = end_of_stream;
            self.held.bytes = read_body(Buffer::RequestBody, 0, body_size).ok();
            return Action::Pause;
        }
        self.held.bytes = None;
        let action = match self.mode {
            Mode::Admin => self.request_again(Again::Admin, body_size, end_of_stream),
            _ => self.request_again(Again::Request, body_size, end_of_stream),
        };
        self.push_closures();
        action
    }

    /// A request body callback (made again once the fleet store answered what it waited for).
    fn request_again(&mut self, again: Again, body_size: usize, end_of_stream: bool) -> Action {
        let held = self.held.bytes.clone();
        let read = &mut |size| match &held {
            Some(bytes) => bytes
                .get(..size)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "the request body (held copy too short)".to_string()),
            None => read_body(Buffer::RequestBody, 0, size)
                .map_err(|code| format!("the request body (status {code})")),
        };
        match self.mode {
            Mode::Done | Mode::Stopped => Action::Pause,
            Mode::Admin => {
                let answer = self.admin_body(body_size, end_of_stream, read);
                self.answer(answer, again, body_size, end_of_stream)
            }
            Mode::Mcp => {
                let shared = Rc::clone(&self.shared);
                let mut shared = shared.borrow_mut();
                let Shared { engine, metrics } = &mut *shared;
                let caller = EnvoyCaller {
                    headers: &self.headers,
                };
                let mut out = EnvoyOutputs {
                    metrics,
                    published: &mut self.published,
                };
                let answer = engine.request_body_arrived(
                    &mut SharedData,
                    &mut out,
                    host::now_ms(),
                    &mut self.exchange,
                    &info(&self.headers, &caller),
                    body_size,
                    end_of_stream,
                    read,
                );
                drop(shared);
                self.answer(answer, again, body_size, end_of_stream)
            }
        }
    }

    /// `proxy_on_response_headers`.
    pub fn on_http_response_headers(&mut self, _end_of_stream: bool) -> Action {
        if self.mode == Mode::Stopped {
            return Action::Pause;
        }
        if self.mode != Mode::Mcp {
            return Action::Continue;
        }
        let headers = match (
            host::response_header("content-type"),
            host::response_header("content-encoding"),
        ) {
            (Ok(content_type), Ok(encoding)) => Some((content_type, encoding)),
            _ => None,
        };
        // An initialize answer names the session its declared capabilities belong to (the
        // `capabilities` view source); a header that cannot be read leaves that session's
        // view one that cannot be told.
        if self.exchange.awaits_session()
            && let Ok(Some(session)) = host::response_header("mcp-session-id")
        {
            let shared = self.shared.borrow();
            shared
                .engine
                .session_assigned(&mut SharedData, &mut self.exchange, &session);
        }
        let head = self.shared.borrow().engine.response_head_arrived(
            &mut self.exchange,
            headers
                .as_ref()
                .map(|(content_type, encoding)| (content_type.as_deref(), encoding.as_deref())),
        );
        self.plan = head.plan;
        // A JSON body to hold may declare its length, read before the header is removed; one
        // that cannot be read declares none (the body is scanned as it arrives).
        if self.exchange.wants_declared_length() {
            let length = host::response_header("content-length").ok().flatten();
            self.exchange.declare_length(length.as_deref());
        }
        // A header left in place when the body is replaced only makes the answer unreadable
        // (a wrong length or encoding): the unchecked bytes never leave either way.
        if head.remove_content_length {
            let _removed = abi::remove_header(Map::ResponseHeaders, "content-length");
        }
        if head.plain_json {
            let _removed = abi::remove_header(Map::ResponseHeaders, "content-encoding");
            let _set = abi::set_header(Map::ResponseHeaders, "content-type", "application/json");
        }
        Action::Continue
    }

    /// `proxy_on_response_body`.
    pub fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if let Some(waiting) = self.waiting.as_mut() {
            waiting.size = body_size;
            waiting.end = end_of_stream;
            self.held.bytes = read_body(Buffer::ResponseBody, 0, body_size).ok();
            return Action::Pause;
        }
        self.held.bytes = None;
        let action = self.response_again(body_size, end_of_stream);
        self.push_closures();
        action
    }

    /// A response body callback (made again once the fleet store answered what it waited
    /// for, with everything held since).
    fn response_again(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.mode == Mode::Stopped {
            return Action::Pause;
        }
        if self.mode != Mode::Mcp || self.plan == BodyPlan::Pass {
            return Action::Continue;
        }
        let held = self.held.bytes.clone();
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let verdict = engine.response_body(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            &mut self.exchange,
            body_size,
            end_of_stream,
            &mut |from| match &held {
                Some(bytes) => bytes.get(from..body_size).map(<[u8]>::to_vec),
                None => read_body(Buffer::ResponseBody, from, body_size).ok(),
            },
        );
        drop(shared);
        match verdict {
            BodyVerdict::Wait => Action::Pause,
            BodyVerdict::Fleet(call) => {
                self.hold_for(call, Again::Response, body_size, end_of_stream)
            }
            BodyVerdict::Forward => Action::Continue,
            BodyVerdict::PassRest => {
                self.plan = BodyPlan::Pass;
                Action::Continue
            }
            BodyVerdict::Reset => self.stop(Stream::Response),
            BodyVerdict::Replace(bytes) => {
                match abi::set_buffer(Buffer::ResponseBody, 0, body_size, &bytes) {
                    Ok(()) => Action::Continue,
                    // The original bytes must not leave in place of their replacement.
                    Err(_) => {
                        self.shared
                            .borrow_mut()
                            .engine
                            .response_stopped(&self.exchange);
                        self.stop(Stream::Response)
                    }
                }
            }
        }
    }

    /// `proxy_on_log`: the stream is over.
    pub fn on_log(&mut self) {
        // The stream is over (answered, reset or cut): checked calls it never answered wait
        // for a resumed stream of the same session (the engine decides which).
        self.shared
            .borrow_mut()
            .engine
            .exchange_end(&mut SharedData, &self.exchange);
    }

    /// An admin request's body callback (`read` hands its bytes over).
    fn admin_body(
        &mut self,
        size: usize,
        end_of_stream: bool,
        read: &mut ReadBody<'_>,
    ) -> BodyAnswer {
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let source = host::property(&["source", "address"]);
        let caller = EnvoyCaller {
            headers: &self.headers,
        };
        let request = AdminRequest {
            method: self.headers.get(":method").unwrap_or_default(),
            path: self.headers.get(":path").unwrap_or_default(),
            authorization: self.headers.get("authorization"),
            source: source.as_deref(),
            caller: &caller,
            body: &[],
        };
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        engine.admin_body_arrived(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            &mut self.exchange,
            &request,
            size,
            end_of_stream,
            read,
        )
    }

    /// Acts on the engine's answer to a request body callback.
    fn answer(&mut self, answer: BodyAnswer, again: Again, size: usize, end: bool) -> Action {
        match answer {
            BodyAnswer::Wait => Action::Pause,
            BodyAnswer::Forward => Action::Continue,
            BodyAnswer::Reply(reply) => self.reply(&reply, Stream::Request),
            BodyAnswer::Fleet(call) => self.hold_for(call, again, size, end),
        }
    }
}

/// The server id of a request, as `server_id` in the config says where it comes from.
fn server_id(config: &Config, headers: &Headers) -> Option<String> {
    match &config.server_id {
        ServerIdSource::Route => {
            host::property(&["xds", "route_name"]).or_else(|| host::property(&["route_name"]))
        }
        ServerIdSource::Cluster => {
            host::property(&["xds", "cluster_name"]).or_else(|| host::property(&["cluster_name"]))
        }
        ServerIdSource::Header(name) => headers.get(name).map(str::to_string),
    }
    .filter(|id| !id.is_empty() && id.len() <= 256)
}

/// The facts of a request the engine checks, from its headers.
fn info<'a>(headers: &'a Headers, caller: &'a EnvoyCaller<'a>) -> RequestInfo<'a> {
    let version = headers.get("mcp-protocol-version");
    RequestInfo {
        http_method: headers.get(":method").unwrap_or_default(),
        content_type: headers.get("content-type"),
        session: headers.get("mcp-session-id"),
        routing: RoutingHeaders {
            present: true,
            version,
            method: headers.get("mcp-method"),
            name: headers.get("mcp-name"),
            // Only the stateless revision's rules look at repeats.
            repeated: version.is_some_and(is_stateless) && headers.repeats_any(&ROUTING_HEADERS),
        },
        caller,
    }
}

/// The bytes `from..size` of a body buffer holding `size`, exactly: anything else (a failed
/// call, fewer bytes than the host announced) is a body the host could not hand over; the
/// error is the status.
fn read_body(buffer: Buffer, from: usize, size: usize) -> Result<Vec<u8>, u32> {
    let wanted = size.saturating_sub(from);
    match abi::get_buffer(buffer, from, wanted) {
        Ok(bytes) => {
            let bytes = bytes.unwrap_or_default();
            if bytes.len() == wanted {
                Ok(bytes)
            } else {
                Err(0)
            }
        }
        Err(abi::Status(code)) => Err(code),
    }
}
