//! Which view a request belongs to (see [`crate::policy::views`]), and the client
//! capabilities a 2025 session declared, remembered for its later requests.
//!
//! Main design decision: a view is told from what the request itself carries, plus, for a
//! 2025 session, the capabilities its `initialize` declared (kept in a bounded slot from the
//! moment the server names the session). A source that cannot be read makes the view one
//! that cannot be told, never another caller's view: such a list is checked against the
//! catalogue alone, which serves nothing unreviewed and closes nothing.

use crate::gateway::engine::{Engine, Exchange, RequestInfo};
use crate::policy::views::{self, DEFAULT_REVISION, ViewId, ViewRead, ViewSource};
use crate::state;
use crate::state::store::StateStore;
use serde_json::Value;

/// The `_meta` member a 2026-07-28 request declares its client capabilities in.
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// How long after a session's `initialize` its lists wait for its `notifications/initialized`
/// before its view is told without it (ms).
pub const HANDSHAKE_GRACE_MS: u64 = 10_000;

impl Engine {
    /// The view of a `tools/list` or `tools/call` request with `params`.
    pub(crate) fn view_of(
        &self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        params: Option<&Value>,
        listed_at: Option<u64>,
    ) -> ViewRead {
        let sources = self.config.views_of(&exchange.server);
        let revision = match (&exchange.protocol_version, info.routing.version) {
            (Some(stateless), _) => stateless.clone(),
            (None, Some(header)) => header.to_string(),
            (None, None) => DEFAULT_REVISION.to_string(),
        };
        let mut values = Vec::with_capacity(sources.len());
        for source in sources {
            let value = match source {
                ViewSource::Revision => Value::String(revision.clone()),
                ViewSource::Capabilities => {
                    self.capabilities(store, exchange, params, &revision, listed_at)?
                }
                ViewSource::Path => Value::String(exchange.path.clone()),
                ViewSource::Header(name) => {
                    info.caller.header(name).map_or(Value::Null, Value::String)
                }
                ViewSource::Metadata(path) => info
                    .caller
                    .metadata(path)
                    .map_err(|e| format!("metadata {path} could not be read: {e}"))?
                    .unwrap_or(Value::Null),
            };
            values.push(value);
        }
        Ok(ViewId::new(sources, values))
    }

    /// The capability names a request declared: in its `_meta` under the stateless revision,
    /// in its session's `initialize` before it (null for a request of no session).
    /// `listed_at`: the time of a list. A session's capabilities take effect when its
    /// handshake ends: a server may register tools for them only then (server-everything
    /// does), so a list made before the session's `notifications/initialized` can be short,
    /// and recorded as its view's names it would make the complete list look like drift. Such
    /// a list's view cannot be told (it is checked against the catalogue alone) until the
    /// notification passes or [`HANDSHAKE_GRACE_MS`] after the `initialize` (the notification
    /// may have gone through another instance).
    fn capabilities(
        &self,
        store: &dyn StateStore,
        exchange: &Exchange,
        params: Option<&Value>,
        revision: &str,
        listed_at: Option<u64>,
    ) -> Result<Value, String> {
        let names = if exchange.stateless() {
            let declared = params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(CAPABILITIES_META))
                .unwrap_or(&Value::Null);
            views::capability_names(declared, revision)
        } else {
            let Some(session) = exchange.session.as_deref() else {
                return Ok(Value::Null);
            };
            let slots = self.config.limits.session_slots;
            match state::get_capabilities(store, &exchange.server, session, slots) {
                Ok(Some(caps)) => {
                    let early = |at: u64, now: u64| now.saturating_sub(at) < HANDSHAKE_GRACE_MS;
                    if !caps.initialized
                        && listed_at
                            .zip(caps.at_ms)
                            .is_some_and(|(now, at)| early(at, now))
                    {
                        return Err(
                            "this session has not sent notifications/initialized yet: what a server lists before the handshake ends may be short"
                                .into(),
                        );
                    }
                    caps.names
                }
                Ok(None) => {
                    return Err(
                        "the capabilities this session declared are not remembered (its initialize was not seen, or its slot was reused)"
                            .into(),
                    );
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        Ok(Value::Array(names.into_iter().map(Value::String).collect()))
    }

    /// An `initialize` request: its declared capabilities wait in the exchange for the
    /// session id the server answers with.
    pub(crate) fn initialize_seen(
        &self,
        exchange: &mut Exchange,
        params: Option<&Value>,
        now_ms: u64,
    ) {
        let revision = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_REVISION);
        let declared = params
            .and_then(|p| p.get("capabilities"))
            .unwrap_or(&Value::Null);
        exchange.declared = Some((views::capability_names(declared, revision), now_ms));
    }

    /// The server named the session of an `initialize` answer (its `Mcp-Session-Id`
    /// response header): the capabilities the request declared are kept for the session.
    /// Hosts call it when [`Exchange::awaits_session`] says so. A write that fails only
    /// leaves the session's view one that cannot be told.
    pub fn session_assigned(
        &self,
        store: &mut dyn StateStore,
        exchange: &mut Exchange,
        session: &str,
    ) {
        let Some((names, at_ms)) = exchange.declared.take() else {
            return;
        };
        let slots = self.config.limits.session_slots;
        let _kept =
            state::put_capabilities(store, &exchange.server, session, (&names, at_ms), slots);
    }

    /// A session's `notifications/initialized` passed: its capabilities take effect. A
    /// failed write only leaves its lists checked against the catalogue alone until
    /// [`HANDSHAKE_GRACE_MS`] after its `initialize`.
    pub(crate) fn handshake_ended(&self, store: &mut dyn StateStore, exchange: &Exchange) {
        if exchange.stateless() {
            return;
        }
        let Some(session) = exchange.session.as_deref() else {
            return;
        };
        let slots = self.config.limits.session_slots;
        let _marked = state::session_initialized(store, &exchange.server, session, slots);
    }
}
