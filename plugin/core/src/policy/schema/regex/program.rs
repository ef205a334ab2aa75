//! Syntax tree → Thompson NFA program.
//!
//! Counted repetition is expanded into copies, so the program length is capped: a pattern
//! that would expand past the cap is refused rather than truncated.

use super::parse::{Assertion, Ast};
use super::{Class, RegexError};

/// One NFA instruction.
#[derive(Debug, Clone)]
pub(crate) enum Inst {
    /// Consume this code point.
    Char(char),
    /// Consume any code point but a line terminator.
    Any,
    /// Consume a code point in the class.
    Class(Class),
    /// Continue only where the assertion holds.
    Assert(Assertion),
    /// Continue only where lookahead `Program::looks[i]` holds.
    Look(usize),
    /// Continue at both targets.
    Split(usize, usize),
    /// Continue at the target.
    Jmp(usize),
    /// A match was found.
    Match,
}

/// A compiled pattern: instruction 0 is the entry.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub(crate) insts: Vec<Inst>,
    /// The pattern starts with `^`: a match can only begin at position 0.
    pub(crate) anchored: bool,
    /// Lookaheads, each its own program (matched from the position where it is asked).
    pub(crate) looks: Vec<Lookahead>,
}

/// A compiled `(?=…)` or `(?!…)`.
#[derive(Debug, Clone)]
pub(crate) struct Lookahead {
    pub(crate) negated: bool,
    pub(crate) program: Program,
}

/// Compiles `tree` into at most `max_len` instructions (lookaheads included).
pub(crate) fn compile(tree: &Ast, max_len: usize) -> Result<Program, RegexError> {
    let mut left = max_len;
    compile_counted(tree, &mut left)
}

fn compile_counted(tree: &Ast, left: &mut usize) -> Result<Program, RegexError> {
    let mut emitter = Emitter {
        insts: Vec::new(),
        looks: Vec::new(),
        left,
    };
    emitter.emit(tree)?;
    emitter.push(Inst::Match)?;
    let anchored = matches!(emitter.insts.first(), Some(Inst::Assert(Assertion::Start)));
    Ok(Program {
        insts: emitter.insts,
        anchored,
        looks: emitter.looks,
    })
}

struct Emitter<'a> {
    insts: Vec<Inst>,
    looks: Vec<Lookahead>,
    /// Instructions still allowed, shared with the programs of lookaheads.
    left: &'a mut usize,
}

impl Emitter<'_> {
    fn push(&mut self, inst: Inst) -> Result<usize, RegexError> {
        if *self.left == 0 {
            return Err(RegexError::Unsupported(format!(
                "pattern expands to more than {} instructions (reduce counted repetition)",
                super::MAX_PROGRAM_LEN
            )));
        }
        *self.left -= 1;
        self.insts.push(inst);
        Ok(self.insts.len() - 1)
    }

    fn patch(&mut self, at: usize, inst: Inst) {
        if let Some(slot) = self.insts.get_mut(at) {
            *slot = inst;
        }
    }

    fn emit(&mut self, tree: &Ast) -> Result<(), RegexError> {
        match tree {
            Ast::Empty => {}
            Ast::Char(c) => {
                self.push(Inst::Char(*c))?;
            }
            Ast::Any => {
                self.push(Inst::Any)?;
            }
            Ast::Class(class) => {
                self.push(Inst::Class(class.clone()))?;
            }
            Ast::Assert(a) => {
                self.push(Inst::Assert(*a))?;
            }
            Ast::Look { negated, inner } => {
                let program = compile_counted(inner, self.left)?;
                self.looks.push(Lookahead {
                    negated: *negated,
                    program,
                });
                self.push(Inst::Look(self.looks.len() - 1))?;
            }
            Ast::Concat(items) => {
                for item in items {
                    self.emit(item)?;
                }
            }
            Ast::Alt(branches) => self.emit_alternation(branches)?,
            Ast::Repeat { inner, min, max } => self.emit_repeat(inner, *min, *max)?,
        }
        Ok(())
    }

    fn emit_alternation(&mut self, branches: &[Ast]) -> Result<(), RegexError> {
        let mut exits = Vec::with_capacity(branches.len());
        let last = branches.len().saturating_sub(1);
        for (i, branch) in branches.iter().enumerate() {
            if i == last {
                self.emit(branch)?;
                break;
            }
            let split = self.push(Inst::Split(0, 0))?;
            self.emit(branch)?;
            exits.push(self.push(Inst::Jmp(0))?);
            let next = self.insts.len();
            self.patch(split, Inst::Split(split + 1, next));
        }
        let end = self.insts.len();
        for exit in exits {
            self.patch(exit, Inst::Jmp(end));
        }
        Ok(())
    }

    fn emit_repeat(&mut self, inner: &Ast, min: u32, max: Option<u32>) -> Result<(), RegexError> {
        for _ in 0..min {
            self.emit(inner)?;
        }
        match max {
            None => {
                let split = self.push(Inst::Split(0, 0))?;
                self.emit(inner)?;
                self.push(Inst::Jmp(split))?;
                let end = self.insts.len();
                self.patch(split, Inst::Split(split + 1, end));
            }
            Some(max) => {
                let mut splits = Vec::new();
                for _ in min..max {
                    splits.push(self.push(Inst::Split(0, 0))?);
                    self.emit(inner)?;
                }
                let end = self.insts.len();
                for split in splits {
                    self.patch(split, Inst::Split(split + 1, end));
                }
            }
        }
        Ok(())
    }
}
