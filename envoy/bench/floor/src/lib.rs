//! The floor of the Envoy benchmark (`envoy/bench`): a proxy-wasm HTTP filter that decides
//! nothing, so that the same run shows how much of toolseal's cost per request is the Wasm
//! filter itself (V8, the proxy-wasm ABI, the per-stream context) and how much is toolseal's
//! work.
//!
//! Main design decision: one module, two behaviours chosen by the plugin configuration, both
//! shaped like toolseal's own hostcall pattern for a request it lets through:
//! - `empty`: every callback returns `Continue` at once (the cost of having a Wasm HTTP
//!   context on the stream at all);
//! - `read`: what any filter that inspects MCP bodies must do at the least: read the request
//!   headers once, hold the request body until its end and read it, read the response content
//!   type, hold the response body until its end and read it. Nothing is parsed or decided.
//!
//! Any other configuration is refused at load (Envoy then refuses the listener).

// The contexts are only reached through the wasm entry point.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType};

/// What the filter does per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Every callback continues at once.
    Empty,
    /// Headers and whole bodies are read, nothing else.
    Read,
}

impl Behaviour {
    /// The behaviour a plugin configuration names (`empty` or `read`, surrounding blanks
    /// ignored).
    pub fn parse(config: &[u8]) -> Option<Self> {
        match std::str::from_utf8(config).ok()?.trim() {
            "empty" => Some(Behaviour::Empty),
            "read" => Some(Behaviour::Read),
            _ => None,
        }
    }
}

/// The module's entry point (`_initialize`): registers the root context.
#[cfg(target_arch = "wasm32")]
#[allow(missing_docs)]
mod entry {
    proxy_wasm::main! {{
        proxy_wasm::set_log_level(proxy_wasm::types::LogLevel::Warn);
        proxy_wasm::set_root_context(|_| -> Box<dyn proxy_wasm::traits::RootContext> {
            Box::new(super::Root { behaviour: super::Behaviour::Empty })
        });
    }}
}

struct Root {
    behaviour: Behaviour,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        let config = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten()
            .unwrap_or_default();
        match Behaviour::parse(&config) {
            Some(behaviour) => {
                self.behaviour = behaviour;
                true
            }
            None => {
                let _ = hostcalls::log(
                    LogLevel::Critical,
                    "bench floor: the configuration must be \"empty\" or \"read\"",
                );
                false
            }
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Stream {
            behaviour: self.behaviour,
            read: 0,
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Stream {
    behaviour: Behaviour,
    /// Bytes read so far (kept so the reads cannot be optimized away).
    read: usize,
}

impl Context for Stream {}

impl Stream {
    /// Holds a body until its end, then reads it whole.
    fn body(&mut self, buffer: BufferType, size: usize, end_of_stream: bool) -> Action {
        if self.behaviour == Behaviour::Empty {
            return Action::Continue;
        }
        if !end_of_stream {
            return Action::Pause;
        }
        let bytes = hostcalls::get_buffer(buffer, 0, size)
            .ok()
            .flatten()
            .unwrap_or_default();
        self.read = self.read.saturating_add(bytes.len());
        Action::Continue
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.behaviour == Behaviour::Read {
            let headers = hostcalls::get_map_bytes(MapType::HttpRequestHeaders).unwrap_or_default();
            self.read = self.read.saturating_add(headers.len());
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        self.body(BufferType::HttpRequestBody, body_size, end_of_stream)
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.behaviour == Behaviour::Read {
            let content_type =
                hostcalls::get_map_value_bytes(MapType::HttpResponseHeaders, "content-type")
                    .ok()
                    .flatten()
                    .unwrap_or_default();
            self.read = self.read.saturating_add(content_type.len());
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        self.body(BufferType::HttpResponseBody, body_size, end_of_stream)
    }
}
