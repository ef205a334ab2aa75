//! Shared-state memory under many distinct sessions: every session lists tools and calls
//! one, natively with an in-memory store, and the store's size is reported at checkpoints.
//!
//! Main design decision: session snapshots live in `limits.session_slots` fixed hash slots
//! (plugin/core state.rs), so the key count and the bytes held must plateau however many
//! sessions pass; this benchmark shows the plateau with the real engine rather than
//! asserting it from the code.

use super::messages::CONFIG;
use super::workload::{self, Framing};
use anyhow::{Result, bail};
use std::time::Instant;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

/// Tools the server lists in this benchmark (small: the subject is the session state).
pub const TOOLS: usize = 10;

/// The store's size after some number of sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Distinct sessions run so far.
    pub sessions: usize,
    /// Keys in the store.
    pub keys: usize,
    /// Bytes of values in the store.
    pub value_bytes: usize,
    /// Milliseconds since the start.
    pub elapsed_ms: u128,
}

fn with_session(exchange: &HttpExchange, session: &str) -> HttpExchange {
    let mut out = exchange.clone();
    for (name, value) in out
        .request_headers
        .iter_mut()
        .chain(out.response_headers.iter_mut())
    {
        if name.eq_ignore_ascii_case("mcp-session-id") {
            *value = session.to_string();
        }
    }
    out
}

/// Runs `sessions` distinct sessions (list then call each) and reports checkpoints at
/// every power of ten and at the end.
pub fn run(sessions: usize, mut report: impl FnMut(&Checkpoint)) -> Result<Vec<Checkpoint>> {
    let config = toolseal_core::config::Config::parse(CONFIG)
        .map_err(|e| anyhow::anyhow!("benchmark config: {e}"))?;
    let mut replay = NativeReplay::new(config);
    let tools = workload::tools(TOOLS, false);
    let list = workload::list_exchange(1, &tools, Framing::Json);
    let call = workload::call_exchange(2, 64, Framing::Json);
    let start = Instant::now();
    let mut checkpoints = Vec::new();
    let mut next_checkpoint = 1;
    for n in 1..=sessions {
        let session = format!("session-{n:09}");
        let listed = replay.exchange(
            super::gateway::SERVER,
            &with_session(&list, &session),
            usize::MAX,
        );
        let called = replay.exchange(
            super::gateway::SERVER,
            &with_session(&call, &session),
            usize::MAX,
        );
        replay.out = Default::default();
        if listed.local_reply.is_some() || called.local_reply.is_some() {
            bail!(
                "session {n}: a list or call was refused; the benchmark measures the allowed path"
            );
        }
        if n == next_checkpoint || n == sessions {
            let checkpoint = Checkpoint {
                sessions: n,
                keys: replay.store.len(),
                value_bytes: replay.store.value_bytes(),
                elapsed_ms: start.elapsed().as_millis(),
            };
            report(&checkpoint);
            checkpoints.push(checkpoint);
            if n == next_checkpoint {
                next_checkpoint = next_checkpoint.saturating_mul(10);
            }
        }
    }
    Ok(checkpoints)
}
