//! The fleet harness: instances × workers of the same `.wasm` over one simulated etcd. Each
//! instance (an Envoy process) has its own shared data and `workers` VMs on it; every VM's
//! callouts go to one [`FleetStore`]. A scenario is a list of steps (an exchange or a tick
//! on one worker of one instance); a [`Perturbation`] changes one thing about how the
//! scenario runs (an instance restarts before a step, the store is down for some steps,
//! another writer's write lands between a callout and its answer, a callout is answered
//! too late, the store says yes without writing), and [`explore`] runs the scenario under
//! every perturbation of a kind and checks each run ([`invariants`]).
//!
//! Main design decision: each instance runs on a thread of its own, but steps run one at a
//! time, and a callout is answered at the wait point right after the callback that made it
//! (unless an interleaving holds it while another instance's step runs), so a run is a pure
//! function of its scenario and perturbation. What varies is *what happens between* a
//! callout and its answer (another writer's write, a failure, a lie) and *between* two
//! steps (a restart, an outage starting or ending): the places where instances can tell
//! each other apart. Two workers of one instance interleave at exchange boundaries only
//! (the shared-data-level interleavings are the multi-worker scheduler's, `--workers`), and
//! two streams are never held at once; docs/host-test.md says so.

pub mod instance;
pub mod invariants;
pub mod perturb;

use crate::replay::fleet_store::{CalloutServer, FleetStore};
use crate::replay::{ExchangeReport, LoadedPlugin, ReplayOptions};
use anyhow::{Context, Result};
use instance::{Command, Event};
use perturb::{Gate, Perturbation, Perturbed};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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

    /// Runs the scenario once under `perturbation`, on a new empty store: a thread per
    /// instance, steps sent to them one at a time (two at once only while an interleaving
    /// holds a callout).
    pub fn run(&self, perturbation: &Perturbation) -> Result<Run> {
        let mut run = Run {
            perturbation: perturbation.clone(),
            steps: Vec::with_capacity(self.scenario.steps.len()),
            final_record: None,
            failure: None,
        };
        let store = FleetStore::new();
        let (events_tx, events) = channel();
        let (resume, resume_rx) = channel();
        let gate = Gate {
            paused: Mutex::new(events_tx.clone()),
            resume: Mutex::new(resume_rx),
        };
        let perturbed = Arc::new(Perturbed::new(store.clone(), perturbation.clone(), gate));
        let mut options = self.options.clone();
        options.server = Some(self.scenario.server.clone());
        options.store = Some(store.clone());
        options.callouts = Some(Arc::clone(&perturbed) as Arc<dyn CalloutServer>);
        std::thread::scope(|scope| -> Result<()> {
            // What the threads wait on (their commands, a held callout's word to go on) is
            // dropped when this closure returns, before the scope joins them.
            let resume = resume;
            let mut commands = Vec::with_capacity(self.scenario.instances);
            for index in 0..self.scenario.instances {
                let (tx, rx) = channel();
                let events = events_tx.clone();
                let (options, server) = (&options, self.scenario.server.as_str());
                let setup = instance::Setup {
                    plugin: &self.plugin,
                    options,
                    workers: self.scenario.workers,
                    server,
                };
                std::thread::Builder::new()
                    .name(format!("toolseal-instance-{index}"))
                    .stack_size(INSTANCE_STACK_BYTES)
                    .spawn_scoped(scope, move || instance::main(&setup, index, &rx, &events))
                    .context("starting an instance thread")?;
                commands.push(tx);
            }
            let mut driver = Driver {
                fleet: self,
                perturbation,
                commands: &commands,
                events: &events,
                resume: &resume,
                perturbed: &perturbed,
                store: &store,
                key: self.record_key(),
            };
            if let Err(e) = driver.drive(&mut run) {
                run.failure = Some(format!("{e:#}"));
            }
            Ok(())
        })?;
        Ok(run)
    }
}

/// Stack of an instance thread (wasmtime's guest stack limit is well under it).
const INSTANCE_STACK_BYTES: usize = 8 << 20;

/// How long the run waits for an instance before it gives up on the run.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The run's side of the threads.
struct Driver<'a> {
    fleet: &'a Fleet,
    perturbation: &'a Perturbation,
    commands: &'a [Sender<Command>],
    events: &'a Receiver<Event>,
    resume: &'a Sender<()>,
    perturbed: &'a Perturbed,
    store: &'a FleetStore,
    key: String,
}

impl Driver<'_> {
    fn drive(&mut self, run: &mut Run) -> Result<()> {
        let steps = &self.fleet.scenario.steps;
        let mut nested_ran = None;
        for index in self.perturbation.order(steps.len()) {
            if nested_ran == Some(index) {
                continue;
            }
            let step = steps.get(index).context("a step out of the scenario")?;
            if self.perturbation.restarts_before(index, step.instance) {
                self.send(step.instance, Command::Restart)?;
                self.wait_done(step.instance)?;
            }
            let down = self.perturbation.store_down_at(index);
            self.store.set_down(down);
            self.perturbed.enter_step(index);
            self.send(step.instance, Command::Step(index, step.clone()))?;
            loop {
                match self.next_event()? {
                    Event::Paused => {
                        let other = self
                            .perturbation
                            .interleaved_with(index)
                            .context("a callout was held outside an interleaving")?;
                        let nested = steps.get(other).context("a step out of the scenario")?;
                        anyhow::ensure!(
                            nested.instance != step.instance,
                            "an interleaving needs steps of two instances"
                        );
                        self.perturbed.enter_step(other);
                        self.send(nested.instance, Command::Step(other, nested.clone()))?;
                        let report = self.wait_done(nested.instance)?;
                        self.record(run, other, report, false);
                        nested_ran = Some(other);
                        self.perturbed.enter_step(index);
                        self.resume
                            .send(())
                            .map_err(|_| anyhow::anyhow!("the held callout's thread is gone"))?;
                    }
                    Event::Done(instance, result) => {
                        anyhow::ensure!(
                            instance == step.instance,
                            "an instance answered out of turn"
                        );
                        let report = (*result).map_err(|why| anyhow::anyhow!(why))?;
                        self.record(run, index, report, down);
                        break;
                    }
                }
            }
        }
        self.store.set_down(false);
        self.perturbed.enter_step(usize::MAX);
        for instance in 0..self.commands.len() {
            self.send(instance, Command::TickAll)?;
            self.wait_done(instance)?;
        }
        run.final_record = store_text(self.store, &self.key);
        Ok(())
    }

    fn record(&self, run: &mut Run, step: usize, report: Option<ExchangeReport>, down: bool) {
        run.steps.push(StepReport {
            step,
            report,
            store_down: down,
            store_record: store_text(self.store, &self.key),
        });
    }

    fn send(&self, instance: usize, command: Command) -> Result<()> {
        self.commands
            .get(instance)
            .context("a step names an instance the scenario does not have")?
            .send(command)
            .map_err(|_| anyhow::anyhow!("instance {instance}'s thread is gone"))
    }

    fn next_event(&self) -> Result<Event> {
        self.events
            .recv_timeout(STEP_TIMEOUT)
            .map_err(|_| anyhow::anyhow!("no instance answered within {STEP_TIMEOUT:?}"))
    }

    fn wait_done(&self, instance: usize) -> Result<Option<ExchangeReport>> {
        match self.next_event()? {
            Event::Done(from, result) if from == instance => {
                result.map_err(|why| anyhow::anyhow!(why))
            }
            other => anyhow::bail!("instance {instance} was expected to finish, got {other:?}"),
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
/// An interleaving is also judged against the serial order it could stand for (the nested
/// step moved before the held one), which is run too.
pub fn explore(
    fleet: &Fleet,
    perturbations: &[Perturbation],
) -> Result<(usize, Vec<invariants::Violation>)> {
    let reference = fleet.run(&Perturbation::None)?;
    let mut runs = 1;
    let mut found = invariants::check(fleet, &reference, &reference, None);
    for perturbation in perturbations {
        let run = fleet.run(perturbation)?;
        runs += 1;
        let serial = match perturbation {
            Perturbation::Interleave { at, other } => {
                runs += 1;
                Some(fleet.run(&Perturbation::Reorder {
                    at: *at,
                    other: *other,
                })?)
            }
            _ => None,
        };
        found.extend(invariants::check(fleet, &run, &reference, serial.as_ref()));
    }
    Ok((runs, found))
}
