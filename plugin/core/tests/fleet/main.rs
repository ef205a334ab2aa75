//! The fleet store: several instances over one in-memory etcd.

#[path = "../support/mod.rs"]
mod support;

mod fleet_store;
