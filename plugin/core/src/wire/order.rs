//! The one stable sort that the core's orderings share (canonical JSON members and sets, drift
//! changes, approved names, screening findings). The tool-digest sorts, which run on every
//! list with one entry per tool, keep the standard sort: through the comparator below they
//! cost a filtered list 2.8% more instructions.
//!
//! Main design decision: the standard library's sort is compiled anew for every element type
//! and comparator, about 10 KB of `.wasm` each; the core had ten of them, a tenth of the
//! module, and each one more for V8 to compile at every start. Here the positions are sorted
//! through one comparator behind a `dyn`, compiled once, and the elements are then moved into
//! their places. Stable, exactly as `slice::sort_by`; the cost is an indirect call per
//! comparison and one pass to move the elements, small next to what is compared (strings).
//! (Collecting into a `BTreeSet` or `BTreeMap` sorts too, through yet another copy: the core
//! inserts into them instead.)

use std::cmp::Ordering;

/// Up to this many items are sorted in place by insertion (no allocation): most of what the
/// core sorts is an object's few keys.
const IN_PLACE: usize = 16;

/// Sorts `items` stably by `compare`: the order `items.sort_by(compare)` gives.
pub fn sort_by<T>(items: &mut Vec<T>, mut compare: impl FnMut(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    if items.len() <= IN_PLACE {
        for end in 1..items.len() {
            let mut at = end;
            // Moves the item back past every greater one: equal items keep their order.
            while let Some(before) = at.checked_sub(1) {
                let greater = match (items.get(before), items.get(at)) {
                    (Some(a), Some(b)) => compare(a, b) == Ordering::Greater,
                    _ => false,
                };
                if !greater {
                    break;
                }
                items.swap(before, at);
                at = before;
            }
        }
        return;
    }
    let order = {
        let items: &[T] = items;
        positions(
            items.len(),
            &mut |a, b| match (items.get(a), items.get(b)) {
                (Some(a), Some(b)) => compare(a, b),
                _ => Ordering::Equal,
            },
        )
    };
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(
        order
            .into_iter()
            .filter_map(|at| slots.get_mut(at).and_then(Option::take)),
    );
}

/// Sorts `items` stably by their natural order.
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, T::cmp);
}

/// `0..len` sorted stably by `compare` on positions: the one instantiation of the standard
/// sort.
#[inline(never)]
fn positions(len: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_the_standard_stable_sort_does() {
        let words = [
            "pear", "fig", "apple", "kiwi", "fig", "date", "plum", "fig", "lime", "yuzu", "sloe",
            "nut", "apricot", "quince", "cherry", "melon", "peach", "grape", "olive", "lemon",
        ];
        // Both ways through: in place (up to 16 items) and by positions (more).
        for len in 0..=words.len() {
            let mut ours: Vec<(usize, &str)> =
                words.iter().copied().enumerate().take(len).collect();
            let mut theirs = ours.clone();
            // By length only: equal lengths keep their order (the position shows it).
            sort_by(&mut ours, |a, b| a.1.len().cmp(&b.1.len()));
            theirs.sort_by_key(|a| a.1.len());
            assert_eq!(ours, theirs);
        }
        let mut numbers = vec![5, 3, 9, 1, 3, 7, 2, 8, 6, 4, 0, 3];
        sort(&mut numbers);
        assert_eq!(numbers, vec![0, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9]);
    }
}
