//! Logging, time, stream control, local responses and the calls this host does not offer.
//!
//! Main design decision: outgoing calls (`proxy_http_call`, `proxy_grpc_*`,
//! `proxy_call_foreign_function`) answer [`Status::Unimplemented`] and are named in
//! [`VmState::unsupported_calls`](super::state::VmState::unsupported_calls): a replay has no
//! upstream clusters, and a policy plugin that needs one must say so loudly (the Rust SDK
//! panics on that status, and the trap report names the call).

use super::guest::{Guest, HostcallResult, finish, read_lossy, write_u32, write_u64};
use super::header_map::HeaderMap;
use super::state::{LocalResponse, LogEntry};
use super::types::{LogLevel, Status, StreamType};

/// `proxy_log(level, message, message_size)`: kept when at or above the host's level.
pub fn log(g: &mut impl Guest, level: u32, message_ptr: u32, message_len: u32) -> HostcallResult {
    finish((|| {
        let level = LogLevel::from_u32(level).ok_or(Status::BadArgument)?;
        let message = read_lossy(g, message_ptr, message_len)?;
        let vm = &mut g.host().vm;
        if level >= vm.log_level {
            vm.logs.push(LogEntry { level, message });
        }
        Ok(())
    })())
}

/// `proxy_get_log_level(*level)`.
pub fn get_log_level(g: &mut impl Guest, level_ptr: u32) -> HostcallResult {
    let level = g.host().vm.log_level.code();
    finish(write_u32(g, level_ptr, level))
}

/// `proxy_get_current_time_nanoseconds(*time)`: the runner's clock.
pub fn get_current_time_nanoseconds(g: &mut impl Guest, time_ptr: u32) -> HostcallResult {
    let now = g.host().vm.now_ns;
    finish(write_u64(g, time_ptr, now))
}

/// `proxy_set_tick_period_milliseconds(period)`.
pub fn set_tick_period_milliseconds(g: &mut impl Guest, period: u32) -> HostcallResult {
    g.host().vm.tick_period_ms = period;
    Ok(Status::Ok.code())
}

/// `proxy_continue_stream(stream)`: resumes a paused request or response.
pub fn continue_stream(g: &mut impl Guest, stream_type: u32) -> HostcallResult {
    finish((|| {
        let stream_type = StreamType::from_u32(stream_type).ok_or(Status::BadArgument)?;
        let stream = g.host().stream.as_mut().ok_or(Status::NotFound)?;
        stream.resumed.push(stream_type);
        Ok(())
    })())
}

/// `proxy_close_stream(stream)`: resets the exchange.
pub fn close_stream(g: &mut impl Guest, stream_type: u32) -> HostcallResult {
    finish((|| {
        let stream_type = StreamType::from_u32(stream_type).ok_or(Status::BadArgument)?;
        let stream = g.host().stream.as_mut().ok_or(Status::NotFound)?;
        stream.closed.push(stream_type);
        Ok(())
    })())
}

/// `proxy_send_local_response(status, details, details_size, body, body_size, headers,
/// headers_size, grpc_status)`: recorded; the runner stops the exchange after the callback.
#[allow(clippy::too_many_arguments)]
pub fn send_local_response(
    g: &mut impl Guest,
    status: u32,
    details: (u32, u32),
    body: (u32, u32),
    headers: (u32, u32),
    grpc_status: i32,
) -> HostcallResult {
    finish((|| {
        let details = read_lossy(g, details.0, details.1)?;
        let body = g.read(body.0, body.1)?;
        let header_bytes = g.read(headers.0, headers.1)?;
        let headers = HeaderMap::deserialize(&header_bytes).map_err(|_| Status::ParseFailure)?;
        let stream = g.host().stream.as_mut().ok_or(Status::BadArgument)?;
        stream.local_responses.push(LocalResponse {
            status,
            details,
            body,
            headers,
            grpc_status,
        });
        Ok(())
    })())
}

/// `proxy_done()`: the root context finished its shutdown work.
pub fn done(_g: &mut impl Guest) -> HostcallResult {
    Ok(Status::Ok.code())
}

/// `proxy_set_effective_context(context_id)`.
pub fn set_effective_context(g: &mut impl Guest, context_id: u32) -> HostcallResult {
    let vm = &mut g.host().vm;
    if !vm.live_contexts.contains(&context_id) {
        return Ok(Status::BadArgument.code());
    }
    vm.effective_context = context_id;
    Ok(Status::Ok.code())
}

/// `proxy_get_status(*code, *message, *message_size)`: only meaningful after gRPC calls,
/// which this host never makes.
pub fn get_status(
    _g: &mut impl Guest,
    _code_ptr: u32,
    _message_ptr_ptr: u32,
    _message_size_ptr: u32,
) -> HostcallResult {
    Ok(Status::NotFound.code())
}

/// An outgoing call this host does not offer: named, then refused.
pub fn unsupported(g: &mut impl Guest, name: &'static str) -> HostcallResult {
    g.host().vm.unsupported_calls.push(name);
    Ok(Status::Unimplemented.code())
}
