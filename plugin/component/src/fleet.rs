//! The fleet store's loop for a synchronous host: what the engine asks the store for is sent
//! through the `fleet` import at once, and the engine entry that asked is made again.
//!
//! Main design decision: the component blocks where Envoy pauses a stream. An entry that
//! answers `Fleet(call)` kept nothing of its run; the call and the calls its replies ask
//! for are sent, each reply handed to [`Engine::fleet_reply`], then the same entry is made
//! again with the same arguments and decides from what the store said. Both loops are
//! bounded ([`BOUND`]); the engine itself stops waiting after its own bound and fails closed,
//! so [`until_decided`] giving up is a last resort the callers also fail closed on.

use crate::host::{self, HostOutputs, HostStore};
use toolseal_core::gateway::engine::Engine;
use toolseal_core::gateway::exchange::Exchange;
use toolseal_core::gateway::fleet::{FleetCall, FleetReply};
use toolseal_core::wire::etcd::RANGE_PATH;

/// How many calls one chain may send, and how many times one entry is made again.
pub const BOUND: usize = 16;

/// Makes `entry` until it answers without waiting for the fleet store (`Err(call)`: send
/// `call`, then make it again). `None`: it still waited after [`BOUND`] rounds.
pub fn until_decided<T>(
    engine: &mut Engine,
    exchange: &mut Exchange,
    mut entry: impl FnMut(&mut Engine, &mut Exchange) -> Result<T, FleetCall>,
) -> Option<T> {
    for _ in 0..BOUND {
        match entry(engine, exchange) {
            Ok(answer) => return Some(answer),
            Err(call) => send_chain(engine, Some(&mut *exchange), call),
        }
    }
    None
}

/// Sends `call` and the calls its replies ask for, handing every reply to the engine. A
/// chain longer than [`BOUND`] is cut: its next call is answered as failed, unsent (what
/// needed it fails closed).
pub fn send_chain(engine: &mut Engine, mut exchange: Option<&mut Exchange>, call: FleetCall) {
    let mut call = call;
    for _ in 0..BOUND {
        let reply = host::fleet_send(&call);
        let next = engine.fleet_reply(
            &mut HostStore,
            &mut HostOutputs,
            host::now_ms(),
            exchange.as_deref_mut(),
            &call,
            reply,
        );
        match next {
            Some(next) => call = next,
            None => return,
        }
    }
    let cut = FleetReply::Failed(format!("more than {BOUND} fleet store calls in one chain"));
    let _ended = engine.fleet_reply(
        &mut HostStore,
        &mut HostOutputs,
        host::now_ms(),
        exchange,
        &call,
        cut,
    );
}

/// Pushes the closures the last message made (a drift, a quarantine) to the fleet store;
/// what does not get through is pushed again by [`tick`].
pub fn push_closures(engine: &mut Engine) {
    for _ in 0..BOUND {
        let Some(call) = engine.fleet_outbox(&mut HostStore) else {
            return;
        };
        send_chain(engine, None, call);
    }
}

/// The host's timer: pushes what was not pushed, then reads what other instances wrote.
/// Returns the milliseconds until the next tick (`None`: no fleet store).
pub fn tick(engine: &mut Engine) -> Option<u32> {
    let sync_ms = engine.fleet_settings()?.sync_ms;
    for _ in 0..BOUND {
        let Some(call) = engine.fleet_tick(&mut HostStore, &mut HostOutputs, host::now_ms()) else {
            break;
        };
        // The sync comes last: once it is answered, this tick's work is done.
        let sync = call.path == RANGE_PATH;
        send_chain(engine, None, call);
        if sync {
            break;
        }
    }
    Some(u32::try_from(sync_ms).unwrap_or(u32::MAX))
}
