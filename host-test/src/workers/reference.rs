//! The single-worker reference: one VM replaying the scenario's exchanges, phase by phase,
//! in an interleaving a single Envoy worker could run them in (each agent's exchanges in
//! its own order, phases after the ones before them, a stream's request and response as
//! separate steps with other streams allowed in between). A multi-worker schedule is right
//! when some such interleaving serves every list as it did, forwards every request it
//! forwarded, delivers every tool it delivered ([`departure`]) and ends with the same
//! records: whatever two workers did, one worker would have done.
//!
//! Main design decision: the interleavings are a tree searched depth-first, guided by the
//! schedule (steps tried in the order its phases took effect on the records) and pruned at
//! the first phase decided differently. Every step replayed stays in the tree with its
//! outcome, and a schedule is first matched against the known branches alone, without
//! replaying anything, before the search grows new ones. A VM cannot be copied, so taking
//! another branch replays the branch's prefix on a fresh VM; a budget of replayed steps per
//! schedule bounds the search.

use super::scenario::{Scenario, UnitId};
use super::signature::{delivered_tools, exchange_signature, final_state};
use crate::abi::shared_store::SharedStore;
use crate::cli::tool_source::listed_tools;
use crate::replay::exchange::ExchangeOutcome;
use crate::replay::{LoadedPlugin, PendingReport, Replay, ReplayOptions};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use toolseal_core::policy::fingerprint::FingerprintFields;
use toolseal_core::transcript::HttpExchange;

/// How many known nodes the walk over the tree may visit per step of the scenario before
/// the search replays new branches.
const KNOWN_VISITS_PER_STEP: usize = 8;

/// One step of an interleaving: the request or the response phase of one exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Step {
    /// The exchange.
    pub unit: UnitId,
    /// Its response phase (and the end of its stream), or its request phase.
    pub response: bool,
}

/// What one phase amounted to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PhaseOutcome {
    /// Its signature ([`super::signature::Signature`], this phase's half).
    pub signature: String,
    /// The signature again when the phase answers a `tools/list`: how the list was served
    /// (whole, filtered, refused) and audited, which the reference must match.
    pub list_answer: Option<String>,
    /// Whether the request reached the upstream (request phases).
    pub forwarded: bool,
    /// The digests of the tools the client received (response phases of lists).
    pub delivered: Vec<String>,
}

/// How a phase of the schedule (`ours`) departs from the reference's, if it does.
///
/// Not every decision is compared: a phase carrying several messages (a `subscriptions/
/// listen` stream) decides each on the record as it reads it then, and another worker may
/// write in between, which one worker never does inside one callback. What must agree is
/// what the invariants name: a list served as the reference serves it, no request forwarded
/// that it refuses (refusing what it forwards is failing closed), no tool delivered that it
/// withholds.
pub fn departure(ours: &PhaseOutcome, reference: &PhaseOutcome) -> Option<&'static str> {
    if ours.forwarded && !reference.forwarded {
        Some("forwarded-refused")
    } else if ours
        .delivered
        .iter()
        .any(|d| !reference.delivered.contains(d))
    {
        Some("drifted-tool-delivered")
    } else if ours.list_answer != reference.list_answer {
        Some("list-not-sequential")
    } else {
        None
    }
}

/// What a schedule did, as the reference compares it.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// Each phase's outcome.
    pub phases: BTreeMap<Step, PhaseOutcome>,
    /// Where each phase took effect in the schedule (the order tried first): the position
    /// in the access trace of its last write to a server record, else of its last read of
    /// one, else of its end.
    pub order: BTreeMap<Step, usize>,
    /// The records the schedule ended with.
    pub final_state: String,
}

/// Why no interleaving matched: the closest one found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// How many steps the closest interleaving decided as the schedule did.
    pub agreed: usize,
    /// The step it decided otherwise (`None`: it agreed on every phase but the records
    /// ended otherwise).
    pub step: Option<Step>,
    /// What that interleaving did there (or the records it ended with).
    pub reference: PhaseOutcome,
    /// Whether the search ended on its budget before trying every interleaving.
    pub bounded: bool,
}

struct Node {
    outcome: PhaseOutcome,
    children: BTreeMap<Step, usize>,
    final_state: Option<String>,
}

/// A VM partway along one interleaving.
struct Cursor {
    path: Vec<Step>,
    replay: Replay,
    pending: BTreeMap<UnitId, PendingReport>,
}

/// The tree of single-worker interleavings replayed so far.
pub struct Reference<'a> {
    plugin: &'a LoadedPlugin,
    options: &'a ReplayOptions,
    scenario: &'a Scenario,
    fields: FingerprintFields,
    /// Each worker's steps, in its order.
    sequences: Vec<Vec<Step>>,
    nodes: Vec<Node>,
    cursor: Option<Cursor>,
    budget: usize,
    left: usize,
    replayed: usize,
}

impl<'a> Reference<'a> {
    /// The reference of `scenario`; each question may replay at most `budget` steps.
    pub fn new(
        plugin: &'a LoadedPlugin,
        options: &'a ReplayOptions,
        scenario: &'a Scenario,
        fields: FingerprintFields,
        budget: usize,
    ) -> Self {
        let sequences = (0..scenario.workers)
            .map(|w| {
                scenario
                    .units_of(w)
                    .into_iter()
                    .flat_map(|unit| [false, true].map(|response| Step { unit, response }))
                    .collect()
            })
            .collect();
        Reference {
            plugin,
            options,
            scenario,
            fields,
            sequences,
            nodes: vec![Node {
                outcome: PhaseOutcome::default(),
                children: BTreeMap::new(),
                final_state: None,
            }],
            cursor: None,
            budget,
            left: budget,
            replayed: 0,
        }
    }

    /// Steps replayed so far, over every question.
    pub fn replayed(&self) -> usize {
        self.replayed
    }

    /// Finds an interleaving that decides every phase as `target` and ends with its
    /// records, replaying at most `budget` steps (at most the reference's own budget);
    /// `Ok(None)` when one does, else the closest one.
    pub fn explain(&mut self, target: &Target, budget: usize) -> Result<Option<Mismatch>> {
        let mut next = vec![0; self.sequences.len()];
        let steps: usize = self.sequences.iter().map(Vec::len).sum();
        let mut visits = KNOWN_VISITS_PER_STEP.saturating_mul(steps);
        if self.walk_known(0, &mut next, target, &mut visits) {
            return Ok(None);
        }
        self.left = self.budget.min(budget);
        let mut path = Vec::new();
        let mut closest: Option<Mismatch> = None;
        if self.search(0, &mut path, &mut next, target, &mut closest)? {
            return Ok(None);
        }
        let bounded = self.left == 0;
        Ok(Some(match closest {
            Some(m) => Mismatch { bounded, ..m },
            None => Mismatch {
                agreed: 0,
                step: None,
                reference: PhaseOutcome::default(),
                bounded,
            },
        }))
    }

    /// Walks only the interleavings already in the tree (no replay), in the schedule's
    /// order, for one that agrees everywhere and whose records are known to end alike:
    /// interleavings that differ only in the order of independent phases decide alike, so
    /// most schedules are explained by a branch an earlier one grew. At most `visits` nodes.
    fn walk_known(
        &self,
        node: usize,
        next: &mut [usize],
        target: &Target,
        visits: &mut usize,
    ) -> bool {
        if *visits == 0 {
            return false;
        }
        *visits -= 1;
        let Some(here) = self.nodes.get(node) else {
            return false;
        };
        let candidates = self.candidates(next, target);
        if candidates.is_empty() {
            return here.final_state.as_deref() == Some(target.final_state.as_str());
        }
        for worker in candidates {
            let Some(at) = next.get(worker).copied() else {
                continue;
            };
            let Some(step) = self.sequences.get(worker).and_then(|s| s.get(at)) else {
                continue;
            };
            let (Some(child), Some(expected)) = (here.children.get(step), target.phases.get(step))
            else {
                continue;
            };
            if self
                .nodes
                .get(*child)
                .is_none_or(|c| departure(expected, &c.outcome).is_some())
            {
                continue;
            }
            set(next, worker, at + 1);
            let found = self.walk_known(*child, next, target, visits);
            set(next, worker, at);
            if found {
                return true;
            }
        }
        false
    }

    fn search(
        &mut self,
        node: usize,
        path: &mut Vec<Step>,
        next: &mut [usize],
        target: &Target,
        closest: &mut Option<Mismatch>,
    ) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        let candidates = self.candidates(next, target);
        if candidates.is_empty() {
            let state = self.final_state_at(node, path)?;
            if state == target.final_state {
                return Ok(true);
            }
            note(
                closest,
                path.len(),
                None,
                PhaseOutcome {
                    signature: state,
                    ..PhaseOutcome::default()
                },
            );
            return Ok(false);
        }
        for worker in candidates {
            let Some(at) = next.get(worker).copied() else {
                continue;
            };
            let Some(step) = self.sequences.get(worker).and_then(|s| s.get(at)).copied() else {
                continue;
            };
            let child = self.child(node, path, step)?;
            let (Some(expected), Some(got)) = (
                target.phases.get(&step),
                self.nodes.get(child).map(|n| &n.outcome),
            ) else {
                continue;
            };
            if departure(expected, got).is_some() {
                note(closest, path.len(), Some(step), got.clone());
            } else {
                path.push(step);
                set(next, worker, at + 1);
                if self.search(child, path, next, target, closest)? {
                    return Ok(true);
                }
                path.pop();
                set(next, worker, at);
            }
            if self.left == 0 {
                break;
            }
        }
        Ok(false)
    }

    /// The workers whose next step may run now (its phase is the earliest left), in the
    /// order their next steps took effect in the schedule.
    fn candidates(&self, next: &[usize], target: &Target) -> Vec<usize> {
        let upcoming: Vec<(usize, Step)> = self
            .sequences
            .iter()
            .enumerate()
            .filter_map(|(w, seq)| seq.get(next.get(w).copied()?).map(|s| (w, *s)))
            .collect();
        let Some(phase) = upcoming.iter().map(|(_, s)| s.unit.phase).min() else {
            return Vec::new();
        };
        let mut ready: Vec<(usize, usize)> = upcoming
            .into_iter()
            .filter(|(_, s)| s.unit.phase == phase)
            .map(|(w, s)| (target.order.get(&s).copied().unwrap_or(usize::MAX), w))
            .collect();
        ready.sort_unstable();
        ready.into_iter().map(|(_, w)| w).collect()
    }

    /// The node reached from `node` (at `path`) by `step`, replaying it if it is new.
    fn child(&mut self, node: usize, path: &[Step], step: Step) -> Result<usize> {
        if let Some(child) = self.nodes.get(node).and_then(|n| n.children.get(&step)) {
            return Ok(*child);
        }
        let outcome = self.replay_step(path, step)?;
        let child = self.nodes.len();
        self.nodes.push(Node {
            outcome,
            children: BTreeMap::new(),
            final_state: None,
        });
        if let Some(parent) = self.nodes.get_mut(node) {
            parent.children.insert(step, child);
        }
        Ok(child)
    }

    fn final_state_at(&mut self, node: usize, path: &[Step]) -> Result<String> {
        if let Some(state) = self.nodes.get(node).and_then(|n| n.final_state.clone()) {
            return Ok(state);
        }
        let cursor = self.cursor_at(path)?;
        let state = final_state(&cursor.replay.vm().host().vm.shared_data);
        if let Some(n) = self.nodes.get_mut(node) {
            n.final_state = Some(state.clone());
        }
        Ok(state)
    }

    /// A VM that has replayed exactly `path`: the current one, or a fresh one brought there.
    fn cursor_at(&mut self, path: &[Step]) -> Result<&mut Cursor> {
        if self.cursor.as_ref().is_none_or(|c| c.path != path) {
            let replay =
                Replay::start_on(self.plugin, self.options.clone(), SharedStore::default())
                    .context("starting the single-worker reference")?;
            let mut cursor = Cursor {
                path: Vec::new(),
                replay,
                pending: BTreeMap::new(),
            };
            for step in path {
                self.left = self.left.saturating_sub(1);
                run_step(self.scenario, &self.fields, &mut cursor, *step)?;
            }
            self.cursor = Some(cursor);
        }
        self.cursor.as_mut().context("the reference VM is gone")
    }

    fn replay_step(&mut self, path: &[Step], step: Step) -> Result<PhaseOutcome> {
        self.left = self.left.saturating_sub(1);
        self.replayed += 1;
        let (scenario, fields) = (self.scenario, self.fields);
        let cursor = self.cursor_at(path)?;
        run_step(scenario, &fields, cursor, step)
    }
}

/// Replays `step` on `cursor` and says what it did.
fn run_step(
    scenario: &Scenario,
    fields: &FingerprintFields,
    cursor: &mut Cursor,
    step: Step,
) -> Result<PhaseOutcome> {
    let (transcript, exchange) = scenario
        .unit(step.unit)
        .map(|(s, e)| (s.transcript.clone(), e))
        .context("a scenario unit without its exchange")?;
    let outcome = if step.response {
        let pending = cursor
            .pending
            .remove(&step.unit)
            .context("a response phase before its request")?;
        let report = cursor
            .replay
            .finish_exchange(pending, exchange)
            .context("replaying the single-worker reference")?;
        response_outcome(exchange, &report.outcome, fields)
    } else {
        let pending = cursor
            .replay
            .begin_exchange(&transcript, exchange)
            .context("replaying the single-worker reference")?;
        let outcome = request_outcome(&pending.pending.outcome);
        cursor.pending.insert(step.unit, pending);
        outcome
    };
    cursor.path.push(step);
    Ok(outcome)
}

/// What a request phase amounted to (`outcome` as it stood when the phase ended, or later).
pub fn request_outcome(outcome: &ExchangeOutcome) -> PhaseOutcome {
    PhaseOutcome {
        signature: exchange_signature(outcome).request,
        list_answer: None,
        forwarded: outcome.upstream_contacted,
        delivered: Vec::new(),
    }
}

/// What the response phase of `recorded` amounted to, given the exchange's `outcome`.
pub fn response_outcome(
    recorded: &HttpExchange,
    outcome: &ExchangeOutcome,
    fields: &FingerprintFields,
) -> PhaseOutcome {
    let signature = exchange_signature(outcome).response;
    PhaseOutcome {
        list_answer: listed_tools(recorded).1.then(|| signature.clone()),
        signature,
        forwarded: false,
        delivered: digests(delivered_tools(recorded, outcome, fields)),
    }
}

/// The digests of delivered tools, sorted.
fn digests(tools: Option<Vec<(String, String)>>) -> Vec<String> {
    let mut digests: Vec<String> = tools
        .unwrap_or_default()
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    digests.sort();
    digests
}

fn set(next: &mut [usize], worker: usize, value: usize) {
    if let Some(slot) = next.get_mut(worker) {
        *slot = value;
    }
}

/// Keeps the mismatch that came after the most agreeing steps.
fn note(
    closest: &mut Option<Mismatch>,
    agreed: usize,
    step: Option<Step>,
    reference: PhaseOutcome,
) {
    if closest.as_ref().is_none_or(|m| agreed > m.agreed) {
        *closest = Some(Mismatch {
            agreed,
            step,
            reference,
            bounded: false,
        });
    }
}
