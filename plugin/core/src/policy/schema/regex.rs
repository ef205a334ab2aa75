//! The `pattern` / `patternProperties` regular expressions: a small ECMAScript subset.
//!
//! Main design decision: no backtracking. A pattern is parsed ([`parse`]) into a tree,
//! compiled ([`program`]) into a Thompson NFA program, and run by a Pike VM ([`pike`]) that
//! answers only "is there a match anywhere" (JSON Schema patterns are unanchored searches and
//! nothing needs capture positions). Time is linear in the input for a fixed program, and a
//! step budget still caps each search: a hostile pattern or value cannot hang the VM, and a
//! search that runs out of budget is reported as a violation (fail closed).
//!
//! Supported: literals, `.`, escapes `\d \w \s \D \W \S \b \B \t \n \r \f \v \0 \cX \xHH
//! \uHHHH \u{H…}` and escaped syntax characters, classes `[a-z]` `[^…]`, anchors `^ $`,
//! groups `(…)` `(?:…)` `(?<name>…)`, lookahead `(?=…)` `(?!…)` (each runs its own program
//! from the position where it is asked; common in generated e-mail patterns), alternation,
//! quantifiers `* + ? {n} {n,} {n,m}` and their lazy forms. Matching is by Unicode code
//! point (like the `u` flag); `^`/`$` match only at the ends of the value (no `m` flag).
//! Refused at compile time: backreferences, lookbehind, Unicode property escapes, and
//! letter escapes ECMAScript does not define (such as Python's `\A` or `\Z`), which would
//! silently mean something else.

mod parse;
mod pike;
mod program;

use std::fmt;

/// Most instructions a compiled pattern may have (counted repetition is expanded).
const MAX_PROGRAM_LEN: usize = 20_000;
/// Deepest group nesting a pattern may have.
const MAX_NESTING: usize = 32;

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegexError {
    /// A construct outside the supported subset (the text names it).
    Unsupported(String),
    /// Not a valid ECMAScript pattern (the text says why).
    Syntax(String),
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegexError::Unsupported(what) => write!(f, "unsupported regex construct: {what}"),
            RegexError::Syntax(why) => write!(f, "invalid regex: {why}"),
        }
    }
}

/// The search ran out of its step budget before deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetExceeded;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Regex {
    program: program::Program,
}

impl Regex {
    /// Parses and compiles `pattern`.
    pub(crate) fn new(pattern: &str) -> Result<Regex, RegexError> {
        let tree = parse::parse(pattern, MAX_NESTING)?;
        let program = program::compile(&tree, MAX_PROGRAM_LEN)?;
        Ok(Regex { program })
    }

    /// Whether the pattern matches anywhere in `text`, spending steps from `budget`
    /// (decremented; a search that would overspend fails with [`BudgetExceeded`]).
    pub(crate) fn is_match(&self, text: &str, budget: &mut u64) -> Result<bool, BudgetExceeded> {
        pike::search(&self.program, text, budget)
    }
}

/// One item of a character class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClassItem {
    /// An inclusive code point range (a single character is `Range(c, c)`).
    Range(char, char),
    /// `\d` (or `\D` when negated).
    Digit { negated: bool },
    /// `\w` (or `\W` when negated).
    Word { negated: bool },
    /// `\s` (or `\S` when negated).
    Space { negated: bool },
}

/// A character class: `[...]`, `[^...]`, or a class escape such as `\d`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Class {
    pub(crate) negated: bool,
    pub(crate) items: Vec<ClassItem>,
}

impl Class {
    /// Whether `c` is in the class.
    pub(crate) fn contains(&self, c: char) -> bool {
        let hit = self.items.iter().any(|item| match *item {
            ClassItem::Range(lo, hi) => lo <= c && c <= hi,
            ClassItem::Digit { negated } => c.is_ascii_digit() != negated,
            ClassItem::Word { negated } => is_word_char(c) != negated,
            ClassItem::Space { negated } => is_space_char(c) != negated,
        });
        hit != self.negated
    }
}

/// ECMAScript `\w`: ASCII letters, digits and `_`.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// ECMAScript `\s`: WhiteSpace and LineTerminator code points.
pub(crate) fn is_space_char(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// ECMAScript LineTerminator (what `.` does not match).
pub(crate) fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}
