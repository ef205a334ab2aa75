//! The host side of the proxy-wasm ABI 0.2.1 (and the WASI preview1 functions a
//! `wasm32-wasip1` module imports), independent of any wasm engine.
//!
//! Main design decision: every hostcall is a plain function over the [`guest::Guest`]
//! trait (guest memory, guest allocator, host state) that validates its arguments and
//! every guest pointer/length pair, and returns an ABI status; only a trap inside the guest
//! unwinds. The wasmtime wiring ([`crate::wasm`]) is a thin adapter, and tests drive the
//! same functions over a plain byte vector.

pub mod buffers;
pub mod control;
pub mod faults;
pub mod guest;
pub mod header_map;
pub mod http_call;
pub mod maps;
pub mod metrics;
pub mod properties;
pub mod shared;
pub mod shared_store;
pub mod state;
pub mod types;
pub mod wasi;
