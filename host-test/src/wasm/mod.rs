//! wasmtime wiring: the engine, the precompiled-module cache, the import table and the
//! plugin VM that runs the proxy-wasm callbacks.
//!
//! Main design decision: one [`plugin_vm::PluginVm`] owns one `Store` whose data is the
//! whole host state; nothing is global, so replays (and tests) never share state.

pub mod caller_guest;
pub mod linker;
pub mod module_cache;
pub mod plugin_vm;

use wasmtime::{Config, Engine};

/// The engine every toolseal replay uses: Cranelift, fuel metering on (so that a looping
/// plugin is stopped instead of hanging the run).
pub fn engine() -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.consume_fuel(true);
    Engine::new(&config).map_err(anyhow::Error::from)
}
