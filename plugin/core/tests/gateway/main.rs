//! The engine's stories through synthetic exchanges: the lifecycle of a server, tool-scoped
//! containment, decision records, result contracts, what a closed server shows beyond its
//! tools, the admin plane, the stream as a host delivers it, and what the MCP conformance
//! suite found.
// A test that cannot go on fails by panicking, and the test data is its own: the
// workspace's denials of panics and unchecked indexing guard the product's code.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

#[path = "../support/mod.rs"]
mod support;

mod admin_plane;
mod closed_surface;
mod conformance;
mod containment;
mod lifecycle;
mod records;
mod results;
mod sealed_first;
mod sealed_pages;
mod sealed_sections;
mod stream;
mod use_policy;
