//! Per-message cost: each scenario natively and through the `.wasm`, measured in the same
//! run, with every measured message checked for its expected outcome.
//!
//! Main design decision: each scenario gets fresh gateways (a new engine, a new VM) brought
//! into its state by the scenario's setup exchanges, so rows do not influence each other;
//! the native and the wasm outcome of the measured exchange must agree byte for byte before
//! anything is timed.

use super::gateway::{Gateway, Module, Native, Wasm};
use super::scenario::{Scenario, check, lowered_body};
use super::timing::{self, Budget, Measured};
use anyhow::{Result, bail};

/// Which gateways to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// toolseal-core natively.
    Native,
    /// The `.wasm` on wasmtime.
    Wasm,
}

impl Runtime {
    /// Its name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Native => "native",
            Runtime::Wasm => "wasm",
        }
    }
}

/// The plugin configuration every benchmark gateway runs: discovery posture (the first
/// list becomes the baseline), server id from the route, defaults otherwise.
pub const CONFIG: &[u8] = br#"{"posture": "discovery", "server_id": {"from": "route"}}"#;

/// One measured row.
#[derive(Debug, Clone)]
pub struct Row {
    /// The scenario.
    pub scenario: Scenario,
    /// Request plus response bytes of the measured exchange.
    pub message_bytes: usize,
    /// Native time per exchange.
    pub native: Option<Measured>,
    /// Wasm time per exchange.
    pub wasm: Option<Measured>,
}

impl Row {
    /// wasm time / native time (medians).
    pub fn ratio(&self) -> Option<f64> {
        match (self.native, self.wasm) {
            (Some(n), Some(w)) if n.median_ns > 0.0 => Some(w.median_ns / n.median_ns),
            _ => None,
        }
    }
}

/// A gateway set up for `scenario` on `runtime`.
pub fn gateway(
    runtime: Runtime,
    module: Option<&Module>,
    scenario: &Scenario,
) -> Result<Box<dyn Gateway>> {
    let mut gateway: Box<dyn Gateway> = match (runtime, module) {
        (Runtime::Native, _) => Box::new(Native::new(scenario.config(), scenario.chunk)?),
        (Runtime::Wasm, Some(module)) => {
            Box::new(Wasm::new(module, scenario.config(), scenario.chunk)?)
        }
        (Runtime::Wasm, None) => bail!("the wasm runtime needs the plugin module"),
    };
    for exchange in scenario.setup() {
        gateway.run(&exchange)?;
    }
    Ok(gateway)
}

/// Measures `scenario` on every runtime in `runtimes`.
pub fn measure(
    scenario: &Scenario,
    runtimes: &[Runtime],
    module: Option<&Module>,
    budget: Budget,
) -> Result<Row> {
    let measured = scenario.measured();
    let lowered = lowered_body(scenario, &measured);
    let mut row = Row {
        scenario: scenario.clone(),
        message_bytes: measured.request_body.len() + measured.response_body.len(),
        native: None,
        wasm: None,
    };
    let mut first_seen = None;
    for &runtime in runtimes {
        let mut gateway = gateway(runtime, module, scenario)?;
        let seen = gateway.run(&measured)?;
        check(scenario, &measured, &lowered, seen.0, &seen.1).map_err(anyhow::Error::msg)?;
        match &first_seen {
            None => first_seen = Some(seen),
            Some(first) if *first != seen => {
                bail!("{}: native and wasm outcomes differ", scenario.name)
            }
            Some(_) => {}
        }
        let result = timing::measure(budget, || -> Result<()> {
            let (local, body) = gateway.run(&measured)?;
            check(scenario, &measured, &lowered, local, &body).map_err(anyhow::Error::msg)
        })?;
        match runtime {
            Runtime::Native => row.native = Some(result),
            Runtime::Wasm => row.wasm = Some(result),
        }
    }
    Ok(row)
}

/// Runs `scenario` exactly `iterations` times after its setup (for instruction counting).
pub fn repeat(
    scenario: &Scenario,
    runtime: Runtime,
    module: Option<&Module>,
    iterations: usize,
) -> Result<()> {
    let measured = scenario.measured();
    let lowered = lowered_body(scenario, &measured);
    let mut gateway = gateway(runtime, module, scenario)?;
    timing::repeat(iterations, || -> Result<()> {
        let (local, body) = gateway.run(&measured)?;
        check(scenario, &measured, &lowered, local, &body).map_err(anyhow::Error::msg)
    })
}
