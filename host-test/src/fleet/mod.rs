//! The fleet harness: instances × workers of the same `.wasm` over one simulated etcd. Each
//! instance (an Envoy process) has its own shared data and `workers` VMs on it; every VM's
//! callouts go to one [`FleetStore`]. A scenario is a list of steps (an exchange or a tick
//! on one worker of one instance); a [`Perturbation`] changes one thing about how the
//! scenario runs (an instance restarts before a step, the store is down for some steps,
//! another writer's write lands between a callout and its answer, a callout is answered
//! too late, the store says yes without writing), and [`explore`] runs the scenario under
//! every perturbation of a kind and checks each run ([`invariants`]).
//!
//! Main design decision: steps run one after the other on one thread, and a callout is
//! answered at the wait point right after the callback that made it, so a run is a pure
//! function of its scenario and perturbation. What varies is *what happens between* a
//! callout and its answer (another writer's write, a failure, a lie) and *between* two
//! steps (a restart, an outage starting or ending): the places where instances can tell
//! each other apart. Two workers of one instance interleave at exchange boundaries only
//! (the shared-data-level interleavings are the multi-worker scheduler's, `--workers`), and
//! two streams are never held at once; docs/host-test.md says so.

pub mod invariants;
pub mod perturb;

use crate::abi::shared_store::SharedStore;
use crate::replay::fleet_store::{CalloutServer, FleetStore};
use crate::replay::{ExchangeReport, LoadedPlugin, Replay, ReplayOptions};
use anyhow::{Context, Result};
use perturb::{Perturbation, Perturbed};
use std::sync::Arc;
use toolseal_core::transcript::HttpExchange;

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Replays an exchange.
    Exchange(HttpExchange),
    /// Fires the worker's timer (`proxy_on_tick`: the fleet sync and pushes).
    Tick,
}

/// One step of a fleet scenario.
#[derive(Debug, Clone)]
pub struct Step {
    /// The instance.
    pub instance: usize,
    /// The worker of the instance.
    pub worker: usize,
    /// What it does.
    pub action: Action,
}

/// Who does what, in order.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Instances (Envoy processes), each with its own shared data.
    pub instances: usize,
    /// Worker VMs per instance.
    pub workers: usize,
    /// The server id of every exchange.
    pub server: String,
    /// The steps.
    pub steps: Vec<Step>,
}

/// What one step produced.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// Its index in the scenario.
    pub step: usize,
    /// The exchange's report (`None` for a tick).
    pub report: Option<ExchangeReport>,
    /// Whether the store was down during the step.
    pub store_down: bool,
    /// The server's record in the store right after the step (its JSON text).
    pub store_record: Option<String>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Run {
    /// The perturbation it ran under.
    pub perturbation: Perturbation,
    /// Every step, in order.
    pub steps: Vec<StepReport>,
    /// The server's record in the store once every worker ticked with the store up.
    pub final_record: Option<String>,
    /// Why the run stopped early (a VM fault, a refused configuration).
    pub failure: Option<String>,
}

/// One instance: its worker VMs (over one shared data store of their own).
struct Instance {
    workers: Vec<Replay>,
}

/// The module, the options every VM gets, and the scenario.
pub struct Fleet {
    plugin: LoadedPlugin,
    options: ReplayOptions,
    scenario: Scenario,
    prefix: String,
}

impl Fleet {
    /// Loads the module of `options` (whose configuration names the store) for `scenario`.
    pub fn new(options: ReplayOptions, scenario: Scenario) -> Result<Self> {
        let config = toolseal_core::config::Config::parse(&options.plugin_configuration)
            .map_err(|e| anyhow::anyhow!("the configuration: {e}"))?;
        let prefix = config
            .store
            .map(|s| s.prefix)
            .context("the fleet harness needs a configuration with store.etcd")?;
        Ok(Fleet {
            plugin: LoadedPlugin::load(&options)?,
            options,
            scenario,
            prefix,
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The store key of the scenario's server record.
    pub fn record_key(&self) -> String {
        format!("{}servers/{}", self.prefix, self.scenario.server)
    }

    /// Runs the scenario once under `perturbation`, on a new empty store.
    pub fn run(&self, perturbation: &Perturbation) -> Result<Run> {
        let store = FleetStore::new();
        let perturbed = Arc::new(Perturbed::new(store.clone(), perturbation.clone()));
        let mut options = self.options.clone();
        options.server = Some(self.scenario.server.clone());
        options.store = Some(store.clone());
        options.callouts = Some(Arc::clone(&perturbed) as Arc<dyn CalloutServer>);
        let mut run = Run {
            perturbation: perturbation.clone(),
            steps: Vec::with_capacity(self.scenario.steps.len()),
            final_record: None,
            failure: None,
        };
        let mut instances = Vec::with_capacity(self.scenario.instances);
        for _ in 0..self.scenario.instances {
            instances.push(self.start_instance(&options)?);
        }
        let key = self.record_key();
        for (index, step) in self.scenario.steps.iter().enumerate() {
            if perturbation.restarts_before(index, step.instance) {
                let restarted = self.start_instance(&options)?;
                if let Some(slot) = instances.get_mut(step.instance) {
                    *slot = restarted;
                }
            }
            let down = perturbation.store_down_at(index);
            store.set_down(down);
            perturbed.enter_step(index);
            let done = self.step(&mut instances, step).with_context(|| {
                format!(
                    "step {index} (instance {}, worker {})",
                    step.instance, step.worker
                )
            });
            let report = match done {
                Ok(report) => report,
                Err(e) => {
                    run.failure = Some(format!("{e:#}"));
                    return Ok(run);
                }
            };
            run.steps.push(StepReport {
                step: index,
                report,
                store_down: down,
                store_record: store_text(&store, &key),
            });
        }
        store.set_down(false);
        perturbed.enter_step(usize::MAX);
        for instance in &mut instances {
            for worker in &mut instance.workers {
                if let Err(e) = worker.tick() {
                    run.failure = Some(format!("the last tick: {e:#}"));
                }
            }
        }
        run.final_record = store_text(&store, &key);
        Ok(run)
    }

    fn start_instance(&self, options: &ReplayOptions) -> Result<Instance> {
        let shared = SharedStore::default();
        let workers = (0..self.scenario.workers)
            .map(|w| {
                Replay::start_on(&self.plugin, options.clone(), shared.clone())
                    .with_context(|| format!("starting worker {w}"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Instance { workers })
    }

    fn step(&self, instances: &mut [Instance], step: &Step) -> Result<Option<ExchangeReport>> {
        let instance = instances
            .get_mut(step.instance)
            .context("a step names an instance the scenario does not have")?;
        let worker = instance
            .workers
            .get_mut(step.worker)
            .context("a step names a worker the scenario does not have")?;
        match &step.action {
            Action::Tick => worker.tick().map(|()| None),
            Action::Exchange(exchange) => worker
                .run_exchange(&self.scenario.server, exchange)
                .map(Some),
        }
    }
}

fn store_text(store: &FleetStore, key: &str) -> Option<String> {
    store
        .get(key)
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// Runs `fleet`'s scenario unperturbed, then under each of `perturbations`, and checks
/// every run; returns the runs' count and the violations found (with their perturbation).
pub fn explore(
    fleet: &Fleet,
    perturbations: &[Perturbation],
) -> Result<(usize, Vec<invariants::Violation>)> {
    let reference = fleet.run(&Perturbation::None)?;
    let mut found = invariants::check(fleet, &reference, &reference);
    for perturbation in perturbations {
        let run = fleet.run(perturbation)?;
        found.extend(invariants::check(fleet, &run, &reference));
    }
    Ok((perturbations.len() + 1, found))
}
