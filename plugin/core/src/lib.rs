//! toolseal-core: the policy engine that seals an MCP server's tool surface at an approved
//! baseline.
//!
//! Main design decision: the core is pure. It knows nothing of Envoy, wasmtime or the
//! component model; time, ids and state storage come in through arguments and the
//! [`store::StateStore`] trait, so every host (the proxy-wasm filter, the WIT component, the
//! `toolseal` command) runs the very same decisions.

pub mod admin;
pub mod admin_views;
pub mod approved;
pub mod audit;
pub mod body;
pub mod call;
pub mod canonical;
pub mod config;
pub mod containment;
pub mod denial;
pub mod drift;
pub mod engine;
pub mod envelope;
pub mod fingerprint;
pub mod json;
pub mod json_span;
pub mod jsonrpc;
pub mod known_list;
pub mod listing;
pub mod parse_cache;
pub mod policy;
pub mod response;
pub mod resume;
pub mod revision;
pub mod schema;
pub mod screening;
pub mod snapshot_key;
pub mod sse;
pub mod state;
pub mod status;
pub mod store;
pub mod transcript;
pub mod unread;
