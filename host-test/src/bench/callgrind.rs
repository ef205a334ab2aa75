//! Instructions per message, counted by `valgrind --tool=callgrind`.
//!
//! Main design decision: this command runs itself under callgrind twice per row, with a
//! small and a larger fixed iteration count, and reports the difference divided by the
//! difference in iterations. Start-up, module loading and the scenario's setup cancel out,
//! so the figure is the steady-state cost of one message, independent of the machine's
//! load (unlike wall time). Each run's profile is read back to split the `.wasm`'s count in
//! two: the code compiled from the module (callgrind sees it as code of no object file,
//! `???`) and the host around it (wasmtime, host-test's proxy-wasm host, the copies into
//! guest memory), so the plugin's own code can be compared with the same core natively.

use super::messages::Runtime;
use super::scenario::Scenario;
use crate::wasm::Metering;
use anyhow::{Context, Result, bail};
use std::collections::HashMap;
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

/// Instructions of one callgrind run: all of them, and those of compiled guest code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collected {
    /// Every instruction counted.
    pub total: u64,
    /// Instructions in code that belongs to no object file: the code wasmtime compiled from
    /// the `.wasm` (0 natively).
    pub guest: u64,
}

/// Instructions per message of `scenario` on `runtime`: (all, guest code only).
pub fn instructions_per_message(
    scenario: &Scenario,
    runtime: Runtime,
    wasm: &Path,
    metering: Metering,
) -> Result<(f64, f64)> {
    if runtime == Runtime::Wasm && !WARMED.swap(true, Ordering::Relaxed) {
        // Under valgrind wasmtime sees other CPU features, so the first run compiles the
        // module (and stores it in the cache): keep that out of the counts.
        collected(scenario, runtime, wasm, metering, RUNS.0)?;
    }
    let low = collected(scenario, runtime, wasm, metering, RUNS.0)?;
    let high = collected(scenario, runtime, wasm, metering, RUNS.1)?;
    let runs = (RUNS.1 - RUNS.0) as f64;
    let per = |h: u64, l: u64| (h as f64 - l as f64) / runs;
    Ok((per(high.total, low.total), per(high.guest, low.guest)))
}

/// Total instructions callgrind collected for one run of `iterations` messages.
fn collected(
    scenario: &Scenario,
    runtime: Runtime,
    wasm: &Path,
    metering: Metering,
    iterations: usize,
) -> Result<Collected> {
    let exe = std::env::current_exe().context("locating the toolseal executable")?;
    let profile = std::env::temp_dir().join(format!(
        "toolseal-callgrind-{}-{}-{iterations}.out",
        std::process::id(),
        runtime.name()
    ));
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            // wasmtime maps compiled code at run time.
            "--smc-check=all-non-file",
        ])
        .arg(format!("--callgrind-out-file={}", profile.display()))
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
    let text = std::fs::read_to_string(&profile);
    let _ = std::fs::remove_file(&profile);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!(
            "callgrind run of {} ({}) failed: {}",
            scenario.name,
            runtime.name(),
            stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        );
    }
    let total = parse_collected(&stderr).with_context(|| {
        format!(
            "no `Collected :` line in callgrind's output for {}",
            scenario.name
        )
    })?;
    let text = text.with_context(|| format!("reading {}", profile.display()))?;
    let guest = guest_instructions(&text).with_context(|| {
        format!(
            "callgrind's profile of {} is not in the expected format",
            scenario.name
        )
    })?;
    Ok(Collected { total, guest })
}

/// The self cost of every function whose object is `???` (code mapped at run time: what
/// wasmtime compiled) in a callgrind profile written with the default options (one event,
/// `Ir`; one position column). `None` when the profile does not have that shape.
pub fn guest_instructions(profile: &str) -> Option<u64> {
    let mut objects: HashMap<String, String> = HashMap::new();
    let mut in_guest = false;
    let mut after_call = false;
    let mut guest = 0u64;
    let mut events_seen = false;
    for line in profile.lines() {
        if let Some(events) = line.strip_prefix("events:") {
            if events.split_whitespace().collect::<Vec<_>>() != ["Ir"] {
                return None;
            }
            events_seen = true;
        } else if let Some(positions) = line.strip_prefix("positions:") {
            if positions.trim() != "line" {
                return None;
            }
        } else if let Some(name) = line.strip_prefix("ob=") {
            in_guest = object_name(&mut objects, name)? == "???";
        } else if let Some(name) = line.strip_prefix("cob=") {
            object_name(&mut objects, name)?;
        } else if line.starts_with("calls=") {
            // The next cost line is the inclusive cost of that call, not self cost.
            after_call = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '*')) {
            if std::mem::take(&mut after_call) || !in_guest {
                continue;
            }
            let cost: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            guest = guest.checked_add(cost)?;
        }
    }
    events_seen.then_some(guest)
}

/// Resolves callgrind's name compression: `(id) name` defines `id`, `(id)` refers to it.
fn object_name(objects: &mut HashMap<String, String>, spec: &str) -> Option<String> {
    let Some(rest) = spec.strip_prefix('(') else {
        return Some(spec.to_string());
    };
    let (id, name) = rest.split_once(')')?;
    match name.strip_prefix(' ') {
        Some(name) => {
            objects.insert(id.to_string(), name.to_string());
            Some(name.to_string())
        }
        None => objects.get(id).cloned(),
    }
}

/// The number on callgrind's `==PID== Collected : N` summary line.
pub fn parse_collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        let (_, rest) = line.split_once("Collected :")?;
        rest.trim().parse().ok()
    })
}
