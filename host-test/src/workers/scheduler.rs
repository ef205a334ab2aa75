//! The turn token of a multi-worker replay: worker VMs run on their own threads, and only
//! the worker holding the turn runs. A worker gives the turn back at every switch point (a
//! shared-data access, the start of an exchange, its end) and the scheduler picks who runs
//! next, by a seeded random choice or by a script of choices (what the exhaustive search
//! replays and extends).
//!
//! Main design decision: a choice is made only when every live worker is parked at a switch
//! point, so nothing runs concurrently and a schedule is a pure function of its choices:
//! the same seed or script gives the same accesses in the same order, the same answers and
//! the same output. Choices with one option are not choice points. Phases order the work:
//! a worker whose next unit belongs to a later phase waits until every unit of the earlier
//! phases is done (this is how start sequences run one after the other, and how a setup
//! runs before a race). Every wait is bounded by the schedule's deadline.

use crate::abi::shared_store::SwitchPoint;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// How the next worker is chosen at a choice point.
#[derive(Debug, Clone)]
pub enum Chooser {
    /// Uniformly among the options, from a SplitMix64 stream seeded with the value.
    Random(u64),
    /// The option with index `script[k]` at the k-th choice point, 0 once the script is
    /// used up (0 = the worker that ran last keeps running, when it may).
    Script(Vec<usize>),
}

/// One choice point of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The workers that could run, the one that ran last first (when it could).
    pub options: Vec<usize>,
    /// The index chosen in `options`.
    pub chosen: usize,
    /// Whether the worker that ran last could have continued its work in this phase: it
    /// stopped in the middle of an exchange, or between two exchanges of the phase
    /// (choosing another one then is a preemption). Who starts a phase is a free choice:
    /// racing exchanges reach workers independently.
    pub preemptible: bool,
}

impl Choice {
    /// Whether this choice took the turn from a worker that could have continued.
    pub fn is_preemption(&self) -> bool {
        self.preemptible && self.chosen != 0
    }
}

#[derive(Debug)]
struct Board {
    workers: usize,
    running: Option<usize>,
    last: Option<usize>,
    /// Parked workers, the phase of the work each one waits to do, and whether it parked
    /// partway through its work in that phase (mid-exchange, or between two exchanges).
    parked: BTreeMap<usize, (usize, bool)>,
    /// The phase of each worker's current work.
    phase: Vec<usize>,
    done: BTreeSet<usize>,
    random: u64,
    script: Option<Vec<usize>>,
    choices: Vec<Choice>,
    abandoned: Option<String>,
    clock_ns: u64,
    completed: u64,
}

/// The scheduler of one schedule.
#[derive(Debug)]
pub struct Scheduler {
    board: Mutex<Board>,
    wake: Condvar,
    deadline: Instant,
    clock_step_ns: u64,
}

impl Scheduler {
    /// A scheduler for `workers` workers choosing with `chooser`; every wait ends at
    /// `deadline`; the shared clock starts at `clock_ns` and moves `clock_step_ns` per unit.
    pub fn new(
        workers: usize,
        chooser: Chooser,
        deadline: Instant,
        clock_ns: u64,
        clock_step_ns: u64,
    ) -> Self {
        let (random, script) = match chooser {
            Chooser::Random(seed) => (seed, None),
            Chooser::Script(script) => (0, Some(script)),
        };
        Scheduler {
            board: Mutex::new(Board {
                workers,
                running: None,
                last: None,
                parked: BTreeMap::new(),
                phase: vec![0; workers],
                done: BTreeSet::new(),
                random,
                script,
                choices: Vec::new(),
                abandoned: None,
                clock_ns,
                completed: 0,
            }),
            wake: Condvar::new(),
            deadline,
            clock_step_ns,
        }
    }

    fn board(&self) -> Result<MutexGuard<'_, Board>, String> {
        self.board
            .lock()
            .map_err(|_| "a worker panicked while holding the scheduler".to_owned())
    }

    /// Parks `worker` before a unit of `phase` (its start, an exchange) until it is its turn.
    pub fn enter(&self, worker: usize, phase: usize) -> Result<(), String> {
        self.park(worker, Some(phase))
    }

    /// The shared clock for the unit about to run (call while holding the turn).
    pub fn next_time_ns(&self) -> u64 {
        match self.board() {
            Ok(mut board) => {
                board.clock_ns = board.clock_ns.saturating_add(self.clock_step_ns);
                board.clock_ns
            }
            Err(_) => 0,
        }
    }

    /// A number for the phase of an exchange that just ended (call while holding the turn):
    /// phases are numbered in the order they ended, over the whole schedule.
    pub fn stamp(&self) -> u64 {
        match self.board() {
            Ok(mut board) => {
                board.completed = board.completed.saturating_add(1);
                board.completed
            }
            Err(_) => 0,
        }
    }

    /// `worker` has no more work (or failed): it never runs again.
    pub fn leave(&self, worker: usize) {
        let Ok(mut board) = self.board() else {
            self.wake.notify_all();
            return;
        };
        board.parked.remove(&worker);
        board.done.insert(worker);
        if board.running == Some(worker) {
            board.running = None;
        }
        choose_if_all_parked(&mut board);
        self.wake.notify_all();
    }

    /// Abandons the schedule: every parked worker's wait fails with `why`.
    pub fn abandon(&self, why: &str) {
        if let Ok(mut board) = self.board() {
            board.abandoned.get_or_insert_with(|| why.to_owned());
        }
        self.wake.notify_all();
    }

    /// The choice points of the schedule so far.
    pub fn choices(&self) -> Vec<Choice> {
        self.board().map(|b| b.choices.clone()).unwrap_or_default()
    }

    /// Why the schedule was abandoned, if it was.
    pub fn abandoned(&self) -> Option<String> {
        self.board().ok().and_then(|b| b.abandoned.clone())
    }

    fn park(&self, worker: usize, phase: Option<usize>) -> Result<(), String> {
        let mut board = self.board()?;
        let partway = phase.is_none() || board.phase.get(worker) == phase.as_ref();
        if let Some(phase) = phase
            && let Some(slot) = board.phase.get_mut(worker)
        {
            *slot = phase;
        }
        let waits_for = board.phase.get(worker).copied().unwrap_or(usize::MAX);
        board.parked.insert(worker, (waits_for, partway));
        if board.running == Some(worker) {
            board.running = None;
        }
        choose_if_all_parked(&mut board);
        self.wake.notify_all();
        loop {
            if let Some(why) = &board.abandoned {
                return Err(format!("schedule abandoned: {why}"));
            }
            if board.running == Some(worker) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= self.deadline {
                let why = "a worker waited for its turn past the schedule's deadline";
                board.abandoned.get_or_insert_with(|| why.to_owned());
                self.wake.notify_all();
                return Err(why.to_owned());
            }
            board = self
                .wake
                .wait_timeout(board, self.deadline.saturating_duration_since(now))
                .map_err(|_| "a worker panicked while holding the scheduler".to_owned())?
                .0;
        }
    }
}

impl SwitchPoint for Scheduler {
    fn turn(&self, worker: usize) -> Result<(), String> {
        self.park(worker, None)
    }
}

/// Picks the next worker when nobody runs and every live worker is parked.
fn choose_if_all_parked(board: &mut Board) {
    if board.running.is_some()
        || board.abandoned.is_some()
        || board.parked.len() + board.done.len() < board.workers
    {
        return;
    }
    let Some(first_phase) = board.parked.values().map(|(phase, _)| *phase).min() else {
        return;
    };
    let mut options: Vec<usize> = board
        .parked
        .iter()
        .filter(|(_, (phase, _))| *phase == first_phase)
        .map(|(worker, _)| *worker)
        .collect();
    let mut preemptible = false;
    if let Some(last) = board.last
        && let Some(at) = options.iter().position(|w| *w == last)
    {
        options.remove(at);
        options.insert(0, last);
        preemptible = board.parked.get(&last).is_some_and(|(_, partway)| *partway);
    }
    let chosen = if options.len() > 1 {
        let index = next_index(board, options.len());
        board.choices.push(Choice {
            options: options.clone(),
            chosen: index,
            preemptible,
        });
        index
    } else {
        0
    };
    let Some(worker) = options.get(chosen).copied() else {
        return;
    };
    board.parked.remove(&worker);
    board.running = Some(worker);
    board.last = Some(worker);
}

fn next_index(board: &mut Board, options: usize) -> usize {
    let point = board.choices.len();
    match &board.script {
        Some(script) => script
            .get(point)
            .copied()
            .filter(|i| *i < options)
            .unwrap_or(0),
        None => {
            let draw = splitmix64(&mut board.random);
            let options = u64::try_from(options).unwrap_or(u64::MAX);
            usize::try_from(draw % options).unwrap_or(0)
        }
    }
}

/// SplitMix64: a small, well-mixed, reproducible stream.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
