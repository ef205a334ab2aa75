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

use crate::cli::args::{Parsed, invocation_error, is_help, parser, text_value};
use crate::input_error::input_error;
use crate::wasm::Metering;
use anyhow::Result;
use lexopt::Arg;
use messages::Runtime;
use scenario::Scenario;
use std::ffi::OsString;
use std::path::PathBuf;

/// Usage of `toolseal bench`.
pub const USAGE: &str = "\
usage:
  toolseal bench [--wasm PATH] [--runtime native|wasm|both] [--only TEXT] [--quick]
                 [--callgrind] [--fuel] [--json FILE]
      Per-message cost of tools/call (small and 64 KiB arguments) and tools/list (10, 100,
      1000 tools), verified and filtered path, JSON and SSE responses, resources/list and
      prompts/list of 100 items (a verified and a closed server; prompts and tools on a
      server that seals its prompts and tool fields: `sealed` rows), and the same call and
      lists of 10 and 100 tools under MCP 2026-07-28 (rows ending in `2026`, compared with
      their 2025 rows at the end): native toolseal-core and the .wasm on wasmtime, with the
      wasm/native ratio. --callgrind adds instructions
      per message (valgrind). --only keeps rows whose name contains TEXT. The .wasm runs
      without fuel metering, as in Envoy; --fuel meters it as `toolseal replay` does.
  toolseal bench --sessions N
      Runs N distinct sessions (list + call each) natively and prints the state store's
      key count and bytes at every power of ten: they must plateau.";

/// The options of `toolseal bench`.
#[derive(Debug, Default)]
struct BenchArgs {
    wasm: Option<PathBuf>,
    runtime: Option<String>,
    only: Option<String>,
    scenario: Option<String>,
    iters: Option<String>,
    json: Option<PathBuf>,
    sessions: Option<String>,
    callgrind: bool,
    quick: bool,
    fuel: bool,
}

fn parse(args: &[OsString]) -> Result<Parsed<BenchArgs>, lexopt::Error> {
    let mut parsed = BenchArgs::default();
    let mut parser = parser(args);
    while let Some(arg) = parser.next()? {
        match arg {
            arg if is_help(&arg) => return Ok(Parsed::Help),
            Arg::Long("wasm") => parsed.wasm = Some(parser.value()?.into()),
            Arg::Long("runtime") => parsed.runtime = Some(text_value(&mut parser, "--runtime")?),
            Arg::Long("only") => parsed.only = Some(text_value(&mut parser, "--only")?),
            // `--scenario NAME --iters N`: one scenario N times (what `--callgrind` runs).
            Arg::Long("scenario") => parsed.scenario = Some(text_value(&mut parser, "--scenario")?),
            Arg::Long("iters") => parsed.iters = Some(text_value(&mut parser, "--iters")?),
            Arg::Long("json") => parsed.json = Some(parser.value()?.into()),
            Arg::Long("sessions") => parsed.sessions = Some(text_value(&mut parser, "--sessions")?),
            Arg::Long("callgrind") => parsed.callgrind = true,
            Arg::Long("quick") => parsed.quick = true,
            Arg::Long("fuel") => parsed.fuel = true,
            other => return Err(other.unexpected()),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// Runs `toolseal bench` with `args` (the arguments after `bench`).
pub fn run(args: &[OsString]) -> Result<i32> {
    let args = match parse(args).map_err(|e| invocation_error("bench", e))? {
        Parsed::Help => {
            crate::cli::stdout::print_lines(&[USAGE])?;
            return Ok(0);
        }
        Parsed::Run(args) => args,
    };
    if let Some(n) = &args.sessions {
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
        .wasm
        .clone()
        .unwrap_or_else(crate::cli::replay_cmd::default_wasm_path);
    let runtimes = match args.runtime.as_deref().unwrap_or("both") {
        "native" => vec![Runtime::Native],
        "wasm" => vec![Runtime::Wasm],
        "both" => vec![Runtime::Native, Runtime::Wasm],
        other => {
            return Err(input_error(format!(
                "--runtime {other}: use native, wasm or both"
            )));
        }
    };
    let scenarios: Vec<Scenario> = match args.scenario.as_deref() {
        Some(name) => Scenario::all()
            .into_iter()
            .filter(|s| s.name == name)
            .collect(),
        None => {
            let only = args.only.as_deref().unwrap_or("");
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
    let metering = match args.fuel {
        true => Metering::Fuel,
        false => Metering::Off,
    };
    let module = if runtimes.contains(&Runtime::Wasm) {
        Some(gateway::Module::load(&wasm, metering)?)
    } else {
        None
    };
    if let Some(iters) = &args.iters {
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
    let budget = if args.quick {
        timing::Budget {
            batches: 3,
            batch_time: std::time::Duration::from_millis(15),
            ..Default::default()
        }
    } else {
        timing::Budget::default()
    };
    let callgrind = args.callgrind && callgrind::available();
    if args.callgrind && !callgrind {
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
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&rows, &wasm, metering).to_string())?;
    }
    Ok(0)
}
