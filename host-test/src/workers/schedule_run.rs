//! One schedule of a multi-worker replay: a thread per worker, each with its own wasmtime
//! store and plugin VM (its own `proxy_on_vm_start` and `proxy_on_configure`, as each
//! Envoy worker runs them), all over one shared data store, taking turns as the
//! [`Scheduler`] decides.
//!
//! Main design decision: worker VMs are started inside their threads and never leave them
//! (a VM is not `Send`); what crosses threads is the compiled module, the scenario, the
//! shared store and the scheduler. A worker that fails (a trap, a refused configuration, a
//! turn that never came) leaves the schedule, so the others still finish, and its failure
//! is part of the result.

use super::scenario::{Scenario, UnitId};
use super::scheduler::{Choice, Chooser, Scheduler};
use crate::abi::shared_store::{Access, SharedStore, SwitchPoint};
use crate::abi::state::DEFAULT_EPOCH_NS;
use crate::replay::records::PluginRecord;
use crate::replay::{EXCHANGE_STEP_NS, ExchangeReport, LoadedPlugin, Replay, ReplayOptions};
use anyhow::{Context, Result, anyhow};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stack of a worker thread (wasmtime's guest stack limit is well under it).
const WORKER_STACK_BYTES: usize = 8 << 20;

/// What a multi-worker replay runs: the module, the replay options every worker VM gets,
/// and the scenario.
pub struct Workload<'a> {
    /// The plugin, compiled once.
    pub plugin: &'a LoadedPlugin,
    /// Options of every worker VM (configuration, server id, chunking, log level...).
    pub options: &'a ReplayOptions,
    /// Who replays what.
    pub scenario: &'a Scenario,
    /// How long one schedule may take before it is abandoned.
    pub timeout: Duration,
}

/// One exchange as a worker replayed it.
#[derive(Debug, Clone)]
pub struct UnitReport {
    /// Which exchange of the scenario.
    pub unit: UnitId,
    /// The worker that replayed it.
    pub worker: usize,
    /// When it ended, counting from 1 over the whole schedule.
    pub ended: u64,
    /// The accesses of its request phase: a range of positions in the trace (other
    /// workers' accesses in the range are not its own).
    pub request_accesses: Range<usize>,
    /// The accesses of its response phase and the end of its stream.
    pub response_accesses: Range<usize>,
    /// What it produced.
    pub report: ExchangeReport,
}

/// What one schedule produced.
#[derive(Debug, Clone)]
pub struct ScheduleRun {
    /// Every exchange replayed, in the order they ended.
    pub units: Vec<UnitReport>,
    /// The records each worker logged while starting, by worker.
    pub startup: Vec<Vec<PluginRecord>>,
    /// Workers that failed, with why.
    pub failures: Vec<(usize, String)>,
    /// The choice points of the schedule.
    pub choices: Vec<Choice>,
    /// Every shared-data access, in the order it was served.
    pub trace: Vec<Access>,
    /// The shared data at the end.
    pub store: SharedStore,
}

#[derive(Default)]
struct WorkerOutcome {
    units: Vec<UnitReport>,
    startup: Vec<PluginRecord>,
    failure: Option<String>,
}

/// Takes the worker out of the schedule when it ends, however it ends (an error, a panic).
struct Leave<'a>(&'a Scheduler, usize);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// Runs the workload once under `chooser`.
pub fn run_schedule(work: &Workload<'_>, chooser: Chooser) -> Result<ScheduleRun> {
    let workers = work.scenario.workers;
    let deadline = Instant::now() + work.timeout;
    let scheduler = Arc::new(Scheduler::new(
        workers,
        chooser,
        deadline,
        DEFAULT_EPOCH_NS,
        EXCHANGE_STEP_NS,
    ));
    let store = SharedStore::traced();
    let outcomes = std::thread::scope(|scope| -> Result<Vec<WorkerOutcome>> {
        let mut handles = Vec::with_capacity(workers);
        for worker in 0..workers {
            let scheduler = Arc::clone(&scheduler);
            let store = store.clone();
            let handle = std::thread::Builder::new()
                .name(format!("toolseal-worker-{worker}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, move || worker_main(work, worker, &scheduler, &store))
                .context("starting a worker thread")?;
            handles.push(handle);
        }
        let mut outcomes = Vec::with_capacity(workers);
        for (worker, handle) in handles.into_iter().enumerate() {
            outcomes.push(handle.join().unwrap_or_else(|_| WorkerOutcome {
                failure: Some(format!("worker {worker} panicked")),
                ..WorkerOutcome::default()
            }));
        }
        Ok(outcomes)
    });
    let outcomes = match outcomes {
        Ok(outcomes) => outcomes,
        Err(e) => {
            scheduler.abandon("a worker thread could not be started");
            return Err(e);
        }
    };
    let mut run = ScheduleRun {
        units: Vec::new(),
        startup: Vec::with_capacity(workers),
        failures: Vec::new(),
        choices: scheduler.choices(),
        trace: store.trace(),
        store,
    };
    for (worker, outcome) in outcomes.into_iter().enumerate() {
        run.units.extend(outcome.units);
        run.startup.push(outcome.startup);
        if let Some(failure) = outcome.failure {
            run.failures.push((worker, failure));
        }
    }
    run.units.sort_by_key(|u| u.ended);
    if let Some(why) = scheduler.abandoned()
        && run.failures.is_empty()
    {
        run.failures.push((0, why));
    }
    Ok(run)
}

fn worker_main(
    work: &Workload<'_>,
    worker: usize,
    scheduler: &Arc<Scheduler>,
    store: &SharedStore,
) -> WorkerOutcome {
    let _leave = Leave(scheduler, worker);
    let mut outcome = WorkerOutcome::default();
    if let Err(e) = replay_units(work, worker, scheduler, store, &mut outcome) {
        // A failed worker must not leave the others waiting for a turn it will not give.
        outcome.failure = Some(format!("{e:#}"));
    }
    outcome
}

fn replay_units(
    work: &Workload<'_>,
    worker: usize,
    scheduler: &Arc<Scheduler>,
    store: &SharedStore,
    outcome: &mut WorkerOutcome,
) -> Result<()> {
    let workers = work.scenario.workers;
    // Start sequences run one worker after the other (phase = worker index), before any
    // exchange: the race explored is traffic against traffic.
    scheduler
        .enter(worker, worker)
        .map_err(|why| anyhow!(why))?;
    let switch: Arc<dyn SwitchPoint> = Arc::clone(scheduler) as Arc<dyn SwitchPoint>;
    let mut replay = Replay::start_on(
        work.plugin,
        work.options.clone(),
        store.for_worker(worker, switch),
    )
    .with_context(|| format!("starting worker {worker}"))?;
    outcome.startup = std::mem::take(&mut replay.startup_records);
    for unit in work.scenario.units_of(worker) {
        scheduler
            .enter(worker, workers + unit.phase)
            .map_err(|why| anyhow!(why))?;
        let (step, exchange) = work
            .scenario
            .unit(unit)
            .context("a scenario unit without its exchange")?;
        replay.set_next_exchange_time(scheduler.next_time_ns());
        let started = store.accesses();
        let pending = replay
            .begin_exchange(&step.transcript, exchange)
            .with_context(|| format!("worker {worker}"))?;
        let requested = store.accesses();
        let report = replay
            .finish_exchange(pending, exchange)
            .with_context(|| format!("worker {worker}"))?;
        outcome.units.push(UnitReport {
            unit,
            worker,
            ended: scheduler.stamp(),
            request_accesses: started..requested,
            response_accesses: requested..store.accesses(),
            report,
        });
    }
    Ok(())
}
