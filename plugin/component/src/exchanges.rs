//! What the component remembers between a client message and the server's answer: the
//! pending `tools/list` and `tools/call` ids of each (server, session).
//!
//! Main design decision: a fixed number of slots ([`CAPACITY`]) with least-recently-used
//! eviction, and a cap on pending ids per slot ([`MAX_PENDING`], oldest dropped first), so
//! memory stays bounded however many sessions pass. Losing an entry is safe: a `tools/list`
//! answer nobody is waiting for is still checked (the core checks every tool list it sees),
//! and a lost call only skips the `outputSchema` check of that one result. An exchange is
//! taken out while a message is processed and put back after, so no lookup can fail.

use toolseal_core::gateway::exchange::Exchange;

/// How many (server, session) pairs are remembered at once.
pub const CAPACITY: usize = 256;
/// How many pending ids of each kind one pair keeps.
pub const MAX_PENDING: usize = 256;

struct Slot {
    last_used: u64,
    exchange: Exchange,
}

/// The bounded map of exchanges.
#[derive(Default)]
pub struct Exchanges {
    slots: Vec<Slot>,
    clock: u64,
}

impl Exchanges {
    /// Takes the exchange of `server` and `session` out of the map (a new one if none is
    /// held); give it back with [`Exchanges::put`].
    pub fn take(&mut self, server: &str, session: Option<&str>) -> Exchange {
        let found = self
            .slots
            .iter()
            .position(|s| s.exchange.server == server && s.exchange.session.as_deref() == session);
        match found {
            Some(index) => self.slots.swap_remove(index).exchange,
            None => Exchange::new(server, session),
        }
    }

    /// Puts an exchange back, evicting the least recently used one when the map is full.
    pub fn put(&mut self, mut exchange: Exchange) {
        exchange.absorb(Exchange::default(), MAX_PENDING);
        self.clock = self.clock.wrapping_add(1);
        let slot = Slot {
            last_used: self.clock,
            exchange,
        };
        if self.slots.len() < CAPACITY {
            self.slots.push(slot);
            return;
        }
        let oldest = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.last_used)
            .map(|(i, _)| i);
        if let Some(place) = oldest.and_then(|i| self.slots.get_mut(i)) {
            *place = slot;
        }
    }

    /// Adds what a forwarded client message left pending to its pair's exchange.
    pub fn merge(&mut self, from: Exchange) {
        let mut exchange = self.take(&from.server, from.session.as_deref());
        exchange.absorb(from, MAX_PENDING);
        self.put(exchange);
    }
}
