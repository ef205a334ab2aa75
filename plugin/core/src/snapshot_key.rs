//! The key a caller's client snapshot is kept under: the first source in `snapshots.key`
//! that the request has (its `Mcp-Session-Id`, a request header, or Envoy dynamic metadata
//! such as a verified token's `sub`).
//!
//! Main design decision: MCP 2026-07-28 has no sessions, so "which tool set was this caller
//! last served" needs another identity; the operator names it. The key only decides which
//! snapshot a call is compared with (the stale-call check that protects an honest caller from
//! acting on an old tool definition): it grants nothing, so a request without a usable key
//! is simply checked against the baseline alone. A key names its source, and the source is
//! part of the slot and of the slot's content, so a header value can never be read as
//! somebody's session id.

use crate::config::SnapshotSource;
use crate::policy::CallerIdentity;
use serde_json::Value;

/// Longest key value used; a longer one is not a usable key (the next source is tried).
pub const MAX_KEY_BYTES: usize = 256;

/// A request's snapshot key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKey {
    /// Which source gave it: `session`, `header:NAME` or `metadata:PATH`.
    pub source: String,
    /// Its value.
    pub value: String,
}

impl ClientKey {
    /// A key from `Mcp-Session-Id`.
    pub fn session(value: &str) -> Self {
        ClientKey {
            source: "session".into(),
            value: value.to_string(),
        }
    }

    /// Whether it comes from `Mcp-Session-Id`.
    pub fn is_session(&self) -> bool {
        self.source == "session"
    }
}

/// The key of a request: the first source of `sources` it has with a usable value.
pub fn resolve(
    sources: &[SnapshotSource],
    session: Option<&str>,
    caller: &dyn CallerIdentity,
) -> Option<ClientKey> {
    sources.iter().find_map(|source| {
        let value = match source {
            SnapshotSource::Session => session.map(str::to_string),
            SnapshotSource::Header(name) => caller.header(name),
            SnapshotSource::Metadata(path) => match caller.metadata(path)? {
                Value::String(s) => Some(s),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            },
        }?;
        (!value.is_empty() && value.len() <= MAX_KEY_BYTES).then(|| ClientKey {
            source: source.label(),
            value,
        })
    })
}
