//! What a client receives for a checked list result that is not served whole: the server's
//! result with tools removed (every tool when the server is closed; when it is served in
//! part, the tools a contained drift withholds and those policy hides from this caller), the
//! gateway's cache hints, and a `_meta` entry saying why.
//!
//! Main design decision: the rewrite only removes; every other member of the server's result
//! is copied, and the tools kept are the server's own values, so what a client sees of a tool
//! is always what was checked. The note tells how many tools were removed, never which: a
//! caller learns that policy hides something, not what, and names of withheld tools (written
//! by the server) never reach a model.

use crate::policy::status::ServerRecord;
use crate::wire::json::put;
use serde_json::{Map, Value};

/// The `_meta` key that explains a rewritten list.
pub const META_KEY: &str = "io.toolseal/status";

/// Which tools of a served list result its caller is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shown {
    /// Positions in the result's `tools` of the tools not shown, ascending.
    pub dropped: Vec<usize>,
    /// How many of them a contained drift withholds.
    pub withheld: usize,
    /// How many of them policy hides from this caller.
    pub hidden: usize,
    /// How many of them are withheld as not in the catalogue (the list was checked against
    /// the catalogue alone: its view cannot be told, or is new past the bound).
    pub unreviewed: usize,
    /// The server is `changed`, served in part under tool scope: the list is filtered even
    /// when this result holds none of the withheld tools.
    pub contained: bool,
}

impl Shown {
    /// Every tool shown.
    pub fn whole(contained: bool) -> Self {
        Shown {
            dropped: Vec::new(),
            withheld: 0,
            hidden: 0,
            unreviewed: 0,
            contained,
        }
    }

    /// Whether the server's result is served as it is (cache hints aside).
    pub fn is_whole(&self) -> bool {
        !self.contained && self.dropped.is_empty()
    }
}

/// Cuts `tools` (a result's `tools` array) to what its caller is shown: a tool the record
/// withholds (when `withheld` is given) is dropped, then one `hides(name, definition)` says
/// policy refuses. A tool without a string name is kept (a set holding one never verifies,
/// so it is never served).
pub(super) fn cut(
    tools: Option<&Value>,
    withheld: Option<&ServerRecord>,
    unreviewed: &[String],
    hides: Option<impl Fn(&str, &Value) -> bool>,
    contained: bool,
) -> Shown {
    let mut shown = Shown::whole(contained);
    let Some(list) = tools.and_then(Value::as_array) else {
        return shown;
    };
    for (index, tool) in list.iter().enumerate() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if unreviewed.iter().any(|u| u == name) {
            shown.withheld += 1;
            shown.unreviewed += 1;
        } else if withheld.is_some_and(|record| record.withheld(name).is_some()) {
            shown.withheld += 1;
        } else if hides.as_ref().is_some_and(|hides| hides(name, tool)) {
            shown.hidden += 1;
        } else {
            continue;
        }
        shown.dropped.push(index);
    }
    shown
}

/// How long, and by whom, a rewritten list may be cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hints {
    /// A closed or filtered list must not outlive an approval in any cache: `ttlMs: 0`,
    /// `cacheScope: "private"`.
    Closed,
    /// A verified list cut for its caller: `cacheScope: "private"` (it is that caller's),
    /// `ttlMs` at most this many milliseconds (0 when the server gave none).
    Private(u64),
}

/// What a rewritten list says about itself in `_meta[META_KEY]`.
pub(crate) struct ListNote<'a> {
    /// Server id.
    pub server: &'a str,
    /// The server's record after the check.
    pub record: Option<&'a ServerRecord>,
    /// Why, in words.
    pub reason: &'a str,
    /// Under a contained drift: how many tools of this result are withheld.
    pub withheld: Option<usize>,
    /// How many tools of this result policy hides from this caller.
    pub hidden: usize,
}

/// The positions of a result's `tools` (`count` of them) not in `dropped` (ascending).
pub(super) fn kept(count: usize, dropped: &[usize]) -> Vec<usize> {
    (0..count)
        .filter(|index| dropped.binary_search(index).is_err())
        .collect()
}

/// The server's `result` with its `items` member (`tools`, `prompts`, ...) empty (the caller
/// puts back the tools it keeps, see [`super::ListAnswer::Cut`]), cache hints per `hints`, and
/// the note in `_meta`; under a stateless revision it carries every member that revision
/// requires of a list result.
pub(crate) fn rewrite(
    result: &Value,
    items: &str,
    note: &ListNote<'_>,
    hints: Hints,
    stateless: bool,
) -> Value {
    // Every member but the items is copied, never the whole result: the items are nearly
    // all of a list's bytes, and they would be copied only to be dropped.
    let Some(obj) = result.as_object() else {
        return result.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj.iter().filter(|(key, _)| *key != items) {
        out.insert(key.clone(), value.clone());
    }
    put(&mut out, items, Value::Array(Vec::new()));
    if stateless || out.contains_key("ttlMs") || out.contains_key("cacheScope") {
        let ttl = match hints {
            Hints::Closed => Some(0),
            // A list result of the stateless revision must say how long it may be kept:
            // without the server's word, not at all.
            Hints::Private(cap) => match out.get("ttlMs").and_then(Value::as_f64) {
                Some(ttl) if ttl > cap as f64 => Some(cap),
                Some(_) => None,
                None => Some(0),
            },
        };
        if let Some(ttl) = ttl {
            put(&mut out, "ttlMs", Value::from(ttl));
        }
        put(&mut out, "cacheScope", Value::from("private"));
    }
    if stateless {
        put(&mut out, "resultType", Value::from("complete"));
    }
    put_note(&mut out, status_note(note));
    Value::Object(out)
}

/// Puts `note` in a result's `_meta` under [`META_KEY`] (a `_meta` that is not an object is
/// replaced).
pub(crate) fn put_note(result: &mut Map<String, Value>, note: Value) {
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        put(meta, META_KEY, note);
    }
}

pub(crate) fn status_note(note: &ListNote<'_>) -> Value {
    let record = note.record;
    let mut status = Map::new();
    put(&mut status, "server", Value::from(note.server));
    put(
        &mut status,
        "schema_status",
        Value::from(record.map_or("unbaselined", |r| r.status.as_str())),
    );
    put(&mut status, "reason", Value::from(note.reason));
    put(
        &mut status,
        "baseline_fingerprint",
        Value::from(record.and_then(|r| r.baseline.clone())),
    );
    put(
        &mut status,
        "live_fingerprint",
        Value::from(record.and_then(|r| r.live.clone())),
    );
    if let Some(withheld) = note.withheld {
        put(&mut status, "withheld", Value::from(withheld));
    }
    if note.hidden > 0 {
        put(&mut status, "hidden_by_policy", Value::from(note.hidden));
    }
    Value::Object(status)
}
