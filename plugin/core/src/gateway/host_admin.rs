//! The admin actions of a trusted in-process host (the WIT component: a stdio guard's
//! `approve`, an agent runtime's own console), through the fleet store like every other
//! callback.
//!
//! Main design decision: such a host has no HTTP listener and no token, so it cannot use
//! [`Engine::admin_body_arrived`]; but an approval or a release opens, and with a fleet store
//! it must wait for the store's yes exactly as the admin API's does. This entry runs the same
//! lifecycle transition ([`Engine::admin_event`]) or view ([`Engine::admin_view`]) through the
//! fleet's view of the store, and answers [`AdminAnswer::Fleet`] when the host must send a
//! call first (then make the same action again, with the same exchange).

use crate::gateway::engine::Engine;
use crate::gateway::exchange::Exchange;
use crate::gateway::fleet_worker::FleetCall;
use crate::policy::status::Event;
use crate::state::StateError;
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use serde_json::Value;

/// An admin action a trusted host asks for.
#[derive(Debug, Clone, Copy)]
pub enum HostAdmin<'a> {
    /// The admin view: every server (`None`), or one with its full diff.
    View(Option<&'a str>),
    /// A lifecycle event (approve, quarantine, release) on a server.
    Event {
        /// Server id.
        server: &'a str,
        /// The event.
        event: &'a Event,
    },
}

impl HostAdmin<'_> {
    /// The server the action reads first (the exchange the host keeps for it names it).
    pub fn server(&self) -> &str {
        match self {
            HostAdmin::View(server) => server.unwrap_or_default(),
            HostAdmin::Event { server, .. } => server,
        }
    }
}

/// What a trusted host's admin action answers.
#[derive(Debug)]
pub enum AdminAnswer {
    /// Done: the server's view after it (`None`: an unknown server, nothing changed), or why
    /// nothing changed.
    Done(Result<Option<Value>, StateError>),
    /// Send this call to the fleet store, hand its reply (and those of the calls that follow)
    /// to [`Engine::fleet_reply`] with the same exchange, then make the same action again.
    Fleet(FleetCall),
}

impl Engine {
    /// A trusted host's admin action. `exchange`: one per action, `Exchange::new(server,
    /// None)` with the server [`HostAdmin::server`] names, kept across the action's rounds.
    pub fn host_admin_arrived(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        action: HostAdmin<'_>,
    ) -> AdminAnswer {
        let decided =
            self.with_fleet(
                store,
                out,
                now_ms,
                exchange,
                |engine, store, out, _| match action {
                    HostAdmin::View(server) => Ok(engine.admin_view(store, server)),
                    HostAdmin::Event { server, event } => {
                        engine.admin_event(store, out, now_ms, server, event)
                    }
                },
            );
        match decided {
            Ok(done) => AdminAnswer::Done(done),
            Err(call) => AdminAnswer::Fleet(call),
        }
    }
}
