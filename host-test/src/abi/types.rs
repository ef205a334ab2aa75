//! The numeric vocabulary of the proxy-wasm ABI 0.2.1: statuses, map and buffer kinds,
//! log levels. Every value coming from the guest is a `u32` that may be out of range, so
//! each enum converts with `from_u32 -> Option`, never with a cast.

/// A hostcall result code, as the ABI numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    /// The call succeeded.
    Ok = 0,
    /// The key, map, buffer or queue does not exist.
    NotFound = 1,
    /// An argument is out of range or does not fit the current state.
    BadArgument = 2,
    /// A value could not be serialized for the guest.
    SerializationFailure = 3,
    /// Data from the guest could not be parsed.
    ParseFailure = 4,
    /// A guest pointer/length pair lies outside linear memory, or the guest allocator failed.
    InvalidMemoryAccess = 6,
    /// A queue is empty.
    Empty = 7,
    /// Compare-and-swap failed: the shared data changed since it was read.
    CasMismatch = 8,
    /// The host could not complete the call.
    InternalFailure = 10,
    /// The host does not offer this call (the replay host has no upstream clusters).
    Unimplemented = 12,
}

impl Status {
    /// The ABI code.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// Which header map a map hostcall addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// Request headers (with `:method`, `:path`, `:authority`, `:scheme`).
    RequestHeaders,
    /// Request trailers.
    RequestTrailers,
    /// Response headers (with `:status`).
    ResponseHeaders,
    /// Response trailers.
    ResponseTrailers,
    /// The headers of an HTTP callout's answer (read-only, during
    /// `proxy_on_http_call_response`).
    HttpCallResponseHeaders,
}

impl MapType {
    /// Decodes a guest value; gRPC maps and callout trailers are not offered (`None`).
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::RequestHeaders),
            1 => Some(Self::RequestTrailers),
            2 => Some(Self::ResponseHeaders),
            3 => Some(Self::ResponseTrailers),
            6 => Some(Self::HttpCallResponseHeaders),
            _ => None,
        }
    }
}

/// Which buffer a buffer hostcall addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferType {
    /// The buffered request body.
    RequestBody,
    /// The buffered response body.
    ResponseBody,
    /// The VM configuration (read-only).
    VmConfiguration,
    /// The plugin configuration (read-only).
    PluginConfiguration,
    /// The body of an HTTP callout's answer (read-only, during
    /// `proxy_on_http_call_response`).
    HttpCallResponseBody,
}

impl BufferType {
    /// Decodes a guest value; TCP, gRPC and call-data buffers are not offered.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::RequestBody),
            1 => Some(Self::ResponseBody),
            4 => Some(Self::HttpCallResponseBody),
            6 => Some(Self::VmConfiguration),
            7 => Some(Self::PluginConfiguration),
            _ => None,
        }
    }
}

/// A log level (`proxy_log`, `proxy_get_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// 0
    Trace,
    /// 1
    Debug,
    /// 2
    Info,
    /// 3
    Warn,
    /// 4
    Error,
    /// 5
    Critical,
}

impl LogLevel {
    /// Decodes a guest value.
    pub fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Trace,
            1 => Self::Debug,
            2 => Self::Info,
            3 => Self::Warn,
            4 => Self::Error,
            5 => Self::Critical,
            _ => return None,
        })
    }

    /// The ABI code.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Parses a level name as Envoy's `--log-level` spells it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "trace" => Self::Trace,
            "debug" => Self::Debug,
            "info" => Self::Info,
            "warn" | "warning" => Self::Warn,
            "error" => Self::Error,
            "critical" => Self::Critical,
            _ => return None,
        })
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
            Self::Critical => "critical",
        }
    }
}

/// The kind of a metric (`proxy_define_metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Monotonic counter.
    Counter,
    /// Value that goes up and down.
    Gauge,
    /// Distribution of recorded values.
    Histogram,
}

impl MetricType {
    /// Decodes a guest value.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Counter),
            1 => Some(Self::Gauge),
            2 => Some(Self::Histogram),
            _ => None,
        }
    }
}

/// The stream a `proxy_continue_stream` / `proxy_close_stream` call addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamType {
    /// The HTTP request (decoding) direction.
    Request,
    /// The HTTP response (encoding) direction.
    Response,
}

impl StreamType {
    /// Decodes a guest value; TCP streams (2, 3) are not offered.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Request),
            1 => Some(Self::Response),
            _ => None,
        }
    }
}

/// What a header or body callback returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Let the data through.
    Continue,
    /// Hold it (body: keep buffering; headers: stop the stream until resumed).
    Pause,
}

impl Action {
    /// Decodes a callback's return value; anything but 0 holds the stream, as in Envoy
    /// (1 = StopIteration, and the older stop-all codes).
    pub fn from_u32(v: u32) -> Self {
        if v == 0 { Self::Continue } else { Self::Pause }
    }
}
