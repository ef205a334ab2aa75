//! The wire formats on their own: canonical JSON and fingerprints, strict JSON, JSON-RPC
//! frames, SSE (owned and read in place).

#[path = "../support/mod.rs"]
mod support;

mod fingerprint;
mod jsonrpc;
mod sse;
mod sse_in_place;
mod strict_json;
