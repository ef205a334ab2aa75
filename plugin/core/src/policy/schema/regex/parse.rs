//! Pattern text → syntax tree, refusing everything outside the supported subset.
//!
//! Recursive descent whose depth is bounded by the group nesting limit. Quirks follow
//! ECMAScript's web-compatible grammar where it is unambiguous (a `{` that does not start a
//! quantifier, and a lone `]` or `}`, are literals); anything whose meaning differs between
//! regex dialects is refused.

use super::{Class, ClassItem, RegexError};

/// Largest bound accepted in `{n,m}`.
const MAX_REPEAT: u32 = 1000;

/// A zero-width assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Assertion {
    /// `^`: start of the value.
    Start,
    /// `$`: end of the value.
    End,
    /// `\b`
    WordBoundary,
    /// `\B`
    NotWordBoundary,
}

/// The syntax tree of a pattern (groups are transparent: nothing reads captures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ast {
    /// Matches the empty string.
    Empty,
    /// One literal code point.
    Char(char),
    /// `.`: any code point but a line terminator.
    Any,
    /// A character class.
    Class(Class),
    /// A zero-width assertion.
    Assert(Assertion),
    /// Lookahead `(?=…)` (or `(?!…)` when `negated`): whether `inner` matches a prefix of
    /// the rest of the value.
    Look {
        /// `(?!…)`
        negated: bool,
        /// The tree looked for.
        inner: Box<Ast>,
    },
    /// A sequence.
    Concat(Vec<Ast>),
    /// Alternatives.
    Alt(Vec<Ast>),
    /// `inner` repeated `min..=max` times (`max: None` is unbounded).
    Repeat {
        /// The repeated tree.
        inner: Box<Ast>,
        /// Least count.
        min: u32,
        /// Greatest count, if any.
        max: Option<u32>,
    },
}

/// Parses `pattern`; groups may nest at most `max_nesting` deep.
pub(crate) fn parse(pattern: &str, max_nesting: usize) -> Result<Ast, RegexError> {
    let mut parser = Parser {
        chars: pattern.chars().collect(),
        pos: 0,
        max_nesting,
    };
    let tree = parser.alternation(0)?;
    match parser.peek() {
        None => Ok(tree),
        Some(_) => Err(syntax("unmatched ')'")),
    }
}

fn syntax(why: &str) -> RegexError {
    RegexError::Syntax(why.to_owned())
}

fn unsupported(what: &str) -> RegexError {
    RegexError::Unsupported(what.to_owned())
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    max_nesting: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `a|b|c` up to a `)` or the end.
    fn alternation(&mut self, depth: usize) -> Result<Ast, RegexError> {
        let mut branches = vec![self.sequence(depth)?];
        while self.eat('|') {
            branches.push(self.sequence(depth)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Ast::Empty)
        } else {
            Ast::Alt(branches)
        })
    }

    /// Quantified atoms up to a `|`, a `)` or the end.
    fn sequence(&mut self, depth: usize) -> Result<Ast, RegexError> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom(depth)?;
            let quantified = self.quantifier(atom)?;
            items.push(quantified);
        }
        Ok(match items.len() {
            0 => Ast::Empty,
            1 => items.pop().unwrap_or(Ast::Empty),
            _ => Ast::Concat(items),
        })
    }

    fn atom(&mut self, depth: usize) -> Result<Ast, RegexError> {
        let Some(c) = self.next() else {
            return Ok(Ast::Empty);
        };
        match c {
            '(' => self.group(depth),
            '[' => Ok(Ast::Class(self.class()?)),
            '.' => Ok(Ast::Any),
            '^' => Ok(Ast::Assert(Assertion::Start)),
            '$' => Ok(Ast::Assert(Assertion::End)),
            '\\' => self.escape(),
            '*' | '+' | '?' => Err(syntax("nothing to repeat")),
            '{' => {
                self.pos -= 1;
                if self.counted_bounds()?.is_some() {
                    Err(syntax("nothing to repeat"))
                } else {
                    self.pos += 1;
                    Ok(Ast::Char('{'))
                }
            }
            other => Ok(Ast::Char(other)),
        }
    }

    fn group(&mut self, depth: usize) -> Result<Ast, RegexError> {
        if depth + 1 > self.max_nesting {
            return Err(unsupported("groups nested too deeply"));
        }
        if self.eat('?') {
            match self.next() {
                Some(':') => {}
                Some(c @ ('=' | '!')) => {
                    let inner = Box::new(self.alternation(depth + 1)?);
                    return if self.eat(')') {
                        Ok(Ast::Look {
                            negated: c == '!',
                            inner,
                        })
                    } else {
                        Err(syntax("missing ')'"))
                    };
                }
                Some('<') if matches!(self.peek(), Some('=') | Some('!')) => {
                    return Err(unsupported("lookbehind (?<= or (?<!"));
                }
                Some('<') => self.group_name()?,
                _ => return Err(syntax("invalid group")),
            }
        }
        let inner = self.alternation(depth + 1)?;
        if self.eat(')') {
            Ok(inner)
        } else {
            Err(syntax("missing ')'"))
        }
    }

    /// Skips `name>` of a named group (the name is not used).
    fn group_name(&mut self) -> Result<(), RegexError> {
        let mut len = 0usize;
        while let Some(c) = self.next() {
            if c == '>' {
                return if len == 0 {
                    Err(syntax("empty group name"))
                } else {
                    Ok(())
                };
            }
            if !(c.is_alphanumeric() || c == '_' || c == '$') {
                return Err(syntax("invalid group name"));
            }
            len += 1;
        }
        Err(syntax("unterminated group name"))
    }

    fn quantifier(&mut self, atom: Ast) -> Result<Ast, RegexError> {
        let Some((min, max)) = self.take_quantifier()? else {
            return Ok(atom);
        };
        if matches!(atom, Ast::Assert(_) | Ast::Look { .. }) {
            return Err(syntax("nothing to repeat"));
        }
        self.eat('?'); // lazy: irrelevant when only the existence of a match counts
        if self.take_quantifier()?.is_some() {
            return Err(syntax("nothing to repeat"));
        }
        Ok(Ast::Repeat {
            inner: Box::new(atom),
            min,
            max,
        })
    }

    /// Consumes `*`, `+`, `?` or a counted quantifier, if one is next.
    fn take_quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, RegexError> {
        let bounds = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => return self.counted_bounds(),
            _ => return Ok(None),
        };
        self.pos += 1;
        Ok(Some(bounds))
    }

    /// At a `{`: if `{n}`, `{n,}` or `{n,m}` follows, consumes it and returns the bounds;
    /// otherwise consumes nothing and returns `None`.
    fn counted_bounds(&mut self) -> Result<Option<(u32, Option<u32>)>, RegexError> {
        let start = self.pos;
        if !self.eat('{') {
            return Ok(None);
        }
        let Some(min) = self.number()? else {
            self.pos = start;
            return Ok(None);
        };
        let max = if self.eat(',') {
            self.number()?
        } else {
            Some(min)
        };
        if !self.eat('}') {
            self.pos = start;
            return Ok(None);
        }
        if let Some(max) = max
            && max < min
        {
            return Err(syntax("numbers out of order in {} quantifier"));
        }
        Ok(Some((min, max)))
    }

    fn number(&mut self) -> Result<Option<u32>, RegexError> {
        let mut value: Option<u32> = None;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            self.pos += 1;
            let v = value.unwrap_or(0).saturating_mul(10).saturating_add(d);
            value = Some(v);
        }
        match value {
            Some(v) if v > MAX_REPEAT => Err(unsupported("repetition count above 1000")),
            v => Ok(v),
        }
    }

    /// After a `\` outside a class.
    fn escape(&mut self) -> Result<Ast, RegexError> {
        match self.peek() {
            Some('b') => {
                self.pos += 1;
                Ok(Ast::Assert(Assertion::WordBoundary))
            }
            Some('B') => {
                self.pos += 1;
                Ok(Ast::Assert(Assertion::NotWordBoundary))
            }
            _ => Ok(match self.escape_item(false)? {
                ClassItem::Range(c, _) => Ast::Char(c),
                item => Ast::Class(Class {
                    negated: false,
                    items: vec![item],
                }),
            }),
        }
    }

    /// An escape that stands for a character or a class escape (after the `\`).
    fn escape_item(&mut self, in_class: bool) -> Result<ClassItem, RegexError> {
        let Some(c) = self.next() else {
            return Err(syntax("pattern ends with '\\'"));
        };
        let single = |c| Ok(ClassItem::Range(c, c));
        match c {
            'd' | 'D' => Ok(ClassItem::Digit { negated: c == 'D' }),
            'w' | 'W' => Ok(ClassItem::Word { negated: c == 'W' }),
            's' | 'S' => Ok(ClassItem::Space { negated: c == 'S' }),
            't' => single('\t'),
            'n' => single('\n'),
            'r' => single('\r'),
            'f' => single('\u{0C}'),
            'v' => single('\u{0B}'),
            'b' if in_class => single('\u{08}'),
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => single('\0'),
            '1'..='9' => Err(unsupported("backreference \\1-\\9")),
            '0' => Err(unsupported("legacy octal escape")),
            'k' => Err(unsupported("named backreference \\k")),
            'p' | 'P' => Err(unsupported("Unicode property escape \\p / \\P")),
            'c' => self.control_escape(),
            'x' => self.hex_escape(2).map(|c| ClassItem::Range(c, c)),
            'u' => self.unicode_escape().map(|c| ClassItem::Range(c, c)),
            '-' if in_class => single('-'),
            c if is_syntax_char(c) || c == '/' => single(c),
            c if c.is_alphanumeric() => Err(RegexError::Unsupported(format!(
                "escape \\{c} (not defined by ECMAScript)"
            ))),
            c => single(c),
        }
    }

    fn control_escape(&mut self) -> Result<ClassItem, RegexError> {
        match self.next() {
            Some(letter) if letter.is_ascii_alphabetic() => {
                let code = u32::from(letter) % 32;
                let c = char::from_u32(code).ok_or_else(|| syntax("invalid \\c escape"))?;
                Ok(ClassItem::Range(c, c))
            }
            _ => Err(syntax("\\c must be followed by a letter")),
        }
    }

    fn hex_escape(&mut self, digits: usize) -> Result<char, RegexError> {
        let mut code = 0u32;
        for _ in 0..digits {
            let d = self
                .next()
                .and_then(|c| c.to_digit(16))
                .ok_or_else(|| syntax("invalid hex escape"))?;
            code = code * 16 + d;
        }
        char::from_u32(code).ok_or_else(|| unsupported("lone surrogate escape"))
    }

    /// After `\u`: `HHHH`, a surrogate pair `HHHH\uHHHH`, or `{H…}`.
    fn unicode_escape(&mut self) -> Result<char, RegexError> {
        if self.eat('{') {
            let mut code = 0u32;
            let mut len = 0;
            while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                self.pos += 1;
                len += 1;
                code = code.saturating_mul(16).saturating_add(d);
            }
            if len == 0 || !self.eat('}') {
                return Err(syntax("invalid \\u{...} escape"));
            }
            return char::from_u32(code).ok_or_else(|| syntax("\\u{...} escape out of range"));
        }
        let mut code = 0u32;
        for _ in 0..4 {
            let d = self
                .next()
                .and_then(|c| c.to_digit(16))
                .ok_or_else(|| syntax("invalid \\u escape"))?;
            code = code * 16 + d;
        }
        if (0xD800..0xDC00).contains(&code)
            && self.peek() == Some('\\')
            && self.peek_at(1) == Some('u')
        {
            let save = self.pos;
            self.pos += 2;
            let low = self.hex_value(4);
            if let Some(low) = low.filter(|l| (0xDC00..0xE000).contains(l)) {
                let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(combined).ok_or_else(|| syntax("invalid surrogate pair"));
            }
            self.pos = save;
        }
        char::from_u32(code).ok_or_else(|| unsupported("lone surrogate escape"))
    }

    fn hex_value(&mut self, digits: usize) -> Option<u32> {
        let mut code = 0u32;
        for _ in 0..digits {
            code = code * 16 + self.next()?.to_digit(16)?;
        }
        Some(code)
    }

    /// After a `[`.
    fn class(&mut self) -> Result<Class, RegexError> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            let Some(c) = self.next() else {
                return Err(syntax("missing ']'"));
            };
            if c == ']' {
                return Ok(Class { negated, items });
            }
            let low = self.class_atom(c)?;
            let is_range = self.peek() == Some('-') && !matches!(self.peek_at(1), Some(']') | None);
            if !is_range {
                items.push(low);
                continue;
            }
            self.pos += 1;
            let next = self.next().ok_or_else(|| syntax("missing ']'"))?;
            let high = self.class_atom(next)?;
            match (low, high) {
                (ClassItem::Range(lo, _), ClassItem::Range(hi, _)) if lo <= hi => {
                    items.push(ClassItem::Range(lo, hi));
                }
                (ClassItem::Range(..), ClassItem::Range(..)) => {
                    return Err(syntax("range out of order in character class"));
                }
                _ => return Err(syntax("a class escape cannot bound a range")),
            }
        }
    }

    /// One member of a class, starting with the already consumed `c`.
    fn class_atom(&mut self, c: char) -> Result<ClassItem, RegexError> {
        if c != '\\' {
            return Ok(ClassItem::Range(c, c));
        }
        if self.peek() == Some('B') {
            return Err(syntax("\\B is not allowed in a character class"));
        }
        self.escape_item(true)
    }
}

/// ECMAScript SyntaxCharacter.
fn is_syntax_char(c: char) -> bool {
    matches!(
        c,
        '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
    )
}
