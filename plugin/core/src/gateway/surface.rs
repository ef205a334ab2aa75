//! Which view a request belongs to (see [`crate::policy::views`]), and the client
//! capabilities a 2025 session declared, remembered for its later requests.
//!
//! Main design decision: a view is told from what the request itself carries, plus, for a
//! 2025 session, the capabilities its `initialize` declared (kept in a bounded slot from the
//! moment the server names the session). A source that cannot be read makes the view one
//! that cannot be told, never another caller's view: such a list is checked against the
//! catalogue alone, which serves nothing unreviewed and closes nothing.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, RequestInfo};
use crate::policy::views::{self, DEFAULT_REVISION, ViewRead, ViewSource};
use crate::state;
use crate::state::store::StateStore;
use serde_json::Value;

impl Engine {
    /// The view of a `tools/list` or `tools/call` request with `params`.
    pub(crate) fn view_of(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        params: Option<&Value>,
        listed_at: Option<u64>,
    ) -> ViewRead {
        let sources = self.config.views_of(&exchange.server);
        let slots = self.config.limits.session_slots;
        let memo = &mut self.view_memo;
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
                    memo.declared(store, exchange, (params, &revision), listed_at, slots)?
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
        Ok(memo.told(sources, values))
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
    /// [`HANDSHAKE_GRACE_MS`](crate::gateway::view_memo::HANDSHAKE_GRACE_MS) after its `initialize`.
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
