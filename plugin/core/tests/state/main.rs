//! The shared state under pressure: workers and root contexts racing on one store, a host whose
//! store fails, and bounds whatever servers and clients do.
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

mod config_races;
mod host_faults;
mod state_bounds;
mod worker_races;
