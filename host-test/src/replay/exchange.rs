//! Drives one recorded HTTP exchange through the plugin the way Envoy's filter chain does.
//!
//! Main design decision: the body loop is Envoy's buffering model, written once for both
//! directions. Each chunk is appended to the buffered data; the callback sees the
//! cumulative size; `Continue` (or a `proxy_continue_stream` from the callback) forwards
//! the whole buffer as it stands (so a `set_buffer_bytes` replacement is what leaves) and
//! empties it; `Pause` keeps buffering; a pause at end of stream stalls the exchange. A
//! local response stops the exchange: in the request phase the upstream is never
//! contacted, in a response-body callback the stream is reset (its headers already left).
//! A callback that made a callout (the fleet store) holds its stream as Envoy does: the
//! runner's [`CalloutServer`] answers it through `proxy_on_http_call_response`, where the
//! plugin re-reads the body still buffered (whole) and resumes with
//! `proxy_continue_stream`, answers locally, or leaves the stream held.

use super::chunks;
use super::fleet_store::CalloutServer;
use crate::abi::header_map::HeaderMap;
use crate::abi::state::{LocalResponse, LogEntry, RequestInfo, StreamState};
use crate::abi::types::{Action, StreamType};
use crate::wasm::plugin_vm::PluginVm;
use anyhow::Result;
use serde_json::{Map, Value};
use std::sync::Arc;
use toolseal_core::transcript::HttpExchange;

/// Why an exchange ended before the client got the upstream's full answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The plugin answered locally.
    LocalResponse,
    /// The plugin closed the stream, or replied locally after response headers left.
    Reset,
    /// The plugin paused and never resumed: in Envoy the stream hangs until a timeout.
    Stalled(&'static str),
}

/// What one exchange produced.
#[derive(Debug, Clone, Default)]
pub struct ExchangeOutcome {
    /// The first local response the plugin sent, if any.
    pub local_response: Option<LocalResponse>,
    /// Whether the request reached the upstream (the plugin let it through entirely).
    pub upstream_contacted: bool,
    /// The request body as forwarded upstream.
    pub forwarded_request_body: Vec<u8>,
    /// Response headers as sent to the client (after the plugin's changes).
    pub response_headers: Option<HeaderMap>,
    /// Response body bytes the client received.
    pub response_body: Vec<u8>,
    /// Why the exchange stopped early, if it did.
    pub stop: Option<Stop>,
    /// What the plugin logged during the exchange.
    pub logs: Vec<LogEntry>,
    /// How many of `logs` the request phase logged (the rest: the response phase and the
    /// end of the stream).
    pub request_log_count: usize,
}

/// Per-exchange inputs besides the recording.
#[derive(Debug, Clone, Default)]
pub struct ExchangeSetup {
    /// Body chunk size (0 = whole bodies).
    pub chunk: usize,
    /// Dynamic metadata (namespace → struct) the plugin can read.
    pub dynamic_metadata: Map<String, Value>,
    /// Who answers the plugin's callouts, after every callback (`None`: nobody; a call
    /// stays in flight and a stream held for it stalls).
    pub callouts: Option<Arc<dyn CalloutServer>>,
}

#[derive(Clone, Copy)]
enum Phase {
    Request,
    Response,
}

impl Phase {
    fn headers_callback(self) -> &'static str {
        match self {
            Phase::Request => "proxy_on_request_headers",
            Phase::Response => "proxy_on_response_headers",
        }
    }
    fn body_callback(self) -> &'static str {
        match self {
            Phase::Request => "proxy_on_request_body",
            Phase::Response => "proxy_on_response_body",
        }
    }
    fn stream_type(self) -> StreamType {
        match self {
            Phase::Request => StreamType::Request,
            Phase::Response => StreamType::Response,
        }
    }
    fn body(self, stream: &mut StreamState) -> &mut Option<Vec<u8>> {
        match self {
            Phase::Request => &mut stream.request_body,
            Phase::Response => &mut stream.response_body,
        }
    }
}

/// Replays `exchange` through `vm` in a new HTTP context.
pub fn run(
    vm: &mut PluginVm,
    exchange: &HttpExchange,
    setup: &ExchangeSetup,
) -> Result<ExchangeOutcome> {
    let pending = begin(vm, exchange, setup)?;
    finish(vm, pending, exchange, setup)
}

/// An exchange whose request phase ran, its stream set aside until its response phase: a
/// worker may run other streams in between, as an Envoy worker does between callbacks.
#[derive(Debug)]
pub struct PendingExchange {
    context_id: u32,
    stream: Option<StreamState>,
    /// What the exchange produced so far: the request phase's logs, the request body
    /// forwarded, whether the upstream was contacted.
    pub outcome: ExchangeOutcome,
    /// Why the request phase ended the exchange, if it did (no response phase follows).
    ended: Option<Stop>,
}

/// Runs the request phase of `exchange` in a new HTTP context.
pub fn begin(
    vm: &mut PluginVm,
    exchange: &HttpExchange,
    setup: &ExchangeSetup,
) -> Result<PendingExchange> {
    let context_id = vm.create_http_context_with(|id| request_stream(id, exchange, setup))?;
    let mut outcome = ExchangeOutcome::default();
    let ended = request_phase(vm, context_id, exchange, setup, &mut outcome);
    outcome.logs = std::mem::take(&mut vm.host_mut().vm.logs);
    outcome.request_log_count = outcome.logs.len();
    outcome.local_response = first_local_response(vm);
    let stream = vm.host_mut().stream.take();
    let ended = ended?;
    match &ended {
        None => outcome.upstream_contacted = true,
        Some(stop) => outcome.stop = Some(stop.clone()),
    }
    Ok(PendingExchange {
        context_id,
        stream,
        outcome,
        ended,
    })
}

/// Runs the response phase of a pending exchange (unless its request phase ended it) and
/// ends its HTTP context.
pub fn finish(
    vm: &mut PluginVm,
    pending: PendingExchange,
    exchange: &HttpExchange,
    setup: &ExchangeSetup,
) -> Result<ExchangeOutcome> {
    let PendingExchange {
        context_id,
        stream,
        mut outcome,
        ended,
    } = pending;
    vm.host_mut().stream = stream;
    let result = match ended {
        Some(stop) => Ok(Some(stop)),
        None => response_phase(vm, context_id, exchange, setup, &mut outcome),
    };
    let finished = result.and_then(|stop| {
        outcome.stop = stop;
        vm.finish_http_context(context_id)
    });
    outcome.local_response = first_local_response(vm);
    outcome
        .logs
        .extend(std::mem::take(&mut vm.host_mut().vm.logs));
    vm.host_mut().stream = None;
    finished?;
    Ok(outcome)
}

/// Runs the request phase; returns why the exchange stopped there, if it did.
fn request_phase(
    vm: &mut PluginVm,
    ctx: u32,
    exchange: &HttpExchange,
    setup: &ExchangeSetup,
    outcome: &mut ExchangeOutcome,
) -> Result<Option<Stop>> {
    let request_chunks = chunks::split(&exchange.request_body, setup.chunk);
    let end = request_chunks.is_empty();
    if let Some(stop) = headers(vm, ctx, Phase::Request, end, setup)? {
        return Ok(Some(stop));
    }
    let (forwarded, stop) = body(vm, ctx, Phase::Request, &request_chunks, setup)?;
    outcome.forwarded_request_body = forwarded;
    Ok(stop)
}

/// Runs the response phase; returns why the exchange stopped early, if it did.
fn response_phase(
    vm: &mut PluginVm,
    ctx: u32,
    exchange: &HttpExchange,
    setup: &ExchangeSetup,
    outcome: &mut ExchangeOutcome,
) -> Result<Option<Stop>> {
    start_response(vm, exchange);
    let response_chunks = chunks::split(&exchange.response_body, setup.chunk);
    let stop = headers(vm, ctx, Phase::Response, response_chunks.is_empty(), setup)?;
    outcome.response_headers = vm
        .host()
        .stream
        .as_ref()
        .and_then(|s| s.response_headers.clone());
    if stop.is_some() {
        return Ok(stop);
    }
    let (delivered, stop) = body(vm, ctx, Phase::Response, &response_chunks, setup)?;
    outcome.response_body = delivered;
    // Response headers have left: a local reply can only reset the stream now.
    Ok(stop.map(|stop| {
        if stop == Stop::LocalResponse {
            Stop::Reset
        } else {
            stop
        }
    }))
}

fn first_local_response(vm: &PluginVm) -> Option<LocalResponse> {
    vm.host()
        .stream
        .as_ref()
        .and_then(|s| s.local_responses.first().cloned())
}

/// Runs a headers callback; returns why the exchange stops, if it does.
fn headers(
    vm: &mut PluginVm,
    ctx: u32,
    phase: Phase,
    end_of_stream: bool,
    setup: &ExchangeSetup,
) -> Result<Option<Stop>> {
    let count = with_stream(vm, |s| {
        s.resumed.clear();
        match phase {
            Phase::Request => s.request_headers.len(),
            Phase::Response => s.response_headers.as_ref().map_or(0, HeaderMap::len),
        }
    });
    let action = vm.http_callback(
        phase.headers_callback(),
        ctx,
        u32::try_from(count).unwrap_or(u32::MAX),
        end_of_stream,
    )?;
    wait_for_callouts(vm, setup)?;
    // Envoy turns a paused headers callback into stop-all: no body callback follows and the
    // stream hangs unless the plugin resumed it.
    Ok(match after_callback(vm, phase, action) {
        Ok(true) => None,
        Ok(false) => Some(Stop::Stalled(
            "the plugin paused in a headers callback and never resumed",
        )),
        Err(stop) => Some(stop),
    })
}

/// Runs the body callbacks over `chunks`; returns the bytes forwarded and why the exchange
/// stops, if it does.
fn body(
    vm: &mut PluginVm,
    ctx: u32,
    phase: Phase,
    chunks: &[&[u8]],
    setup: &ExchangeSetup,
) -> Result<(Vec<u8>, Option<Stop>)> {
    let mut forwarded = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let end_of_stream = i + 1 == chunks.len();
        let size = with_stream(vm, |s| {
            s.resumed.clear();
            let buffer = phase.body(s).get_or_insert_with(Vec::new);
            buffer.extend_from_slice(chunk);
            buffer.len()
        });
        let action = vm.http_callback(
            phase.body_callback(),
            ctx,
            u32::try_from(size).unwrap_or(u32::MAX),
            end_of_stream,
        )?;
        // What a callback lets through leaves at once, before any callout it made is
        // answered (Envoy does not wait for a call the plugin did not wait for).
        let flowed = after_callback(vm, phase, action);
        if flowed == Ok(true) {
            forwarded.extend(with_stream(vm, |s| phase.body(s).take()).unwrap_or_default());
        }
        wait_for_callouts(vm, setup)?;
        match after_callback(vm, phase, action) {
            Ok(true) if flowed != Ok(true) => {
                forwarded.extend(with_stream(vm, |s| phase.body(s).take()).unwrap_or_default())
            }
            Ok(_) => {}
            Err(stop) => return Ok((forwarded, Some(stop))),
        }
    }
    let held = with_stream(vm, |s| phase.body(s).take()).is_some();
    Ok((
        forwarded,
        held.then_some(Stop::Stalled(
            "the plugin paused at end of stream and never resumed",
        )),
    ))
}

/// The wait point after a callback: the runner's callout server answers what the plugin
/// sent (the answers may resume the stream, answer it locally, or leave it held).
fn wait_for_callouts(vm: &mut PluginVm, setup: &ExchangeSetup) -> Result<()> {
    match &setup.callouts {
        Some(server) if !vm.host().vm.callouts.pending.is_empty() => server.serve(vm),
        _ => Ok(()),
    }
}

/// Interprets a callback's result: `Err(stop)` ends the exchange, `Ok(true)` means the data
/// flows on, `Ok(false)` that it is held (only a body may be held without stalling).
fn after_callback(vm: &mut PluginVm, phase: Phase, action: Action) -> Result<bool, Stop> {
    let stream = vm.host().stream.as_ref();
    if stream.is_some_and(|s| !s.local_responses.is_empty()) {
        return Err(Stop::LocalResponse);
    }
    if stream.is_some_and(|s| !s.closed.is_empty()) {
        return Err(Stop::Reset);
    }
    let resumed = stream.is_some_and(|s| s.resumed.contains(&phase.stream_type()));
    Ok(action == Action::Continue || resumed)
}

fn with_stream<R: Default>(vm: &mut PluginVm, f: impl FnOnce(&mut StreamState) -> R) -> R {
    vm.host_mut().stream.as_mut().map(f).unwrap_or_default()
}

/// Headers a hop does not forward (Envoy's HTTP/1 codec consumes them).
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
];

/// The stream state at request start: Envoy's pseudo-headers, the recorded headers minus
/// hop-by-hop ones, and the `x-forwarded-proto` / `x-request-id` Envoy adds.
fn request_stream(context_id: u32, exchange: &HttpExchange, setup: &ExchangeSetup) -> StreamState {
    let host = exchange
        .request_header("host")
        .unwrap_or("localhost")
        .to_owned();
    let request_id = format!("00000000-0000-4000-8000-{context_id:012x}");
    let mut headers = HeaderMap::from_pairs([
        (":authority", host.as_str()),
        (":path", exchange.path.as_str()),
        (":method", exchange.http_method.as_str()),
        (":scheme", "http"),
    ]);
    for (name, value) in &exchange.request_headers {
        let lower = name.to_ascii_lowercase();
        if lower != "host" && !HOP_BY_HOP.contains(&lower.as_str()) {
            headers.add(name.as_bytes(), value.as_bytes());
        }
    }
    headers.add(b"x-forwarded-proto", b"http");
    headers.add(b"x-request-id", request_id.as_bytes());
    StreamState {
        context_id,
        request_headers: headers,
        request: RequestInfo {
            method: exchange.http_method.clone(),
            path: exchange.path.clone(),
            host,
            scheme: "http".into(),
            protocol: "HTTP/1.1".into(),
            id: request_id,
        },
        dynamic_metadata: setup.dynamic_metadata.clone(),
        ..StreamState::default()
    }
}

/// Enters the response phase: `:status` plus the recorded headers minus hop-by-hop ones.
fn start_response(vm: &mut PluginVm, exchange: &HttpExchange) {
    let status = exchange.status.to_string();
    let mut headers = HeaderMap::from_pairs([(":status", status.as_str())]);
    for (name, value) in &exchange.response_headers {
        if !HOP_BY_HOP.contains(&name.to_ascii_lowercase().as_str()) {
            headers.add(name.as_bytes(), value.as_bytes());
        }
    }
    with_stream(vm, |s| {
        s.response_headers = Some(headers);
        s.response_code = Some(u32::from(exchange.status));
    });
}
