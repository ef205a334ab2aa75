//! MCP 2026-07-28 (stateless) through the engine, with a host that works and one that fails it.

#[path = "../support/mod.rs"]
mod support;

mod stateless;
mod stateless_faults;
