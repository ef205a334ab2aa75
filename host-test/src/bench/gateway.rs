//! The two gateways a benchmark drives with the same traffic: toolseal-core natively, and
//! the built proxy-wasm `.wasm` on wasmtime through the proxy-wasm ABI.
//!
//! Main design decision: both run the whole HTTP exchange the way their host does (request
//! headers, request body, response headers, response body), so a message's cost includes
//! everything the policy does for it; the wasm side also pays the ABI (hostcalls, copies
//! into guest memory), which is what Envoy pays too.

use crate::abi::shared_store::SharedStore;
use crate::abi::state::{DEFAULT_EPOCH_NS, Identity};
use crate::abi::types::LogLevel;
use crate::replay::exchange::{self, ExchangeSetup};
use crate::wasm::module_cache;
use crate::wasm::plugin_vm::{PluginVm, VmSettings};
use anyhow::{Context, Result, anyhow};
use std::path::Path;
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

/// The server id every benchmark exchange is for.
pub const SERVER: &str = "bench";

/// What the client saw: whether the plugin answered locally, and the response body.
pub type Seen = (bool, Vec<u8>);

/// A gateway that runs whole exchanges.
pub trait Gateway {
    /// Runs one exchange.
    fn run(&mut self, exchange: &HttpExchange) -> Result<Seen>;
}

/// toolseal-core natively, with an in-memory store.
pub struct Native {
    replay: NativeReplay,
    /// Body chunk size (`usize::MAX`: whole bodies).
    chunk: usize,
}

impl Native {
    /// A configured native gateway.
    /// `chunk`: the size of the chunks bodies arrive in (0: whole).
    pub fn new(config: &[u8], chunk: usize) -> Result<Self> {
        let config = Config::parse(config).map_err(|e| anyhow!("benchmark config: {e}"))?;
        Ok(Native {
            replay: NativeReplay::new(config),
            chunk: match chunk {
                0 => usize::MAX,
                n => n,
            },
        })
    }
}

impl Gateway for Native {
    fn run(&mut self, exchange: &HttpExchange) -> Result<Seen> {
        let replayed = self.replay.exchange(SERVER, exchange, self.chunk);
        // Outputs are collected for tests; a benchmark must not grow them without bound.
        self.replay.out = Default::default();
        Ok(match replayed.local_reply {
            Some(reply) => (true, reply.body),
            None => (false, replayed.response_body),
        })
    }
}

/// The `.wasm` in a proxy-wasm VM on wasmtime.
pub struct Wasm {
    vm: PluginVm,
    setup: ExchangeSetup,
}

/// A compiled plugin module and the engine it belongs to.
pub struct Module {
    engine: wasmtime::Engine,
    module: wasmtime::Module,
}

impl Module {
    /// Loads `path` (through the precompiled-module cache when there is one) for an engine
    /// with `metering`.
    pub fn load(path: &Path, metering: crate::wasm::Metering) -> Result<Self> {
        let wasm = std::fs::read(path).with_context(|| {
            format!(
                "reading {} (build it: cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm)",
                path.display()
            )
        })?;
        let engine = crate::wasm::engine_with(metering)?;
        let cache = module_cache::default_cache_dir();
        let (module, _) = module_cache::load(&engine, &wasm, cache.as_deref())?;
        Ok(Module { engine, module })
    }
}

impl Wasm {
    /// Starts a VM with `config` (Envoy's start sequence); `chunk`: the size of the chunks
    /// bodies arrive in (0: whole).
    pub fn new(module: &Module, config: &[u8], chunk: usize) -> Result<Self> {
        let identity = Identity {
            route_name: SERVER.into(),
            cluster_name: SERVER.into(),
            plugin_name: "toolseal".into(),
            root_id: "toolseal".into(),
            vm_id: "toolseal".into(),
        };
        let settings = VmSettings {
            identity,
            // Envoy runs the plugin at info (`--component-log-level wasm:info`).
            log_level: LogLevel::Info,
            plugin_configuration: config.to_vec(),
            vm_configuration: Vec::new(),
            start_ns: DEFAULT_EPOCH_NS,
            faults: Vec::new(),
            shared_data: SharedStore::default(),
        };
        let vm = PluginVm::start(&module.engine, &module.module, settings)?;
        Ok(Wasm {
            vm,
            setup: ExchangeSetup {
                chunk,
                ..ExchangeSetup::default()
            },
        })
    }

    /// Keys of shared data the VM holds.
    pub fn shared_data_keys(&self) -> usize {
        self.vm.host().vm.shared_data.len()
    }
}

impl Gateway for Wasm {
    fn run(&mut self, exchange: &HttpExchange) -> Result<Seen> {
        let host = &mut self.vm.host_mut().vm;
        host.now_ns = host.now_ns.saturating_add(1_000_000_000);
        let outcome = exchange::run(&mut self.vm, exchange, &self.setup)?;
        Ok(match outcome.local_response {
            Some(reply) => (true, reply.body),
            None => (false, outcome.response_body),
        })
    }
}
