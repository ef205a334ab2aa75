//! The one stable sort that the core's orderings share (canonical JSON members and sets, drift
//! changes, approved names, screening findings), and [`sort_hot_by`] for the tool-digest
//! sort, which runs on every list with one entry per tool: there the shared sort's indirect
//! call per comparison shows in a list's cost, and the standard sort would be another copy
//! of itself for its one element type (docs/performance.md has both figures).
//!
//! Main design decision: the standard library's sort is compiled anew for every element type
//! and comparator, kilobytes of `.wasm` each, every one more for V8 to compile at every
//! start (docs/performance.md: what the copies came to). Here the positions are sorted
//! (by the merge sort below) through one comparator behind a `dyn`, compiled once, and the
//! elements are then moved into their places. Stable, exactly as `slice::sort_by`; the cost
//! is an indirect call per comparison and one pass to move the elements, small next to what
//! is compared (strings). No copy of the standard sort is left in the `.wasm`. (Collecting
//! into a `BTreeSet` or `BTreeMap` sorts too, through yet another copy: the core inserts
//! into them instead.)

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
        insertion_sort(items, &mut compare);
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
    place(items, order);
}

/// [`sort_by`] for the hot sorts of many items (the tool digests of every list): the
/// positions sorted by the same merge sort, with `compare` compiled in instead of behind a
/// `dyn` (on every list the indirect call shows), for a small copy in the `.wasm`. Positions, not the items: moving a word is cheaper than moving an item.
pub fn sort_hot_by<T>(items: &mut Vec<T>, mut compare: impl FnMut(&T, &T) -> Ordering) {
    if items.len() <= IN_PLACE {
        insertion_sort(items, &mut compare);
        return;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    {
        let items: &[T] = items;
        merge_sort_by(&mut order, |&a, &b| match (items.get(a), items.get(b)) {
            (Some(a), Some(b)) => compare(a, b),
            _ => Ordering::Equal,
        });
    }
    place(items, order);
}

/// Moves `items` into the order `order` (their positions, sorted) gives.
fn place<T>(items: &mut Vec<T>, order: Vec<usize>) {
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(
        order
            .into_iter()
            .filter_map(|at| slots.get_mut(at).and_then(Option::take)),
    );
}

/// Sorts `items` stably by insertion, in place.
fn insertion_sort<T>(items: &mut [T], compare: &mut impl FnMut(&T, &T) -> Ordering) {
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
}

/// Sorts `items` stably by `compare` (the order `items.sort_by(compare)` gives), compiled
/// for its element type like the standard sort but a tenth of its size: runs of
/// 16 items sorted by insertion, then merged pairwise, a run that already follows
/// its neighbour moved whole.
pub fn merge_sort_by<T: Default>(items: &mut Vec<T>, mut compare: impl FnMut(&T, &T) -> Ordering) {
    let len = items.len();
    for run in items.chunks_mut(IN_PLACE) {
        insertion_sort(run, &mut compare);
    }
    if len <= IN_PLACE {
        return;
    }
    let mut from = std::mem::take(items);
    let mut into = Vec::with_capacity(len);
    let mut width = IN_PLACE;
    while width < len {
        let mut start = 0;
        while start < len {
            let mid = start.saturating_add(width).min(len);
            let end = start.saturating_add(width.saturating_mul(2)).min(len);
            merge(&mut from, (start, mid, end), &mut into, &mut compare);
            start = end;
        }
        std::mem::swap(&mut from, &mut into);
        into.clear();
        width = width.saturating_mul(2);
    }
    *items = from;
}

/// Moves the sorted runs `from[start..mid]` and `from[mid..end]` onto `into`, merged
/// stably (on a tie the left run's item first).
fn merge<T: Default>(
    from: &mut [T],
    (start, mid, end): (usize, usize, usize),
    into: &mut Vec<T>,
    compare: &mut impl FnMut(&T, &T) -> Ordering,
) {
    let (mut left, mut right) = (start, mid);
    // Already in order (a list sorted by name, as many servers send): no comparison more.
    let ordered = match (
        mid.checked_sub(1).and_then(|last| from.get(last)),
        from.get(mid),
    ) {
        (Some(a), Some(b)) => compare(a, b) != Ordering::Greater,
        _ => true,
    };
    if !ordered {
        while left < mid && right < end {
            let from_right = match (from.get(left), from.get(right)) {
                (Some(a), Some(b)) => compare(b, a) == Ordering::Less,
                _ => break,
            };
            let at = if from_right { &mut right } else { &mut left };
            if let Some(item) = from.get_mut(*at) {
                into.push(std::mem::take(item));
            }
            *at += 1;
        }
    }
    for rest in [left..mid, right..end] {
        if let Some(rest) = from.get_mut(rest) {
            into.extend(rest.iter_mut().map(std::mem::take));
        }
    }
}

/// `names` as a set: sorted (byte order) and unique, for `binary_search`. Instead of a
/// `BTreeSet<&str>`, whose code (insert, iterate, difference, compare, drop) is kilobytes of
/// `.wasm` of its own.
pub fn name_set<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut set: Vec<&str> = names.into_iter().collect();
    sort(&mut set);
    set.dedup();
    set
}

/// Sorts `items` stably by their natural order.
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, T::cmp);
}

/// `0..len` sorted stably by `compare` on positions, through the merge sort: the standard
/// sort would be one more copy of itself in the `.wasm` for no measurable gain on what goes
/// through here.
#[inline(never)]
fn positions(len: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    merge_sort_by(&mut order, |&a, &b| compare(a, b));
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
        // The merge sort, over every length up to a few runs and inputs sorted, reversed and
        // in between.
        for len in 0..80 {
            let shapes: [fn(usize) -> usize; 4] =
                [|i| i, |i| 1000 - i, |i| (i * 37) % 11, |i| (i * 7919) % 23];
            for shape in shapes {
                let mut ours: Vec<(usize, usize)> = (0..len).map(|i| (shape(i), i)).collect();
                let mut theirs = ours.clone();
                let mut hot = ours.clone();
                merge_sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
                sort_hot_by(&mut hot, |a, b| a.0.cmp(&b.0));
                theirs.sort_by_key(|a| a.0);
                assert_eq!(ours, theirs);
                assert_eq!(hot, theirs);
            }
        }
        let mut numbers = vec![5, 3, 9, 1, 3, 7, 2, 8, 6, 4, 0, 3];
        sort(&mut numbers);
        assert_eq!(numbers, vec![0, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9]);
    }
}
