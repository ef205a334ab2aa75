//! The policy over the state file: every call runs under the file's lock, on the state as
//! the file holds it, and is persisted before its verdict is acted on.
//!
//! Main design decision: durability comes before effect. A message's verdict is returned
//! only after the state it changed (a new baseline, a drift, an audit entry) is on disk, so a
//! crash can lose a message but never an approval or a detected drift. Without a state file
//! the state lives in memory for the life of the process.

use crate::policy::Policy;
use crate::state_file::StateFile;
use anyhow::{Result, anyhow};

/// A policy instance and, optionally, the file its state persists to.
pub struct PersistentPolicy {
    policy: Policy,
    file: Option<StateFile>,
}

impl PersistentPolicy {
    /// `policy` whose host store was loaded from `file` (see [`StateFile::open`]).
    pub fn new(policy: Policy, file: Option<StateFile>) -> Self {
        PersistentPolicy { policy, file }
    }

    /// Runs `call` on the policy under the state file's lock: re-reads the file if another
    /// process replaced it, then writes it if the call changed anything.
    pub fn call<R>(&mut self, call: impl FnOnce(&mut Policy) -> Result<R>) -> Result<R> {
        let Some(file) = self.file.as_mut() else {
            return call(&mut self.policy);
        };
        let mut locked = file.lock().map_err(|e| anyhow!("{e}"))?;
        locked
            .refresh(&mut self.policy.host().store)
            .map_err(|e| anyhow!("{e}"))?;
        self.policy.host().changed = false;
        let result = call(&mut self.policy)?;
        if self.policy.host().changed {
            locked
                .save(&self.policy.host().store)
                .map_err(|e| anyhow!("{e}"))?;
            self.policy.host().changed = false;
        }
        Ok(result)
    }
}
