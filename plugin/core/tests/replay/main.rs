//! Golden replays of real recordings (2025 sessions and 2026-07-28 stateless) through the engine.

#[path = "../support/mod.rs"]
mod support;

mod replay;
mod replay_stateless;
