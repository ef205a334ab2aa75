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

/// Whether the guest's instructions are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metering {
    /// Fuel metering: a looping plugin is stopped instead of hanging the run.
    Fuel,
    /// Nothing counted, as in Envoy (V8 meters nothing). Fuel adds instructions Envoy never
    /// runs, so `toolseal bench` measures without it by default.
    Off,
}

/// The engine every toolseal replay uses: Cranelift, fuel metering on.
pub fn engine() -> anyhow::Result<Engine> {
    engine_with(Metering::Fuel)
}

/// A Cranelift engine with the given metering.
pub fn engine_with(metering: Metering) -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.consume_fuel(metering == Metering::Fuel);
    if std::env::var_os("TOOLSEAL_PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config).map_err(anyhow::Error::from)
}
