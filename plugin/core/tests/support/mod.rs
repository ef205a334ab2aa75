//! What the core's test binaries share: the fixtures and the request builders that several
//! test files used to copy. Each binary includes this module by path, so a helper one binary
//! does not call is dead code there, not a mistake.
#![allow(dead_code)]

pub mod admin;
pub mod examples;
pub mod files;
pub mod gateway;
pub mod host;
pub mod sse;
pub mod tools;

/// The protocol version of the stateless revision (MCP 2026-07-28).
pub const V2026: &str = "2026-07-28";

/// The next number of a seeded sequence (xorshift64: the same steps for a seed on every run;
/// `state` must not be 0).
pub fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
