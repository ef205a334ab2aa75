//! Instructions per message, counted by `valgrind --tool=callgrind`.
//!
//! Main design decision: this command runs itself under callgrind twice per row, with a
//! small and a larger fixed iteration count, and reports the difference divided by the
//! difference in iterations. Start-up, module loading and the scenario's setup cancel out,
//! so the figure is the steady-state cost of one message, independent of the machine's
//! load (unlike wall time).

use super::messages::Runtime;
use super::scenario::Scenario;
use crate::wasm::Metering;
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the module cache was filled under valgrind already in this process.
static WARMED: AtomicBool = AtomicBool::new(false);

/// Iteration counts of the two runs.
pub const RUNS: (usize, usize) = (2, 10);

/// Whether `valgrind` can be run.
pub fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Instructions per message of `scenario` on `runtime`.
pub fn instructions_per_message(
    scenario: &Scenario,
    runtime: Runtime,
    wasm: &Path,
    metering: Metering,
) -> Result<f64> {
    if runtime == Runtime::Wasm && !WARMED.swap(true, Ordering::Relaxed) {
        // Under valgrind wasmtime sees other CPU features, so the first run compiles the
        // module (and stores it in the cache): keep that out of the counts.
        collected(scenario, runtime, wasm, metering, RUNS.0)?;
    }
    let low = collected(scenario, runtime, wasm, metering, RUNS.0)?;
    let high = collected(scenario, runtime, wasm, metering, RUNS.1)?;
    let runs = (RUNS.1 - RUNS.0) as f64;
    Ok((high as f64 - low as f64) / runs)
}

/// Total instructions callgrind collected for one run of `iterations` messages.
fn collected(
    scenario: &Scenario,
    runtime: Runtime,
    wasm: &Path,
    metering: Metering,
    iterations: usize,
) -> Result<u64> {
    let exe = std::env::current_exe().context("locating the toolseal executable")?;
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            // wasmtime maps compiled code at run time.
            "--smc-check=all-non-file",
        ])
        .arg(exe)
        .args([
            "bench",
            "--scenario",
            &scenario.name,
            "--runtime",
            runtime.name(),
        ])
        .arg("--wasm")
        .arg(wasm)
        .args(["--iters", &iterations.to_string()])
        .args((metering == Metering::Fuel).then_some("--fuel"))
        .output()
        .context("running valgrind")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!(
            "callgrind run of {} ({}) failed: {}",
            scenario.name,
            runtime.name(),
            stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        );
    }
    parse_collected(&stderr).with_context(|| {
        format!(
            "no `Collected :` line in callgrind's output for {}",
            scenario.name
        )
    })
}

/// The number on callgrind's `==PID== Collected : N` summary line.
pub fn parse_collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        let (_, rest) = line.split_once("Collected :")?;
        rest.trim().parse().ok()
    })
}
