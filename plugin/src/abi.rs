//! The proxy-wasm hostcalls this filter makes, as raw ABI calls that hand back the host's
//! status.
//!
//! Main design decision: the SDK's `hostcalls` wrappers panic on any status they do not
//! expect, and a panic kills the Envoy worker's VM. A host that fails a call (or answers a
//! status the SDK never saw) must instead reach the filter as a value it can fail closed on,
//! so every call the filter makes goes through this module and returns `Result<_, Status>`
//! with the raw status code. `NotFound` (an absent key, header, property or buffer) is an
//! answer, not a failure: getters return `Ok(None)` for it.

use std::ptr::{null, null_mut};

/// A status code other than `Ok` (`NotFound` where it is an answer is not an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u32);

impl Status {
    /// Compare-and-swap failed: the shared data changed since it was read.
    pub const CAS_MISMATCH: Status = Status(8);
}

const OK: u32 = 0;
const NOT_FOUND: u32 = 1;

/// Buffer kinds (`proxy_get_buffer_bytes`).
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub enum Buffer {
    /// The request body buffered so far.
    RequestBody = 0,
    /// The response body buffered so far.
    ResponseBody = 1,
    /// The body of an HTTP callout's answer (during `proxy_on_http_call_response`).
    HttpCallResponseBody = 4,
    /// The plugin configuration (during `proxy_on_configure`).
    PluginConfiguration = 7,
}

/// Header maps.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::enum_variant_names)]
#[repr(u32)]
pub enum Map {
    /// Request headers.
    RequestHeaders = 0,
    /// Response headers.
    ResponseHeaders = 2,
    /// The headers of an HTTP callout's answer (during `proxy_on_http_call_response`).
    HttpCallResponseHeaders = 6,
}

/// Stream directions (`proxy_close_stream`).
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub enum Stream {
    /// The request (downstream side of the HTTP stream).
    Request = 0,
    /// The response.
    Response = 1,
}

/// Log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum Level {
    /// Debug (decision records).
    Debug = 1,
    /// Info (audit events).
    Info = 2,
    /// Critical (a refused configuration).
    Critical = 5,
}

#[link(wasm_import_module = "env")]
#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    fn proxy_log(level: u32, message_data: *const u8, message_size: usize) -> u32;
    fn proxy_get_log_level(return_level: *mut u32) -> u32;
    fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;
    fn proxy_get_buffer_bytes(
        buffer_type: u32,
        start: usize,
        max_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_set_buffer_bytes(
        buffer_type: u32,
        start: usize,
        size: usize,
        data: *const u8,
        data_size: usize,
    ) -> u32;
    fn proxy_get_header_map_pairs(
        map_type: u32,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_get_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_replace_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_remove_header_map_value(map_type: u32, key_data: *const u8, key_size: usize) -> u32;
    fn proxy_get_property(
        path_data: *const u8,
        path_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_get_shared_data(
        key_data: *const u8,
        key_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
        return_cas: *mut u32,
    ) -> u32;
    fn proxy_set_shared_data(
        key_data: *const u8,
        key_size: usize,
        value_data: *const u8,
        value_size: usize,
        cas: u32,
    ) -> u32;
    fn proxy_send_local_response(
        status_code: u32,
        details_data: *const u8,
        details_size: usize,
        body_data: *const u8,
        body_size: usize,
        headers_data: *const u8,
        headers_size: usize,
        grpc_status: i32,
    ) -> u32;
    fn proxy_close_stream(stream_type: u32) -> u32;
    fn proxy_continue_stream(stream_type: u32) -> u32;
    fn proxy_set_effective_context(context_id: u32) -> u32;
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
    #[allow(clippy::too_many_arguments)]
    fn proxy_http_call(
        upstream_data: *const u8,
        upstream_size: usize,
        headers_data: *const u8,
        headers_size: usize,
        body_data: *const u8,
        body_size: usize,
        trailers_data: *const u8,
        trailers_size: usize,
        timeout_milliseconds: u32,
        return_token: *mut u32,
    ) -> u32;
    fn proxy_define_metric(
        metric_type: u32,
        name_data: *const u8,
        name_size: usize,
        return_id: *mut u32,
    ) -> u32;
    fn proxy_increment_metric(metric_id: u32, offset: i64) -> u32;
}

fn check(status: u32) -> Result<(), Status> {
    match status {
        OK => Ok(()),
        other => Err(Status(other)),
    }
}

/// Takes ownership of a block the host wrote through the guest allocator.
///
/// # Safety
/// `data` must be null or point to `size` bytes the host obtained from
/// `proxy_on_memory_allocate(size)`, which the SDK serves from this module's global
/// allocator with a capacity of exactly `size`.
unsafe fn host_bytes(data: *mut u8, size: usize) -> Vec<u8> {
    if data.is_null() {
        return Vec::new();
    }
    // SAFETY: guaranteed by the caller (ownership passes to us, as in the SDK's getters).
    unsafe { Vec::from_raw_parts(data, size, size) }
}

/// A getter's outcome: the bytes the host wrote, `None` for `NotFound`, or the failure.
fn answer(status: u32, data: *mut u8, size: usize) -> Result<Option<Vec<u8>>, Status> {
    match status {
        // SAFETY: on `Ok` the host wrote `size` bytes at `data` from the guest allocator.
        OK => Ok(Some(unsafe { host_bytes(data, size) })),
        NOT_FOUND => Ok(None),
        other => Err(Status(other)),
    }
}

/// Writes `message` to the host log at `level`.
pub fn log(level: Level, message: &str) -> Result<(), Status> {
    // SAFETY: the pointer and length come from a live `&str`, only read during the call.
    check(unsafe { proxy_log(level as u32, message.as_ptr(), message.len()) })
}

/// The host's log level (its raw number: 0 trace … 5 critical).
pub fn log_level() -> Result<u32, Status> {
    let mut level = 0;
    // SAFETY: the out-pointer points to a live local.
    check(unsafe { proxy_get_log_level(&mut level) })?;
    Ok(level)
}

/// The host clock in nanoseconds since the Unix epoch.
pub fn now_ns() -> Result<u64, Status> {
    let mut now = 0;
    // SAFETY: the out-pointer points to a live local.
    check(unsafe { proxy_get_current_time_nanoseconds(&mut now) })?;
    Ok(now)
}

/// Up to `max` bytes of `buffer` from `start`.
pub fn get_buffer(buffer: Buffer, start: usize, max: usize) -> Result<Option<Vec<u8>>, Status> {
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: both out-pointers point to live locals.
    let status = unsafe { proxy_get_buffer_bytes(buffer as u32, start, max, &mut data, &mut size) };
    answer(status, data, size)
}

/// Replaces `size` bytes of `buffer` from `start` with `bytes`.
pub fn set_buffer(buffer: Buffer, start: usize, size: usize, bytes: &[u8]) -> Result<(), Status> {
    // SAFETY: the pointer and length come from a live slice, only read during the call.
    check(unsafe {
        proxy_set_buffer_bytes(buffer as u32, start, size, bytes.as_ptr(), bytes.len())
    })
}

/// A whole header map in the pair format (see [`crate::pairs`]).
pub fn header_pairs(map: Map) -> Result<Vec<u8>, Status> {
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: both out-pointers point to live locals.
    let status = unsafe { proxy_get_header_map_pairs(map as u32, &mut data, &mut size) };
    answer(status, data, size).map(Option::unwrap_or_default)
}

/// The first value of header `name`.
pub fn header(map: Map, name: &str) -> Result<Option<Vec<u8>>, Status> {
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: the key comes from a live `&str`; both out-pointers point to live locals.
    let status = unsafe {
        proxy_get_header_map_value(map as u32, name.as_ptr(), name.len(), &mut data, &mut size)
    };
    answer(status, data, size)
}

/// Sets header `name` to `value` (replacing any value it had).
pub fn set_header(map: Map, name: &str, value: &str) -> Result<(), Status> {
    // SAFETY: both pointers come from live `&str`s, only read during the call.
    check(unsafe {
        proxy_replace_header_map_value(
            map as u32,
            name.as_ptr(),
            name.len(),
            value.as_ptr(),
            value.len(),
        )
    })
}

/// Removes header `name`.
pub fn remove_header(map: Map, name: &str) -> Result<(), Status> {
    // SAFETY: the key comes from a live `&str`, only read during the call.
    check(unsafe { proxy_remove_header_map_value(map as u32, name.as_ptr(), name.len()) })
}

/// The property at `path` (its parts joined with NUL, as the ABI serializes a path).
pub fn property(path: &[&str]) -> Result<Option<Vec<u8>>, Status> {
    let serialized = path.join("\0");
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: the path comes from a live `String`; both out-pointers point to live locals.
    let status =
        unsafe { proxy_get_property(serialized.as_ptr(), serialized.len(), &mut data, &mut size) };
    answer(status, data, size)
}

/// The shared-data value of `key` and its CAS token.
pub fn shared_data(key: &str) -> Result<Option<(Vec<u8>, u32)>, Status> {
    let (mut data, mut size, mut cas) = (null_mut(), 0, 0);
    // SAFETY: the key comes from a live `&str`; the out-pointers point to live locals.
    let status =
        unsafe { proxy_get_shared_data(key.as_ptr(), key.len(), &mut data, &mut size, &mut cas) };
    Ok(answer(status, data, size)?.map(|bytes| (bytes, cas)))
}

/// Writes `value` under `key` if its CAS token is still `cas` (0: unconditionally).
pub fn set_shared_data(key: &str, value: &[u8], cas: u32) -> Result<(), Status> {
    // SAFETY: both pointers come from live slices, only read during the call.
    check(unsafe {
        proxy_set_shared_data(key.as_ptr(), key.len(), value.as_ptr(), value.len(), cas)
    })
}

/// Answers the stream locally with `status`, `headers` and `body`.
pub fn send_local_response(
    status: u32,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<(), Status> {
    let headers = crate::pairs::serialize(headers);
    // SAFETY: every pointer comes from a live slice, only read during the call.
    check(unsafe {
        proxy_send_local_response(
            status,
            null(),
            0,
            body.as_ptr(),
            body.len(),
            headers.as_ptr(),
            headers.len(),
            -1,
        )
    })
}

/// Resets one direction of the HTTP stream.
pub fn close_stream(stream: Stream) -> Result<(), Status> {
    // SAFETY: no pointers.
    check(unsafe { proxy_close_stream(stream as u32) })
}

/// Defines a counter called `name`; returns its id.
pub fn define_counter(name: &str) -> Result<u32, Status> {
    let mut id = 0;
    // SAFETY: the name comes from a live `&str`; the out-pointer points to a live local.
    check(unsafe { proxy_define_metric(0, name.as_ptr(), name.len(), &mut id) })?;
    Ok(id)
}

/// Adds `offset` to metric `id`.
pub fn increment(id: u32, offset: i64) -> Result<(), Status> {
    // SAFETY: no pointers.
    check(unsafe { proxy_increment_metric(id, offset) })
}

/// Lets a paused direction of the HTTP stream go on.
pub fn continue_stream(stream: Stream) -> Result<(), Status> {
    // SAFETY: no pointers.
    check(unsafe { proxy_continue_stream(stream as u32) })
}

/// Asks the host to call `proxy_on_tick` every `period_ms` (0: never).
pub fn set_tick_period(period_ms: u32) -> Result<(), Status> {
    // SAFETY: no pointers.
    check(unsafe { proxy_set_tick_period_milliseconds(period_ms) })
}

/// Sends an HTTP request to `cluster` (an upstream the host knows); the answer arrives in
/// `proxy_on_http_call_response` with the token returned here.
pub fn http_call(
    cluster: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout_ms: u32,
) -> Result<u32, Status> {
    let headers = crate::pairs::serialize(headers);
    let trailers = crate::pairs::serialize(&[]);
    let mut token = 0;
    // SAFETY: every pointer comes from a live slice, only read during the call; the
    // out-pointer points to a live local.
    check(unsafe {
        proxy_http_call(
            cluster.as_ptr(),
            cluster.len(),
            headers.as_ptr(),
            headers.len(),
            body.as_ptr(),
            body.len(),
            trailers.as_ptr(),
            trailers.len(),
            timeout_ms,
            &mut token,
        )
    })?;
    Ok(token)
}

/// Makes `context_id` the context the next hostcalls act on (an HTTP callout's answer arrives
/// on the root context that sent it, whatever stream asked for it).
pub fn set_effective_context(context_id: u32) -> Result<(), Status> {
    // SAFETY: no pointers.
    check(unsafe { proxy_set_effective_context(context_id) })
}
