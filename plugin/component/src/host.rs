//! The core's host traits over the world's imports: `state` as the [`StateStore`], `audit`
//! as the [`Outputs`], `fleet` as the way to the fleet store, the message's headers as the
//! caller's identity.

use crate::bindings::toolseal::policy::{audit, clock, fleet, state};
use toolseal_core::gateway::fleet::{FleetCall, FleetReply};
use toolseal_core::policy::rules::CallerIdentity;
use toolseal_core::state::audit::{AuditEvent, Counter, Decision, Outputs};
use toolseal_core::state::store::{Expect, StateStore, StoreError};

/// The host's store (`state` import).
pub struct HostStore;

impl StateStore for HostStore {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        Ok(state::get(key).map(|entry| (entry.value, entry.version)))
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        let expect = match expect {
            Expect::Any => state::Expect::Any,
            Expect::Absent => state::Expect::Absent,
            Expect::Version(v) => state::Expect::Version(v),
        };
        state::set(key, value, expect).map_err(|e| match e {
            state::SetError::Conflict => StoreError::Conflict,
            state::SetError::Failed(message) => StoreError::Failed(message),
        })
    }
}

/// The host's audit sink (`audit` import). Counters have no import: hosts count from the
/// audit events and decision records.
pub struct HostOutputs;

impl Outputs for HostOutputs {
    fn audit(&mut self, event: &AuditEvent) {
        audit::emit(&event.to_json().to_string());
    }

    fn decision(&mut self, decision: &Decision) {
        audit::decision(&decision.to_json().to_string());
    }

    fn count(&mut self, _counter: Counter, _detail: Option<&str>) {}
}

/// The host's clock (`clock` import).
pub fn now_ms() -> u64 {
    clock::now_ms()
}

/// Sends one call to the fleet store through the host (`fleet` import).
pub fn fleet_send(call: &FleetCall) -> FleetReply {
    let timeout_ms = u32::try_from(call.timeout_ms).unwrap_or(u32::MAX);
    match fleet::call(call.path, &call.body, timeout_ms) {
        Ok((status, body)) => FleetReply::Answered { status, body },
        Err(why) => FleetReply::Failed(why),
    }
}

/// A message's headers as the caller's identity for policy `principal` rules. There is no
/// Envoy metadata in a component host: a `metadata` principal never matches (so an allow
/// rule on it never widens anything).
pub struct Headers<'a>(pub &'a [(String, String)]);

impl Headers<'_> {
    /// The first header called `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl CallerIdentity for Headers<'_> {
    fn header(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_string)
    }

    fn metadata(&self, _path: &str) -> Result<Option<serde_json::Value>, String> {
        Ok(None)
    }
}
