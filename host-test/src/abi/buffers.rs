//! Body and configuration buffers. Reads are clamped to the data (Envoy semantics: asking
//! past the end returns what is there, possibly nothing). Writes follow Envoy's
//! `Buffer::copyFrom`: at offset 0 drain `size` bytes then prepend the data (so
//! `set(0, len, data)` replaces the whole body), at or past the end append, anywhere else
//! refuse. Configuration buffers and a callout's answer are read-only and only visible during the callback that
//! receives them (`proxy_on_vm_start`, `proxy_on_configure`), as in Envoy.

use super::guest::{Fail, Guest, HostcallResult, finish, return_bytes};
use super::state::HostState;
use super::types::{BufferType, Status};

/// Which configuration buffer, if any, is visible right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ConfigPhase {
    /// Neither.
    #[default]
    None,
    /// The VM configuration (`proxy_on_vm_start`).
    VmStart,
    /// The plugin configuration (`proxy_on_configure`).
    Configure,
}

/// The bytes of buffer `buffer_type`, if it exists now.
fn buffer_ref(state: &HostState, buffer_type: BufferType) -> Option<&[u8]> {
    // Envoy hands a stream's body over only during a body callback, not while a callout's
    // answer is delivered (measured on Envoy 1.40): a plugin must keep what it needs.
    let delivering = state.vm.callouts.delivering.is_some();
    let stream = state.stream.as_ref().filter(|_| !delivering);
    match buffer_type {
        BufferType::RequestBody => stream.and_then(|s| s.request_body.as_deref()),
        BufferType::ResponseBody => stream.and_then(|s| s.response_body.as_deref()),
        BufferType::VmConfiguration => (state.vm.config_phase == ConfigPhase::VmStart)
            .then_some(state.vm.vm_configuration.as_slice()),
        BufferType::PluginConfiguration => (state.vm.config_phase == ConfigPhase::Configure)
            .then_some(state.vm.plugin_configuration.as_slice()),
        BufferType::HttpCallResponseBody => state.vm.callouts.answer_body(),
    }
}

/// `proxy_get_buffer_bytes(type, start, max_size, *data, *size)`.
pub fn get_buffer_bytes(
    g: &mut impl Guest,
    buffer_type: u32,
    start: u32,
    max_size: u32,
    data_ptr_ptr: u32,
    size_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let buffer_type = BufferType::from_u32(buffer_type).ok_or(Status::BadArgument)?;
        start.checked_add(max_size).ok_or(Status::BadArgument)?;
        let data = buffer_ref(g.host(), buffer_type).ok_or(Status::NotFound)?;
        let start = usize::try_from(start).map_err(|_| Status::BadArgument)?;
        let max = usize::try_from(max_size).map_err(|_| Status::BadArgument)?;
        let slice = data.get(start..).unwrap_or_default();
        let slice = slice
            .get(..max.min(slice.len()))
            .unwrap_or_default()
            .to_vec();
        if slice.is_empty() {
            return Ok(());
        }
        return_bytes(g, &slice, data_ptr_ptr, size_ptr)
    })())
}

/// `proxy_set_buffer_bytes(type, start, size, data, data_size)`.
pub fn set_buffer_bytes(
    g: &mut impl Guest,
    buffer_type: u32,
    start: u32,
    size: u32,
    data_ptr: u32,
    data_len: u32,
) -> HostcallResult {
    finish((|| {
        let buffer_type = BufferType::from_u32(buffer_type).ok_or(Status::BadArgument)?;
        let data = g.read(data_ptr, data_len)?;
        let state = g.host();
        let body = match buffer_type {
            BufferType::VmConfiguration
            | BufferType::PluginConfiguration
            | BufferType::HttpCallResponseBody => {
                return Err(Fail::Status(Status::BadArgument));
            }
            BufferType::RequestBody => state.stream.as_mut().and_then(|s| s.request_body.as_mut()),
            BufferType::ResponseBody => {
                state.stream.as_mut().and_then(|s| s.response_body.as_mut())
            }
        };
        let body = body.ok_or(Status::NotFound)?;
        copy_from(body, start, size, &data).map_err(Fail::Status)
    })())
}

/// Envoy's `Buffer::copyFrom` on an owned body.
pub fn copy_from(body: &mut Vec<u8>, start: u32, size: u32, data: &[u8]) -> Result<(), Status> {
    let start = usize::try_from(start).map_err(|_| Status::BadArgument)?;
    let size = usize::try_from(size).map_err(|_| Status::BadArgument)?;
    if start == 0 {
        let drained = size.min(body.len());
        body.splice(..drained, data.iter().copied());
        Ok(())
    } else if start >= body.len() {
        body.extend_from_slice(data);
        Ok(())
    } else {
        Err(Status::BadArgument)
    }
}
