//! The proxy-wasm root and HTTP contexts.
//!
//! Envoy specifics this mapping relies on (FIELD-NOTES): pausing in a headers callback stops
//! the body callbacks, so headers always continue and bodies pause until the end of stream;
//! `envoy.filters.http.buffer` after this filter keeps the router from opening an upstream
//! request before the plugin has decided; response headers leave before the body callbacks,
//! so `content-length` is removed whenever the body may be rewritten.

use crate::host::{self, EnvoyCaller, EnvoyOutputs, Headers, Metrics, SharedData};
use crate::telemetry::Published;
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType};
use std::cell::RefCell;
use std::rc::Rc;
use toolseal_core::admin::{AdminRequest, MAX_ADMIN_BODY};
use toolseal_core::config::{Config, ServerIdSource};
use toolseal_core::engine::{Engine, Exchange, LocalReply, RequestInfo, RequestVerdict};
use toolseal_core::response::{BodyPlan, ResponseState};
use toolseal_core::revision::{ROUTING_HEADERS, RoutingHeaders, is_stateless};

struct Shared {
    engine: Engine,
    metrics: Metrics,
}

/// The root context: holds the engine built from the plugin configuration.
#[derive(Default)]
pub struct Root {
    shared: Option<Rc<RefCell<Shared>>>,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        let bytes = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten()
            .unwrap_or_default();
        let config = match Config::parse(&bytes) {
            Ok(config) => config,
            Err(e) => {
                let _ = hostcalls::log(LogLevel::Critical, &format!("toolseal: {e}"));
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
        shared
            .engine
            .configure(&mut SharedData, &mut out, host::now_ms());
        self.shared = Some(Rc::new(RefCell::new(shared)));
        true
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        let shared = self.shared.clone()?;
        Some(Box::new(Http {
            shared,
            mode: Mode::Mcp,
            drop_rest: false,
            headers: Headers::default(),
            exchange: Exchange::default(),
            plan: BodyPlan::Pass,
            published: Published::default(),
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An MCP request: checked.
    Mcp,
    /// An admin API request: answered locally at the end of its body.
    Admin,
    /// Answered locally already: nothing more to do.
    Done,
}

struct Http {
    shared: Rc<RefCell<Shared>>,
    /// The response failed closed mid-stream: drop every later body chunk.
    drop_rest: bool,
    mode: Mode,
    headers: Headers,
    exchange: Exchange,
    plan: BodyPlan,
    /// What this stream's filter state holds (see `telemetry`).
    published: Published,
}

impl Context for Http {}

impl Http {
    fn reply(&mut self, reply: &LocalReply) -> Action {
        self.mode = Mode::Done;
        let headers = vec![
            ("content-type", reply.content_type),
            ("x-toolseal", "local"),
        ];
        let _ = hostcalls::send_http_response(u32::from(reply.status), headers, Some(&reply.body));
        Action::Pause
    }

    fn server_id(&self, config: &Config) -> Option<String> {
        match &config.server_id {
            ServerIdSource::Route => {
                host::property(&["xds", "route_name"]).or_else(|| host::property(&["route_name"]))
            }
            ServerIdSource::Cluster => host::property(&["xds", "cluster_name"])
                .or_else(|| host::property(&["cluster_name"])),
            ServerIdSource::Header(name) => self.headers.get(name).map(str::to_string),
        }
        .filter(|id| !id.is_empty() && id.len() <= 256)
    }

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
                repeated: version.is_some_and(is_stateless)
                    && headers.repeats_any(&ROUTING_HEADERS),
            },
            caller,
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        self.headers = host::request_headers();
        let path = self.headers.get(":path").unwrap_or_default().to_string();
        if shared.engine.is_admin_path(&path) {
            self.mode = Mode::Admin;
            if end_of_stream {
                return self.admin(&mut shared, &path, &[]);
            }
            return Action::Continue;
        }
        let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, "accept-encoding");
        let Some(server) = self.server_id(&shared.engine.config) else {
            let body = toolseal_core::jsonrpc::error_response(
                &serde_json::Value::Null,
                toolseal_core::jsonrpc::INTERNAL_ERROR,
                "toolseal: cannot tell which MCP server this request is for (check server_id in the plugin config)",
            );
            return self.reply(&LocalReply::json(503, &body));
        };
        self.exchange = Exchange::new(&server, self.headers.get("mcp-session-id"));
        let caller = EnvoyCaller {
            headers: &self.headers,
        };
        let info = Self::info(&self.headers, &caller);
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let verdict = engine.request_headers(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            &mut self.exchange,
            &info,
        );
        if let RequestVerdict::Reply(reply) = verdict {
            return self.reply(&reply);
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.mode == Mode::Done {
            return Action::Pause;
        }
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        if body_size > shared.engine.config.limits.max_request_bytes && self.mode == Mode::Mcp {
            let Shared { engine, metrics } = &mut *shared;
            let mut out = EnvoyOutputs {
                metrics,
                published: &mut self.published,
            };
            let reply =
                engine.request_too_large(&mut SharedData, &mut out, host::now_ms(), &self.exchange);
            return self.reply(&reply);
        }
        // An admin body over the cap is answered at once: the engine refuses (and audits) it
        // by its length, so only one byte more than the cap is read.
        let admin_too_large = self.mode == Mode::Admin && body_size > MAX_ADMIN_BODY;
        if !end_of_stream && !admin_too_large {
            return Action::Pause;
        }
        let read = if admin_too_large {
            MAX_ADMIN_BODY + 1
        } else {
            body_size
        };
        let body = hostcalls::get_buffer(BufferType::HttpRequestBody, 0, read)
            .ok()
            .flatten()
            .unwrap_or_default();
        if self.mode == Mode::Admin {
            let path = self.headers.get(":path").unwrap_or_default().to_string();
            return self.admin(&mut shared, &path, &body);
        }
        // Moved out and back rather than cloned: `info` borrows the headers while the engine
        // borrows the exchange.
        let headers = std::mem::take(&mut self.headers);
        let caller = EnvoyCaller { headers: &headers };
        let info = Self::info(&headers, &caller);
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let verdict = engine.request_body(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            &mut self.exchange,
            &info,
            &body,
        );
        self.headers = headers;
        match verdict {
            RequestVerdict::Forward => Action::Continue,
            RequestVerdict::Reply(reply) => self.reply(&reply),
        }
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.mode != Mode::Mcp {
            return Action::Continue;
        }
        let shared = self.shared.borrow();
        let content_type = host::response_header("content-type");
        let encoding = host::response_header("content-encoding");
        self.plan = shared.engine.response_headers(
            &mut self.exchange,
            content_type.as_deref(),
            encoding.as_deref(),
        );
        if self.plan != BodyPlan::Pass {
            let _ = hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-length");
        }
        if matches!(self.exchange.response, ResponseState::Unreadable(_)) {
            // The body will be replaced by a plain JSON-RPC error (fail closed): say so in the
            // headers, or a client inflating "gzip" or reading SSE cannot read the error.
            let _ = hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-encoding");
            let _ = hostcalls::set_map_value(
                MapType::HttpResponseHeaders,
                "content-type",
                Some("application/json"),
            );
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.mode != Mode::Mcp || self.plan == BodyPlan::Pass {
            return Action::Continue;
        }
        if self.drop_rest {
            // A body that failed closed: nothing more of it reaches the client.
            let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &[]);
            return Action::Continue;
        }
        let limit = self.shared.borrow().engine.config.limits.max_response_bytes;
        if self.plan == BodyPlan::Buffer && !end_of_stream && body_size <= limit {
            return Action::Pause;
        }
        let chunk = hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size)
            .ok()
            .flatten()
            .unwrap_or_default();
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let now = host::now_ms();
        let replacement = match self.plan {
            BodyPlan::Buffer => {
                engine.response_json(&mut SharedData, &mut out, now, &mut self.exchange, &chunk)
            }
            _ => engine.response_sse(
                &mut SharedData,
                &mut out,
                now,
                &mut self.exchange,
                &chunk,
                end_of_stream,
            ),
        };
        let oversized = self.plan == BodyPlan::Buffer && !end_of_stream;
        match replacement {
            // Over `limits.max_response_bytes` before its end: answer now and drop the rest,
            // before Envoy's own buffer limit resets the stream and leaves the client waiting.
            Some(bytes) => {
                let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &bytes);
                self.drop_rest = oversized;
            }
            // Nothing that must be read: stop buffering and let the body flow.
            None if oversized => self.plan = BodyPlan::Pass,
            None => {}
        }
        Action::Continue
    }

    fn on_log(&mut self) {
        // The stream is over (answered, reset or cut): checked calls it never answered wait
        // for a resumed stream of the same session (core `resume`).
        if self.mode != Mode::Mcp || self.exchange.pending_calls.is_empty() {
            return;
        }
        self.shared
            .borrow_mut()
            .engine
            .exchange_end(&mut SharedData, &self.exchange);
    }
}

impl Http {
    fn admin(&mut self, shared: &mut Shared, path: &str, body: &[u8]) -> Action {
        // Moved out and back: the request borrows the headers while the reply needs `self`.
        let headers = std::mem::take(&mut self.headers);
        let source = host::property(&["source", "address"]);
        let caller = EnvoyCaller { headers: &headers };
        let request = AdminRequest {
            method: headers.get(":method").unwrap_or_default(),
            path,
            authorization: headers.get("authorization"),
            source: source.as_deref(),
            caller: &caller,
            body,
        };
        let Shared { engine, metrics } = shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let reply = engine.admin(&mut SharedData, &mut out, host::now_ms(), &request);
        self.headers = headers;
        self.reply(&reply)
    }
}
