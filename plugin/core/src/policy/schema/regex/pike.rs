//! The Pike VM: runs every NFA thread in lock step over the value, one code point at a
//! time, so a search costs at most (program length × value length) steps and never
//! backtracks. Closures are computed with an explicit stack (no recursion).

use super::parse::Assertion;
use super::program::{Inst, Program};
use super::{BudgetExceeded, is_line_terminator, is_word_char};

/// A set of instruction indexes with O(1) insert, membership and clear.
struct ThreadSet {
    dense: Vec<usize>,
    sparse: Vec<usize>,
}

impl ThreadSet {
    fn new(capacity: usize) -> Self {
        ThreadSet {
            dense: Vec::with_capacity(capacity),
            sparse: vec![0; capacity],
        }
    }

    /// Inserts `pc`; false if it was already there (or out of range).
    fn insert(&mut self, pc: usize) -> bool {
        let Some(&slot) = self.sparse.get(pc) else {
            return false;
        };
        if self.dense.get(slot) == Some(&pc) {
            return false;
        }
        if let Some(s) = self.sparse.get_mut(pc) {
            *s = self.dense.len();
        }
        self.dense.push(pc);
        true
    }

    fn clear(&mut self) {
        self.dense.clear();
    }
}

/// A position in the value: the code point before it (`None` at the start) and the text
/// from it on.
#[derive(Clone, Copy)]
struct Position<'t> {
    before: Option<char>,
    rest: &'t str,
}

impl<'t> Position<'t> {
    fn after(&self) -> Option<char> {
        self.rest.chars().next()
    }

    /// The position one code point further (`c` is the code point after this one).
    fn advance(&self, c: char) -> Position<'t> {
        Position {
            before: Some(c),
            rest: self.rest.get(c.len_utf8()..).unwrap_or_default(),
        }
    }

    fn holds(&self, assertion: Assertion) -> bool {
        let word = |c: Option<char>| c.is_some_and(is_word_char);
        match assertion {
            Assertion::Start => self.before.is_none(),
            Assertion::End => self.rest.is_empty(),
            Assertion::WordBoundary => word(self.before) != word(self.after()),
            Assertion::NotWordBoundary => word(self.before) == word(self.after()),
        }
    }
}

/// Whether `program` matches anywhere in `text`, spending steps from `budget`.
pub(crate) fn search(
    program: &Program,
    text: &str,
    budget: &mut u64,
) -> Result<bool, BudgetExceeded> {
    let start = Position {
        before: None,
        rest: text,
    };
    run(program, start, program.anchored, budget)
}

/// Runs `program` from `start`; with `anchored`, a match must begin at `start`.
fn run(
    program: &Program,
    start: Position<'_>,
    anchored: bool,
    budget: &mut u64,
) -> Result<bool, BudgetExceeded> {
    let len = program.insts.len();
    let mut current = ThreadSet::new(len);
    let mut next = ThreadSet::new(len);
    let mut stack = Vec::new();
    let mut here = start;
    let mut first = true;
    loop {
        if (first || !anchored) && closure(program, here, 0, &mut current, &mut stack, budget)? {
            return Ok(true);
        }
        first = false;
        let Some(c) = here.after() else {
            break;
        };
        if current.dense.is_empty() && anchored {
            break;
        }
        next.clear();
        let there = here.advance(c);
        for &pc in &current.dense {
            spend(budget)?;
            let consumes = match program.insts.get(pc) {
                Some(Inst::Char(x)) => *x == c,
                Some(Inst::Any) => !is_line_terminator(c),
                Some(Inst::Class(class)) => class.contains(c),
                _ => false,
            };
            if consumes && closure(program, there, pc + 1, &mut next, &mut stack, budget)? {
                return Ok(true);
            }
        }
        std::mem::swap(&mut current, &mut next);
        here = there;
    }
    Ok(false)
}

fn spend(budget: &mut u64) -> Result<(), BudgetExceeded> {
    *budget = budget.checked_sub(1).ok_or(BudgetExceeded)?;
    Ok(())
}

/// Adds `start` and everything reachable from it without consuming to `set`; true when
/// `Match` is reachable. A lookahead runs its own program from `here` (bounded by the
/// pattern's nesting limit and the shared budget).
fn closure(
    program: &Program,
    here: Position<'_>,
    start: usize,
    set: &mut ThreadSet,
    stack: &mut Vec<usize>,
    budget: &mut u64,
) -> Result<bool, BudgetExceeded> {
    stack.clear();
    stack.push(start);
    while let Some(pc) = stack.pop() {
        spend(budget)?;
        if !set.insert(pc) {
            continue;
        }
        match program.insts.get(pc) {
            Some(Inst::Match) => return Ok(true),
            Some(Inst::Jmp(target)) => stack.push(*target),
            Some(Inst::Split(a, b)) => {
                stack.push(*b);
                stack.push(*a);
            }
            Some(Inst::Assert(assertion)) if here.holds(*assertion) => stack.push(pc + 1),
            Some(Inst::Look(i)) => {
                let Some(look) = program.looks.get(*i) else {
                    continue;
                };
                if run(&look.program, here, true, budget)? != look.negated {
                    stack.push(pc + 1);
                }
            }
            _ => {}
        }
    }
    Ok(false)
}
