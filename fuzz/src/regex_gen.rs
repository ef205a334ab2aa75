//! Patterns for the regex differential: a tree drawn from fuzz bytes, written once as the
//! ECMAScript pattern toolseal reads and once as a `regex` crate pattern that means the same
//! thing, plus texts over an alphabet that exercises what differs between the two dialects.
//!
//! Main design decision: meaning is translated, not syntax copied. ECMAScript's `.` skips four
//! line terminators and Rust's only `\n`; `\d`, `\w` and `\b` are ASCII in ECMAScript and
//! Unicode in Rust; ECMAScript's `\s` is its own list. Each is written for Rust as the explicit
//! set ECMAScript means, so the two engines must agree on every text. Lookahead has no Rust
//! counterpart and is left to the no-panic half of the target.

use crate::bytes::Choices;

/// Characters patterns and texts are made of: letters, digits, `_`, separators and line
/// terminators on both sides of every class difference, non-ASCII letters and an astral one.
pub const ALPHABET: [char; 16] = [
    'a', 'b', 'c', 'A', '0', '9', '_', ' ', '-', '\n', '\r', '\u{2028}', '\u{A0}', 'é', 'ß', '😀',
];

/// Characters that are syntax in both dialects (written escaped as literals).
const SYNTAX: [char; 8] = ['.', '*', '(', ')', '[', '|', '?', '$'];

/// A class shorthand.
#[derive(Debug, Clone, Copy)]
pub enum Shorthand {
    /// `\d`.
    Digit,
    /// `\w`.
    Word,
    /// `\s`.
    Space,
}

/// A pattern tree.
#[derive(Debug, Clone)]
pub enum Node {
    /// One character.
    Literal(char),
    /// `.`.
    Any,
    /// `\d`, `\w`, `\s` (or negated).
    Short(Shorthand, bool),
    /// `[...]` of ranges and shorthands (negated: `[^...]`).
    Class(bool, Vec<(char, char)>, Vec<(Shorthand, bool)>),
    /// `^`.
    Start,
    /// `$`.
    End,
    /// `\b` (or `\B`).
    Boundary(bool),
    /// `(...)` (capturing) or `(?:...)`.
    Group(Box<Node>, bool),
    /// One after the other.
    Concat(Vec<Node>),
    /// `a|b|...`.
    Alt(Vec<Node>),
    /// `x{min,max}` (`max` `None`: unbounded), lazy or not.
    Repeat(Box<Node>, u32, Option<u32>, bool),
}

/// A tree of at most `depth` levels drawn from `c`.
pub fn node(c: &mut Choices<'_>, depth: usize) -> Node {
    let leaf = depth == 0 || c.is_empty();
    match c.below(if leaf { 7 } else { 11 }) {
        0 => Node::Literal(*c.pick(&ALPHABET)),
        1 => Node::Literal(*c.pick(&SYNTAX)),
        2 => Node::Any,
        3 => Node::Short(shorthand(c), c.byte() & 1 == 1),
        4 => {
            let ranges = (0..c.below(3))
                .map(|_| {
                    let (a, b) = (*c.pick(&ALPHABET), *c.pick(&ALPHABET));
                    (a.min(b), a.max(b))
                })
                .collect::<Vec<_>>();
            let mut shorts: Vec<(Shorthand, bool)> = (0..c.below(2))
                .map(|_| (shorthand(c), c.byte() & 1 == 1))
                .collect();
            if ranges.is_empty() && shorts.is_empty() {
                shorts.push((Shorthand::Word, false));
            }
            Node::Class(c.byte() & 1 == 1, ranges, shorts)
        }
        5 => [Node::Start, Node::End][c.below(2)].clone(),
        6 => Node::Boundary(c.byte() & 1 == 1),
        7 => Node::Group(Box::new(node(c, depth - 1)), c.byte() & 1 == 1),
        8 => Node::Concat((0..1 + c.below(3)).map(|_| node(c, depth - 1)).collect()),
        9 => Node::Alt((0..2 + c.below(2)).map(|_| node(c, depth - 1)).collect()),
        _ => {
            let min = c.below(3) as u32;
            let max = match c.below(4) {
                0 => None,
                extra => Some(min + extra as u32 - 1),
            };
            // The repeated item is a group, so `x{2}` never reads as a literal `{`.
            let inner = Node::Group(Box::new(node(c, depth - 1)), false);
            Node::Repeat(Box::new(inner), min, max, c.byte() & 1 == 1)
        }
    }
}

fn shorthand(c: &mut Choices<'_>) -> Shorthand {
    *c.pick(&[Shorthand::Digit, Shorthand::Word, Shorthand::Space])
}

/// A text of up to 24 characters of [`ALPHABET`].
pub fn text(c: &mut Choices<'_>) -> String {
    (0..c.below(25)).map(|_| *c.pick(&ALPHABET)).collect()
}

/// The pattern as ECMAScript writes it.
pub fn ecma(n: &Node) -> String {
    let mut out = String::new();
    write_ecma(n, &mut out);
    out
}

fn write_ecma(n: &Node, out: &mut String) {
    match n {
        Node::Literal(ch) => literal_ecma(*ch, out),
        Node::Any => out.push('.'),
        Node::Short(s, negated) => out.push_str(short_ecma(*s, *negated)),
        Node::Class(negated, ranges, shorts) => {
            out.push('[');
            if *negated {
                out.push('^');
            }
            for (lo, hi) in ranges {
                class_char_ecma(*lo, out);
                if lo != hi {
                    out.push('-');
                    class_char_ecma(*hi, out);
                }
            }
            for (s, negated) in shorts {
                out.push_str(short_ecma(*s, *negated));
            }
            out.push(']');
        }
        Node::Start => out.push('^'),
        Node::End => out.push('$'),
        Node::Boundary(negated) => out.push_str(if *negated { "\\B" } else { "\\b" }),
        Node::Group(inner, capturing) => {
            out.push_str(if *capturing { "(" } else { "(?:" });
            write_ecma(inner, out);
            out.push(')');
        }
        Node::Concat(items) => items.iter().for_each(|i| write_ecma(i, out)),
        Node::Alt(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                write_ecma(item, out);
            }
        }
        Node::Repeat(inner, min, max, lazy) => {
            write_ecma(inner, out);
            out.push_str(&quantifier(*min, *max));
            if *lazy {
                out.push('?');
            }
        }
    }
}

fn literal_ecma(ch: char, out: &mut String) {
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        c if SYNTAX.contains(&c) => {
            out.push('\\');
            out.push(c);
        }
        c => out.push(c),
    }
}

fn class_char_ecma(ch: char, out: &mut String) {
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '-' | ']' | '^' | '\\' => {
            out.push('\\');
            out.push(ch);
        }
        c => out.push(c),
    }
}

fn short_ecma(s: Shorthand, negated: bool) -> &'static str {
    match (s, negated) {
        (Shorthand::Digit, false) => "\\d",
        (Shorthand::Digit, true) => "\\D",
        (Shorthand::Word, false) => "\\w",
        (Shorthand::Word, true) => "\\W",
        (Shorthand::Space, false) => "\\s",
        (Shorthand::Space, true) => "\\S",
    }
}

fn quantifier(min: u32, max: Option<u32>) -> String {
    match max {
        None => format!("{{{min},}}"),
        Some(max) => format!("{{{min},{max}}}"),
    }
}

/// The same pattern for the `regex` crate, with ECMAScript's meaning spelled out.
pub fn rust(n: &Node) -> String {
    let mut out = String::new();
    write_rust(n, &mut out);
    out
}

/// ECMAScript's `\s`: WhiteSpace and LineTerminator code points, as a class body.
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

fn short_rust(s: Shorthand, negated: bool) -> String {
    let body = match s {
        Shorthand::Digit => "0-9",
        Shorthand::Word => "0-9A-Za-z_",
        Shorthand::Space => ECMA_SPACE,
    };
    format!("[{}{body}]", if negated { "^" } else { "" })
}

fn write_rust(n: &Node, out: &mut String) {
    match n {
        Node::Literal(ch) => out.push_str(&regex::escape(&ch.to_string())),
        Node::Any => out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
        Node::Short(s, negated) => out.push_str(&short_rust(*s, *negated)),
        Node::Class(negated, ranges, shorts) => {
            // A union of nested classes, so a negated shorthand keeps its meaning inside.
            out.push('[');
            if *negated {
                out.push('^');
            }
            for (lo, hi) in ranges {
                out.push_str(&format!(
                    "\\x{{{:X}}}-\\x{{{:X}}}",
                    u32::from(*lo),
                    u32::from(*hi)
                ));
            }
            for (s, negated) in shorts {
                out.push_str(&short_rust(*s, *negated));
            }
            out.push(']');
        }
        Node::Start => out.push_str("\\A"),
        Node::End => out.push_str("\\z"),
        Node::Boundary(negated) => out.push_str(if *negated { "(?-u:\\B)" } else { "(?-u:\\b)" }),
        Node::Group(inner, _) => {
            out.push_str("(?:");
            write_rust(inner, out);
            out.push(')');
        }
        Node::Concat(items) => items.iter().for_each(|i| write_rust(i, out)),
        Node::Alt(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                write_rust(item, out);
            }
        }
        Node::Repeat(inner, min, max, lazy) => {
            write_rust(inner, out);
            out.push_str(&quantifier(*min, *max));
            if *lazy {
                out.push('?');
            }
        }
    }
}
