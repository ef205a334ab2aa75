//! One instance of a fleet run on a thread of its own: its worker VMs are created there and
//! never leave it (a VM is not `Send`); the run sends it commands and reads what it did.
//! A thread per instance is what lets one instance's step run while another instance's
//! callout waits for its answer.

use super::Action;
use super::Step;
use crate::abi::shared_store::SharedStore;
use crate::replay::{ExchangeReport, LoadedPlugin, Replay, ReplayOptions};
use anyhow::{Context, Result};
use std::sync::mpsc::{Receiver, Sender};

/// What the run asks of an instance.
pub enum Command {
    /// Run the scenario's step `index`.
    Step(usize, Step),
    /// Restart: wipe the shared data, create the VMs again.
    Restart,
    /// Fire every worker's timer (the end of a run).
    TickAll,
}

/// What happened in a run's threads, in the order it happened.
#[derive(Debug)]
pub enum Event {
    /// A callout is held (by an interleaving): the run may do something else meanwhile.
    Paused,
    /// An instance finished a command: the exchange's report (`None` for a tick, a
    /// restart), or why it failed.
    Done(usize, Box<Result<Option<ExchangeReport>, String>>),
}

/// What an instance needs to run.
pub struct Setup<'a> {
    /// The module.
    pub plugin: &'a LoadedPlugin,
    /// Every VM's options (store and callout server included).
    pub options: &'a ReplayOptions,
    /// Worker VMs.
    pub workers: usize,
    /// The server id of every exchange.
    pub server: &'a str,
}

/// The instance's thread: starts its VMs, then runs commands until the run hangs up.
pub fn main(setup: &Setup<'_>, index: usize, commands: &Receiver<Command>, events: &Sender<Event>) {
    let mut workers = start(setup);
    while let Ok(command) = commands.recv() {
        let result = match (&mut workers, command) {
            (_, Command::Restart) => {
                workers = start(setup);
                workers.as_ref().map(|_| None).map_err(Clone::clone)
            }
            (Err(why), _) => Err(why.clone()),
            (Ok(vms), Command::TickAll) => vms
                .iter_mut()
                .try_for_each(Replay::tick)
                .map(|()| None)
                .map_err(|e| format!("the last tick: {e:#}")),
            (Ok(vms), Command::Step(at, step)) => run_step(vms, setup.server, &step).map_err(|e| {
                format!(
                    "step {at} (instance {index}, worker {}): {e:#}",
                    step.worker
                )
            }),
        };
        if events.send(Event::Done(index, Box::new(result))).is_err() {
            return;
        }
    }
}

fn start(setup: &Setup<'_>) -> Result<Vec<Replay>, String> {
    let shared = SharedStore::default();
    (0..setup.workers)
        .map(|w| {
            Replay::start_on(setup.plugin, setup.options.clone(), shared.clone())
                .with_context(|| format!("starting worker {w}"))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| format!("{e:#}"))
}

fn run_step(vms: &mut [Replay], server: &str, step: &Step) -> Result<Option<ExchangeReport>> {
    let vm = vms
        .get_mut(step.worker)
        .context("a step names a worker the scenario does not have")?;
    match &step.action {
        Action::Tick => vm.tick().map(|()| None),
        Action::Exchange(exchange) => vm.run_exchange(server, exchange).map(Some),
    }
}
