//! The host side of the engine's traits, over proxy-wasm hostcalls: shared data as the
//! state store, the Envoy log and stats as outputs, headers and dynamic metadata as the
//! caller's identity.

pub use crate::pairs::Headers;
use crate::telemetry::Published;
use proxy_wasm::hostcalls;
use proxy_wasm::types::{LogLevel, MapType, MetricType, Status};
use serde_json::Value;
use std::collections::BTreeMap;
use toolseal_core::audit::{
    AUDIT_LOG_PREFIX, AuditEvent, Counter, DECISION_LOG_PREFIX, Decision, Outputs,
};
use toolseal_core::policy::CallerIdentity;
use toolseal_core::store::{Expect, StateStore, StoreError};

/// A CAS token that no real entry carries: with it, a write succeeds only when the key is
/// missing (Envoy ignores CAS on a missing key and refuses a mismatch on an existing one).
const ABSENT_CAS: u32 = u32::MAX;

/// Proxy-wasm shared data (shared by every worker VM of the same `vm_id`).
pub struct SharedData;

impl StateStore for SharedData {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        match hostcalls::get_shared_data(key) {
            Ok((Some(bytes), Some(cas))) => Some((bytes, cas)),
            Ok((Some(bytes), None)) => Some((bytes, 0)),
            _ => None,
        }
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        let cas = match expect {
            Expect::Any => None,
            Expect::Absent => Some(ABSENT_CAS),
            Expect::Version(v) => Some(v),
        };
        match hostcalls::set_shared_data(key, Some(value), cas) {
            Ok(()) => Ok(()),
            Err(Status::CasMismatch) => Err(StoreError::Conflict),
            Err(status) => Err(StoreError::Failed(format!("{status:?}"))),
        }
    }
}

/// Counters defined in Envoy's stats.
#[derive(Default)]
pub struct Metrics {
    ids: BTreeMap<String, u32>,
}

impl Metrics {
    /// Defines every counter up front (and one per denial code).
    pub fn define() -> Self {
        let mut metrics = Metrics::default();
        for counter in Counter::ALL {
            metrics.ensure(counter.name());
        }
        metrics
    }

    fn ensure(&mut self, name: &str) -> Option<u32> {
        if let Some(id) = self.ids.get(name) {
            return Some(*id);
        }
        let id = hostcalls::define_metric(MetricType::Counter, name).ok()?;
        self.ids.insert(name.to_string(), id);
        Some(id)
    }

    /// Adds one to `name`.
    pub fn increment(&mut self, name: &str) {
        if let Some(id) = self.ensure(name) {
            let _ = hostcalls::increment_metric(id, 1);
        }
    }
}

/// Outputs to Envoy: audit lines at info, decision records at debug and in the stream's
/// filter state, stats counters.
pub struct EnvoyOutputs<'a> {
    /// Counters.
    pub metrics: &'a mut Metrics,
    /// What the current stream's filter state holds.
    pub published: &'a mut Published,
}

impl Outputs for EnvoyOutputs<'_> {
    fn audit(&mut self, event: &AuditEvent) {
        let line = format!("{AUDIT_LOG_PREFIX}{}", event.to_json());
        let _ = hostcalls::log(LogLevel::Info, &line);
    }

    fn decision(&mut self, decision: &Decision) {
        if matches!(
            hostcalls::get_log_level(),
            Ok(LogLevel::Trace | LogLevel::Debug)
        ) {
            let line = format!("{DECISION_LOG_PREFIX}{}", decision.to_json());
            let _ = hostcalls::log(LogLevel::Debug, &line);
        }
        self.published.publish(decision);
    }

    fn count(&mut self, counter: Counter, detail: Option<&str>) {
        self.metrics.increment(counter.name());
        if let Some(detail) = detail {
            self.metrics.increment(&format!(
                "{}_{}",
                counter.name(),
                detail.to_ascii_lowercase()
            ));
        }
    }
}

/// A response header as text.
pub fn response_header(name: &str) -> Option<String> {
    match hostcalls::get_map_value_bytes(MapType::HttpResponseHeaders, name) {
        Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// A property as text (route name, cluster name, ...).
pub fn property(path: &[&str]) -> Option<String> {
    match hostcalls::get_property(path.to_vec()) {
        Ok(Some(bytes)) if !bytes.is_empty() => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// Milliseconds since the epoch from the host clock.
pub fn now_ms() -> u64 {
    hostcalls::get_current_time()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[link(wasm_import_module = "env")]
#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    /// `proxy_get_header_map_pairs` (proxy-wasm ABI 0.2.1): the map in the pair format, in a
    /// buffer the host allocates through the guest's `proxy_on_memory_allocate`.
    fn proxy_get_header_map_pairs(
        map_type: u32,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
}

/// The request headers, read once in the request-headers callback (Envoy refuses header-map
/// access from body callbacks, and the SDK would panic on that refusal) and kept as the one
/// buffer the host wrote. Any failure gives an empty map (the request then fails closed).
pub fn request_headers() -> Headers {
    let mut data: *mut u8 = std::ptr::null_mut();
    let mut size: usize = 0;
    // SAFETY: both out-pointers point to live locals for the duration of the call.
    let status = unsafe {
        proxy_get_header_map_pairs(MapType::HttpRequestHeaders as u32, &mut data, &mut size)
    };
    if status != 0 || data.is_null() {
        return Headers::default();
    }
    // SAFETY: the host wrote `size` bytes into a block it obtained from
    // `proxy_on_memory_allocate(size)`, which the SDK serves with a `Vec<u8>` of capacity
    // `size` from this module's global allocator; ownership passes to us (as in the SDK's own
    // `get_map_bytes`).
    let bytes = unsafe { Vec::from_raw_parts(data, size, size) };
    Headers::from_serialized(bytes)
}

/// The caller as Envoy sees it: request headers and dynamic metadata.
pub struct EnvoyCaller<'a> {
    /// The request headers.
    pub headers: &'a Headers,
}

impl CallerIdentity for EnvoyCaller<'_> {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(str::to_string)
    }

    fn metadata(&self, path: &str) -> Option<Value> {
        let mut parts = vec!["metadata", "filter_metadata"];
        parts.extend(path.split('/').filter(|p| !p.is_empty()));
        let bytes = hostcalls::get_property(parts).ok().flatten()?;
        Some(decode_property(&bytes))
    }
}

/// Decodes a property value as Envoy serializes it. A list or map comes in the header-map
/// pair format (count, then key and value lengths, then each key and value NUL-terminated);
/// a list's elements are the keys with empty values. A string comes raw. Anything else is kept
/// as lossy text, which can only fail to match an allow-list (never widen one).
pub fn decode_property(bytes: &[u8]) -> Value {
    decode_pairs(bytes)
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

fn decode_pairs(bytes: &[u8]) -> Option<Value> {
    let spans = crate::pairs::spans(bytes).filter(|spans| !spans.is_empty())?;
    let text = |range: &std::ops::Range<usize>| -> Option<String> {
        Some(
            std::str::from_utf8(bytes.get(range.clone())?)
                .ok()?
                .to_string(),
        )
    };
    let mut pairs = Vec::with_capacity(spans.len());
    for (k, v) in &spans {
        pairs.push((text(k)?, text(v)?));
    }
    if pairs.iter().all(|(_, v)| v.is_empty()) {
        return Some(Value::Array(
            pairs.into_iter().map(|(k, _)| Value::String(k)).collect(),
        ));
    }
    Some(Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    ))
}
