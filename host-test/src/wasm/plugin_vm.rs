//! One proxy-wasm plugin VM: instantiation, the start sequence Envoy runs
//! (`_initialize`, root context, `proxy_on_vm_start`, `proxy_on_configure`) and typed entry
//! points for the HTTP callbacks.
//!
//! Main design decision: every guest call is metered (fuel) and every trap becomes a
//! [`VmFault`] that carries what explains it (the trap, the plugin's stderr and error logs,
//! outgoing calls it attempted), because "wasm trap: unreachable" alone tells nobody which
//! `unwrap` fired.

use super::caller_guest::{GuestExports, StoreData};
use super::linker::{linker, missing_imports};
use crate::abi::buffers::ConfigPhase;
use crate::abi::faults::Fault;
use crate::abi::http_call::CallAnswer;
use crate::abi::shared_store::SharedStore;
use crate::abi::state::{HostState, Identity, LogEntry, StreamState};
use crate::abi::types::{Action, LogLevel};
use anyhow::{Context, Result, bail};
use std::any::Any;
use std::collections::HashMap;
use wasmtime::{
    Engine, Instance, Linker, Module, Store, StoreLimitsBuilder, TypedFunc, WasmParams, WasmResults,
};

/// Default fuel given to each guest call: far more than any policy decision needs, far less than
/// an endless loop.
pub const FUEL_PER_CALL: u64 = 5_000_000_000;

/// Largest linear memory a plugin may grow to.
const MAX_MEMORY_BYTES: usize = 512 << 20;

/// How to start a VM.
#[derive(Debug, Clone)]
pub struct VmSettings {
    /// Route, cluster and plugin names the host answers.
    pub identity: Identity,
    /// The host log level (debug makes the plugin emit decision records).
    pub log_level: LogLevel,
    /// Plugin configuration bytes (`proxy_on_configure`).
    pub plugin_configuration: Vec<u8>,
    /// VM configuration bytes (`proxy_on_vm_start`).
    pub vm_configuration: Vec<u8>,
    /// Clock at start, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// Hostcall faults to inject, from the first call of the start sequence on.
    pub faults: Vec<Fault>,
    /// The shared data the VM reads and writes: a store of its own, or one shared with
    /// other worker VMs.
    pub shared_data: SharedStore,
}

/// The plugin returned `false` from `proxy_on_configure`: its configuration was refused.
#[derive(Debug)]
pub struct ConfigRefused {
    /// What the plugin logged while configuring.
    pub logs: Vec<LogEntry>,
}

impl std::fmt::Display for ConfigRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the plugin refused its configuration (proxy_on_configure returned false)"
        )?;
        for entry in &self.logs {
            write!(f, "\n  plugin {}: {}", entry.level.name(), entry.message)?;
        }
        write!(
            f,
            "\nFix the configuration file (or pass none to use the plugin defaults)."
        )
    }
}

impl std::error::Error for ConfigRefused {}

/// The guest trapped (a panic, an out-of-fuel loop, `proc_exit`...).
#[derive(Debug)]
pub struct VmFault {
    /// The callback that was running.
    pub during: String,
    /// The trap, as wasmtime reports it.
    pub trap: String,
    /// The plugin's stderr (a Rust panic message).
    pub stderr: String,
    /// The plugin's error and critical logs.
    pub error_logs: Vec<LogEntry>,
    /// Outgoing calls the plugin attempted, which this host refuses.
    pub unsupported_calls: Vec<&'static str>,
}

impl std::fmt::Display for VmFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the plugin trapped in {}: {}", self.during, self.trap)?;
        if !self.stderr.trim().is_empty() {
            write!(f, "\n  plugin stderr: {}", self.stderr.trim())?;
        }
        for entry in &self.error_logs {
            write!(f, "\n  plugin {}: {}", entry.level.name(), entry.message)?;
        }
        if !self.unsupported_calls.is_empty() {
            write!(
                f,
                "\n  the plugin called {} (not offered by the replay host, which has no upstream clusters)",
                self.unsupported_calls.join(", ")
            )?;
        }
        write!(
            f,
            "\nIn Envoy this fault kills the worker's VM (fail closed: 503s until restart); fix the plugin."
        )
    }
}

impl std::error::Error for VmFault {}

/// A started plugin VM.
pub struct PluginVm {
    store: Store<StoreData>,
    instance: Instance,
    root_id: u32,
    next_id: u32,
    /// Fuel each guest call gets; `None` when the engine does not meter.
    fuel_per_call: Option<u64>,
    /// Exports already looked up, by name: each holds a `TypedFunc<P, R>` (Envoy resolves
    /// the callbacks once per VM; a lookup by name per call would have `toolseal bench`
    /// count host-test's lookups as the plugin's cost).
    exports: HashMap<String, Box<dyn Any>>,
}

/// A module and the import table it is instantiated with, built once: defining every
/// hostcall costs more than the rest of a VM start (docs/host-test.md), and a multi-worker
/// exploration starts thousands of VMs of one module.
#[derive(Clone)]
pub struct LinkedModule {
    engine: Engine,
    module: Module,
    linker: Linker<StoreData>,
}

impl LinkedModule {
    /// Links `module` (compiled for `engine`) against this host.
    pub fn new(engine: &Engine, module: &Module) -> Result<Self> {
        Ok(LinkedModule {
            engine: engine.clone(),
            module: module.clone(),
            linker: linker(engine)?,
        })
    }
}

impl PluginVm {
    /// Instantiates `module` and runs Envoy's start sequence. A refused configuration is a
    /// [`ConfigRefused`] error, a trap a [`VmFault`].
    pub fn start(engine: &Engine, module: &Module, settings: VmSettings) -> Result<Self> {
        Self::start_linked(&LinkedModule::new(engine, module)?, settings)
    }

    /// [`PluginVm::start`] for a module linked once.
    pub fn start_linked(linked: &LinkedModule, settings: VmSettings) -> Result<Self> {
        let (engine, module, linker) = (&linked.engine, &linked.module, &linked.linker);
        let mut host = HostState::default();
        host.vm.identity = settings.identity;
        host.vm.log_level = settings.log_level;
        host.vm.plugin_configuration = settings.plugin_configuration;
        host.vm.vm_configuration = settings.vm_configuration;
        host.vm.now_ns = settings.start_ns;
        host.vm.hostcalls.planned = settings.faults;
        host.vm.shared_data = settings.shared_data;
        let limits = StoreLimitsBuilder::new()
            .memory_size(MAX_MEMORY_BYTES)
            .build();
        let data = StoreData {
            host,
            limits,
            exports: GuestExports::default(),
        };
        let mut store = Store::new(engine, data);
        store.limiter(|data| &mut data.limits);
        let missing = missing_imports(linker, &mut store, module);
        if !missing.is_empty() {
            bail!(
                "the module imports functions this proxy-wasm host does not offer: {}. Is it a proxy-wasm ABI 0.2.x module built for wasm32-wasip1 or wasm32-unknown-unknown?",
                missing.join(", ")
            );
        }
        // `get_fuel` fails exactly when the engine does not meter.
        let fuel_per_call = store.get_fuel().is_ok().then_some(FUEL_PER_CALL);
        if let Some(fuel) = fuel_per_call {
            store.set_fuel(fuel).map_err(anyhow::Error::from)?;
        }
        let instance = linker
            .instantiate(&mut store, module)
            .map_err(anyhow::Error::from)
            .context("instantiating the plugin")?;
        check_abi(module)?;
        store.data_mut().exports = guest_exports(&instance, &mut store);
        let mut vm = PluginVm {
            store,
            instance,
            root_id: 1,
            next_id: 2,
            fuel_per_call,
            exports: HashMap::new(),
        };
        vm.run_start_sequence()?;
        Ok(vm)
    }

    fn run_start_sequence(&mut self) -> Result<()> {
        if self
            .instance
            .get_func(&mut self.store, "_initialize")
            .is_some()
        {
            self.call::<(), ()>("_initialize", ())?;
        }
        let root = self.root_id;
        self.host_mut().vm.live_contexts.push(root);
        self.host_mut().vm.effective_context = root;
        self.call::<(u32, u32), ()>("proxy_on_context_create", (root, 0))?;
        let vm_config_len = len_u32(self.host().vm.vm_configuration.len());
        self.host_mut().vm.config_phase = ConfigPhase::VmStart;
        let started = self.call::<(u32, u32), u32>("proxy_on_vm_start", (root, vm_config_len));
        self.host_mut().vm.config_phase = ConfigPhase::None;
        if started? == 0 {
            bail!(
                "the plugin refused to start (proxy_on_vm_start returned false): {}",
                self.log_summary()
            );
        }
        let config_len = len_u32(self.host().vm.plugin_configuration.len());
        self.host_mut().vm.config_phase = ConfigPhase::Configure;
        let configured = self.call::<(u32, u32), u32>("proxy_on_configure", (root, config_len));
        self.host_mut().vm.config_phase = ConfigPhase::None;
        if configured? == 0 {
            let logs = std::mem::take(&mut self.host_mut().vm.logs);
            return Err(ConfigRefused { logs }.into());
        }
        Ok(())
    }

    fn log_summary(&self) -> String {
        let logs: Vec<&str> = self
            .host()
            .vm
            .logs
            .iter()
            .map(|e| e.message.as_str())
            .collect();
        if logs.is_empty() {
            "it logged nothing".into()
        } else {
            logs.join("; ")
        }
    }

    /// The host state.
    pub fn host(&self) -> &HostState {
        &self.store.data().host
    }

    /// The host state, mutable (the runner sets up streams, clock and metadata here).
    pub fn host_mut(&mut self) -> &mut HostState {
        &mut self.store.data_mut().host
    }

    /// Sets the fuel each later guest call gets (about one unit per wasm instruction); no
    /// effect on an engine without metering.
    pub fn set_fuel_per_call(&mut self, fuel: u64) {
        if self.fuel_per_call.is_some() {
            self.fuel_per_call = Some(fuel);
        }
    }

    /// The root context id.
    pub fn root_id(&self) -> u32 {
        self.root_id
    }

    /// Creates an HTTP context under the root context, with the stream state `stream`
    /// builds from the new context id, and returns that id.
    pub fn create_http_context_with(
        &mut self,
        stream: impl FnOnce(u32) -> StreamState,
    ) -> Result<u32> {
        let id = self.next_id;
        self.next_id = self
            .next_id
            .checked_add(1)
            .context("context ids exhausted")?;
        self.host_mut().vm.live_contexts.push(id);
        self.host_mut().stream = Some(stream(id));
        let root = self.root_id;
        self.host_mut().vm.effective_context = id;
        self.call::<(u32, u32), ()>("proxy_on_context_create", (id, root))?;
        Ok(id)
    }

    /// Runs a header or body callback (`proxy_on_request_headers`, ...), which takes
    /// `(context, size or count, end_of_stream)` and returns an action.
    pub fn http_callback(
        &mut self,
        name: &str,
        context_id: u32,
        size: u32,
        end_of_stream: bool,
    ) -> Result<Action> {
        self.host_mut().vm.effective_context = context_id;
        let raw =
            self.call::<(u32, u32, u32), u32>(name, (context_id, size, u32::from(end_of_stream)))?;
        Ok(Action::from_u32(raw))
    }

    /// Ends an HTTP context: `proxy_on_log`, `proxy_on_done`, `proxy_on_delete`. Its
    /// callouts still in flight are not cancelled: Envoy sends them from the root context,
    /// which answers them after the stream is gone (the plugin drops what no one awaits).
    pub fn finish_http_context(&mut self, context_id: u32) -> Result<()> {
        self.host_mut().vm.effective_context = context_id;
        self.call::<u32, ()>("proxy_on_log", context_id)?;
        self.call::<u32, u32>("proxy_on_done", context_id)?;
        self.call::<u32, ()>("proxy_on_delete", context_id)?;
        self.host_mut()
            .vm
            .live_contexts
            .retain(|c| *c != context_id);
        Ok(())
    }

    /// Delivers the answer of callout `token` (`None`: the call failed, delivered as Envoy
    /// does with no headers and no body) through `proxy_on_http_call_response` on the root
    /// context, as Envoy does (it sends every callout from the root context, whichever
    /// stream asked; the plugin makes the stream effective again with
    /// `proxy_set_effective_context`). Returns `false` when no such call is in flight.
    pub fn deliver_http_call(&mut self, token: u32, answer: Option<CallAnswer>) -> Result<bool> {
        if self.host_mut().vm.callouts.take(token).is_none() {
            return Ok(false);
        }
        let (headers, body) = answer.as_ref().map_or((0, 0), |a| {
            (len_u32(a.headers.len()), len_u32(a.body.len()))
        });
        let root = self.root_id;
        let vm = &mut self.host_mut().vm;
        vm.callouts.delivering = Some(answer);
        vm.effective_context = root;
        let delivered = self.call::<(u32, u32, u32, u32, u32), ()>(
            "proxy_on_http_call_response",
            (root, token, headers, body, 0),
        );
        self.host_mut().vm.callouts.delivering = None;
        delivered.map(|()| true)
    }

    /// Runs `proxy_on_tick` on the root context, if the plugin exports it.
    pub fn tick(&mut self) -> Result<()> {
        if self
            .instance
            .get_func(&mut self.store, "proxy_on_tick")
            .is_none()
        {
            return Ok(());
        }
        let root = self.root_id;
        self.host_mut().vm.effective_context = root;
        self.call::<u32, ()>("proxy_on_tick", root)
    }

    /// Calls export `name`, refuelled, turning a trap into a [`VmFault`].
    pub fn call<P, R>(&mut self, name: &str, params: P) -> Result<R>
    where
        P: WasmParams + 'static,
        R: WasmResults + 'static,
    {
        let func = self.export::<P, R>(name)?;
        if let Some(fuel) = self.fuel_per_call {
            self.store.set_fuel(fuel).map_err(anyhow::Error::from)?;
        }
        func.call(&mut self.store, params)
            .map_err(|trap| self.fault(name, &trap).into())
    }

    /// Export `name` with signature `P -> R`, looked up once.
    fn export<P, R>(&mut self, name: &str) -> Result<TypedFunc<P, R>>
    where
        P: WasmParams + 'static,
        R: WasmResults + 'static,
    {
        if let Some(func) = self
            .exports
            .get(name)
            .and_then(|f| f.downcast_ref::<TypedFunc<P, R>>())
        {
            return Ok(func.clone());
        }
        let func = self
            .instance
            .get_typed_func::<P, R>(&mut self.store, name)
            .map_err(anyhow::Error::from)
            .with_context(|| {
                format!("the plugin does not export `{name}` with the proxy-wasm 0.2.1 signature")
            })?;
        self.exports.insert(name.to_owned(), Box::new(func.clone()));
        Ok(func)
    }

    fn fault(&mut self, during: &str, trap: &wasmtime::Error) -> VmFault {
        let vm = &self.store.data().host.vm;
        VmFault {
            during: during.to_owned(),
            trap: format!("{trap:#}"),
            stderr: String::from_utf8_lossy(&vm.stderr).into_owned(),
            error_logs: vm
                .logs
                .iter()
                .filter(|e| e.level >= LogLevel::Error)
                .cloned()
                .collect(),
            unsupported_calls: vm.unsupported_calls.clone(),
        }
    }
}

/// The memory and allocator hostcalls use (absent ones are looked up, and reported, at use).
fn guest_exports(instance: &Instance, store: &mut Store<StoreData>) -> GuestExports {
    let allocate = ["proxy_on_memory_allocate", "malloc"]
        .into_iter()
        .find_map(|name| instance.get_func(&mut *store, name))
        .and_then(|func| func.typed::<u32, u32>(&*store).ok());
    GuestExports {
        memory: instance.get_memory(&mut *store, "memory"),
        allocate,
    }
}

/// Refuses modules built for the old proxy-wasm ABI 0.1.0.
fn check_abi(module: &Module) -> Result<()> {
    let has = |name: &str| module.exports().any(|e| e.name() == name);
    if has("proxy_abi_version_0_2_1") || has("proxy_abi_version_0_2_0") {
        return Ok(());
    }
    if has("proxy_abi_version_0_1_0") {
        bail!(
            "the module speaks proxy-wasm ABI 0.1.0; this host implements 0.2.1 (rebuild with proxy-wasm 0.2.x)"
        );
    }
    bail!("the module exports no proxy_abi_version_0_2_x marker: is it a proxy-wasm module?")
}

fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}
