//! What each worker replays: phases of steps, a step being a run of exchanges (a whole
//! transcript, some of its exchanges, or exchanges written inline, such as admin requests)
//! given to one worker. Within a phase the workers race; a phase starts when every
//! exchange of the previous one is done.
//!
//! Main design decision: the race is expressed by *who replays what*, not by timing. "Two
//! agents make first contact at once" is every worker replaying a copy of the same
//! transcript ([`Scenario::copies`]); "an approval races a list" is a setup phase, then a
//! phase where one worker posts the approval while another replays the list. Everything
//! else (which access goes first) is the scheduler's to explore.

use crate::input_error::input_error;
use crate::replay::{Transcript, load_transcript, transcript_name};
use anyhow::Result;
use serde_json::{Map, Value};
use std::path::Path;
use toolseal_core::transcript::{HttpExchange, parse_transcript};
use toolseal_core::wire::json::parse_strict;

/// The most workers a replay starts (each one a VM with its own memory).
pub const MAX_WORKERS: usize = 64;

/// A run of exchanges one worker replays, in order.
#[derive(Debug, Clone)]
pub struct Step {
    /// The worker.
    pub worker: usize,
    /// The transcript's name (the server id unless `--server` names one).
    pub transcript: String,
    /// The exchanges.
    pub exchanges: Vec<HttpExchange>,
}

/// Where one exchange of a scenario is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitId {
    /// Its phase.
    pub phase: usize,
    /// Its step in the phase.
    pub step: usize,
    /// Its index in the step.
    pub exchange: usize,
}

/// Who replays what, phase by phase.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// How many workers (VMs over one shared data store).
    pub workers: usize,
    /// The phases, each a list of steps.
    pub phases: Vec<Vec<Step>>,
    /// The server id the scenario names for its exchanges, if it names one.
    pub server: Option<String>,
}

impl Scenario {
    /// Every worker replays every transcript, in order: `workers` agents doing the same
    /// thing at once. Each is its own agent: worker W > 0 replays the sessions of the
    /// recording under ids of its own (`Mcp-Session-Id` + `.W`), as a distinct client would.
    pub fn copies(workers: usize, transcripts: &[Transcript]) -> Result<Self> {
        check_workers(workers)?;
        let steps = (0..workers)
            .flat_map(|worker| {
                transcripts.iter().map(move |t| Step {
                    exchanges: as_agent(&t.exchanges, worker),
                    ..step_of(worker, t)
                })
            })
            .collect();
        Ok(Scenario {
            workers,
            phases: vec![steps],
            server: None,
        })
    }

    /// Transcript `i` goes to worker `i mod workers`; each worker replays its own in order.
    pub fn round_robin(workers: usize, transcripts: &[Transcript]) -> Result<Self> {
        check_workers(workers)?;
        let steps = transcripts
            .iter()
            .enumerate()
            .map(|(i, t)| step_of(i % workers, t))
            .collect();
        Ok(Scenario {
            workers,
            phases: vec![steps],
            server: None,
        })
    }

    /// The exchanges `worker` replays, in order.
    pub fn units_of(&self, worker: usize) -> Vec<UnitId> {
        let mut units = Vec::new();
        for (phase, steps) in self.phases.iter().enumerate() {
            for (step_index, step) in steps.iter().enumerate() {
                if step.worker != worker {
                    continue;
                }
                units.extend((0..step.exchanges.len()).map(|exchange| UnitId {
                    phase,
                    step: step_index,
                    exchange,
                }));
            }
        }
        units
    }

    /// The step and exchange of `unit`.
    pub fn unit(&self, unit: UnitId) -> Option<(&Step, &HttpExchange)> {
        let step = self.phases.get(unit.phase)?.get(unit.step)?;
        Some((step, step.exchanges.get(unit.exchange)?))
    }

    /// Every exchange of the scenario, phase by phase, step by step.
    pub fn all_units(&self) -> Vec<UnitId> {
        let mut units: Vec<UnitId> = (0..self.workers).flat_map(|w| self.units_of(w)).collect();
        units.sort();
        units
    }

    /// Reads a scenario file (docs/host-test.md): `{"workers": N, "server": ID?, "phases":
    /// [[STEP, ...], ...]}`, each STEP `{"worker": W, "transcript": PATH, "seq": [...]?}` or
    /// `{"worker": W, "name": NAME, "exchanges": [...]}`; paths are relative to the file.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display();
        let bytes = std::fs::read(path)
            .map_err(|e| input_error(format!("cannot read scenario {shown}: {e}")))?;
        let value = parse_strict(&bytes, 128)
            .map_err(|e| input_error(format!("scenario {shown} is not valid JSON: {e}")))?;
        let base = path.parent().unwrap_or(Path::new("."));
        parse_scenario(&value, base)
            .map_err(|why| input_error(format!("scenario {shown}: {why} (see docs/host-test.md)")))
    }
}

fn step_of(worker: usize, transcript: &Transcript) -> Step {
    Step {
        worker,
        transcript: transcript.name.clone(),
        exchanges: transcript.exchanges.clone(),
    }
}

/// The session header whose value names an agent's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// `exchanges` as agent `agent` makes them: its sessions renamed (`ID.agent`; agent 0 keeps
/// the recorded ids), in request and response headers alike.
pub fn as_agent(exchanges: &[HttpExchange], agent: usize) -> Vec<HttpExchange> {
    if agent == 0 {
        return exchanges.to_vec();
    }
    let rename = |headers: &[(String, String)]| -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(name, value)| {
                if name.eq_ignore_ascii_case(SESSION_HEADER) {
                    (name.clone(), format!("{value}.{agent}"))
                } else {
                    (name.clone(), value.clone())
                }
            })
            .collect()
    };
    exchanges
        .iter()
        .map(|e| HttpExchange {
            request_headers: rename(&e.request_headers),
            response_headers: rename(&e.response_headers),
            ..e.clone()
        })
        .collect()
}

fn check_workers(workers: usize) -> Result<()> {
    if (1..=MAX_WORKERS).contains(&workers) {
        Ok(())
    } else {
        Err(input_error(format!(
            "--workers must be from 1 to {MAX_WORKERS}, not {workers}"
        )))
    }
}

fn parse_scenario(value: &Value, base: &Path) -> Result<Scenario, String> {
    let obj = value.as_object().ok_or("a scenario is a JSON object")?;
    only_keys(obj, &["workers", "server", "phases"], "the scenario")?;
    let workers = obj
        .get("workers")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=MAX_WORKERS).contains(n))
        .ok_or(format!(
            "`workers` must be a number from 1 to {MAX_WORKERS}"
        ))?;
    let server = match obj.get("server") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err("`server` must be a non-empty string".into()),
    };
    let phases = obj
        .get("phases")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or("`phases` must be a non-empty array of phases")?;
    let mut parsed = Vec::with_capacity(phases.len());
    for (p, phase) in phases.iter().enumerate() {
        let steps = phase
            .as_array()
            .ok_or(format!("phase {p} must be an array of steps"))?;
        let mut parsed_steps = Vec::with_capacity(steps.len());
        for (s, step) in steps.iter().enumerate() {
            parsed_steps.push(
                parse_step(step, workers, base)
                    .map_err(|why| format!("phase {p} step {s}: {why}"))?,
            );
        }
        parsed.push(parsed_steps);
    }
    Ok(Scenario {
        workers,
        phases: parsed,
        server,
    })
}

fn parse_step(value: &Value, workers: usize, base: &Path) -> Result<Step, String> {
    let obj = value.as_object().ok_or("a step is a JSON object")?;
    only_keys(
        obj,
        &["worker", "transcript", "seq", "name", "exchanges"],
        "a step",
    )?;
    let worker = obj
        .get("worker")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|w| *w < workers)
        .ok_or(format!(
            "`worker` must be a number from 0 to {}",
            workers - 1
        ))?;
    let (transcript, exchanges) = match (obj.get("transcript"), obj.get("exchanges")) {
        (Some(Value::String(file)), None) => {
            let path = base.join(file);
            let loaded = load_transcript(&path).map_err(|e| format!("{e:#}"))?;
            let exchanges = select(loaded.exchanges, obj.get("seq"))?;
            (transcript_name(&path), exchanges)
        }
        (None, Some(inline @ Value::Array(_))) => {
            let name = match obj.get("name") {
                Some(Value::String(n)) if !n.is_empty() => n.clone(),
                _ => return Err("inline `exchanges` need a `name` (the transcript name)".into()),
            };
            let exchanges = parse_transcript(inline.to_string().as_bytes())?;
            (name, select(exchanges, obj.get("seq"))?)
        }
        _ => {
            return Err(
                "a step has either `transcript` (a path) or `exchanges` (an array), not both"
                    .into(),
            );
        }
    };
    if exchanges.is_empty() {
        return Err("the step has no HTTP exchange to replay".into());
    }
    Ok(Step {
        worker,
        transcript,
        exchanges,
    })
}

/// The exchanges whose `seq` is listed (numbers and strings compared as text), in their
/// recorded order; all of them without a list.
fn select(exchanges: Vec<HttpExchange>, seqs: Option<&Value>) -> Result<Vec<HttpExchange>, String> {
    let Some(seqs) = seqs else {
        return Ok(exchanges);
    };
    let wanted: Vec<String> = seqs
        .as_array()
        .ok_or("`seq` must be an array of exchange labels")?
        .iter()
        .map(|s| match s {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err("`seq` labels are numbers or strings".to_owned()),
        })
        .collect::<Result<_, _>>()?;
    if let Some(missing) = wanted
        .iter()
        .find(|w| !exchanges.iter().any(|e| &e.seq == *w))
    {
        return Err(format!("no exchange has seq {missing}"));
    }
    Ok(exchanges
        .into_iter()
        .filter(|e| wanted.contains(&e.seq))
        .collect())
}

fn only_keys(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!(
            "{what} has no key {key:?} (allowed: {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}
