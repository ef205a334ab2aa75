//! The multi-worker replay (`toolseal replay --workers N`): N instances of the same
//! `.wasm`, each in its own wasmtime store on its own thread, as Envoy runs one plugin VM
//! per worker, over one shared data store with Envoy's compare-and-swap; a scheduler that
//! decides, at every shared-data access, which worker goes next; and invariants checked
//! after every schedule against single-worker interleavings of the same exchanges.
//!
//! Main design decision: the switch points are exactly the places where workers can see
//! each other: `proxy_get_shared_data`, `proxy_set_shared_data`, and the boundaries of
//! exchanges. Between two of them a worker's guest code runs alone and cannot observe
//! another worker, so exploring the orders of these points explores every interleaving
//! the plugin can tell apart. What lies outside (two streams interleaved inside one worker,
//! the start sequence racing traffic) is not explored; docs/host-test.md says so.

pub mod explore;
pub mod invariants;
pub mod reference;
pub mod scenario;
pub mod schedule_run;
pub mod scheduler;
pub mod signature;

use crate::input_error::input_error;
use crate::replay::{LoadedPlugin, ReplayOptions};
use anyhow::Result;
use explore::{Exploration, Plan};
use invariants::Checks;
use reference::Reference;
use scenario::Scenario;
use schedule_run::Workload;
use std::time::Duration;
use toolseal_core::config::Config;
use toolseal_core::policy::fingerprint::FingerprintFields;

/// How long one schedule may run before it is abandoned (a worker waiting for a turn that
/// never comes fails it).
pub const SCHEDULE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most phases the single-worker reference replays to explain one schedule (the tree
/// of interleavings it builds is kept across schedules, so most need none).
pub const REFERENCE_BUDGET: usize = 4000;

/// A scenario ready to explore: the module loaded once, the options of every worker VM.
pub struct Harness {
    plugin: LoadedPlugin,
    options: ReplayOptions,
    scenario: Scenario,
    fields: FingerprintFields,
    /// How long one schedule may take.
    pub timeout: Duration,
    /// The most phases the reference replays to explain one schedule.
    pub reference_budget: usize,
}

/// What an exploration found, and what the reference cost.
#[derive(Debug, Clone)]
pub struct Report {
    /// The schedules and their failures.
    pub exploration: Exploration,
    /// Phases the single-worker reference replayed.
    pub reference_steps: usize,
}

impl Harness {
    /// Loads the module of `options` for `scenario` (whose `server`, when it names one,
    /// applies unless `options` names another).
    pub fn new(mut options: ReplayOptions, scenario: Scenario) -> Result<Self> {
        if options.server.is_none() {
            options.server.clone_from(&scenario.server);
        }
        let fields = Config::parse(&options.plugin_configuration)
            .map(|c| c.fingerprint)
            .map_err(|e| input_error(format!("the configuration: {e}")))?;
        let plugin = LoadedPlugin::load(&options)?;
        Ok(Harness {
            plugin,
            options,
            scenario,
            fields,
            timeout: SCHEDULE_TIMEOUT,
            reference_budget: REFERENCE_BUDGET,
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Runs `plan`'s schedules and checks each; stops at the first failing one unless
    /// `keep_going`.
    pub fn explore(&self, plan: &Plan, keep_going: bool) -> Result<Report> {
        let work = Workload {
            plugin: &self.plugin,
            options: &self.options,
            scenario: &self.scenario,
            timeout: self.timeout,
        };
        let mut reference = Reference::new(
            &self.plugin,
            &self.options,
            &self.scenario,
            self.fields,
            self.reference_budget,
        );
        let mut checks = Checks {
            scenario: &self.scenario,
            server: self.options.server.as_deref(),
            fields: &self.fields,
            reference: &mut reference,
        };
        let exploration = explore::explore(&work, &mut checks, plan, keep_going)?;
        Ok(Report {
            exploration,
            reference_steps: reference.replayed(),
        })
    }
}
