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
use toolseal_core::transcript::HttpExchange;

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
    let measured = in_turn(scenario);
    let mut row = Row {
        scenario: scenario.clone(),
        message_bytes: measured
            .first()
            .map_or(0, |(m, _)| m.request_body.len() + m.response_body.len()),
        native: None,
        wasm: None,
    };
    let mut first_seen = None;
    for &runtime in runtimes {
        let mut gateway = gateway(runtime, module, scenario)?;
        let mut seen = Vec::new();
        for (exchange, lowered) in &measured {
            let outcome = gateway.run(exchange)?;
            check(scenario, exchange, lowered, outcome.0, &outcome.1)
                .map_err(anyhow::Error::msg)?;
            seen.push(outcome);
        }
        match &first_seen {
            None => first_seen = Some(seen),
            Some(first) if *first != seen => {
                bail!("{}: native and wasm outcomes differ", scenario.name)
            }
            Some(_) => {}
        }
        let mut turn = 0usize;
        let result = timing::measure(budget, || -> Result<()> {
            let (exchange, lowered) = next_in_turn(&measured, &mut turn)?;
            let (local, body) = gateway.run(exchange)?;
            check(scenario, exchange, lowered, local, &body).map_err(anyhow::Error::msg)
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
    let measured = in_turn(scenario);
    let mut gateway = gateway(runtime, module, scenario)?;
    let mut turn = 0usize;
    timing::repeat(iterations, || -> Result<()> {
        let (exchange, lowered) = next_in_turn(&measured, &mut turn)?;
        let (local, body) = gateway.run(exchange)?;
        check(scenario, exchange, lowered, local, &body).map_err(anyhow::Error::msg)
    })
}

/// The exchanges `scenario` measures in turn, each with the body its client must receive
/// when the list's `ttlMs` is lowered ([`lowered_body`]).
fn in_turn(scenario: &Scenario) -> Vec<(HttpExchange, Vec<u8>)> {
    scenario
        .measured_all()
        .into_iter()
        .map(|exchange| {
            let lowered = lowered_body(scenario, &exchange);
            (exchange, lowered)
        })
        .collect()
}

/// The next of the exchanges measured in turn (`turn` counts them).
fn next_in_turn<'m>(
    measured: &'m [(HttpExchange, Vec<u8>)],
    turn: &mut usize,
) -> Result<&'m (HttpExchange, Vec<u8>)> {
    let len = measured.len().max(1);
    let next = measured
        .get(*turn % len)
        .ok_or_else(|| anyhow::anyhow!("no exchange to measure"))?;
    *turn = turn.wrapping_add(1);
    Ok(next)
}
