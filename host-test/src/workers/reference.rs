//! The single-worker reference: the scenario's exchanges replayed one after the other
//! through one VM, in every order the workers' own orders and the phases allow. What a
//! multi-worker run does must be something one worker would have done in one of these
//! orders.
//!
//! Main design decision: orders are explored lazily and remembered. A question ("does some
//! order answer this exchange so?") replays further orders only until one answers it, and
//! every outcome seen stays known for the next schedule, so thousands of schedules cost a
//! handful of sequential replays when they agree, and a disagreement costs the whole order
//! space (bounded by [`Reference::new`]'s `max_orders`). The first orders tried run each
//! worker's share as a block, starting with each worker in turn, which covers "whoever
//! came first" at once.

use super::scenario::{Scenario, UnitId};
use super::signature::{delivered_tools, exchange_signature, final_state};
use crate::abi::shared_store::SharedStore;
use crate::replay::{LoadedPlugin, Replay, ReplayOptions};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use toolseal_core::policy::fingerprint::FingerprintFields;

/// An order: for each phase, the worker of each exchange in turn.
type Order = Vec<Vec<usize>>;

/// What the single-worker orders replayed so far did.
pub struct Reference<'a> {
    plugin: &'a LoadedPlugin,
    options: &'a ReplayOptions,
    scenario: &'a Scenario,
    fields: FingerprintFields,
    orders: Orders,
    max_orders: usize,
    replayed: usize,
    /// Outcome signatures of each exchange.
    signatures: BTreeMap<UnitId, BTreeSet<String>>,
    /// Tool digests delivered to the client by each exchange.
    delivered: BTreeMap<UnitId, BTreeSet<String>>,
    /// Exchanges some order let reach the upstream.
    forwarded: BTreeSet<UnitId>,
    /// Final records.
    finals: BTreeSet<String>,
}

/// Whether the reference knows an outcome, and how far it looked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Some order did it.
    Yes,
    /// No order does it (every order was replayed).
    No,
    /// None of the orders replayed did it, and the bound stopped the search.
    NotWithin(usize),
}

impl<'a> Reference<'a> {
    /// The reference of `scenario`, replaying at most `max_orders` orders.
    pub fn new(
        plugin: &'a LoadedPlugin,
        options: &'a ReplayOptions,
        scenario: &'a Scenario,
        fields: FingerprintFields,
        max_orders: usize,
    ) -> Self {
        Reference {
            plugin,
            options,
            scenario,
            fields,
            orders: Orders::new(scenario),
            max_orders,
            replayed: 0,
            signatures: BTreeMap::new(),
            delivered: BTreeMap::new(),
            forwarded: BTreeSet::new(),
            finals: BTreeSet::new(),
        }
    }

    /// How many orders were replayed.
    pub fn replayed(&self) -> usize {
        self.replayed
    }

    /// Whether some order answers `unit` with `signature`.
    pub fn has_signature(&mut self, unit: UnitId, signature: &str) -> Result<Found> {
        self.search(|r| {
            r.signatures
                .get(&unit)
                .is_some_and(|s| s.contains(signature))
        })
    }

    /// Whether some order lets `unit` reach the upstream.
    pub fn forwards(&mut self, unit: UnitId) -> Result<Found> {
        self.search(|r| r.forwarded.contains(&unit))
    }

    /// Whether some order delivers the tool `digest` to the client of `unit`.
    pub fn delivers(&mut self, unit: UnitId, digest: &str) -> Result<Found> {
        self.search(|r| r.delivered.get(&unit).is_some_and(|d| d.contains(digest)))
    }

    /// Whether some order ends with the records `state`.
    pub fn ends_with(&mut self, state: &str) -> Result<Found> {
        self.search(|r| r.finals.contains(state))
    }

    fn search(&mut self, known: impl Fn(&Self) -> bool) -> Result<Found> {
        loop {
            if known(self) {
                return Ok(Found::Yes);
            }
            if self.replayed >= self.max_orders {
                return Ok(if self.orders.exhausted() {
                    Found::No
                } else {
                    Found::NotWithin(self.replayed)
                });
            }
            let Some(order) = self.orders.next() else {
                return Ok(Found::No);
            };
            self.replay(&order)?;
        }
    }

    /// Replays `order` through one fresh VM and remembers what each exchange did.
    fn replay(&mut self, order: &Order) -> Result<()> {
        self.replayed += 1;
        let mut replay =
            Replay::start_on(self.plugin, self.options.clone(), SharedStore::default())
                .context("starting the single-worker reference")?;
        for (phase, workers) in order.iter().enumerate() {
            let mut next: BTreeMap<usize, std::vec::IntoIter<UnitId>> = BTreeMap::new();
            for worker in 0..self.scenario.workers {
                let units: Vec<UnitId> = self
                    .scenario
                    .units_of(worker)
                    .into_iter()
                    .filter(|u| u.phase == phase)
                    .collect();
                next.insert(worker, units.into_iter());
            }
            for worker in workers {
                let Some(unit) = next.get_mut(worker).and_then(Iterator::next) else {
                    continue;
                };
                let (step, exchange) = self
                    .scenario
                    .unit(unit)
                    .context("a scenario unit without its exchange")?;
                let report = replay
                    .run_exchange(&step.transcript, exchange)
                    .context("replaying the single-worker reference")?;
                self.signatures
                    .entry(unit)
                    .or_default()
                    .insert(exchange_signature(&report));
                if report.outcome.upstream_contacted {
                    self.forwarded.insert(unit);
                }
                if let Some(tools) = delivered_tools(exchange, &report, &self.fields) {
                    let delivered = self.delivered.entry(unit).or_default();
                    delivered.extend(tools.into_iter().map(|(_, digest)| digest));
                }
            }
        }
        self.finals
            .insert(final_state(&replay.vm().host().vm.shared_data));
        Ok(())
    }
}

/// Every order of a scenario's exchanges that keeps each worker's own order and the phases:
/// first each worker's share as a block (worker r first, then r+1, ...), then every other
/// interleaving in lexicographic order.
struct Orders {
    /// Each phase's exchanges as worker ids, sorted (the first interleaving).
    sorted: Order,
    blocks: Vec<Order>,
    next_lexicographic: Option<Order>,
    tried: BTreeSet<Order>,
}

impl Orders {
    fn new(scenario: &Scenario) -> Self {
        let counts: Vec<Vec<usize>> = (0..scenario.phases.len())
            .map(|phase| {
                (0..scenario.workers)
                    .map(|w| {
                        scenario
                            .units_of(w)
                            .iter()
                            .filter(|u| u.phase == phase)
                            .count()
                    })
                    .collect()
            })
            .collect();
        let block = |first: usize| -> Order {
            counts
                .iter()
                .map(|per_worker| {
                    let n = per_worker.len();
                    (0..n)
                        .map(|k| (first + k) % n)
                        .flat_map(|w| {
                            std::iter::repeat_n(w, per_worker.get(w).copied().unwrap_or(0))
                        })
                        .collect()
                })
                .collect()
        };
        let sorted = block(0);
        let blocks = (0..scenario.workers).rev().map(block).collect();
        Orders {
            next_lexicographic: Some(sorted.clone()),
            sorted,
            blocks,
            tried: BTreeSet::new(),
        }
    }

    fn exhausted(&self) -> bool {
        self.blocks.is_empty() && self.next_lexicographic.is_none()
    }

    fn next(&mut self) -> Option<Order> {
        while let Some(order) = self.blocks.pop() {
            if self.tried.insert(order.clone()) {
                return Some(order);
            }
        }
        loop {
            let order = self.next_lexicographic.take()?;
            self.next_lexicographic = advance(&order, &self.sorted);
            if self.tried.insert(order.clone()) {
                return Some(order);
            }
        }
    }
}

/// The order after `order` (the last phase moves fastest), `None` after the last one.
fn advance(order: &Order, sorted: &Order) -> Option<Order> {
    let mut next = order.clone();
    for phase in (0..next.len()).rev() {
        let (Some(current), Some(first)) = (next.get_mut(phase), sorted.get(phase)) else {
            return None;
        };
        if next_permutation(current) {
            return Some(next);
        }
        current.clone_from(first);
    }
    None
}

/// The next lexicographic permutation of a multiset, in place; `false` (and `items`
/// untouched) after the last.
fn next_permutation(items: &mut [usize]) -> bool {
    let n = items.len();
    let Some(i) = (1..n).rev().find(|&i| items.get(i - 1) < items.get(i)) else {
        return false;
    };
    let pivot = i - 1;
    let Some(j) = (i..n).rev().find(|&j| items.get(j) > items.get(pivot)) else {
        return false;
    };
    items.swap(pivot, j);
    if let Some(tail) = items.get_mut(i..) {
        tail.reverse();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::next_permutation;

    #[test]
    fn multiset_permutations_are_each_produced_once() {
        let mut items = [0, 0, 1, 1];
        let mut seen = vec![items.to_vec()];
        while next_permutation(&mut items) {
            seen.push(items.to_vec());
        }
        assert_eq!(seen.len(), 6);
        let mut unique = seen.clone();
        unique.dedup();
        assert_eq!(unique, seen);
    }
}
