//! Bounded timing loops.
//!
//! Main design decision: a measurement is the median of several batches, each long enough
//! for the clock to be precise, and the whole loop is bounded both in time and in
//! iterations, so a benchmark ends by itself on a slow or busy machine and one scheduling
//! hiccup (two cores shared by several processes) moves one batch, not the result. The clock
//! is the thread's own CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), so time spent
//! waiting for a core on a loaded machine is not counted; wall time where it is unavailable.

use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Untimed runs first (caches, lazily compiled schemas).
    pub warmup: usize,
    /// Batches measured (the median is reported).
    pub batches: usize,
    /// Target wall time of one batch.
    pub batch_time: Duration,
    /// Most iterations in one batch.
    pub max_batch_iterations: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            warmup: 3,
            batches: 7,
            batch_time: Duration::from_millis(40),
            max_batch_iterations: 20_000,
        }
    }
}

/// A measurement: nanoseconds per iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Median over batches.
    pub median_ns: f64,
    /// Fastest batch.
    pub min_ns: f64,
    /// Iterations run in total (warmup included).
    pub iterations: usize,
}

/// Runs `step` within `budget` and returns the time per call. `step` failing stops the
/// measurement with its error.
pub fn measure<E>(budget: Budget, mut step: impl FnMut() -> Result<(), E>) -> Result<Measured, E> {
    for _ in 0..budget.warmup {
        step()?;
    }
    let mut iterations = budget.warmup;
    // Size a batch from one timed call, then keep every batch the same size.
    let probe = Clock::start();
    step()?;
    iterations += 1;
    let one = Duration::from_nanos(probe.elapsed_ns() as u64).max(Duration::from_nanos(50));
    let per_batch = usize::try_from(budget.batch_time.as_nanos() / one.as_nanos())
        .unwrap_or(usize::MAX)
        .clamp(1, budget.max_batch_iterations.max(1));
    let mut samples = Vec::with_capacity(budget.batches);
    for _ in 0..budget.batches.max(1) {
        let clock = Clock::start();
        for _ in 0..per_batch {
            step()?;
        }
        let elapsed = clock.elapsed_ns();
        iterations += per_batch;
        samples.push(elapsed / per_batch as f64);
    }
    samples.sort_by(f64::total_cmp);
    let median_ns = samples.get(samples.len() / 2).copied().unwrap_or(0.0);
    let min_ns = samples.first().copied().unwrap_or(0.0);
    Ok(Measured {
        median_ns,
        min_ns,
        iterations,
    })
}

/// Thread CPU time when available, else wall time.
enum Clock {
    Cpu(u64),
    Wall(Instant),
}

impl Clock {
    fn start() -> Self {
        thread_cpu_ns().map_or_else(|| Clock::Wall(Instant::now()), Clock::Cpu)
    }

    fn elapsed_ns(&self) -> f64 {
        match self {
            Clock::Cpu(start) => {
                thread_cpu_ns().map_or(0.0, |now| now.saturating_sub(*start) as f64)
            }
            Clock::Wall(start) => start.elapsed().as_nanos() as f64,
        }
    }
}

/// Nanoseconds of CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the call only writes to it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return None;
    }
    let secs = u64::try_from(now.tv_sec).ok()?;
    let nanos = u64::try_from(now.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Whether [`measure`] reports CPU time (else wall time).
pub fn measures_cpu_time() -> bool {
    thread_cpu_ns().is_some()
}

/// Runs `step` exactly `count` times (the callgrind mode: instruction counts need a fixed
/// number of iterations, not a time budget).
pub fn repeat<E>(count: usize, mut step: impl FnMut() -> Result<(), E>) -> Result<(), E> {
    for _ in 0..count {
        step()?;
    }
    Ok(())
}
