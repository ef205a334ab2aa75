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

use crate::policy::rules::CallerIdentity;
use serde_json::Value;
use std::borrow::Cow;

/// Where a request's snapshot key comes from (`snapshots.key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotSource {
    /// The `Mcp-Session-Id` header.
    Session,
    /// A request header (lower-cased name).
    Header(String),
    /// Envoy dynamic metadata at `NAMESPACE/key/…`.
    Metadata(String),
}

impl SnapshotSource {
    /// How audit events and snapshot slots name the source: `session`, `header:NAME`,
    /// `metadata:PATH`.
    pub fn label(&self) -> String {
        match self {
            SnapshotSource::Session => "session".into(),
            SnapshotSource::Header(name) => format!("header:{name}"),
            SnapshotSource::Metadata(path) => format!("metadata:{path}"),
        }
    }
}

/// Longest key value used; a longer one is not a usable key (the next source is tried).
pub const MAX_KEY_BYTES: usize = 256;

/// A request's snapshot key (borrowing the session id when it is one: a call's key lives no
/// longer than its request; a pending list keeps an owned one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKey<'a> {
    /// Which source gave it: `session`, `header:NAME` or `metadata:PATH`.
    pub source: Cow<'static, str>,
    /// Its value.
    pub value: Cow<'a, str>,
}

impl<'a> ClientKey<'a> {
    /// A key from `Mcp-Session-Id`.
    pub fn session(value: &'a str) -> Self {
        ClientKey {
            source: Cow::Borrowed("session"),
            value: Cow::Borrowed(value),
        }
    }

    /// The same key, owning its value.
    pub fn into_owned(self) -> ClientKey<'static> {
        ClientKey {
            source: self.source,
            value: Cow::Owned(self.value.into_owned()),
        }
    }

    /// Whether it comes from `Mcp-Session-Id`.
    pub fn is_session(&self) -> bool {
        self.source == "session"
    }
}

/// A request's snapshot key as read: `Ok(None)` when it has none (the baseline alone is
/// checked against), an error when the host could not read a source (what went wrong).
pub type KeyRead<'a> = Result<Option<ClientKey<'a>>, String>;

/// The key of a request: the first source of `sources` it has with a usable value. A source
/// the host could not read ends the search with an error: the next source could name another
/// caller, and whether this one has a key is unknown.
pub fn resolve<'a>(
    sources: &[SnapshotSource],
    session: Option<&'a str>,
    caller: &dyn CallerIdentity,
) -> KeyRead<'a> {
    for source in sources {
        let value: Option<Cow<'a, str>> = match source {
            SnapshotSource::Session => session.map(Cow::Borrowed),
            SnapshotSource::Header(name) => caller.header(name).map(Cow::Owned),
            SnapshotSource::Metadata(path) => match caller
                .metadata(path)
                .map_err(|e| format!("caller metadata {path} could not be read ({e})"))?
            {
                Some(Value::String(s)) => Some(Cow::Owned(s)),
                Some(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
                _ => None,
            },
        };
        if let Some(value) = value.filter(|v| !v.is_empty() && v.len() <= MAX_KEY_BYTES) {
            let source = match source {
                SnapshotSource::Session => Cow::Borrowed("session"),
                other => Cow::Owned(other.label()),
            };
            return Ok(Some(ClientKey { source, value }));
        }
    }
    Ok(None)
}
