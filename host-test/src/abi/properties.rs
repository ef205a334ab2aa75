//! Properties (`proxy_get_property` / `proxy_set_property`): paths are segments joined by
//! NUL bytes, values are serialized as Envoy serializes CEL values: strings as their bytes,
//! integers as 8-byte little-endian `i64`, doubles as 8-byte `f64`, booleans as one byte,
//! maps and lists in the pairs form (a list as pairs of `(element, "")`).
//!
//! Main design decision: answer the attributes a policy plugin reads (route and cluster
//! name, `request.*`, `response.*`, `plugin_*`, dynamic metadata under
//! `metadata.filter_metadata.<namespace>...`) and nothing else, so a plugin that depends on
//! an attribute this host does not know fails here first with `NotFound`. Dynamic metadata
//! is held as JSON; its numbers are doubles, as in Envoy's `google.protobuf.Struct`. The
//! `metadata` message itself (a protobuf in Envoy) is refused with `SerializationFailure`.

use super::guest::{Fail, Guest, HostcallResult, finish, return_bytes};
use super::header_map::{HeaderMap, serialize_pairs};
use super::state::{HostState, StreamState};
use super::types::Status;
use serde_json::Value;

/// `proxy_get_property(path, path_size, *value, *value_size)`.
pub fn get_property(
    g: &mut impl Guest,
    path_ptr: u32,
    path_len: u32,
    value_ptr_ptr: u32,
    value_size_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let path = g.read(path_ptr, path_len)?;
        let value = resolve(g.host(), &path)?;
        return_bytes(g, &value, value_ptr_ptr, value_size_ptr)
    })())
}

/// `proxy_set_property(path, path_size, value, value_size)`: stores into the exchange's
/// filter state (read back by the same path).
pub fn set_property(
    g: &mut impl Guest,
    path_ptr: u32,
    path_len: u32,
    value_ptr: u32,
    value_len: u32,
) -> HostcallResult {
    finish((|| {
        let path = g.read(path_ptr, path_len)?;
        let value = g.read(value_ptr, value_len)?;
        if path.is_empty() {
            return Err(Status::BadArgument.into());
        }
        let stream = g.host().stream.as_mut().ok_or(Status::NotFound)?;
        stream.filter_state.insert(path, value);
        Ok(())
    })())
}

/// The serialized value at the NUL-separated `path`.
pub fn resolve(state: &HostState, path: &[u8]) -> Result<Vec<u8>, Fail> {
    if let Some(value) = state.stream.as_ref().and_then(|s| s.filter_state.get(path)) {
        return Ok(value.clone());
    }
    let segments: Vec<&[u8]> = path.split(|b| *b == 0).collect();
    let identity = &state.vm.identity;
    let text = |s: &str| Ok(s.as_bytes().to_vec());
    match segments.as_slice() {
        [b"route_name"] | [b"xds", b"route_name"] => text(&identity.route_name),
        [b"cluster_name"] | [b"xds", b"cluster_name"] => text(&identity.cluster_name),
        [b"plugin_name"] => text(&identity.plugin_name),
        [b"plugin_root_id"] => text(&identity.root_id),
        [b"plugin_vm_id"] => text(&identity.vm_id),
        [b"request", rest @ ..] => request_property(stream_of(state)?, rest),
        [b"response", rest @ ..] => response_property(stream_of(state)?, rest),
        [b"metadata", b"filter_metadata", namespace, rest @ ..] => {
            let stream = stream_of(state)?;
            let namespace = std::str::from_utf8(namespace).map_err(|_| Status::NotFound)?;
            let root = stream
                .dynamic_metadata
                .get(namespace)
                .ok_or(Status::NotFound)?;
            serialize_json(walk(root, rest)?)
        }
        [b"metadata", ..] => Err(Status::SerializationFailure.into()),
        _ => Err(Status::NotFound.into()),
    }
}

fn stream_of(state: &HostState) -> Result<&StreamState, Fail> {
    state.stream.as_ref().ok_or(Fail::Status(Status::NotFound))
}

fn request_property(stream: &StreamState, rest: &[&[u8]]) -> Result<Vec<u8>, Fail> {
    let info = &stream.request;
    let text = |s: &str| Ok(s.as_bytes().to_vec());
    match rest {
        [b"path"] => text(&info.path),
        [b"url_path"] => text(info.path.split('?').next().unwrap_or_default()),
        [b"host"] => text(&info.host),
        [b"scheme"] => text(&info.scheme),
        [b"method"] => text(&info.method),
        [b"protocol"] => text(&info.protocol),
        [b"id"] => text(&info.id),
        [b"headers"] => Ok(stream.request_headers.serialize()),
        [b"headers", name] => header_value(&stream.request_headers, name),
        _ => Err(Status::NotFound.into()),
    }
}

fn response_property(stream: &StreamState, rest: &[&[u8]]) -> Result<Vec<u8>, Fail> {
    match rest {
        [b"code"] => {
            let code = stream.response_code.ok_or(Status::NotFound)?;
            Ok(i64::from(code).to_le_bytes().to_vec())
        }
        [b"headers"] => Ok(stream
            .response_headers
            .as_ref()
            .ok_or(Status::NotFound)?
            .serialize()),
        [b"headers", name] => header_value(
            stream.response_headers.as_ref().ok_or(Status::NotFound)?,
            name,
        ),
        _ => Err(Status::NotFound.into()),
    }
}

fn header_value(map: &HeaderMap, name: &[u8]) -> Result<Vec<u8>, Fail> {
    map.get(name)
        .map(<[u8]>::to_vec)
        .ok_or(Fail::Status(Status::NotFound))
}

/// Follows `rest` (object keys, or decimal list indexes) from `root`.
fn walk<'v>(root: &'v Value, rest: &[&[u8]]) -> Result<&'v Value, Fail> {
    let mut at = root;
    for segment in rest {
        let key = std::str::from_utf8(segment).map_err(|_| Status::NotFound)?;
        at = match at {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
        .ok_or(Status::NotFound)?;
    }
    Ok(at)
}

/// Serializes a metadata value as Envoy serializes the CEL value of a `Struct` field.
/// Nesting is bounded by the JSON parser's depth limit (the runner parses metadata strictly).
pub fn serialize_json(value: &Value) -> Result<Vec<u8>, Fail> {
    Ok(match value {
        Value::Null => return Err(Status::NotFound.into()),
        Value::Bool(b) => vec![u8::from(*b)],
        Value::Number(n) => n
            .as_f64()
            .ok_or(Status::SerializationFailure)?
            .to_le_bytes()
            .to_vec(),
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Array(items) => {
            let elements = items
                .iter()
                .map(serialize_json)
                .collect::<Result<Vec<_>, _>>()?;
            serialize_pairs(elements.iter().map(|e| (e.as_slice(), &b""[..])))
        }
        Value::Object(map) => {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, v) in map {
                pairs.push((k.as_bytes(), serialize_json(v)?));
            }
            serialize_pairs(pairs.iter().map(|(k, v)| (*k, v.as_slice())))
        }
    })
}
