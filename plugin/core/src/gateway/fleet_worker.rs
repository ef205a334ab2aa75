//! A worker's fleet bookkeeping, and the calls the engine asks its host to make to the fleet
//! store (see [`crate::gateway::fleet`], which decides with them).

use crate::gateway::exchange::Exchange;
use crate::policy::status::ServerRecord;
use crate::state::audit::CollectedOutputs;
use std::any::Any;
use std::collections::BTreeMap;

/// A request for the host to send to the fleet store: an HTTP `POST` of `body` (JSON) to
/// `path`, answered within `timeout_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetCall {
    /// `/v3/kv/range` or `/v3/kv/txn`.
    pub path: &'static str,
    /// The request body.
    pub body: Vec<u8>,
    /// How long the host waits for the answer.
    pub timeout_ms: u64,
    /// Why it is made: how its answer is read.
    pub(crate) purpose: Purpose,
}

/// What the host got back for a [`FleetCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetReply {
    /// An HTTP answer.
    Answered {
        /// HTTP status.
        status: u16,
        /// Body bytes.
        body: Vec<u8>,
    },
    /// No answer (unreachable, timed out, refused): what needed it fails closed.
    Failed(String),
}

/// Why a call was made: how its answer is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Purpose {
    /// A record the replica lacks.
    Read { server: String },
    /// The sets a record read from the store names that the replica lacks; the record is
    /// written once they are in.
    ReadSets {
        server: String,
        record: Box<ServerRecord>,
        mod_revision: u64,
    },
    /// A change that opens, to be accepted by the store.
    Open {
        server: String,
        record: Box<ServerRecord>,
    },
    /// A local closure, written to the store.
    Push {
        server: String,
        record: Box<ServerRecord>,
    },
    /// What other instances wrote since the last sync.
    Sync,
}

/// How many callbacks of one worker may wait for the store's yes to an opening change at
/// once; past it the oldest one decides again when its answer comes.
pub(crate) const MAX_DECIDED: usize = 64;

/// A run that proposed an opening change and decided as if it were made: its answer stands
/// once the store accepts.
pub(crate) struct Decided {
    pub(crate) result: Box<dyn Any>,
    pub(crate) exchange: Exchange,
    pub(crate) outputs: CollectedOutputs,
    pub(crate) writes: Vec<(String, Vec<u8>)>,
    /// What the run held or released on its worker (see [`Engine::held`](crate::gateway::engine::Engine::held)).
    pub(crate) held: HeldChange,
}

/// What one run changed in its worker's held servers. A run that waits for the store is
/// done again from what the store answers, so what it held or released is taken back
/// (a hold left by a run that was only waiting would refuse calls after the list that
/// followed closed or verified the server); a kept run's change is made when its answer
/// stands.
#[derive(Debug, Default)]
pub(crate) struct HeldChange {
    pub(crate) held: Vec<String>,
    pub(crate) released: Vec<String>,
}

impl std::fmt::Debug for Decided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decided")
            .field("writes", &self.writes.len())
            .finish()
    }
}

/// A worker's fleet bookkeeping (the replica itself is the host's shared data).
#[derive(Debug, Default)]
pub struct FleetWorker {
    /// Runs waiting for the store's yes, by ticket, oldest first.
    pub(crate) decided: Vec<(u64, Decided)>,
    /// The last ticket given.
    pub(crate) next_ticket: u64,
    /// The store revision this worker has read other instances' writes up to.
    pub(crate) sync_revision: u64,
    /// The last answer from the store was a failure (`store.unreachable` was audited).
    pub(crate) down: bool,
    /// Servers whose records this worker closed locally and has not pushed yet.
    pub(crate) pushes: Vec<String>,
    /// When the last sync answered (ms since the epoch).
    pub(crate) last_sync_ms: u64,
    /// Servers the store had no record of, and when it said so: a first contact does not ask
    /// again for every message within `sync_ms` (a record written since by another instance
    /// is found by the next sync, or by the write that conflicts with it).
    pub(crate) absent: Vec<(String, u64)>,
    /// The configured servers whose config (pin, lock, quarantine) was applied over the
    /// record of this revision of the store.
    pub(crate) configured: BTreeMap<String, Option<u64>>,
}

impl FleetWorker {
    /// When the last sync answered (ms since the epoch; 0: never).
    pub fn last_sync_ms(&self) -> u64 {
        self.last_sync_ms
    }

    /// Whether the last answer from the store was a failure.
    pub fn down(&self) -> bool {
        self.down
    }
}
