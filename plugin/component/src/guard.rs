//! The world's exports: configuration, the two message directions and the admin actions.
//!
//! Main design decision: the engine lives in one per-instance slot, empty until `configure`
//! succeeds; until then every message is refused (fail closed), never passed unchecked. Admin
//! actions go through the core's entry for a trusted host ([`Engine::host_admin_arrived`]),
//! so approving from a host command runs the same lifecycle transition and audit as Envoy's
//! admin API, and with a fleet store waits for the store's yes as that API does.

use crate::bindings::{AdminError, Guest, LocalReply, MessageContext, Verdict};
use crate::exchanges::Exchanges;
use crate::host::{self, HostOutputs, HostStore};
use crate::{fleet, message};
use std::cell::RefCell;
use toolseal_core::config::Config;
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::Exchange;
use toolseal_core::gateway::host_admin::{AdminAnswer, HostAdmin};
use toolseal_core::policy::status::{Actor, Event};
use toolseal_core::state::StateError;
use toolseal_core::wire::jsonrpc;

struct Loaded {
    engine: Engine,
    exchanges: Exchanges,
}

thread_local! {
    /// The configured engine of this instance (a component instance is single-threaded).
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

/// The component.
pub struct Guard;

crate::bindings::export!(Guard with_types_in crate::bindings);

const NOT_CONFIGURED: &str =
    "toolseal: no valid configuration is loaded; the message was not forwarded";

fn not_configured() -> Verdict {
    let body = jsonrpc::error_response(
        &serde_json::Value::Null,
        jsonrpc::INTERNAL_ERROR,
        NOT_CONFIGURED,
    );
    Verdict::Reply(LocalReply {
        status: 503,
        body: body.to_string().into_bytes(),
    })
}

fn with_engine<R>(f: impl FnOnce(&mut Loaded) -> R, otherwise: impl FnOnce() -> R) -> R {
    LOADED.with_borrow_mut(|slot| match slot {
        Some(loaded) => f(loaded),
        None => otherwise(),
    })
}

/// One admin action through the engine (and the fleet store, when there is one): the
/// server's view, `Ok(None)` for an unknown server.
fn admin_action(action: HostAdmin<'_>) -> Result<Option<String>, AdminError> {
    with_engine(
        |loaded| {
            let now_ms = host::now_ms();
            let mut exchange = Exchange::new(action.server(), None);
            let answer =
                fleet::until_decided(&mut loaded.engine, &mut exchange, |engine, exchange| {
                    match engine.host_admin_arrived(
                        &mut HostStore,
                        &mut HostOutputs,
                        now_ms,
                        exchange,
                        action,
                    ) {
                        AdminAnswer::Done(done) => Ok(done),
                        AdminAnswer::Fleet(call) => Err(call),
                    }
                });
            fleet::push_closures(&mut loaded.engine);
            match answer {
                Some(Ok(view)) => Ok(view.map(|v| v.to_string())),
                Some(Err(StateError::Refused(refusal))) => {
                    Err(AdminError::Conflict(refusal.to_string()))
                }
                Some(Err(e)) => Err(AdminError::Failed(e.to_string())),
                None => Err(AdminError::Failed(
                    "the fleet store gave no stable answer; nothing changed".into(),
                )),
            }
        },
        || Err(AdminError::Failed(NOT_CONFIGURED.to_string())),
    )
}

fn admin(server: &str, event: &Event) -> Result<String, AdminError> {
    admin_action(HostAdmin::Event { server, event })?
        .ok_or_else(|| AdminError::UnknownServer(format!("unknown server {server:?}")))
}

impl Guest for Guard {
    fn configure(config_json: String) -> Result<(), String> {
        let config = Config::parse(config_json.as_bytes()).map_err(|e| e.to_string())?;
        let mut engine = Engine::new(config);
        engine
            .configure(&mut HostStore, &mut HostOutputs, host::now_ms())
            .map_err(|e| e.to_string())?;
        LOADED.with_borrow_mut(|slot| {
            *slot = Some(Loaded {
                engine,
                exchanges: Exchanges::default(),
            })
        });
        Ok(())
    }

    fn client_message(ctx: MessageContext, body: Vec<u8>) -> Verdict {
        with_engine(
            |loaded| {
                message::client(
                    &mut loaded.engine,
                    &mut loaded.exchanges,
                    &ctx,
                    &body,
                    host::now_ms(),
                )
            },
            not_configured,
        )
    }

    fn server_message(ctx: MessageContext, body: Vec<u8>) -> Verdict {
        with_engine(
            |loaded| {
                message::server(
                    &mut loaded.engine,
                    &mut loaded.exchanges,
                    &ctx,
                    &body,
                    host::now_ms(),
                )
            },
            || {
                let body = jsonrpc::error_response(
                    &serde_json::Value::Null,
                    jsonrpc::INTERNAL_ERROR,
                    NOT_CONFIGURED,
                );
                Verdict::Rewrite(body.to_string().into_bytes())
            },
        )
    }

    fn admin_status(server: Option<String>) -> Result<String, AdminError> {
        admin_action(HostAdmin::View(server.as_deref()))?.ok_or_else(|| {
            AdminError::UnknownServer(format!("unknown server {:?}", server.unwrap_or_default()))
        })
    }

    fn approve(server: String, fingerprint: String) -> Result<String, AdminError> {
        admin(&server, &Event::Approve { fingerprint })
    }

    fn quarantine(server: String, reason: String) -> Result<String, AdminError> {
        admin(
            &server,
            &Event::Quarantine {
                reason,
                by: Actor::Admin,
            },
        )
    }

    fn release(server: String) -> Result<String, AdminError> {
        admin(&server, &Event::Release { by: Actor::Admin })
    }

    fn tick() -> Option<u32> {
        with_engine(|loaded| fleet::tick(&mut loaded.engine), || None)
    }
}
