//! Decisions in Envoy's own telemetry: each MCP decision is written to the stream's filter
//! state, where Envoy's access log (and anything else that reads filter state) picks it up.
//!
//! Main design decision: one plain-text filter-state entry per field, so an access log
//! format names exactly the fields it wants (`%FILTER_STATE(wasm.toolseal.error_code:PLAIN)%`)
//! without parsing JSON inside a log line. Envoy stores a value set with
//! `proxy_set_property(["toolseal.error_code"], …)` under the filter-state key
//! `wasm.toolseal.error_code`. One request can carry several decisions (a batch, a call and
//! its result); the most severe one stays (deny over rewrite over allow over pass, a denial
//! over an element refused with its batch), and a
//! decision of equal severity replaces the earlier one, so a `tools/list` shows the status
//! after its response. The stream context remembers the severity and the values it recorded
//! ([`Published`]), so the host is never asked what the filter state holds and a field is
//! written again only when its value changes. The hostcall is made directly: the
//! SDK's wrapper panics on any status other than `Ok`, and Envoy answers `NotFound` when there
//! is no stream (a panic kills the VM).

use toolseal_core::state::audit::Decision;

/// Filter-state names (without Envoy's `wasm.` prefix) and how each is read from a decision.
pub const FIELDS: [&str; 6] = [
    "toolseal.method",
    "toolseal.tool",
    "toolseal.server",
    "toolseal.schema_status",
    "toolseal.decision",
    "toolseal.error_code",
];

/// Longest value written, in bytes: tool names and server ids come from the client.
const MAX_VALUE_BYTES: usize = 128;

#[link(wasm_import_module = "env")]
#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    /// `proxy_set_property` (proxy-wasm ABI 0.2.1); returns a proxy-wasm status code.
    fn proxy_set_property(
        path_data: *const u8,
        path_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
}

/// How much a decision says about the request: a denial must not be hidden by a later
/// pass-through record of the same stream, nor the denial that refused a batch by the
/// elements refused with it (`BATCH_REFUSED`).
fn severity(decision: &Decision) -> u8 {
    match (decision.decision, decision.error_code) {
        ("deny", Some(toolseal_core::state::audit::BATCH_REFUSED)) => 3,
        ("deny", _) => 4,
        ("rewrite", _) => 2,
        ("allow", _) => 1,
        _ => 0,
    }
}

/// The value of each of [`FIELDS`] for `decision`, in that order (empty when not applicable).
pub fn values(decision: &Decision) -> [&str; 6] {
    [
        decision.method.as_str(),
        decision.tool.as_deref().unwrap_or_default(),
        decision.server.as_str(),
        decision.schema_status.as_str(),
        decision.decision,
        decision.error_code.unwrap_or_default(),
    ]
}

/// At most [`MAX_VALUE_BYTES`] of `text`, cut at a character boundary.
fn bounded(text: &str) -> &str {
    let mut end = text.len().min(MAX_VALUE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// What one stream has recorded in its filter state so far (kept in the stream's context).
#[derive(Debug, Default)]
pub struct Published {
    /// Severity of the recorded decision; `None` before the first one.
    severity: Option<u8>,
    /// The values written for [`FIELDS`], one after the other in one buffer (one allocation
    /// per stream, reused), and where each ends (meaningful once `severity` is set).
    written: String,
    ends: [usize; 6],
    /// The operator turned filter-state records off (`telemetry.filter_state: false`).
    off: bool,
    /// Whether the host logs at debug, asked once per stream (`None`: not asked yet).
    debug: Option<bool>,
}

impl Published {
    /// A stream's record; `filter_state: false` writes nothing to the filter state.
    pub fn new(filter_state: bool) -> Self {
        Published {
            off: !filter_state,
            ..Published::default()
        }
    }

    /// Whether decision records go to the host log: the host's log level, asked at the first
    /// decision of the stream only (a level changed at runtime applies from the next stream).
    pub fn debug_logging(&mut self) -> bool {
        *self.debug.get_or_insert_with(|| {
            crate::abi::log_level().is_ok_and(|level| level <= crate::abi::Level::Debug as u32)
        })
    }

    /// Records `decision` in the current stream's filter state unless a more severe decision
    /// is already recorded there. Failures are ignored: telemetry never changes a verdict.
    pub fn publish(&mut self, decision: &Decision) {
        if self.off {
            return;
        }
        let severity = severity(decision);
        if self.severity.is_some_and(|recorded| recorded > severity) {
            return;
        }
        let first = self.severity.replace(severity).is_none();
        let values = values(decision).map(bounded);
        // Each write is a hostcall into Envoy: a list's response record differs from its
        // request's `pass` record in one or two fields only.
        for (index, (name, value)) in FIELDS.iter().zip(values).enumerate() {
            if first || self.written_value(index) != Some(value) {
                set(name, value);
            }
        }
        self.written.clear();
        for (end, value) in self.ends.iter_mut().zip(values) {
            self.written.push_str(value);
            *end = self.written.len();
        }
    }

    /// The value last written for `FIELDS[index]`.
    fn written_value(&self, index: usize) -> Option<&str> {
        let start = match index.checked_sub(1) {
            Some(before) => *self.ends.get(before)?,
            None => 0,
        };
        self.written.get(start..*self.ends.get(index)?)
    }
}

fn set(name: &str, value: &str) {
    // SAFETY: both pointers come from live slices whose lengths are passed with them; the
    // host only reads them during the call.
    let _status =
        unsafe { proxy_set_property(name.as_ptr(), name.len(), value.as_ptr(), value.len()) };
}
