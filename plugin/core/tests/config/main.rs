//! The configuration: parse → validate, and docs/config.md held to the parser.
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

mod doc;
