//! The multi-worker scheduler on plain threads (no wasm): one worker runs at a time, a seed
//! or a script of choices gives the same order every time, phases order the work, and a
//! turn that never comes ends at the deadline instead of hanging.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolseal::abi::shared_store::SwitchPoint;
use toolseal::workers::explore::backtrack;
use toolseal::workers::scheduler::{Choice, Chooser, Scheduler};

/// Each worker: its start (phase = its index), then `steps` switch points in `phase`;
/// returns the `(worker, step)` log in the order the steps ran, and the choices made.
fn run(chooser: Chooser, phases: [usize; 2], steps: usize) -> (Vec<(usize, usize)>, Vec<Choice>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let scheduler = Arc::new(Scheduler::new(2, chooser, deadline, 0, 1));
    let log = Mutex::new(Vec::new());
    let inside = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (worker, phase) in phases.into_iter().enumerate() {
            let (scheduler, log, inside) = (&scheduler, &log, &inside);
            scope.spawn(move || {
                scheduler.enter(worker, worker).unwrap();
                scheduler.enter(worker, phase).unwrap();
                for step in 0..steps {
                    scheduler.turn(worker).unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two workers ran");
                    log.lock().unwrap().push((worker, step));
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
                scheduler.leave(worker);
            });
        }
    });
    let choices = scheduler.choices();
    (log.into_inner().unwrap(), choices)
}

fn in_worker_order(log: &[(usize, usize)], steps: usize) -> bool {
    (0..2).all(|w| {
        let mine: Vec<usize> = log
            .iter()
            .filter(|(x, _)| *x == w)
            .map(|(_, s)| *s)
            .collect();
        mine == (0..steps).collect::<Vec<_>>()
    })
}

#[test]
fn a_seed_gives_the_same_interleaving_every_time_and_seeds_differ() {
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..24 {
        let (first, _) = run(Chooser::Random(seed), [2, 2], 4);
        let (again, _) = run(Chooser::Random(seed), [2, 2], 4);
        assert_eq!(first, again, "seed {seed}");
        assert!(in_worker_order(&first, 4), "{first:?}");
        distinct.insert(first);
    }
    assert!(distinct.len() > 8, "only {} interleavings", distinct.len());
}

#[test]
fn a_script_picks_the_option_at_each_choice_point_and_then_lets_the_last_one_go_on() {
    // No script: whoever ran last (worker 1, after its start) goes on to the end.
    let (log, _) = run(Chooser::Script(Vec::new()), [2, 2], 2);
    assert_eq!(log, [(1, 0), (1, 1), (0, 0), (0, 1)]);
    // Option 1 at the first choice point: worker 0 starts, then goes on.
    let (log, _) = run(Chooser::Script(vec![1]), [2, 2], 2);
    assert_eq!(log, [(0, 0), (0, 1), (1, 0), (1, 1)]);
    // Worker 0 first, then a switch after its first step.
    let (log, _) = run(Chooser::Script(vec![1, 0, 1]), [2, 2], 2);
    assert_eq!(log, [(0, 0), (1, 0), (1, 1), (0, 1)]);
}

#[test]
fn a_later_phase_waits_for_every_unit_of_the_earlier_ones() {
    for seed in 0..16 {
        let (log, _) = run(Chooser::Random(seed), [3, 2], 3);
        assert_eq!(log, [(1, 0), (1, 1), (1, 2), (0, 0), (0, 1), (0, 2)]);
    }
}

#[test]
fn a_turn_that_never_comes_ends_at_the_deadline() {
    let deadline = Instant::now() + Duration::from_millis(300);
    let scheduler = Scheduler::new(2, Chooser::Script(Vec::new()), deadline, 0, 1);
    let started = Instant::now();
    let waited = std::thread::scope(|scope| {
        scope.spawn(|| {
            // Worker 0 takes the turn and keeps it past the deadline.
            scheduler.enter(0, 0).unwrap();
            std::thread::sleep(Duration::from_millis(600));
            scheduler.leave(0);
        });
        let worker1 = scope.spawn(|| scheduler.enter(1, 1));
        worker1.join().unwrap()
    });
    let why = waited.unwrap_err();
    assert!(why.contains("deadline"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(scheduler.abandoned().is_some());
}

/// Every schedule depth-first: the interleavings of the workers' steps reached, and how
/// many schedules it took.
fn exhaust(steps: usize, preemptions: Option<usize>) -> (BTreeSet<Vec<(usize, usize)>>, usize) {
    let (mut logs, mut schedules) = (BTreeSet::new(), 0);
    let mut script = Some(Vec::new());
    while let Some(choices) = script.take() {
        let (log, made) = run(Chooser::Script(choices), [2, 2], steps);
        assert!(in_worker_order(&log, steps), "{log:?}");
        let preempted = made.iter().filter(|c| c.is_preemption()).count();
        assert!(preemptions.is_none_or(|p| preempted <= p), "{made:?}");
        logs.insert(log);
        schedules += 1;
        assert!(schedules < 10_000, "the search does not end");
        script = backtrack(&made, preemptions);
    }
    (logs, schedules)
}

#[test]
fn the_depth_first_search_reaches_every_interleaving_and_the_bound_cuts_preemptions() {
    // 3 steps each: C(6, 3) = 20 interleavings of the steps.
    let (all, _) = exhaust(3, None);
    assert_eq!(all.len(), 20);
    // No preemption: one worker's steps, then the other's, either first.
    let (blocks, schedules) = exhaust(3, Some(0));
    assert_eq!((blocks.len(), schedules), (2, 2));
    // One preemption: a worker is interrupted once by the other's whole run (2k logs).
    let (once, _) = exhaust(3, Some(1));
    assert_eq!(once.len(), 6);
    assert!(once.is_subset(&all) && blocks.is_subset(&once));
}
