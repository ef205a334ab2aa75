//! Word-level diff of two texts (tool descriptions, titles) for the report.
//!
//! Main design decision: tokens are words and the whitespace runs between them, so the
//! pieces concatenate back to each text exactly, and the diff is the longest common
//! subsequence of tokens. Descriptions are written by the server (untrusted), so the table is
//! capped: past the cap a text is shown as wholly removed and wholly added.

/// Token budget of the word diff (product of both token counts); past it a description is
/// shown as wholly removed and wholly added.
const MAX_WORD_DIFF_CELLS: usize = 4_000_000;

/// One piece of a word diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordOp {
    /// In both texts.
    Same(String),
    /// Only in the old text.
    Removed(String),
    /// Only in the new text.
    Added(String),
}

/// Splits into words and the whitespace runs between them (concatenation gives `text`).
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space.is_some_and(|s| s != space) {
            out.extend(text.get(start..i));
            start = i;
        }
        in_space = Some(space);
    }
    out.extend(text.get(start..).filter(|t| !t.is_empty()));
    out
}

/// Word-level diff of `old` and `new` (longest common subsequence of tokens).
pub fn word_diff(old: &str, new: &str) -> Vec<WordOp> {
    let (a, b) = (tokens(old), tokens(new));
    if a.len().saturating_mul(b.len()) > MAX_WORD_DIFF_CELLS {
        return vec![
            WordOp::Removed(old.to_owned()),
            WordOp::Added(new.to_owned()),
        ];
    }
    // lcs[i][j]: common tokens of a[i..] and b[j..], flattened row-major.
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            let value = if a.get(i) == b.get(j) {
                lcs.get((i + 1) * width + j + 1).map_or(0, |v| v + 1)
            } else {
                let down = lcs.get((i + 1) * width + j).copied().unwrap_or(0);
                let right = lcs.get(i * width + j + 1).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(cell) = lcs.get_mut(i * width + j) {
                *cell = value;
            }
        }
    }
    let at = |i: usize, j: usize| lcs.get(i * width + j).copied().unwrap_or(0);
    let mut ops: Vec<WordOp> = Vec::new();
    let push = |ops: &mut Vec<WordOp>, op: WordOp| match (ops.last_mut(), op) {
        (Some(WordOp::Same(t)), WordOp::Same(s))
        | (Some(WordOp::Removed(t)), WordOp::Removed(s))
        | (Some(WordOp::Added(t)), WordOp::Added(s)) => t.push_str(&s),
        (_, op) => ops.push(op),
    };
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                push(&mut ops, WordOp::Same((*x).to_owned()));
                i += 1;
                j += 1;
            }
            (Some(x), _) if j >= b.len() || at(i + 1, j) >= at(i, j + 1) => {
                push(&mut ops, WordOp::Removed((*x).to_owned()));
                i += 1;
            }
            (_, Some(y)) => {
                push(&mut ops, WordOp::Added((*y).to_owned()));
                j += 1;
            }
            (Some(x), None) => {
                push(&mut ops, WordOp::Removed((*x).to_owned()));
                i += 1;
            }
            (None, None) => break,
        }
    }
    ops
}
