//! The host side of the engine's traits, over proxy-wasm hostcalls ([`crate::abi`]): shared
//! data as the state store, the Envoy log and stats as outputs, headers and dynamic metadata
//! as the caller's identity. A read the host fails is reported to the engine as a failure,
//! never as an absent value, so the engine fails closed on it.

use crate::abi::{self, Level, Map, Status};
pub use crate::pairs::Headers;
use crate::telemetry::Published;
use serde_json::Value;
use std::collections::BTreeMap;
use toolseal_core::policy::rules::CallerIdentity;
use toolseal_core::state::audit::{
    AUDIT_LOG_PREFIX, AuditEvent, Counter, DECISION_LOG_PREFIX, Decision, Outputs,
};
use toolseal_core::state::store::{Expect, StateStore, StoreError};

/// A CAS token that no real entry carries: with it, a write succeeds only when the key is
/// missing (Envoy ignores CAS on a missing key and refuses a mismatch on an existing one).
const ABSENT_CAS: u32 = u32::MAX;

/// Proxy-wasm shared data (shared by every worker VM of the same `vm_id`).
pub struct SharedData;

impl StateStore for SharedData {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        abi::shared_data(key).map_err(|Status(code)| {
            StoreError::Unreadable(format!("the host answered status {code}"))
        })
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        let cas = match expect {
            Expect::Any => 0,
            Expect::Absent => ABSENT_CAS,
            Expect::Version(v) => v,
        };
        match abi::set_shared_data(key, value, cas) {
            Ok(()) => Ok(()),
            Err(Status::CAS_MISMATCH) => Err(StoreError::Conflict),
            Err(Status(code)) => Err(StoreError::Failed(format!(
                "the host answered status {code}"
            ))),
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
        let id = abi::define_counter(name).ok()?;
        self.ids.insert(name.to_string(), id);
        Some(id)
    }

    /// Adds one to `name`. Stats never change a verdict: a failure is ignored.
    pub fn increment(&mut self, name: &str) {
        if let Some(id) = self.ensure(name) {
            let _counted = abi::increment(id, 1);
        }
    }
}

/// Outputs to Envoy: audit lines at info, decision records at debug and in the stream's
/// filter state, stats counters. The host log is the audit trail's sink; a line it refuses
/// is lost (the shared audit ring still has the event), never a reason to change a verdict.
pub struct EnvoyOutputs<'a> {
    /// Counters.
    pub metrics: &'a mut Metrics,
    /// What the current stream's filter state holds.
    pub published: &'a mut Published,
}

impl Outputs for EnvoyOutputs<'_> {
    fn audit(&mut self, event: &AuditEvent) {
        let line = format!("{AUDIT_LOG_PREFIX}{}", event.to_json());
        let _logged = abi::log(Level::Info, &line);
    }

    fn decision(&mut self, decision: &Decision) {
        if self.published.debug_logging() {
            let line = format!("{DECISION_LOG_PREFIX}{}", decision.to_json());
            let _logged = abi::log(Level::Debug, &line);
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

/// A response header as text: `Ok(None)` when absent, an error when the host could not read
/// the map.
pub fn response_header(name: &str) -> Result<Option<String>, Status> {
    Ok(abi::header(Map::ResponseHeaders, name)?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// A property as text (route name, cluster name, ...); `None` when absent, empty or
/// unreadable (a server id that cannot be read is no server id: the request is refused).
pub fn property(path: &[&str]) -> Option<String> {
    match abi::property(path) {
        Ok(Some(bytes)) if !bytes.is_empty() => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// Milliseconds since the epoch from the host clock (0 when the host cannot tell: time only
/// stamps audit events and drift, it decides nothing).
pub fn now_ms() -> u64 {
    abi::now_ns().map_or(0, |ns| ns / 1_000_000)
}

/// The request headers, read once in the request-headers callback (Envoy refuses header-map
/// access from body callbacks) and kept as the one buffer the host wrote. An error: the host
/// could not hand them over (the request is then refused).
pub fn request_headers() -> Result<Headers, Status> {
    abi::header_pairs(Map::RequestHeaders).map(Headers::from_serialized)
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

    fn metadata(&self, path: &str) -> Result<Option<Value>, String> {
        let mut parts = vec!["metadata", "filter_metadata"];
        parts.extend(path.split('/').filter(|p| !p.is_empty()));
        match abi::property(&parts) {
            Ok(bytes) => Ok(bytes.map(|b| decode_property(&b))),
            Err(Status(code)) => Err(format!("the host answered status {code}")),
        }
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
    // Inserted one by one (a repeated key keeps its last value, as `collect` would): collecting
    // into a map sorts through another copy of the standard sort in the `.wasm`.
    let mut map = serde_json::Map::new();
    for (k, v) in pairs {
        map.insert(k, Value::String(v));
    }
    Some(Value::Object(map))
}
