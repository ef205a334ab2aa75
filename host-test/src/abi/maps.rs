//! Header and trailer hostcalls. A map that does not exist at this point of the exchange
//! (no stream, response headers before the response, absent trailers) answers
//! [`Status::BadArgument`], as Envoy does; a missing key answers [`Status::NotFound`].

use super::guest::{Fail, Guest, HostcallResult, finish, return_bytes};
use super::header_map::HeaderMap;
use super::state::HostState;
use super::types::{MapType, Status};

/// The map `map_type` of the current stream, to change it (a callout's answer is
/// read-only).
fn map_mut(state: &mut HostState, map_type: u32) -> Result<&mut HeaderMap, Fail> {
    let map_type = MapType::from_u32(map_type).ok_or(Status::BadArgument)?;
    let stream = state.stream.as_mut().ok_or(Status::BadArgument)?;
    let map = match map_type {
        MapType::RequestHeaders => Some(&mut stream.request_headers),
        MapType::RequestTrailers => stream.request_trailers.as_mut(),
        MapType::ResponseHeaders => stream.response_headers.as_mut(),
        MapType::ResponseTrailers => stream.response_trailers.as_mut(),
        MapType::HttpCallResponseHeaders => None,
    };
    map.ok_or(Fail::Status(Status::BadArgument))
}

/// The map `map_type`, to read it: a stream's, or the headers of the callout answer being
/// delivered (none outside `proxy_on_http_call_response`, and none for a failed call).
fn map_ref(state: &mut HostState, map_type: u32) -> Result<&HeaderMap, Fail> {
    if MapType::from_u32(map_type) == Some(MapType::HttpCallResponseHeaders) {
        return state
            .vm
            .callouts
            .answer_headers()
            .ok_or(Fail::Status(Status::BadArgument));
    }
    map_mut(state, map_type).map(|map| &*map)
}

/// `proxy_get_header_map_pairs(type, *data, *size)`.
pub fn get_header_map_pairs(
    g: &mut impl Guest,
    map_type: u32,
    data_ptr_ptr: u32,
    size_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let bytes = map_ref(g.host(), map_type)?.serialize();
        return_bytes(g, &bytes, data_ptr_ptr, size_ptr)
    })())
}

/// `proxy_set_header_map_pairs(type, data, size)`: replaces the whole map.
pub fn set_header_map_pairs(
    g: &mut impl Guest,
    map_type: u32,
    data_ptr: u32,
    data_len: u32,
) -> HostcallResult {
    finish((|| {
        let bytes = g.read(data_ptr, data_len)?;
        let new_map = HeaderMap::deserialize(&bytes).map_err(|_| Status::ParseFailure)?;
        *map_mut(g.host(), map_type)? = new_map;
        Ok(())
    })())
}

/// `proxy_get_header_map_value(type, key, key_size, *value, *value_size)`.
pub fn get_header_map_value(
    g: &mut impl Guest,
    map_type: u32,
    key_ptr: u32,
    key_len: u32,
    value_ptr_ptr: u32,
    value_size_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        let value = map_ref(g.host(), map_type)?
            .get(&key)
            .map(<[u8]>::to_vec)
            .ok_or(Status::NotFound)?;
        return_bytes(g, &value, value_ptr_ptr, value_size_ptr)
    })())
}

/// `proxy_replace_header_map_value(type, key, key_size, value, value_size)`.
pub fn replace_header_map_value(
    g: &mut impl Guest,
    map_type: u32,
    key_ptr: u32,
    key_len: u32,
    value_ptr: u32,
    value_len: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        let value = g.read(value_ptr, value_len)?;
        map_mut(g.host(), map_type)?.replace(&key, &value);
        Ok(())
    })())
}

/// `proxy_add_header_map_value(type, key, key_size, value, value_size)`.
pub fn add_header_map_value(
    g: &mut impl Guest,
    map_type: u32,
    key_ptr: u32,
    key_len: u32,
    value_ptr: u32,
    value_len: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        let value = g.read(value_ptr, value_len)?;
        map_mut(g.host(), map_type)?.add(&key, &value);
        Ok(())
    })())
}

/// `proxy_remove_header_map_value(type, key, key_size)`.
pub fn remove_header_map_value(
    g: &mut impl Guest,
    map_type: u32,
    key_ptr: u32,
    key_len: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        map_mut(g.host(), map_type)?.remove(&key);
        Ok(())
    })())
}
