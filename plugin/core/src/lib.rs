//! toolseal-core: the policy engine that seals an MCP server's tool surface at an approved
//! baseline.
//!
//! Main design decision: the core is pure. It knows nothing of Envoy, wasmtime or the
//! component model; time, ids and state storage come in through arguments and the
//! [`state::store::StateStore`] trait, so every host (the proxy-wasm filter, the WIT
//! component, the `toolseal` command) runs the very same decisions.
//!
//! The modules, by concern:
//!
//! - [`gateway`]: the data path. The [`gateway::engine::Engine`] a host adapter drives, one
//!   call per host callback ([`gateway::stream`], [`gateway::body`]), and what it does with
//!   each message: requests and `tools/call` checks, responses (JSON or SSE bodies),
//!   `tools/list` verification, lists served again, resumed streams, what may pass unread,
//!   denials, and the admin API.
//! - [`config`]: the plugin configuration, parsed and validated in one pass into the types
//!   of the modules below.
//! - [`policy`]: the domain. What a tool set is (fingerprints, schemas), how it may change
//!   (the status lifecycle, drift, drift scope), what first contact screens for, and the
//!   call rules. Knows nothing of HTTP.
//! - [`state`]: what toolseal keeps in the host's shared store (server records, approved
//!   sets, caller snapshots, page accumulators), the store trait, and the audit events.
//! - [`wire`]: the formats bytes arrive in, parsed strictly and bounded: JSON, canonical
//!   JSON, JSON-RPC frames and response envelopes, Server-Sent Events, the MCP revision.
//!
//! Dependencies point down this list: `gateway` uses everything; `config` uses `policy`,
//! `state` and `wire`; `policy` and `state` use each other's types (a record holds a
//! lifecycle status, an approved set is read from the store) and `wire`; `wire` uses nothing
//! else. Nothing below `gateway` reads the config: settings come in as arguments.
//!
//! Outside the product build:
//!
//! - `transcript` (the `replay` feature): recorded traffic and a native driver that replays it
//!   through the engine, for the `toolseal` command, the fuzz targets and tests. With the
//!   in-memory store (the `memory-store` feature) it stays out of the plugin and the component.

pub mod config;
pub mod gateway;
pub mod policy;
pub mod state;
#[cfg(feature = "replay")]
pub mod transcript;
pub mod wire;
