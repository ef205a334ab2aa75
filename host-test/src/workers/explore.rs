//! Which schedules a multi-worker replay runs: one given by its choices, a run of seeded
//! random schedules, or every schedule (depth-first over the choice points, optionally
//! bounded in preemptions, always bounded in number); each one checked against the
//! invariants.
//!
//! Main design decision: the exhaustive search keeps no state but the choices of the last
//! schedule. A schedule is a pure function of its choices, so the next one is the last
//! one's choices up to the deepest choice point that still has an untried option, with that
//! option taken; beyond it every choice is "the worker that ran last continues", which
//! costs no preemption. With a preemption bound P this covers every schedule that switches
//! workers against their will at most P times (most concurrency bugs need one or two).

use super::invariants::{Checks, Violation};
use super::schedule_run::{ScheduleRun, Workload, run_schedule};
use super::scheduler::{Choice, Chooser};
use anyhow::Result;

/// Which schedules to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `count` random schedules seeded `seed`, `seed + 1`, ...
    Random {
        /// The first seed.
        seed: u64,
        /// How many schedules.
        count: u64,
    },
    /// Every schedule, depth-first, at most `max_schedules` of them.
    Exhaustive {
        /// The bound on the number of schedules.
        max_schedules: u64,
        /// The most preemptions a schedule may have (`None`: no bound).
        preemptions: Option<usize>,
    },
    /// The schedule of these choices (an option index per choice point).
    Fixed(Vec<usize>),
}

/// A schedule that broke an invariant.
#[derive(Debug, Clone)]
pub struct Failure {
    /// How to run it again: `random:SEED` or `fixed:CHOICES`.
    pub schedule: String,
    /// Its choices, as `fixed:` takes them.
    pub fixed: String,
    /// What it broke.
    pub violations: Vec<Violation>,
    /// The run itself.
    pub run: ScheduleRun,
}

/// What an exploration found.
#[derive(Debug, Clone, Default)]
pub struct Exploration {
    /// Schedules run.
    pub schedules: u64,
    /// Schedules that broke an invariant.
    pub failed: u64,
    /// The failing schedules kept (the first ones).
    pub failures: Vec<Failure>,
    /// Whether every schedule the plan covers was run (an exhaustive search that ended
    /// before its bound; always true for the other plans).
    pub complete: bool,
    /// The first schedule run (what a one-schedule replay prints).
    pub first: Option<ScheduleRun>,
}

/// How many failing schedules an exploration keeps in full.
const KEPT_FAILURES: usize = 8;

/// Runs `plan`'s schedules of `work`, checking each with `checks`; stops at the first
/// failing schedule unless `keep_going`.
pub fn explore(
    work: &Workload<'_>,
    checks: &mut Checks<'_, '_>,
    plan: &Plan,
    keep_going: bool,
) -> Result<Exploration> {
    let mut found = Exploration {
        complete: true,
        ..Exploration::default()
    };
    let mut next = first_schedule(plan);
    while let Some((name, chooser)) = next.take() {
        let run = run_schedule(work, chooser)?;
        let violations = checks.violations(&run)?;
        found.schedules += 1;
        next = next_schedule(plan, found.schedules, &run.choices);
        let failed = !violations.is_empty();
        if failed {
            found.failed += 1;
            if found.failures.len() < KEPT_FAILURES {
                found.failures.push(Failure {
                    schedule: name,
                    fixed: fixed_spec(&run.choices),
                    violations,
                    run: run.clone(),
                });
            }
        }
        if found.first.is_none() {
            found.first = Some(run);
        }
        if failed && !keep_going {
            found.complete = next.is_none();
            break;
        }
        if let Plan::Exhaustive { max_schedules, .. } = plan
            && next.is_some()
            && found.schedules >= *max_schedules
        {
            found.complete = false;
            break;
        }
    }
    Ok(found)
}

/// `fixed:` followed by the option chosen at each choice point, comma-separated.
pub fn fixed_spec(choices: &[Choice]) -> String {
    let list: Vec<String> = choices.iter().map(|c| c.chosen.to_string()).collect();
    format!("fixed:{}", list.join(","))
}

fn first_schedule(plan: &Plan) -> Option<(String, Chooser)> {
    Some(match plan {
        Plan::Random { seed, count } => {
            if *count == 0 {
                return None;
            }
            (format!("random:{seed}"), Chooser::Random(*seed))
        }
        Plan::Exhaustive { .. } => ("fixed:".to_owned(), Chooser::Script(Vec::new())),
        Plan::Fixed(choices) => (fixed_name(choices), Chooser::Script(choices.clone())),
    })
}

fn fixed_name(choices: &[usize]) -> String {
    let list: Vec<String> = choices.iter().map(usize::to_string).collect();
    format!("fixed:{}", list.join(","))
}

/// The schedule after the `done`-th one, whose choices were `last`.
fn next_schedule(plan: &Plan, done: u64, last: &[Choice]) -> Option<(String, Chooser)> {
    match plan {
        Plan::Random { seed, count } => (done < *count).then(|| {
            let seed = seed.wrapping_add(done);
            (format!("random:{seed}"), Chooser::Random(seed))
        }),
        Plan::Exhaustive { preemptions, .. } => {
            let script = backtrack(last, *preemptions)?;
            Some((fixed_name(&script), Chooser::Script(script)))
        }
        Plan::Fixed(_) => None,
    }
}

/// The choices of the next schedule depth-first after `last`, within `preemptions`.
pub fn backtrack(last: &[Choice], preemptions: Option<usize>) -> Option<Vec<usize>> {
    for depth in (0..last.len()).rev() {
        let (Some(prefix), Some(point)) = (last.get(..depth), last.get(depth)) else {
            continue;
        };
        let alternative = point.chosen + 1;
        if alternative >= point.options.len() {
            continue;
        }
        let used =
            prefix.iter().filter(|c| c.is_preemption()).count() + usize::from(point.preemptible);
        if preemptions.is_some_and(|bound| used > bound) {
            continue;
        }
        let mut script: Vec<usize> = prefix.iter().map(|c| c.chosen).collect();
        script.push(alternative);
        return Some(script);
    }
    None
}
