//! Everything the host knows, held in the wasmtime `Store` data: one [`HostState`] per
//! replay run, no globals, so two runs (or two tests) never share a shared-data key.
//!
//! Main design decision: state is split by lifetime. [`VmState`] lives as long as the VM
//! (logs, clock, shared data, metrics, queues, configuration); [`StreamState`] lives for one
//! HTTP exchange and is `None` between exchanges, so a hostcall that needs a stream outside
//! one gets a status, not stale data.

use super::buffers::ConfigPhase;
use super::faults::HostcallLog;
use super::header_map::HeaderMap;
use super::http_call::Callouts;
use super::metrics::Metrics;
use super::shared::SharedQueues;
use super::shared_store::SharedStore;
use super::types::{LogLevel, StreamType};
use std::collections::BTreeMap;

/// The store data of one plugin VM.
#[derive(Debug, Default)]
pub struct HostState {
    /// State that outlives exchanges.
    pub vm: VmState,
    /// The HTTP exchange in progress, if any.
    pub stream: Option<StreamState>,
}

/// One message the plugin logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Its level.
    pub level: LogLevel,
    /// Its text (invalid UTF-8 replaced).
    pub message: String,
}

/// Names the host answers for `route_name`, `cluster_name` and the `plugin_*` properties.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// Envoy route name (`route_name`, `xds.route_name`).
    pub route_name: String,
    /// Upstream cluster name (`cluster_name`, `xds.cluster_name`).
    pub cluster_name: String,
    /// `plugin_name`.
    pub plugin_name: String,
    /// `plugin_root_id`.
    pub root_id: String,
    /// `plugin_vm_id`.
    pub vm_id: String,
}

/// State that lives as long as the VM.
#[derive(Debug)]
pub struct VmState {
    /// The level the host reports and filters logs with.
    pub log_level: LogLevel,
    /// Messages logged at or above `log_level`, drained by the runner.
    pub logs: Vec<LogEntry>,
    /// The runner's clock, nanoseconds since the Unix epoch.
    pub now_ns: u64,
    /// `proxy_on_vm_start` configuration bytes.
    pub vm_configuration: Vec<u8>,
    /// `proxy_on_configure` configuration bytes.
    pub plugin_configuration: Vec<u8>,
    /// Route, cluster and plugin names.
    pub identity: Identity,
    /// `proxy_get/set_shared_data`: this VM's handle on a store other worker VMs may share.
    pub shared_data: SharedStore,
    /// Shared queues.
    pub queues: SharedQueues,
    /// `proxy_define_metric` and friends.
    pub metrics: Metrics,
    /// Last `proxy_set_tick_period_milliseconds` (0 = no tick).
    pub tick_period_ms: u32,
    /// What the guest wrote to WASI fd 1.
    pub stdout: Vec<u8>,
    /// What the guest wrote to WASI fd 2 (a Rust panic message lands here).
    pub stderr: Vec<u8>,
    /// State of the deterministic `random_get` generator.
    pub random_state: u64,
    /// Hostcalls the guest made that this host does not offer (named in trap reports).
    pub unsupported_calls: Vec<&'static str>,
    /// Context ids that exist (root and live HTTP contexts).
    pub live_contexts: Vec<u32>,
    /// `proxy_set_effective_context` target.
    pub effective_context: u32,
    /// Which configuration buffer the current callback may read.
    pub config_phase: ConfigPhase,
    /// Hostcalls made (counted by name) and the faults to inject into them.
    pub hostcalls: HostcallLog,
    /// `proxy_http_call`: the cluster served, the calls in flight, the answer being read.
    pub callouts: Callouts,
}

impl Default for VmState {
    fn default() -> Self {
        VmState {
            log_level: LogLevel::Info,
            logs: Vec::new(),
            now_ns: DEFAULT_EPOCH_NS,
            vm_configuration: Vec::new(),
            plugin_configuration: Vec::new(),
            identity: Identity::default(),
            shared_data: SharedStore::default(),
            queues: SharedQueues::default(),
            metrics: Metrics::default(),
            tick_period_ms: 0,
            stdout: Vec::new(),
            stderr: Vec::new(),
            random_state: RANDOM_SEED,
            unsupported_calls: Vec::new(),
            live_contexts: Vec::new(),
            effective_context: 0,
            config_phase: ConfigPhase::None,
            hostcalls: HostcallLog::default(),
            callouts: Callouts::default(),
        }
    }
}

/// Where the runner's clock starts: 2026-01-01T00:00:00Z.
pub const DEFAULT_EPOCH_NS: u64 = 1_767_225_600 * 1_000_000_000;

/// Seed of `random_get` (fixed so that replays are reproducible).
const RANDOM_SEED: u64 = 0x746f_6f6c_7365_616c;

impl VmState {
    /// Fills `out` with the next deterministic pseudo-random bytes (SplitMix64).
    pub fn fill_random(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.random_state = self.random_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.random_state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let bytes = z.to_le_bytes();
            for (dst, src) in chunk.iter_mut().zip(bytes) {
                *dst = src;
            }
        }
    }
}

/// Request facts the host answers as `request.*` properties.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    /// `request.method`.
    pub method: String,
    /// `request.path` (with query).
    pub path: String,
    /// `request.host`.
    pub host: String,
    /// `request.scheme`.
    pub scheme: String,
    /// `request.protocol`, e.g. `HTTP/1.1`.
    pub protocol: String,
    /// `request.id` (the `x-request-id` the host generated).
    pub id: String,
}

/// A local response the plugin sent (`proxy_send_local_response`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalResponse {
    /// HTTP status.
    pub status: u32,
    /// `status_code_details`.
    pub details: String,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Extra headers.
    pub headers: HeaderMap,
    /// gRPC status (-1 when none).
    pub grpc_status: i32,
}

/// State of one HTTP exchange.
#[derive(Debug, Clone, Default)]
pub struct StreamState {
    /// The HTTP context id.
    pub context_id: u32,
    /// Request headers (pseudo-headers included).
    pub request_headers: HeaderMap,
    /// Request trailers, when the request has any.
    pub request_trailers: Option<HeaderMap>,
    /// Response headers, once the response phase started.
    pub response_headers: Option<HeaderMap>,
    /// Response trailers, when the response has any.
    pub response_trailers: Option<HeaderMap>,
    /// The request body buffered so far, while a request-body callback runs.
    pub request_body: Option<Vec<u8>>,
    /// The response body buffered so far, while a response-body callback runs.
    pub response_body: Option<Vec<u8>>,
    /// `request.*` facts.
    pub request: RequestInfo,
    /// `response.code`, once the response phase started.
    pub response_code: Option<u32>,
    /// Values the plugin stored with `proxy_set_property`, by serialized path.
    pub filter_state: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Envoy dynamic metadata, answered at `metadata.filter_metadata.<ns>...`: a JSON object
    /// of namespaces.
    pub dynamic_metadata: serde_json::Map<String, serde_json::Value>,
    /// Local responses sent, in order (Envoy acts on the first).
    pub local_responses: Vec<LocalResponse>,
    /// `proxy_continue_stream` calls seen during the current callback.
    pub resumed: Vec<StreamType>,
    /// `proxy_close_stream` calls seen.
    pub closed: Vec<StreamType>,
}
