//! toolseal's host-side toolkit: a wasmtime embedding that loads the very proxy-wasm
//! `.wasm` Envoy loads and replays recorded MCP traffic through it, plus the native
//! `fingerprint` / `diff` / `pin` commands over toolseal-core.
//!
//! Main design decision: the proxy-wasm host ABI ([`abi`]) is written against a small
//! guest-access trait, not against wasmtime, so each hostcall is unit-tested on plain
//! memory; [`wasm`] wires it into wasmtime; [`replay`] drives exchanges the way Envoy's
//! filter chain does (buffering on pause, cumulative body sizes, local replies that stop
//! the exchange) and reads the plugin's decision records from its log.

pub mod abi;
pub mod bench;
pub mod cli;
pub mod fleet;
pub mod input_error;
pub mod replay;
pub mod wasm;
pub mod workers;
