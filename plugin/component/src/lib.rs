//! toolseal as a WebAssembly component: the `guard` world of `wit/toolseal.wit` over
//! toolseal-core, for any wasmtime host (a stdio guard, a gateway, an agent runtime).
//!
//! Main design decision: like the proxy-wasm filter, this crate only moves bytes between the
//! host and the core [`Engine`](toolseal_core::gateway::engine::Engine): state, audit sink and clock
//! are host imports, and every decision is the core's. The only thing it keeps itself is what
//! a message-level API needs between a client message and its answer: one
//! [`Exchange`](toolseal_core::gateway::exchange::Exchange) per (server, session), in a bounded map.
//! Built for `wasm32-unknown-unknown` and encoded with `wit-component`, it imports nothing but
//! the world's own interfaces (no WASI).

mod bindings;
pub mod exchanges;
mod fleet;
mod guard;
mod host;
mod message;
