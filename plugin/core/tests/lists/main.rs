//! A tool list met again: known sets and remembered lists, pages of two listings at once, the
//! per-worker caches, and the surface views of one server.
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

mod caches;
mod known_list;
mod known_sets;
mod pages_interleaved;
mod remembered_sections;
mod sealed_surface;
mod views;
