//! The engine's stories through synthetic exchanges: the lifecycle of a server, tool-scoped
//! containment, decision records, result contracts, the admin plane, the stream as a host
//! delivers it, and what the MCP conformance suite found.

#[path = "../support/mod.rs"]
mod support;

mod admin_plane;
mod conformance;
mod containment;
mod lifecycle;
mod records;
mod results;
mod stream;
