//! A `tools/list` result served again byte for byte is recognized by comparing its bytes,
//! not by parsing, canonicalizing and hashing it again.
//!
//! Main design decision: only the parse is skipped, never a decision. Each worker remembers,
//! per server, the raw bytes of the `result` of the last whole `tools/list` it checked,
//! served or filtered (a drifted server's clients keep listing: each refusal would otherwise
//! cost a full parse and digest), with their parse and the fingerprint the check computed
//! for their tools. A later response whose envelope the strict
//! scanner accepts ([`crate::wire::envelope`]: `jsonrpc`, `id`, `result`, nothing else), whose id
//! answers a pending `tools/list` and whose `result` bytes are equal to the remembered ones,
//! goes through the very list check a fresh parse would (status, posture, session snapshot,
//! filtering), with the remembered parse and the fingerprint it is known to have. Any other
//! response, down to a byte of difference, takes the full path. Memory is bounded: one list
//! per server, at most [`LIST_SERVERS`] servers and `limits.max_response_bytes` of result
//! bytes in all (a list served in part also keeps its tools encoded: at most as many bytes
//! again).

use crate::gateway::engine::{Engine, Exchange};
use crate::gateway::listing::ListAnswer;
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use crate::wire::envelope::{ResultBytes, split_response};
use crate::wire::jsonrpc::{Message, Payload};
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Servers whose last served list one worker remembers.
pub const LIST_SERVERS: usize = 8;

/// The last whole `tools/list` result checked for one server.
#[derive(Debug)]
pub struct KnownList {
    /// The bytes of the `result` value as the server sent them.
    bytes: Vec<u8>,
    /// Their strict parse.
    result: Value,
    /// The fingerprint of `result.tools`.
    fingerprint: String,
    /// Where the value of the result's top-level `ttlMs` is in `bytes`, so that lowering it
    /// is a splice, not a re-encoding of every tool.
    ttl: Option<std::ops::Range<usize>>,
    /// Each tool of `result` encoded, made the first time the list is served in part (cut
    /// for its caller or under a contained drift), so that every later cut writes the kept
    /// tools' bytes instead of copying and encoding them. At most as many bytes again as
    /// `bytes`.
    encoded_tools: OnceCell<Vec<Vec<u8>>>,
}

/// One worker's remembered lists, by server id.
#[derive(Debug, Default)]
pub struct KnownLists {
    entries: BTreeMap<String, Rc<KnownList>>,
    held: usize,
}

impl KnownList {
    /// A list result: its bytes as sent, their strict parse, and the fingerprint of its tools.
    pub fn new(bytes: Vec<u8>, result: Value, fingerprint: String) -> Self {
        let ttl = result
            .get("ttlMs")
            .and_then(|_| top_level_number(&bytes, b"\"ttlMs\""));
        KnownList {
            bytes,
            result,
            fingerprint,
            ttl,
            encoded_tools: OnceCell::new(),
        }
    }

    /// The answer to request `id` holding `cut` (a result whose `tools` is empty) with this
    /// list's tools at the `kept` positions: the bytes [`crate::wire::json::encode`] gives for
    /// the same answer built as a value, written from the remembered encodings of the tools.
    /// `Err` gives `cut` back when the encoded answer has no empty `result.tools` to fill (the
    /// caller then builds the value).
    fn cut_answer(&self, id: &Value, cut: Value, kept: &[usize]) -> Result<Vec<u8>, Value> {
        let mut shell = crate::gateway::response::answer(id, cut);
        match self.fill_tools(&crate::wire::json::encode(&shell), kept) {
            Some(bytes) => Ok(bytes),
            None => Err(shell.get_mut("result").map(Value::take).unwrap_or_default()),
        }
    }

    /// `shell` (an encoded answer whose `result.tools` is `[]`) with the encodings of this
    /// list's tools at the `kept` positions written into that array.
    fn fill_tools(&self, shell: &[u8], kept: &[usize]) -> Option<Vec<u8>> {
        let tools = self.encoded_tools.get_or_init(|| {
            self.result
                .get("tools")
                .and_then(Value::as_array)
                .map(|tools| tools.iter().map(crate::wire::json::encode).collect())
                .unwrap_or_default()
        });
        let span = crate::wire::json_span::member_value(shell, &["result", "tools"])?;
        if shell.get(span.clone())? != b"[]" {
            return None;
        }
        let (head, tail) = (shell.get(..=span.start)?, shell.get(span.start + 1..)?);
        let mut out = Vec::with_capacity(self.bytes.len() + shell.len());
        out.extend_from_slice(head);
        for (n, &index) in kept.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(tools.get(index)?);
        }
        out.extend_from_slice(tail);
        Some(out)
    }
}

/// The span of the number that `key` (a JSON string as written, quotes included) names at
/// the top level of `object`, bytes that passed the strict parser. Strings are skipped whole
/// and brackets counted, so a nested member of the same name is never taken; a key spelled
/// with escapes is not found (the caller then re-encodes instead of splicing).
fn top_level_number(object: &[u8], key: &[u8]) -> Option<std::ops::Range<usize>> {
    let (mut depth, mut at) = (0usize, 0usize);
    while let Some(&byte) = object.get(at) {
        match byte {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = at;
                at += 1;
                while let Some(&c) = object.get(at) {
                    match c {
                        b'\\' => at += 1,
                        b'"' => break,
                        _ => {}
                    }
                    at += 1;
                }
                if depth == 1 && object.get(start..=at) == Some(key) {
                    let rest = object.get(at + 1..)?;
                    let colon = rest.iter().position(|&c| c == b':')?;
                    let value = at + 1 + colon + 1;
                    let begin = value
                        + object
                            .get(value..)?
                            .iter()
                            .position(|c| !c.is_ascii_whitespace())?;
                    let len = object
                        .get(begin..)?
                        .iter()
                        .position(|c| !b"-+.eE0123456789".contains(c))?;
                    return (len > 0).then_some(begin..begin + len);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

impl KnownLists {
    /// The list remembered for `server`.
    fn get(&self, server: &str) -> Option<Rc<KnownList>> {
        self.entries.get(server).map(Rc::clone)
    }

    /// Remembers `list` for `server` (replacing the previous one), keeping at most
    /// [`LIST_SERVERS`] lists and `max_bytes` of result bytes: when either would be exceeded,
    /// the others are forgotten first; a list over `max_bytes` on its own is not kept.
    pub fn remember(&mut self, server: &str, list: KnownList, max_bytes: usize) {
        if let Some(old) = self.entries.remove(server) {
            self.held = self.held.saturating_sub(old.bytes.len());
        }
        let size = list.bytes.len();
        if size > max_bytes {
            return;
        }
        if self.entries.len() >= LIST_SERVERS || self.held.saturating_add(size) > max_bytes {
            self.entries.clear();
            self.held = 0;
        }
        self.held += size;
        self.entries.insert(server.to_string(), Rc::new(list));
    }

    /// Servers with a remembered list (for tests of the bound).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Result bytes held over all servers.
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Whether no list is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Engine {
    /// The fingerprint of the list result this worker remembers for `server`, if any.
    pub fn remembered_list(&self, server: &str) -> Option<String> {
        self.known_lists
            .get(server)
            .map(|list| list.fingerprint.clone())
    }

    /// Checks `body` as a `tools/list` answer served again byte for byte, if it is one:
    /// `Some(replacement)` is the verdict (`Some(None)`: forward unchanged), `None` means
    /// the caller must parse the body as usual.
    pub(crate) fn known_list_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        body: &[u8],
    ) -> Option<Option<crate::gateway::response::Forward>> {
        if exchange.pending_lists.is_empty() {
            return None;
        }
        let known = self.known_lists.get(&exchange.server)?;
        let envelope = split_response(body, ResultBytes::Known(&known.bytes))?;
        let index = exchange
            .pending_lists
            .iter()
            .position(|pending| crate::gateway::response::same_id(&pending.id, &envelope.id))?;
        let request = exchange.pending_lists.remove(index);
        let verdict = self.list_result(
            store,
            out,
            now_ms,
            exchange,
            &request,
            &known.result,
            Some(&known.fingerprint),
        );
        self.checked_list = None;
        // A lowered `ttlMs` is spliced into the server's bytes: only the number changes.
        if let (ListAnswer::LowerTtl(cap), Some(span)) = (&verdict, &known.ttl) {
            let start = envelope.result.start.saturating_add(span.start);
            let end = envelope.result.start.saturating_add(span.end);
            return Some(Some(crate::gateway::response::Forward::Splice(
                start..end,
                *cap,
            )));
        }
        // A list served in part writes the kept tools' remembered encodings.
        let verdict = match verdict {
            crate::gateway::listing::ListAnswer::Cut { result, kept } => {
                match known.cut_answer(&envelope.id, result, &kept) {
                    Ok(bytes) => {
                        return Some(Some(crate::gateway::response::Forward::Bytes(bytes)));
                    }
                    Err(result) => crate::gateway::listing::ListAnswer::Cut { result, kept },
                }
            }
            other => other,
        };
        Some(
            verdict
                .into_answer(&envelope.id, &known.result)
                .map(|v| crate::gateway::response::Forward::Bytes(crate::wire::json::encode(&v))),
        )
    }

    /// After the full path read `body` as `payload` and checked it as a whole `tools/list`
    /// result whose tools have `fingerprint`: remembers its `result` bytes.
    pub(crate) fn remember_checked_list(
        &mut self,
        server: &str,
        body: &[u8],
        payload: Payload,
        fingerprint: String,
    ) {
        let Payload::Single(Message::Response { result, .. }) = payload else {
            return;
        };
        let Some(envelope) = split_response(body, ResultBytes::Parsed) else {
            return;
        };
        let Some(bytes) = body.get(envelope.result) else {
            return;
        };
        let list = KnownList::new(bytes.to_vec(), result, fingerprint);
        let max_bytes = self.config.limits.max_response_bytes;
        self.known_lists.remember(server, list, max_bytes);
    }
}
