//! Replays recorded MCP traffic through the plugin VM, transcript after transcript, with
//! plugin state kept across them (same VM, same shared data), so replaying release A then
//! release B of one server shows the drift.
//!
//! Main design decision: the replay is deterministic end to end: a clock that advances one
//! second per exchange, fixed `random_get` bytes, fixed chunk cuts. The same inputs print
//! the same lines, which is what makes expectation files usable.

pub mod chunks;
pub mod exchange;
pub mod expect;
pub mod fleet_store;
pub mod records;

use crate::abi::faults::Fault;
use crate::abi::shared_store::SharedStore;
use crate::abi::state::{DEFAULT_EPOCH_NS, Identity};
use crate::abi::types::LogLevel;
use crate::input_error::input_error;
use crate::wasm::module_cache::{self, CacheOutcome};
use crate::wasm::plugin_vm::{LinkedModule, PluginVm, VmSettings};
use anyhow::{Context, Result};
use exchange::{ExchangeOutcome, ExchangeSetup};
use fleet_store::{CalloutServer, FleetStore};
use records::PluginRecord;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolseal_core::transcript::{HttpExchange, parse_transcript};

/// How far the clock moves per exchange.
pub const EXCHANGE_STEP_NS: u64 = 1_000_000_000;

/// Names plugin, root and VM ids as an Envoy config for toolseal would.
const PLUGIN_NAME: &str = "toolseal";

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The plugin `.wasm`.
    pub wasm_path: PathBuf,
    /// Plugin configuration bytes (the JSON of docs/config.md; empty = plugin defaults).
    pub plugin_configuration: Vec<u8>,
    /// Server id answered as route and cluster name for every transcript; `None` = each
    /// transcript's own name.
    pub server: Option<String>,
    /// Body chunk size (0 = whole bodies).
    pub chunk: usize,
    /// Host log level (debug or trace for decision records).
    pub log_level: LogLevel,
    /// Dynamic metadata offered on every exchange (namespace → struct).
    pub dynamic_metadata: Map<String, Value>,
    /// Precompiled-module cache directory (`None` = compile on every start: seconds of
    /// CPU in a debug build).
    pub cache_dir: Option<PathBuf>,
    /// Hostcall faults to inject (`--fail-hostcall`).
    pub faults: Vec<Fault>,
    /// The fleet store behind the configuration's `store.etcd.cluster` (`--store sim`):
    /// `None`, no cluster is served and every callout is refused.
    pub store: Option<FleetStore>,
    /// Who answers callouts and when (`None` with a store: the store, at once).
    pub callouts: Option<Arc<dyn CalloutServer>>,
}

impl ReplayOptions {
    /// The `toolseal replay` defaults for `wasm_path`: plugin defaults (no configuration),
    /// each transcript its own server, the default awkward chunking, debug level (decision
    /// records on) and the user's module cache, so that a test replaying many cases
    /// compiles the plugin once, not once per case.
    pub fn new(wasm_path: PathBuf) -> Self {
        ReplayOptions {
            wasm_path,
            plugin_configuration: Vec::new(),
            server: None,
            chunk: chunks::DEFAULT_CHUNK,
            log_level: LogLevel::Debug,
            dynamic_metadata: Map::new(),
            cache_dir: module_cache::default_cache_dir(),
            faults: Vec::new(),
            store: None,
            callouts: None,
        }
    }
}

/// A transcript ready to replay.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Its name in output lines (and default server id).
    pub name: String,
    /// Its HTTP exchanges.
    pub exchanges: Vec<HttpExchange>,
}

/// What one exchange produced, with the records the plugin logged for it.
#[derive(Debug, Clone)]
pub struct ExchangeReport {
    /// Transcript name.
    pub transcript: String,
    /// Exchange sequence (a number when the recording has one).
    pub seq: Value,
    /// The HTTP outcome.
    pub outcome: ExchangeOutcome,
    /// Decision records and audit events, in order.
    pub records: Vec<PluginRecord>,
}

/// An exchange whose request phase ran ([`Replay::begin_exchange`]).
#[derive(Debug)]
pub struct PendingReport {
    /// Transcript name.
    pub transcript: String,
    /// The exchange, set aside.
    pub pending: exchange::PendingExchange,
}

/// A replay session: one plugin VM.
pub struct Replay {
    vm: PluginVm,
    options: ReplayOptions,
    next_tick_ns: Option<u64>,
    /// How the module was loaded.
    pub cache: CacheOutcome,
    /// Records the plugin logged while starting (e.g. `config.loaded`).
    pub startup_records: Vec<PluginRecord>,
}

/// The plugin module, loaded once (from the precompiled cache when it can be) and linked
/// once, shared by every VM started from it: worker VMs, and the many replays of a
/// schedule exploration.
#[derive(Clone)]
pub struct LoadedPlugin {
    linked: LinkedModule,
    /// How the module was loaded.
    pub cache: CacheOutcome,
}

impl LoadedPlugin {
    /// Reads `options.wasm_path` and compiles it, or loads its precompiled artifact.
    pub fn load(options: &ReplayOptions) -> Result<Self> {
        let wasm = std::fs::read(&options.wasm_path).map_err(|e| {
            input_error(format!(
                "cannot read the plugin module {}: {e}. Build it with `cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm` or pass --wasm PATH",
                options.wasm_path.display()
            ))
        })?;
        let engine = crate::wasm::engine()?;
        let (module, cache) = module_cache::load(&engine, &wasm, options.cache_dir.as_deref())?;
        Ok(LoadedPlugin {
            linked: LinkedModule::new(&engine, &module)?,
            cache,
        })
    }
}

impl Replay {
    /// Loads the module and starts the VM, with shared data of its own.
    pub fn start(options: ReplayOptions) -> Result<Self> {
        let plugin = LoadedPlugin::load(&options)?;
        Self::start_on(&plugin, options, SharedStore::default())
    }

    /// Starts a VM of `plugin` over `shared_data` (a store other worker VMs may hold too):
    /// Envoy's start sequence runs in this VM, as it runs in each worker's.
    pub fn start_on(
        plugin: &LoadedPlugin,
        options: ReplayOptions,
        shared_data: SharedStore,
    ) -> Result<Self> {
        let identity = identity_for(options.server.as_deref().unwrap_or(PLUGIN_NAME));
        let settings = VmSettings {
            identity,
            log_level: options.log_level,
            plugin_configuration: options.plugin_configuration.clone(),
            vm_configuration: Vec::new(),
            start_ns: DEFAULT_EPOCH_NS,
            faults: options.faults.clone(),
            shared_data,
        };
        let mut vm = PluginVm::start_linked(&plugin.linked, settings)?;
        if options.store.is_some() {
            vm.host_mut().vm.callouts.cluster = store_cluster(&options.plugin_configuration);
        }
        let logs = std::mem::take(&mut vm.host_mut().vm.logs);
        let startup_records = records::parse_logs(&logs)?;
        Ok(Replay {
            vm,
            options,
            next_tick_ns: None,
            cache: plugin.cache,
            startup_records,
        })
    }

    /// The options it was started with.
    pub fn options(&self) -> &ReplayOptions {
        &self.options
    }

    /// The VM (its host state: shared data, metrics...).
    pub fn vm(&self) -> &PluginVm {
        &self.vm
    }

    /// The hostcalls the plugin made so far (counted by name) and the faults injected.
    pub fn hostcalls(&self) -> &crate::abi::faults::HostcallLog {
        &self.vm.host().vm.hostcalls
    }

    /// Replays every exchange of `transcript`.
    pub fn run(&mut self, transcript: &Transcript) -> Result<Vec<ExchangeReport>> {
        let mut reports = Vec::with_capacity(transcript.exchanges.len());
        for exchange in &transcript.exchanges {
            reports.push(self.run_exchange(&transcript.name, exchange)?);
        }
        Ok(reports)
    }

    /// Replays one exchange of the transcript called `transcript`, one clock step after
    /// the previous one.
    pub fn run_exchange(
        &mut self,
        transcript: &str,
        exchange: &HttpExchange,
    ) -> Result<ExchangeReport> {
        let pending = self.begin_exchange(transcript, exchange)?;
        self.finish_exchange(pending, exchange)
    }

    /// Runs the request phase of one exchange (one clock step after the previous one); the
    /// VM may replay other exchanges before [`Replay::finish_exchange`] runs its response
    /// phase, as a worker interleaves streams.
    pub fn begin_exchange(
        &mut self,
        transcript: &str,
        exchange: &HttpExchange,
    ) -> Result<PendingReport> {
        let server = self
            .options
            .server
            .clone()
            .unwrap_or_else(|| transcript.to_owned());
        self.vm.host_mut().vm.identity = identity_for(&server);
        self.advance_clock()?;
        let setup = self.setup();
        let pending = exchange::begin(&mut self.vm, exchange, &setup)
            .with_context(|| format!("replaying {transcript} exchange {}", exchange.seq))?;
        Ok(PendingReport {
            transcript: transcript.to_owned(),
            pending,
        })
    }

    /// Runs the response phase of an exchange begun with [`Replay::begin_exchange`] and
    /// ends it.
    pub fn finish_exchange(
        &mut self,
        pending: PendingReport,
        exchange: &HttpExchange,
    ) -> Result<ExchangeReport> {
        let PendingReport {
            transcript,
            pending,
        } = pending;
        self.vm.host_mut().vm.identity =
            identity_for(self.options.server.as_deref().unwrap_or(&transcript));
        let setup = self.setup();
        let outcome = exchange::finish(&mut self.vm, pending, exchange, &setup)
            .with_context(|| format!("replaying {transcript} exchange {}", exchange.seq))?;
        let records = records::parse_logs(&outcome.logs)?;
        Ok(ExchangeReport {
            transcript,
            seq: records::seq_value(&exchange.seq),
            outcome,
            records,
        })
    }

    fn setup(&self) -> ExchangeSetup {
        ExchangeSetup {
            chunk: self.options.chunk,
            dynamic_metadata: self.options.dynamic_metadata.clone(),
            callouts: self.callout_server(),
        }
    }

    fn callout_server(&self) -> Option<Arc<dyn CalloutServer>> {
        self.options.callouts.clone().or_else(|| {
            self.options
                .store
                .clone()
                .map(|s| Arc::new(s) as Arc<dyn CalloutServer>)
        })
    }

    /// Runs `proxy_on_tick` now (whatever the clock says) and answers the callouts it made.
    pub fn tick(&mut self) -> Result<()> {
        self.vm.tick()?;
        self.serve_callouts()
    }

    /// Answers the callouts in flight (a tick's, a push a stream left) as the replay's
    /// callout server would at a wait point.
    pub fn serve_callouts(&mut self) -> Result<()> {
        match self.callout_server() {
            Some(server) if !self.vm.host().vm.callouts.pending.is_empty() => {
                server.serve(&mut self.vm)
            }
            _ => Ok(()),
        }
    }

    /// The VM, mutable (tests deliver callouts by hand).
    pub fn vm_mut(&mut self) -> &mut PluginVm {
        &mut self.vm
    }

    /// Sets the clock so that the next exchange runs at `now_ns` (workers share one clock:
    /// each exchange starts one step after the previous one, whichever worker runs it).
    pub fn set_next_exchange_time(&mut self, now_ns: u64) {
        self.vm.host_mut().vm.now_ns = now_ns.saturating_sub(EXCHANGE_STEP_NS);
    }

    /// Moves the clock one step and fires the tick when due.
    fn advance_clock(&mut self) -> Result<()> {
        let vm = &mut self.vm.host_mut().vm;
        vm.now_ns = vm.now_ns.saturating_add(EXCHANGE_STEP_NS);
        let (now, period_ms) = (vm.now_ns, u64::from(vm.tick_period_ms));
        if period_ms == 0 {
            self.next_tick_ns = None;
            return Ok(());
        }
        let due = *self.next_tick_ns.get_or_insert(now);
        if now >= due {
            self.next_tick_ns = Some(now.saturating_add(period_ms.saturating_mul(1_000_000)));
            self.tick()?;
        }
        Ok(())
    }
}

/// The cluster the configuration sends fleet store calls to (`store.etcd.cluster`).
fn store_cluster(configuration: &[u8]) -> Option<String> {
    toolseal_core::config::Config::parse(configuration)
        .ok()?
        .store
        .map(|s| s.cluster)
}

fn identity_for(server: &str) -> Identity {
    Identity {
        route_name: server.to_owned(),
        cluster_name: server.to_owned(),
        plugin_name: PLUGIN_NAME.into(),
        root_id: PLUGIN_NAME.into(),
        vm_id: PLUGIN_NAME.into(),
    }
}

/// Reads a transcript file. Its name is the file stem, or the directory name for a file
/// called `exchange.json` (the layout of recorded sessions).
pub fn load_transcript(path: &Path) -> Result<Transcript> {
    let bytes = std::fs::read(path)
        .map_err(|e| input_error(format!("cannot read transcript {}: {e}", path.display())))?;
    let exchanges = parse_transcript(&bytes).map_err(|e| {
        input_error(format!(
            "{} is not a usable transcript (see docs/transcripts.md): {e}",
            path.display()
        ))
    })?;
    Ok(Transcript {
        name: transcript_name(path),
        exchanges,
    })
}

/// The display name of a transcript file.
pub fn transcript_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem == "exchange"
        && let Some(dir) = path.parent().and_then(Path::file_name)
    {
        return dir.to_string_lossy().into_owned();
    }
    stem
}
