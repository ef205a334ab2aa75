//! Expectation files: the replay's output compared line by line, exactly; `BLESS=1`
//! rewrites the file instead (then review the change with `git diff`).

use anyhow::{Context, Result};
use std::path::Path;

/// What checking an expectation file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectOutcome {
    /// The output matches the file.
    Holds,
    /// The file was rewritten from the output (`BLESS=1`).
    Blessed,
    /// The output differs; holds a line diff (`-` expected, `+` actual).
    Differs(String),
}

/// Compares `lines` with the file at `path`, or rewrites it when `bless` is set.
pub fn check(path: &Path, lines: &[String], bless: bool) -> Result<ExpectOutcome> {
    if bless {
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        std::fs::write(path, text)
            .with_context(|| format!("writing the expectation file {}", path.display()))?;
        return Ok(ExpectOutcome::Blessed);
    }
    let expected = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the expectation file {} (run with BLESS=1 to create it from this replay)",
            path.display()
        )
    })?;
    let expected: Vec<&str> = expected.lines().collect();
    let actual: Vec<&str> = lines.iter().map(String::as_str).collect();
    if expected == actual {
        return Ok(ExpectOutcome::Holds);
    }
    Ok(ExpectOutcome::Differs(line_diff(&expected, &actual)))
}

/// Largest input (lines on each side) diffed with the exact LCS table; beyond it the diff
/// falls back to listing both sides from the first difference.
const MAX_LCS_LINES: usize = 4000;

/// A unified-style line diff: ` ` common, `-` only in `expected`, `+` only in `actual`.
pub fn line_diff(expected: &[&str], actual: &[&str]) -> String {
    let prefix = expected
        .iter()
        .zip(actual)
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (
        expected.get(prefix..).unwrap_or_default(),
        actual.get(prefix..).unwrap_or_default(),
    );
    let mut out = format!("@@ first difference at line {} @@\n", prefix + 1);
    if old.len() > MAX_LCS_LINES || new.len() > MAX_LCS_LINES {
        old.iter().for_each(|l| out.push_str(&format!("-{l}\n")));
        new.iter().for_each(|l| out.push_str(&format!("+{l}\n")));
        return out;
    }
    // lcs[i][j] = length of the longest common subsequence of old[i..] and new[j..].
    let width = new.len() + 1;
    let mut lcs = vec![0usize; (old.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            let value = if old.get(i) == new.get(j) {
                lcs.get(at(i + 1, j + 1)).copied().unwrap_or(0) + 1
            } else {
                let down = lcs.get(at(i + 1, j)).copied().unwrap_or(0);
                let right = lcs.get(at(i, j + 1)).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(slot) = lcs.get_mut(at(i, j)) {
                *slot = value;
            }
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let (o, n) = (old.get(i), new.get(j));
        if o.is_some() && o == n {
            out.push_str(&format!(" {}\n", o.copied().unwrap_or_default()));
            i += 1;
            j += 1;
        } else if n.is_none() || (o.is_some() && lcs.get(at(i + 1, j)) >= lcs.get(at(i, j + 1))) {
            out.push_str(&format!("-{}\n", o.copied().unwrap_or_default()));
            i += 1;
        } else {
            out.push_str(&format!("+{}\n", n.copied().unwrap_or_default()));
            j += 1;
        }
    }
    out
}
