//! The shared state under pressure: workers and root contexts racing on one store, a host whose
//! store fails, and bounds whatever servers and clients do.

#[path = "../support/mod.rs"]
mod support;

mod config_races;
mod host_faults;
mod state_bounds;
mod worker_races;
