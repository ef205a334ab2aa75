//! `toolseal bench`: what one MCP message costs toolseal, natively and through the very
//! `.wasm` Envoy loads (on wasmtime, through the proxy-wasm ABI), side by side in one run;
//! optionally instructions per message under callgrind; and the shared-state size under a
//! million distinct sessions.
//!
//! Main design decision: a benchmark is bounded (time budget per batch, fixed batch count)
//! and prints ratios measured in the same run, never against numbers from another run or
//! machine; every measured message is checked for the outcome its scenario promises.

pub mod callgrind;
pub mod gateway;
pub mod messages;
pub mod report;
pub mod scenario;
pub mod sessions;
pub mod timing;
pub mod workload;

use crate::cli::args::Args;
use crate::input_error::input_error;
use crate::wasm::Metering;
use anyhow::Result;
use messages::Runtime;
use scenario::Scenario;
use std::path::PathBuf;

/// Usage of `toolseal bench`.
pub const USAGE: &str = "\
  toolseal bench [--wasm PATH] [--runtime native|wasm|both] [--only TEXT] [--quick]
                 [--callgrind] [--fuel] [--json FILE]
      Per-message cost of tools/call (small and 64 KiB arguments) and tools/list (10, 100,
      1000 tools), verified and filtered path, JSON and SSE responses, and the same call and
      lists of 10 and 100 tools under MCP 2026-07-28 (rows ending in `2026`, compared with
      their 2025 rows at the end): native toolseal-core and the .wasm on wasmtime, with the
      wasm/native ratio. --callgrind adds instructions
      per message (valgrind). --only keeps rows whose name contains TEXT. The .wasm runs
      without fuel metering, as in Envoy; --fuel meters it as `toolseal replay` does.
  toolseal bench --sessions N
      Runs N distinct sessions (list + call each) natively and prints the state store's
      key count and bytes at every power of ten: they must plateau.";

const WITH_VALUE: [&str; 7] = [
    "wasm", "runtime", "only", "scenario", "iters", "json", "sessions",
];
const SWITCHES: [&str; 3] = ["callgrind", "quick", "fuel"];

/// Runs `toolseal bench` with `rest` (the arguments after `bench`).
pub fn run(rest: &[String]) -> Result<i32> {
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage:\n{USAGE}");
        return Ok(0);
    }
    let args = Args::parse(rest, &WITH_VALUE, &SWITCHES)?;
    if let Some(n) = args.value("sessions") {
        let n: usize = n
            .parse()
            .map_err(|_| input_error("--sessions needs a count"))?;
        println!(
            "{:>10} {:>8} {:>12} {:>10}",
            "sessions", "keys", "value bytes", "ms"
        );
        sessions::run(n, |c| {
            println!(
                "{:>10} {:>8} {:>12} {:>10}",
                c.sessions, c.keys, c.value_bytes, c.elapsed_ms
            );
        })?;
        return Ok(0);
    }
    let wasm = args
        .value("wasm")
        .map_or_else(crate::cli::replay_cmd::default_wasm_path, PathBuf::from);
    let runtimes = match args.value("runtime").unwrap_or("both") {
        "native" => vec![Runtime::Native],
        "wasm" => vec![Runtime::Wasm],
        "both" => vec![Runtime::Native, Runtime::Wasm],
        other => {
            return Err(input_error(format!(
                "--runtime {other}: use native, wasm or both"
            )));
        }
    };
    let scenarios: Vec<Scenario> = match args.value("scenario") {
        Some(name) => Scenario::all()
            .into_iter()
            .filter(|s| s.name == name)
            .collect(),
        None => {
            let only = args.value("only").unwrap_or("");
            Scenario::all()
                .into_iter()
                .filter(|s| s.selected(only))
                .collect()
        }
    };
    if scenarios.is_empty() {
        return Err(input_error(
            "no benchmark scenario matches --only/--scenario",
        ));
    }
    let metering = match args.has("fuel") {
        true => Metering::Fuel,
        false => Metering::Off,
    };
    let module = if runtimes.contains(&Runtime::Wasm) {
        Some(gateway::Module::load(&wasm, metering)?)
    } else {
        None
    };
    if let Some(iters) = args.value("iters") {
        let iters: usize = iters
            .parse()
            .map_err(|_| input_error("--iters needs a count"))?;
        for scenario in &scenarios {
            for &runtime in &runtimes {
                messages::repeat(scenario, runtime, module.as_ref(), iters)?;
            }
        }
        return Ok(0);
    }
    let budget = if args.has("quick") {
        timing::Budget {
            batches: 3,
            batch_time: std::time::Duration::from_millis(15),
            ..Default::default()
        }
    } else {
        timing::Budget::default()
    };
    let callgrind = args.has("callgrind") && callgrind::available();
    if args.has("callgrind") && !callgrind {
        eprintln!("toolseal bench: valgrind not found; instruction counts skipped");
    }
    let mut rows = Vec::new();
    report::print_header(&wasm, callgrind, metering);
    for scenario in &scenarios {
        let row = messages::measure(scenario, &runtimes, module.as_ref(), budget)?;
        let counts = if callgrind {
            let (native, _) =
                callgrind::instructions_per_message(scenario, Runtime::Native, &wasm, metering)?;
            let (through_wasm, guest) =
                callgrind::instructions_per_message(scenario, Runtime::Wasm, &wasm, metering)?;
            Some(report::Counts {
                native,
                wasm: through_wasm,
                guest,
            })
        } else {
            None
        };
        report::print_row(&row, counts);
        rows.push((row, counts));
    }
    report::print_summary(&rows);
    if let Some(path) = args.value("json") {
        std::fs::write(path, report::json(&rows, &wasm, metering).to_string())?;
    }
    Ok(0)
}
