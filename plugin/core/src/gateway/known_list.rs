//! A list seen before is recognized by comparison, not parsed (and, for tools, canonicalized
//! and hashed) again: a result served again byte for byte by its bytes (not even parsed), a
//! tool list whose tools equal the remembered ones (other bytes around them, or the same
//! pages gathered again) by its parse. This is the worker's one memory of "this list was
//! seen", for every section a list shows (tools, prompts, resource templates, resources).
//!
//! Main design decision: only the parse (and a tool list's digests) is skipped, never a
//! decision. Each worker remembers, per server, section and view, the last answer it read to
//! a list of that section: the raw bytes of its `result` (none for a tool list gathered from
//! pages), their parse and, for tools, the digests the check computed (or the cached set they
//! are). A tool list is remembered once checked whole, served or filtered (a drifted server's
//! clients keep listing: each refusal would otherwise cost a full parse and digest); another
//! section's answer whenever one arrived alone in its body, whatever became of it: the same
//! bytes parse to the same value, so the answer read with the remembered parse goes through
//! the very checks the full path's would (sealed or screened, closed, cut by policy), and
//! parsing it again was most of what a verified prompt or resource list cost. Per view,
//! because a server lists each kind of caller its own items: with one list per server, two
//! kinds of callers listing in turn each found the other's list remembered, and every list
//! was parsed and digested anew (15 times the cost of a list remembered, natively). The view
//! and the section only say where to look: a list is recognized by its bytes (or a tool list
//! by its tools) alone, and checked as the answer to the request its id settles.
//! Tools equal to the remembered ones, definition for definition and in the same order,
//! take those digests: equal definitions have equal digests. A later response whose
//! envelope the strict
//! scanner accepts ([`crate::wire::envelope`]: `jsonrpc`, `id`, `result`, nothing else), whose id
//! answers a pending list of the section and whose `result` bytes are equal to the remembered
//! ones goes through the very check a fresh parse would (for tools: status, posture, session
//! snapshot, filtering), with the remembered parse (and the digests it is known to have). Any
//! other response, down to a byte of difference, is parsed. Memory is bounded: one list per
//! server, section and view, at most [`LISTS`] lists and `limits.max_response_bytes` of result
//! bytes (or gathered definitions) in all, the oldest forgotten first (a tool list served in
//! part also keeps its tools encoded: at most as many bytes again).

use crate::gateway::live::LiveDigests;
use crate::policy::section::Section;
use serde_json::Value;
use std::cell::OnceCell;
use std::rc::Rc;

/// Lists one worker remembers (one per server, section and view).
pub const LISTS: usize = 32;

/// The last answer read to a list of one section of one server, for one view.
#[derive(Debug)]
pub struct KnownList {
    /// The bytes of the `result` value as the server sent them (none for a list gathered
    /// from pages: it is recognized by its tools alone).
    bytes: Option<Vec<u8>>,
    /// Their strict parse (for a gathered list, `{"tools": [...]}`).
    result: Value,
    /// The digests and fingerprint of `result.tools`, as the check had them (a tool list's:
    /// the other sections' lists are remembered for their parse).
    digests: Option<Rc<LiveDigests>>,
    /// What the list counts against the bound: its result bytes, or the bytes of the
    /// definitions gathered from its pages.
    size: usize,
    /// Where the value of the result's top-level `ttlMs` is in `bytes`, so that lowering it
    /// is a splice, not a re-encoding of every tool.
    ttl: Option<std::ops::Range<usize>>,
    /// Each tool of `result` encoded, made the first time the list is served in part (cut
    /// for its caller or under a contained drift), so that every later cut writes the kept
    /// tools' bytes instead of copying and encoding them. At most as many bytes again as
    /// `bytes`.
    encoded_tools: OnceCell<Vec<Vec<u8>>>,
    /// What screening withholds of a resource list's items (by index, and why), worked out
    /// the first time the list is screened: the same items get the same verdicts.
    flagged: OnceCell<Vec<(usize, String)>>,
}

/// A list answer the full path read, to remember: the section and view it is remembered for,
/// and for a tool list checked whole, its tools' digests.
pub(crate) struct Listed {
    pub(crate) section: Section,
    pub(crate) view: String,
    pub(crate) digests: Option<Rc<LiveDigests>>,
}

/// One worker's remembered lists, by server id, section and view key (empty: a view that
/// cannot be told), oldest first.
#[derive(Debug, Default)]
pub struct KnownLists {
    entries: Vec<Entry>,
    held: usize,
}

/// One remembered list and where it is looked up.
#[derive(Debug)]
struct Entry {
    server: String,
    section: Section,
    view: String,
    list: Rc<KnownList>,
}

impl Entry {
    fn is(&self, server: &str, section: Section, view: &str) -> bool {
        self.section == section && self.server == server && self.view == view
    }
}

impl KnownList {
    /// A tool list result: its bytes as sent, their strict parse, and the digests of its
    /// tools.
    pub(crate) fn new(bytes: Vec<u8>, result: Value, digests: Rc<LiveDigests>) -> Self {
        let ttl = result
            .get("ttlMs")
            .and_then(|_| top_level_number(&bytes, b"\"ttlMs\""));
        KnownList {
            ttl,
            digests: Some(digests),
            ..KnownList::answer(bytes, result)
        }
    }

    /// The result of a list of another section: its bytes as sent and their strict parse.
    pub(crate) fn answer(bytes: Vec<u8>, result: Value) -> Self {
        KnownList {
            size: bytes.len(),
            bytes: Some(bytes),
            result,
            digests: None,
            ttl: None,
            encoded_tools: OnceCell::new(),
            flagged: OnceCell::new(),
        }
    }

    /// A list gathered from pages: its tools (`size` bytes of definitions) and their digests.
    pub(crate) fn gathered(tools: Value, size: usize, digests: Rc<LiveDigests>) -> Self {
        let mut result = serde_json::Map::new();
        result.insert(Section::Tools.items_member().into(), tools);
        KnownList {
            bytes: None,
            result: Value::Object(result),
            digests: Some(digests),
            size,
            ttl: None,
            encoded_tools: OnceCell::new(),
            flagged: OnceCell::new(),
        }
    }

    /// The bytes of the remembered `result` (none for a list gathered from pages).
    pub(crate) fn result_bytes(&self) -> Option<&[u8]> {
        self.bytes.as_deref()
    }

    /// The strict parse of the remembered `result`.
    pub(crate) fn result(&self) -> &Value {
        &self.result
    }

    /// The digests and fingerprint of the remembered tools (`None`: not a tool list).
    pub(crate) fn digests(&self) -> Option<&Rc<LiveDigests>> {
        self.digests.as_ref()
    }

    /// Where the value of the result's top-level `ttlMs` is in its bytes.
    pub(crate) fn ttl(&self) -> Option<&std::ops::Range<usize>> {
        self.ttl.as_ref()
    }

    /// Whether `items` is this list's member of `section`: the remembered parse's own value,
    /// not an equal one.
    pub(crate) fn holds(&self, section: Section, items: &Value) -> bool {
        let member = self.result.get(section.items_member());
        member.is_some_and(|member| std::ptr::eq(member, items))
    }

    /// What screening withholds of the list's resources, `screen` worked out once.
    pub(crate) fn flagged(
        &self,
        screen: impl FnOnce() -> Vec<(usize, String)>,
    ) -> &[(usize, String)] {
        self.flagged.get_or_init(screen)
    }

    /// The digests of `tools` when they are this list's tools, definition for definition.
    pub(crate) fn digests_of(&self, tools: &Value) -> Option<&Rc<LiveDigests>> {
        let digests = self.digests.as_ref()?;
        (self.result.get(Section::Tools.items_member()) == Some(tools)).then_some(digests)
    }

    /// The answer to request `id` holding `cut` (a result whose `tools` is empty) with this
    /// list's tools at the `kept` positions: the bytes [`crate::wire::json::encode`] gives for
    /// the same answer built as a value, written from the remembered encodings of the tools.
    /// `Err` gives `cut` back when the encoded answer has no empty `result.tools` to fill (the
    /// caller then builds the value).
    pub(crate) fn cut_answer(
        &self,
        id: &Value,
        cut: Value,
        kept: &[usize],
    ) -> Result<Vec<u8>, Value> {
        let mut shell = crate::wire::jsonrpc::answer(id, cut);
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
                .get(Section::Tools.items_member())
                .and_then(Value::as_array)
                .map(|tools| tools.iter().map(crate::wire::json::encode).collect())
                .unwrap_or_default()
        });
        let span = crate::wire::json_span::member_value(
            shell,
            &["result", Section::Tools.items_member()],
        )?;
        if shell.get(span.clone())? != b"[]" {
            return None;
        }
        let (head, tail) = (shell.get(..=span.start)?, shell.get(span.start + 1..)?);
        let mut out = Vec::with_capacity(self.size + shell.len());
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
    /// The list of `section` remembered for `server` and the view of `view`.
    pub(crate) fn get(&self, server: &str, section: Section, view: &str) -> Option<Rc<KnownList>> {
        self.entries
            .iter()
            .find(|e| e.is(server, section, view))
            .map(|e| Rc::clone(&e.list))
    }

    /// The list of `section` remembered for `server` whose parse holds `items` itself
    /// ([`KnownList::holds`]): `items` were read from those very bytes.
    pub(crate) fn holding(
        &self,
        server: &str,
        section: Section,
        items: &Value,
    ) -> Option<Rc<KnownList>> {
        self.entries
            .iter()
            .find(|e| e.section == section && e.server == server && e.list.holds(section, items))
            .map(|e| Rc::clone(&e.list))
    }

    /// The tool lists remembered for `server`, one per view, oldest first.
    pub(crate) fn of<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a Rc<KnownList>> {
        self.entries
            .iter()
            .filter(move |e| e.section == Section::Tools && e.server == server)
            .map(|e| &e.list)
    }

    /// The tool list remembered last for `server`, whatever its view.
    pub(crate) fn latest(&self, server: &str) -> Option<Rc<KnownList>> {
        self.of(server).last().map(Rc::clone)
    }

    /// Remembers `list` of `section` for `server` and the view of `view` (replacing the
    /// previous one), keeping at most [`LISTS`] lists and `max_bytes` of result bytes: when
    /// either would be exceeded, the oldest are forgotten first; a list over `max_bytes` on
    /// its own is not kept.
    pub fn remember(
        &mut self,
        (server, section, view): (&str, Section, &str),
        list: KnownList,
        max_bytes: usize,
    ) {
        if let Some(at) = self
            .entries
            .iter()
            .position(|e| e.is(server, section, view))
        {
            let old = self.entries.remove(at);
            self.held = self.held.saturating_sub(old.list.size);
        }
        let size = list.size;
        if size > max_bytes {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= LISTS || self.held.saturating_add(size) > max_bytes)
        {
            let old = self.entries.remove(0);
            self.held = self.held.saturating_sub(old.list.size);
        }
        self.held += size;
        self.entries.push(Entry {
            server: server.to_string(),
            section,
            view: view.to_string(),
            list: Rc::new(list),
        });
    }

    /// Lists remembered (for tests of the bound).
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::policy::fingerprint::{FingerprintFields, digest_tools};
    use serde_json::json;

    fn tools() -> Vec<Value> {
        vec![
            json!({"name": "add", "description": "Adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}),
            json!({"name": "echo", "description": "Echoes", "inputSchema": {"type": "object", "required": ["text", "mode"]}}),
            json!({"name": "zero", "description": "Zero", "inputSchema": {"type": "object", "default": 0.5}}),
        ]
    }

    fn remembered() -> KnownList {
        let tools = Value::Array(tools());
        let digests = digest_tools(&tools, &FingerprintFields::default()).unwrap();
        KnownList::gathered(tools, 0, Rc::new(LiveDigests::computed(digests)))
    }

    #[test]
    fn equal_tools_have_the_remembered_digests_and_another_order_is_hashed_to_the_same() {
        let list = remembered();
        let fields = FingerprintFields::default();
        let same = Value::Array(tools());
        let known = list.digests_of(&same).unwrap();
        assert_eq!(
            known.fingerprint(),
            digest_tools(&same, &fields).unwrap().fingerprint()
        );
        // Another order is not recognized; hashed, it has the very same fingerprint.
        let mut reordered = tools();
        reordered.reverse();
        let reordered = Value::Array(reordered);
        assert!(list.digests_of(&reordered).is_none());
        let computed = digest_tools(&reordered, &fields).unwrap();
        assert_eq!(computed.fingerprint(), known.fingerprint());
    }

    #[test]
    fn any_difference_is_not_the_remembered_list() {
        let list = remembered();
        let mut changed = tools();
        changed[1]["description"] = json!("Echoes, and reads ~/.ssh");
        assert!(list.digests_of(&Value::Array(changed)).is_none());
        let mut extra_field = tools();
        extra_field[0]["title"] = json!("Add");
        assert!(list.digests_of(&Value::Array(extra_field)).is_none());
        let fewer: Vec<Value> = tools().into_iter().take(2).collect();
        assert!(list.digests_of(&Value::Array(fewer)).is_none());
        let mut repeated = tools();
        repeated[2] = repeated[0].clone();
        assert!(list.digests_of(&Value::Array(repeated)).is_none());
        let mut number_kind = tools();
        number_kind[2]["inputSchema"]["default"] = json!(1);
        assert!(list.digests_of(&Value::Array(number_kind)).is_none());
        assert!(list.digests_of(&json!({"tools": tools()})).is_none());
    }

    /// A remembered list of `n` result bytes.
    fn list(n: usize) -> KnownList {
        let digests = LiveDigests::computed(Default::default());
        KnownList::new(vec![b'x'; n], json!({}), Rc::new(digests))
    }

    #[test]
    fn remembered_lists_are_bounded_by_count_and_bytes() {
        let mut lists = KnownLists::default();
        for server in 0..3 * LISTS {
            lists.remember((&format!("s{server}"), Section::Tools, ""), list(10), 1000);
            assert!(lists.len() <= LISTS);
            assert_eq!(lists.held_bytes(), 10 * lists.len());
        }
        assert!(
            lists
                .get(&format!("s{}", 3 * LISTS - 1), Section::Tools, "")
                .is_some()
        );
        assert!(
            lists.get("s0", Section::Tools, "").is_none(),
            "the oldest are forgotten first"
        );
        // Room is made by forgetting the oldest, as few as needed.
        lists.remember(("s0", Section::Tools, ""), list(990), 1000);
        assert_eq!((lists.len(), lists.held_bytes()), (2, 1000));
        assert!(
            lists
                .get(&format!("s{}", 3 * LISTS - 1), Section::Tools, "")
                .is_some()
        );
        lists.remember(("s0", Section::Tools, ""), list(995), 1000);
        assert_eq!((lists.len(), lists.held_bytes()), (1, 995));
        lists.remember(("s1", Section::Tools, ""), list(1001), 1000);
        assert_eq!((lists.len(), lists.held_bytes()), (1, 995));
        lists.remember(("s0", Section::Tools, ""), list(1001), 1000);
        assert!(lists.is_empty());
        assert_eq!(lists.held_bytes(), 0);
    }

    #[test]
    fn a_list_is_remembered_per_server_and_view() {
        let mut lists = KnownLists::default();
        lists.remember(("s", Section::Tools, "plain"), list(10), 1000);
        lists.remember(("s", Section::Tools, "capable"), list(20), 1000);
        assert_eq!(lists.get("s", Section::Tools, "plain").unwrap().size, 10);
        assert_eq!(lists.get("s", Section::Tools, "capable").unwrap().size, 20);
        assert!(lists.get("s", Section::Tools, "").is_none());
        assert!(lists.get("t", Section::Tools, "plain").is_none());
        assert_eq!(lists.latest("s").unwrap().size, 20);
        // Remembered again for one view: the other's stays.
        lists.remember(("s", Section::Tools, "plain"), list(30), 1000);
        assert_eq!(lists.get("s", Section::Tools, "plain").unwrap().size, 30);
        assert_eq!(lists.get("s", Section::Tools, "capable").unwrap().size, 20);
        assert_eq!((lists.len(), lists.held_bytes()), (2, 50));
        assert_eq!(lists.latest("s").unwrap().size, 30);
    }

    #[test]
    fn each_section_of_a_server_has_its_list_remembered_and_tools_alone_name_its_lists() {
        let mut lists = KnownLists::default();
        let prompts = KnownList::answer(vec![b'p'; 40], json!({"prompts": []}));
        lists.remember(("s", Section::Tools, "plain"), list(10), 1000);
        lists.remember(("s", Section::Prompts, "plain"), prompts, 1000);
        assert_eq!(lists.get("s", Section::Tools, "plain").unwrap().size, 10);
        let remembered = lists.get("s", Section::Prompts, "plain").unwrap();
        assert_eq!(remembered.size, 40);
        assert!(remembered.digests().is_none());
        assert!(remembered.digests_of(&json!([])).is_none());
        assert!(lists.get("s", Section::Resources, "plain").is_none());
        // A server's remembered tool lists are its tool lists alone.
        assert_eq!(lists.of("s").count(), 1);
        assert_eq!(lists.latest("s").unwrap().size, 10);
        assert_eq!((lists.len(), lists.held_bytes()), (2, 50));
    }
}
