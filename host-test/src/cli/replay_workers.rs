//! `toolseal replay --workers N` (or `--scenario FILE`): the multi-worker replay. One
//! schedule prints the usual lines, each with the `worker` that replayed the exchange
//! first, in the order exchanges ended; several schedules print only what broke. Every
//! invariant a schedule broke is a `{"violation", ...}` line, and a last line sums up:
//! `{"schedules", "failed", "complete", "plan", "reference_steps", "workers"}`. The first
//! failing schedule is explained on stderr: how to run it alone, its audit events by
//! worker and, with `--trace`, every shared-data access in the order it was served (also
//! for a single schedule that broke nothing).

use super::replay_cmd::{ReplayArgs, WorkerArgs, check_expectation, emit_records, note_outcome};
use super::stdout::print_lines;
use crate::input_error::input_error;
use crate::replay::records::{PluginRecord, http_line};
use crate::replay::{ReplayOptions, load_transcript};
use crate::workers::explore::{Failure, Plan};
use crate::workers::invariants::Violation;
use crate::workers::scenario::Scenario;
use crate::workers::schedule_run::ScheduleRun;
use crate::workers::{Harness, Report};
use anyhow::Result;
use serde_json::{Value, json};

/// The bound of `--schedule exhaustive` without `:MAX`.
const DEFAULT_MAX_SCHEDULES: u64 = 10_000;

/// Runs the multi-worker replay `args` asks for.
pub(super) fn run(args: &ReplayArgs, options: ReplayOptions) -> Result<i32> {
    if !args.fail_hostcall.is_empty() || args.hostcalls {
        return Err(input_error(
            "--fail-hostcall and --hostcalls count calls per VM and do not combine with --workers or --scenario",
        ));
    }
    if options.store.is_some() {
        return Err(input_error(
            "--store sim does not combine with --workers or --scenario yet: the fleet harness (instances x workers over one simulated etcd) runs from host-test's tests (docs/host-test.md)",
        ));
    }
    let scenario = scenario(args)?;
    let plan = plan(&args.workers)?;
    let single = matches!(plan, Plan::Fixed(_) | Plan::Random { count: 1, .. });
    if args.expect.is_some() && !single {
        return Err(input_error(
            "--expect compares the lines of one schedule: give --schedule random:SEED or fixed:... without --schedules",
        ));
    }
    let workers = scenario.workers;
    let harness = Harness::new(options, scenario)?;
    let report = harness.explore(&plan, args.workers.keep_going)?;
    let mut lines = Vec::new();
    if single && let Some(run) = &report.exploration.first {
        schedule_lines(&mut lines, &harness, run, args.audit, args.http);
    }
    for failure in &report.exploration.failures {
        for violation in &failure.violations {
            lines.push(violation_line(&failure.schedule, violation));
        }
    }
    lines.push(summary_line(&plan, &report, workers));
    print_lines(&lines)?;
    if let Some(failure) = report.exploration.failures.first() {
        explain(failure, report.exploration.failed, args.workers.trace);
    } else if single
        && args.workers.trace
        && let Some(run) = &report.exploration.first
    {
        print_trace(run);
    }
    let expectation = match &args.expect {
        Some(path) => check_expectation(path, &lines)?,
        None => 0,
    };
    Ok(if report.exploration.failed > 0 {
        1
    } else {
        expectation
    })
}

fn scenario(args: &ReplayArgs) -> Result<Scenario> {
    let w = &args.workers;
    if let Some(path) = &w.scenario {
        if !args.transcripts.is_empty() || w.workers.is_some() || w.assign.is_some() {
            return Err(input_error(
                "--scenario names its workers and transcripts: give no TRANSCRIPT, --workers or --assign with it",
            ));
        }
        return Scenario::load(path);
    }
    if args.transcripts.is_empty() {
        return Err(input_error(
            "toolseal replay --workers needs at least one TRANSCRIPT, or --scenario FILE (see `toolseal replay --help`)",
        ));
    }
    let workers = match &w.workers {
        Some(n) => n
            .parse::<usize>()
            .map_err(|_| input_error(format!("--workers needs a number of workers, not {n:?}")))?,
        None => 1,
    };
    let transcripts = args
        .transcripts
        .iter()
        .map(|p| load_transcript(p))
        .collect::<Result<Vec<_>>>()?;
    match w.assign.as_deref() {
        None | Some("copies") => Scenario::copies(workers, &transcripts),
        Some("round-robin") => Scenario::round_robin(workers, &transcripts),
        Some(other) => Err(input_error(format!(
            "--assign must be copies or round-robin, not {other:?}"
        ))),
    }
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T> {
    text.parse::<T>()
        .map_err(|_| input_error(format!("{what} needs a whole number, not {text:?}")))
}

fn plan(w: &WorkerArgs) -> Result<Plan> {
    let spec = w.schedule.as_deref().unwrap_or("random:0");
    let count = w
        .schedules
        .as_deref()
        .map(|k| number::<u64>(k, "--schedules"))
        .transpose()?;
    let preemptions = w
        .preemptions
        .as_deref()
        .map(|p| number::<usize>(p, "--preemptions"))
        .transpose()?;
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let plan = match kind {
        "random" => Plan::Random {
            seed: number(rest, "--schedule random:SEED")?,
            count: count.unwrap_or(1),
        },
        "exhaustive" => Plan::Exhaustive {
            max_schedules: match rest {
                "" => DEFAULT_MAX_SCHEDULES,
                max => number(max, "--schedule exhaustive:MAX")?,
            },
            preemptions,
        },
        "fixed" => Plan::Fixed(
            rest.split(',')
                .filter(|c| !c.is_empty())
                .map(|c| number::<usize>(c, "--schedule fixed:C,C,..."))
                .collect::<Result<_>>()?,
        ),
        _ => {
            return Err(input_error(format!(
                "--schedule must be random:SEED, exhaustive[:MAX] or fixed:C,C,..., not {spec:?}"
            )));
        }
    };
    if count.is_some() && !matches!(plan, Plan::Random { .. }) {
        return Err(input_error("--schedules goes with --schedule random:SEED"));
    }
    if preemptions.is_some() && !matches!(plan, Plan::Exhaustive { .. }) {
        return Err(input_error("--preemptions goes with --schedule exhaustive"));
    }
    Ok(plan)
}

/// The lines of one schedule: startup records, then each exchange's records (and HTTP
/// outcome with `--http`) in the order the exchanges ended, each with its worker.
fn schedule_lines(
    lines: &mut Vec<String>,
    harness: &Harness,
    run: &ScheduleRun,
    audit: bool,
    http: bool,
) {
    for (worker, records) in run.startup.iter().enumerate() {
        let first = harness
            .scenario()
            .all_units()
            .into_iter()
            .filter_map(|u| harness.scenario().unit(u))
            .find(|(step, _)| step.worker == worker)
            .map_or_else(String::new, |(step, _)| step.transcript.clone());
        let mut own = Vec::new();
        emit_records(&mut own, &first, &Value::Null, records, audit);
        lines.extend(own.iter().map(|l| with_worker(worker, l)));
    }
    for unit in &run.units {
        let report = &unit.report;
        note_outcome(report);
        let mut own = Vec::new();
        emit_records(
            &mut own,
            &report.transcript,
            &report.seq,
            &report.records,
            audit,
        );
        if http {
            own.push(http_line(&report.transcript, &report.seq, &report.outcome));
        }
        lines.extend(own.iter().map(|l| with_worker(unit.worker, l)));
    }
}

/// `line` (a JSON object) with `"worker": W` as its first member.
fn with_worker(worker: usize, line: &str) -> String {
    match line.strip_prefix('{') {
        Some(rest) => format!("{{\"worker\":{worker},{rest}"),
        None => line.to_owned(),
    }
}

fn violation_line(schedule: &str, violation: &Violation) -> String {
    let mut line = json!({
        "violation": violation.invariant,
        "schedule": schedule,
        "detail": violation.detail,
    });
    if let (Some(at), Some(obj)) = (&violation.at, line.as_object_mut()) {
        obj.insert("worker".into(), Value::from(at.worker));
        obj.insert("transcript".into(), Value::from(at.transcript.as_str()));
        obj.insert("seq".into(), at.seq.clone());
    }
    line.to_string()
}

fn summary_line(plan: &Plan, report: &Report, workers: usize) -> String {
    let plan = match plan {
        Plan::Random { seed, count } => format!("random:{seed} x{count}"),
        Plan::Exhaustive {
            max_schedules,
            preemptions,
        } => match preemptions {
            Some(p) => format!("exhaustive:{max_schedules} preemptions<={p}"),
            None => format!("exhaustive:{max_schedules}"),
        },
        Plan::Fixed(_) => "fixed".to_owned(),
    };
    let e = &report.exploration;
    json!({
        "schedules": e.schedules,
        "failed": e.failed,
        "complete": e.complete,
        "plan": plan,
        "reference_steps": report.reference_steps,
        "workers": workers,
    })
    .to_string()
}

/// Explains the first failing schedule on stderr.
fn explain(failure: &Failure, failed: u64, trace: bool) {
    eprintln!(
        "toolseal: {failed} schedule(s) broke an invariant; the first, {}, broke {} (run it alone: --schedule {}, or --schedule {})",
        failure.schedule,
        failure
            .violations
            .iter()
            .map(|v| v.invariant)
            .collect::<Vec<_>>()
            .join(", "),
        failure.schedule,
        failure.fixed,
    );
    for unit in &failure.run.units {
        for record in &unit.report.records {
            if let PluginRecord::Audit(event) = record {
                eprintln!(
                    "  worker {} {} {}: {event}",
                    unit.worker, unit.report.transcript, unit.report.seq
                );
            }
        }
    }
    if trace {
        print_trace(&failure.run);
    }
}

/// The shared-data accesses of `run` on stderr, in the order they were served.
fn print_trace(run: &ScheduleRun) {
    eprintln!("  shared-data accesses, in the order they were served:");
    for access in &run.trace {
        eprintln!("    {access}");
    }
}
