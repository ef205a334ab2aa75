//! A JSON body held before its end: the scan for a second value as bytes arrive, and the
//! remembered list the body repeats so far.

use crate::gateway::known_list::KnownList;
use crate::wire::envelope::equal_by_words;
use crate::wire::first_value::{Extent, FirstValue};
use std::rc::Rc;

/// A JSON body held before its end: the scan of what arrived, and the remembered list
/// it repeats so far.
///
/// Design decision: a list served again arrives with the very `result` bytes the worker
/// remembers, and those bytes are one complete JSON value, so the scan passes over them
/// ([`FirstValue::skip_value`]) once they are compared, at about a byte per instruction,
/// instead of reading them token by token. The bytes before and after the `result` are
/// scanned as always, and a body that stops repeating the list is scanned from where the list
/// began: every body gets the same answer as a scan of every byte.
#[derive(Debug, Default, Clone)]
pub struct HeldJson {
    scan: FirstValue,
    /// The remembered list the body repeats so far, while its `result` bytes arrive.
    repeats: Option<Repeats>,
    /// The remembered list the body was seen to repeat whole (the scan passed over it).
    repeated: Option<Repeats>,
    /// Whether the head of the body was looked at for the remembered list's `result`.
    looked: bool,
    /// The head of the body held while it is looked at (at most [`HEAD_BYTES`]).
    head: Vec<u8>,
    /// What the response's `Content-Length` declares, once the host was asked: a body held
    /// within it ends there, so it needs no scan before its end.
    declared: Declared,
}

/// A held body's declared length, asked of the host with the response headers (a body that
/// may be rewritten leaves without the header, so it is read before it is removed).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Declared {
    /// Not asked yet.
    #[default]
    Unasked,
    /// No length, or one that is not a plain decimal number.
    Nothing,
    /// The length declared.
    Length(usize),
}

/// A remembered list whose `result` bytes the body repeats so far.
#[derive(Debug, Clone)]
struct Repeats {
    list: Rc<KnownList>,
    /// Where in the body its `result` bytes start.
    at: usize,
    /// How many of its `result` bytes the body repeated; while they arrive, the scan stands
    /// at `at`.
    matched: usize,
}

/// The member whose value is a list's `result`, as compact JSON writes it.
const RESULT_KEY: &[u8] = b"\"result\":";
/// How far into a body its `result` member is looked for (a JSON-RPC envelope's head).
const HEAD_BYTES: usize = 256;

impl HeldJson {
    /// Whether the host is still to be asked for the body's `Content-Length`.
    pub(crate) fn length_unasked(&self) -> bool {
        self.declared == Declared::Unasked
    }

    /// Takes the response's `Content-Length` (counted only when it is a plain decimal number).
    ///
    /// Design decision: the scan for a second value exists for a body that never ends (a
    /// stream left open after its first message, which the client would wait on while the
    /// body is held). A body of a declared length ends when that many bytes have arrived, so
    /// it is decided at its end on the whole of it, as the scan would decide it then, and the
    /// bytes held before are not read: a 100-tool list in 16 KB callbacks is copied out of the
    /// host once instead of twice. Should the body go on past its declared length (a host
    /// that does not hold a server to it), it is scanned from its first byte on from then.
    pub(crate) fn declare(&mut self, content_length: Option<&str>) {
        let length = content_length
            .map(str::trim)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok());
        self.declared = length.map_or(Declared::Nothing, Declared::Length);
    }

    /// Whether a held body of `size` bytes is still within its declared length.
    pub(crate) fn within_declared(&self, size: usize) -> bool {
        matches!(self.declared, Declared::Length(declared) if size <= declared)
    }

    /// Where in `arrived` (the bytes after those already seen) the value of the body's
    /// `result` member starts, found in the head of the body across chunks; the head is
    /// given up once [`HEAD_BYTES`] of it show no such member.
    fn find_result(&mut self, arrived: &[u8]) -> Option<usize> {
        let before = self.head.len();
        let from = before.saturating_sub(RESULT_KEY.len().saturating_sub(1));
        let room = HEAD_BYTES.saturating_sub(before).min(arrived.len());
        self.head
            .extend_from_slice(arrived.get(..room).unwrap_or_default());
        let found = self
            .head
            .get(from..)
            .unwrap_or_default()
            .windows(RESULT_KEY.len())
            .position(|w| w == RESULT_KEY);
        match found {
            Some(at) => Some(
                from.saturating_add(at)
                    .saturating_add(RESULT_KEY.len())
                    .saturating_sub(before),
            ),
            None => {
                if self.head.len() >= HEAD_BYTES || room < arrived.len() {
                    self.stop_looking();
                }
                None
            }
        }
    }

    /// The head is looked at no more (found, given up, or no list to look for).
    fn stop_looking(&mut self) {
        self.looked = true;
        self.head = Vec::new();
    }

    /// Whether the head of the body was looked at for the remembered list's `result`.
    pub(crate) fn looked(&self) -> bool {
        self.looked
    }

    /// Stops scanning: the body is decided at its end, on the whole of it.
    pub(crate) fn abandon(&mut self) {
        self.scan.abandon();
    }

    /// How much of `list`'s `result` bytes this body was seen to repeat as they arrived:
    /// where they start in the body and how many of them were compared equal. The host's
    /// held bytes do not change while they are held, so the end of the body need not compare
    /// them again.
    pub(crate) fn repeated(&self, list: &Rc<KnownList>) -> Option<(usize, usize)> {
        let repeats = self.repeated.as_ref().or(self.repeats.as_ref())?;
        Rc::ptr_eq(&repeats.list, list).then_some((repeats.at, repeats.matched))
    }

    /// Whether more bytes can still change the scan's answer.
    pub(crate) fn watching(&self) -> bool {
        self.scan.watching()
    }

    /// The offset of the next byte the held body has not shown this scan yet.
    pub(crate) fn seen(&self) -> usize {
        let matched = self.repeats.as_ref().map_or(0, |r| r.matched);
        self.scan.fed().saturating_add(matched)
    }

    /// Feeds the bytes from [`HeldJson::seen`] on. `known`: the list remembered for this
    /// body's server, while the body's head is looked at for its `result` member.
    pub(crate) fn feed(&mut self, arrived: &[u8], known: Option<Rc<KnownList>>) -> Extent {
        let mut rest = arrived;
        if !self.looked {
            match known.map(|list| (list, self.find_result(arrived))) {
                Some((list, Some(value_at))) => {
                    self.stop_looking();
                    let (before, after) = rest.split_at(value_at.min(rest.len()));
                    if self.scan.feed(before) == Extent::Trailing {
                        return Extent::Trailing;
                    }
                    // Only where a value stands: a `"result":` inside a string is text.
                    if self.scan.between_values() {
                        let at = self.scan.fed();
                        self.repeats = Some(Repeats {
                            list,
                            at,
                            matched: 0,
                        });
                    }
                    rest = after;
                }
                Some((_, None)) => {}
                None => self.stop_looking(),
            }
        }
        if let Some(mut repeats) = self.repeats.take() {
            let bytes = repeats.list.result_bytes().unwrap_or_default();
            let wanted = bytes.get(repeats.matched..).unwrap_or_default();
            let n = wanted.len().min(rest.len());
            let (compared, after) = rest.split_at(n);
            match equal_by_words(compared, wanted.get(..n).unwrap_or_default()) {
                true if n < wanted.len() => {
                    repeats.matched = repeats.matched.saturating_add(n);
                    self.repeats = Some(repeats);
                    return Extent::Undecided;
                }
                true => {
                    // The scan was not fed since it stood between values: it still does.
                    if !self.scan.skip_value(bytes.len())
                        && self.scan.feed(bytes) == Extent::Trailing
                    {
                        return Extent::Trailing;
                    }
                    repeats.matched = bytes.len();
                    self.repeated = Some(repeats);
                    rest = after;
                }
                false => {
                    // Not the list after all: the bytes it repeated are scanned, then these.
                    let repeated = bytes.get(..repeats.matched).unwrap_or_default();
                    if self.scan.feed(repeated) == Extent::Trailing {
                        return Extent::Trailing;
                    }
                }
            }
        }
        self.scan.feed(rest)
    }
}
