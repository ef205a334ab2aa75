//! What the stdio guard's test binaries share: a real etcd, and the recordings and golden
//! decision files they replay (the same files the core's tests and host-test read). Each
//! binary includes this module, so a helper one binary does not call is dead code there,
//! not a mistake.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs,
    dead_code
)]

pub mod etcd;
pub mod files;
