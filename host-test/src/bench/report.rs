//! The benchmark's table, summary and JSON output.
//!
//! Main design decision: the table prints a row as soon as it is measured (a long run shows
//! progress) and every ratio is computed from the same run's numbers; the JSON output holds
//! the raw medians so that documents and plots are generated, never typed in.

use super::messages::Row;
use crate::wasm::Metering;
use serde_json::{Value, json};
use std::path::Path;

/// Instructions per message (callgrind).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    /// Native.
    pub native: f64,
    /// Through the `.wasm`: everything (guest code, wasmtime, the proxy-wasm host).
    pub wasm: f64,
    /// Through the `.wasm`: the guest code only (the plugin as compiled from the module).
    pub guest: f64,
}

/// The target the wasm/native ratio is held to (issue 7).
pub const WASM_NATIVE_TARGET: f64 = 2.0;

fn us(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".into(), |ns| format!("{:.1}", ns / 1000.0))
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

/// Prints the table header.
pub fn print_header(wasm: &Path, callgrind: bool, metering: Metering) {
    let size = std::fs::metadata(wasm).map(|m| m.len()).unwrap_or(0);
    let clock = if super::timing::measures_cpu_time() {
        "thread CPU time"
    } else {
        "wall time"
    };
    println!(
        "toolseal bench: one exchange (request + response) per message; median of batches; {clock}"
    );
    let metering = match metering {
        Metering::Fuel => "with fuel metering (as `toolseal replay`)",
        Metering::Off => "without fuel metering (as Envoy's V8)",
    };
    println!(
        "plugin: {} ({size} bytes); wasmtime {metering}",
        wasm.display()
    );
    let mut header = format!(
        "{:<28} {:>9} {:>11} {:>11} {:>9}",
        "scenario", "bytes", "native µs", "wasm µs", "wasm/nat"
    );
    if callgrind {
        header.push_str(&format!(
            " {:>12} {:>12} {:>9} {:>12} {:>11}",
            "native Ir", "wasm Ir", "Ir ratio", "guest Ir", "guest/nat"
        ));
    }
    println!("{header}");
}

/// Prints one row.
pub fn print_row(row: &Row, counts: Option<Counts>) {
    let mut line = format!(
        "{:<28} {:>9} {:>11} {:>11} {:>9}",
        row.scenario.name,
        row.message_bytes,
        us(row.native.map(|m| m.median_ns)),
        us(row.wasm.map(|m| m.median_ns)),
        ratio(row.ratio()),
    );
    if let Some(c) = counts {
        let r = (c.native > 0.0).then(|| c.wasm / c.native);
        let g = (c.native > 0.0).then(|| c.guest / c.native);
        line.push_str(&format!(
            " {:>12.0} {:>12.0} {:>9} {:>12.0} {:>11}",
            c.native,
            c.wasm,
            ratio(r),
            c.guest,
            ratio(g)
        ));
    }
    println!("{line}");
}

/// Prints the worst wasm/native ratio against the target.
pub fn print_summary(rows: &[(Row, Option<Counts>)]) {
    let time = rows
        .iter()
        .filter_map(|(row, _)| row.ratio().map(|r| (r, row.scenario.name.as_str())));
    summary_line("wasm/native time", time);
    let guest = rows.iter().filter_map(|(row, counts)| {
        let c = counts.as_ref().filter(|c| c.native > 0.0)?;
        Some((c.guest / c.native, row.scenario.name.as_str()))
    });
    summary_line("guest/native instructions", guest);
    // Each 2026-07-28 row against its handshake-era counterpart, measured in the same run.
    for (row, _) in rows {
        let Some(base) = row.scenario.name.strip_suffix(" 2026") else {
            continue;
        };
        let Some((old, _)) = rows.iter().find(|(r, _)| r.scenario.name == base) else {
            continue;
        };
        let per = |new: Option<super::timing::Measured>, old: Option<super::timing::Measured>| {
            ratio(new.zip(old).map(|(n, o)| n.median_ns / o.median_ns))
        };
        println!(
            "2026-07-28 / 2025: {:<28} native {:>7}  wasm {:>7}",
            row.scenario.name,
            per(row.native, old.native),
            per(row.wasm, old.wasm)
        );
    }
}

/// Prints the worst of `ratios` against the target.
fn summary_line<'a>(what: &str, ratios: impl Iterator<Item = (f64, &'a str)>) {
    let Some((r, name)) = ratios.max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return;
    };
    let verdict = if r <= WASM_NATIVE_TARGET {
        "within"
    } else {
        "OVER"
    };
    println!("worst {what} ratio: {r:.2}x ({name}); {verdict} the {WASM_NATIVE_TARGET:.1}x target");
}

/// Every row as JSON (times in nanoseconds).
pub fn json(rows: &[(Row, Option<Counts>)], wasm: &Path, metering: Metering) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|(row, counts)| {
            json!({
                "scenario": row.scenario.name,
                "tools": row.scenario.tool_count,
                "bytes": row.message_bytes,
                "native_ns": row.native.map(|m| m.median_ns),
                "wasm_ns": row.wasm.map(|m| m.median_ns),
                "ratio": row.ratio(),
                "native_ir": counts.map(|c| c.native),
                "wasm_ir": counts.map(|c| c.wasm),
                "guest_ir": counts.map(|c| c.guest),
            })
        })
        .collect();
    json!({
        "wasm": wasm.display().to_string(),
        "wasm_bytes": std::fs::metadata(wasm).map(|m| m.len()).ok(),
        "fuel": metering == Metering::Fuel,
        "rows": rows,
    })
}
