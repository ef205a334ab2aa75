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

/// A position in the value: the code points on either side of it (`None` at an end).
#[derive(Clone, Copy)]
struct Position {
    before: Option<char>,
    after: Option<char>,
}

impl Position {
    fn holds(&self, assertion: Assertion) -> bool {
        let word = |c: Option<char>| c.is_some_and(is_word_char);
        match assertion {
            Assertion::Start => self.before.is_none(),
            Assertion::End => self.after.is_none(),
            Assertion::WordBoundary => word(self.before) != word(self.after),
            Assertion::NotWordBoundary => word(self.before) == word(self.after),
        }
    }
}

/// Steps left to spend; shared with the caller so one budget covers a whole validation.
struct Budget<'b> {
    left: &'b mut u64,
}

impl Budget<'_> {
    fn spend(&mut self) -> Result<(), BudgetExceeded> {
        *self.left = self.left.checked_sub(1).ok_or(BudgetExceeded)?;
        Ok(())
    }
}

/// Whether `program` matches anywhere in `text`, spending steps from `budget`.
pub(crate) fn search(
    program: &Program,
    text: &str,
    budget: &mut u64,
) -> Result<bool, BudgetExceeded> {
    let len = program.insts.len();
    let mut current = ThreadSet::new(len);
    let mut next = ThreadSet::new(len);
    let mut stack = Vec::new();
    let mut budget = Budget { left: budget };
    let mut chars = text.chars();
    let mut here = Position {
        before: None,
        after: chars.next(),
    };
    loop {
        if (here.before.is_none() || !program.anchored)
            && closure(program, here, 0, &mut current, &mut stack, &mut budget)?
        {
            return Ok(true);
        }
        let Some(c) = here.after else {
            break;
        };
        if current.dense.is_empty() && program.anchored {
            break;
        }
        next.clear();
        let there = Position {
            before: Some(c),
            after: chars.next(),
        };
        for &pc in &current.dense {
            budget.spend()?;
            let consumes = match program.insts.get(pc) {
                Some(Inst::Char(x)) => *x == c,
                Some(Inst::Any) => !is_line_terminator(c),
                Some(Inst::Class(class)) => class.contains(c),
                _ => false,
            };
            if consumes && closure(program, there, pc + 1, &mut next, &mut stack, &mut budget)? {
                return Ok(true);
            }
        }
        std::mem::swap(&mut current, &mut next);
        here = there;
    }
    Ok(false)
}

/// Adds `start` and everything reachable from it without consuming to `set`; true when
/// `Match` is reachable.
fn closure(
    program: &Program,
    here: Position,
    start: usize,
    set: &mut ThreadSet,
    stack: &mut Vec<usize>,
    budget: &mut Budget<'_>,
) -> Result<bool, BudgetExceeded> {
    stack.clear();
    stack.push(start);
    while let Some(pc) = stack.pop() {
        budget.spend()?;
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
            _ => {}
        }
    }
    Ok(false)
}
