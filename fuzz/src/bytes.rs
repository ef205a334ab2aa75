//! A reader of fuzz bytes as choices: each call takes what it needs from the front and
//! answers 0 once the input is used up, so every input maps to one finite structure.

/// Fuzz bytes read as a sequence of small choices.
pub struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices read from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes }
    }

    /// The next byte (0 when used up).
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    /// One of `items`.
    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        let index = self.below(items.len());
        &items[index]
    }

    /// Whether the input is used up.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// What is left, as it is.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }
}
