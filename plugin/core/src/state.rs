//! The layout of toolseal's runtime state in the shared store, and the bounded
//! compare-and-swap loops that change it.
//!
//! Main design decision: state is split by how it is read, and every key lives in a fixed
//! space, because proxy-wasm shared data has no delete: a key written once stays until the
//! process ends. A server's lifecycle record is small and read on every call; tool sets live
//! in a few slots per server ([`SET_SLOTS`]), each holding one set with its fingerprint, so a
//! server that flaps between ever new sets reuses its slots instead of adding keys (a set
//! the record references is never the one replaced, and every read checks that the
//! definitions hash to the fingerprint asked for); session snapshots and page accumulators
//! live in a fixed number of hash slots, so memory stays bounded however many sessions pass
//! (a slot collision evicts, which only means a call is checked against the baseline alone).
//!
//! Keys (all under `ts/v1/`):
//! - `servers` — JSON array of known server ids (bounded by `limits.max_servers`);
//! - `srv/<id>` — the [`ServerRecord`] of one server;
//! - `set/<id>/<n>` — `{"fingerprint", "tools": [...]}`: one of the server's stored sets
//!   (baseline, previous baseline, live candidate, recent candidates), `n < SET_SLOTS`;
//! - `sess/<slot>` — `{"server","session","fingerprint","source"}`: the set last served to a
//!   caller, by its snapshot key ([`crate::state::snapshot_key`]: `session` is the Mcp-Session-Id);
//! - `page/<slot>` — tools accumulated over the pages of a paginated `tools/list`;
//! - `wait/<slot>` — checked `tools/call`s of a session still awaiting their result
//!   ([`crate::gateway::resume`]);
//! - `audit/head` and `audit/<n>` — the audit ring.
//!
//! Beside the layout: the store trait a host supplies ([`store`]), the caller's snapshot key
//! ([`snapshot_key`]), a worker's parsed copies of stored values ([`parse_cache`]) and the
//! audit events ([`audit`]).

pub mod audit;
pub mod fleet;
pub mod listed;
pub mod parse_cache;
pub mod snapshot_key;
pub mod store;

use crate::policy::status::{Event, Refusal, ServerRecord};
use crate::state::parse_cache::ParseCache;
use crate::state::snapshot_key::ClientKey;
use crate::state::store::{Expect, StateStore, StoreError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::rc::Rc;

/// How many times a read-modify-write is retried on CAS conflict before failing closed.
pub const CAS_ATTEMPTS: usize = 16;

/// Tool-set slots per server: room for the sets a record references (baseline, previous
/// baseline, live candidate) plus one more, so a new candidate always finds a slot whose set
/// nothing references, and a server flapping between two candidates finds both stored.
pub const SET_SLOTS: usize = 4;

const SERVERS_KEY: &str = "ts/v1/servers";
const AUDIT_HEAD_KEY: &str = "ts/v1/audit/head";

/// Why a state operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// The lifecycle refused the event (conflict, not quarantined, ...).
    Refused(Refusal),
    /// More servers than `limits.max_servers`.
    TooManyServers(usize),
    /// Stored state could not be read back (corrupt): fail closed.
    Corrupt(String),
    /// The store kept conflicting or failed.
    Store(StoreError),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Refused(r) => write!(f, "{r}"),
            StateError::TooManyServers(n) => {
                write!(
                    f,
                    "more than {n} servers are tracked; raise limits.max_servers or check server_id"
                )
            }
            StateError::Corrupt(m) => write!(f, "stored state is unreadable ({m}); failing closed"),
            StateError::Store(e) => write!(f, "{e}"),
        }
    }
}

/// The shared-data key of a server's record.
pub(crate) fn record_key(server: &str) -> String {
    format!("ts/v1/srv/{server}")
}

fn set_key(server: &str, slot: usize) -> String {
    format!("ts/v1/set/{server}/{slot}")
}

/// Whether `key` is one that workers update with compare-and-swap from what they read (the
/// server registry, the audit ring): never written over from a copy made earlier.
pub(crate) fn is_shared_counter(key: &str) -> bool {
    key == SERVERS_KEY || key.starts_with("ts/v1/audit/")
}

/// Reads `key`; a read the host could not serve is an error.
fn read(store: &dyn StateStore, key: &str) -> Result<Option<(Vec<u8>, u32)>, StateError> {
    store.get(key).map_err(StateError::Store)
}

/// Creates the keys that must exist before workers race on them (proxy-wasm ignores CAS on
/// the first write of a missing key). Idempotent. An error: a key is still missing.
pub fn seed(store: &mut dyn StateStore) -> Result<(), StateError> {
    for (key, value) in [(SERVERS_KEY, &b"[]"[..]), (AUDIT_HEAD_KEY, &b"0"[..])] {
        match store.set(key, value, Expect::Absent) {
            Ok(()) | Err(StoreError::Conflict) => {}
            Err(e) => return Err(StateError::Store(e)),
        }
    }
    Ok(())
}

/// Reads a server's record (`None`: never seen).
pub fn load_record(
    store: &dyn StateStore,
    server: &str,
) -> Result<Option<(ServerRecord, u32)>, StateError> {
    match read(store, &record_key(server))? {
        None => Ok(None),
        Some((bytes, _)) if bytes.is_empty() => Ok(None),
        Some((bytes, version)) => parse_record(server, &bytes).map(|r| Some((r, version))),
    }
}

/// Reads a server's record like [`load_record`], through a worker's cache of parsed records:
/// the store is read every time, the parse is skipped while its version and bytes are those
/// the cached record was parsed from.
pub fn load_record_cached(
    store: &dyn StateStore,
    records: &mut ParseCache<ServerRecord>,
    server: &str,
) -> Result<Option<(Rc<ServerRecord>, u32)>, StateError> {
    match read(store, &record_key(server))? {
        None => Ok(None),
        Some((bytes, _)) if bytes.is_empty() => Ok(None),
        Some((bytes, version)) => records
            .get_or_parse(server, bytes, version, |b| parse_record(server, b))
            .map(|r| Some((r, version))),
    }
}

fn parse_record(server: &str, bytes: &[u8]) -> Result<ServerRecord, StateError> {
    serde_json::from_slice::<ServerRecord>(bytes)
        .map_err(|e| StateError::Corrupt(format!("server {server}: {e}")))
}

/// The outcome of [`update_record`].
#[derive(Debug, Clone)]
pub struct Updated {
    /// Record before the event (a fresh one for a new server), shared with the worker's
    /// parse cache, not copied: a list's check only reads it, and a copy would be made and
    /// dropped on every list.
    pub before: Rc<ServerRecord>,
    /// Record after.
    pub after: ServerRecord,
    /// What to audit.
    pub notes: Vec<crate::policy::status::Note>,
    /// The record was left as read: nothing was written (`after` equals `before`).
    pub kept: bool,
}

/// Applies one lifecycle event to a server's record with a bounded CAS loop (the record is
/// read through the worker's `records` cache). For an event that does not depend on what the
/// record holds (a quarantine, a pin, an approval, which the lifecycle itself checks against
/// the record); an event computed from the record goes through [`update_record_with`].
pub fn update_record(
    store: &mut dyn StateStore,
    records: &mut ParseCache<ServerRecord>,
    server: &str,
    event: &Event,
    posture: crate::policy::status::Posture,
    now_ms: u64,
    max_servers: usize,
) -> Result<Updated, StateError> {
    let mut decide = |_: &mut dyn StateStore, _: &ServerRecord| Ok(Some(event.clone()));
    update_record_with(
        store,
        records,
        server,
        &mut decide,
        posture,
        now_ms,
        max_servers,
    )
}

/// What a caller of [`update_record_with`] decides from the record it is about to swap:
/// the event to apply (`None`: nothing to apply, the record stays as read). It may read the
/// store (the content-addressed tool sets the record names) and store a tool set (content
/// addressed too, so a retry writes nothing twice); it never writes the record.
pub type Decide<'d> =
    dyn FnMut(&mut dyn StateStore, &ServerRecord) -> Result<Option<Event>, StateError> + 'd;

/// Applies the event `decide` makes from each record read, with a bounded CAS loop: read,
/// decide from that read alone, compare-and-swap, and on a conflict read and decide again.
/// Nothing decided from an earlier read crosses a retry, so a worker whose write lost to
/// another's never applies an answer computed for a record that is no longer there (two
/// workers trusting one list on first use must both end `verified`).
pub fn update_record_with(
    store: &mut dyn StateStore,
    records: &mut ParseCache<ServerRecord>,
    server: &str,
    decide: &mut Decide<'_>,
    posture: crate::policy::status::Posture,
    now_ms: u64,
    max_servers: usize,
) -> Result<Updated, StateError> {
    let key = record_key(server);
    for _ in 0..CAS_ATTEMPTS {
        let (before, expect) = match load_record_cached(store, records, server)? {
            Some((record, version)) => (record, Expect::Version(version)),
            None => {
                register_server(store, server, max_servers)?;
                (Rc::new(ServerRecord::new(now_ms)), Expect::Absent)
            }
        };
        let Some(event) = decide(&mut *store, &before)? else {
            return Ok(Updated {
                after: ServerRecord::clone(&before),
                before,
                notes: Vec::new(),
                kept: true,
            });
        };
        let (after, notes) = crate::policy::status::apply(&before, &event, posture, now_ms)
            .map_err(StateError::Refused)?;
        if after == *before && expect != Expect::Absent {
            return Ok(Updated {
                before,
                after,
                notes,
                kept: true,
            });
        }
        let bytes = serde_json::to_vec(&after).map_err(|e| StateError::Corrupt(e.to_string()))?;
        match store.set(&key, &bytes, expect) {
            Ok(()) => {
                return Ok(Updated {
                    before,
                    after,
                    notes,
                    kept: false,
                });
            }
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(StateError::Store(e)),
        }
    }
    Err(StateError::Store(StoreError::Conflict))
}

/// The ids of every known server (none when the registry cannot be read).
pub fn server_ids(store: &dyn StateStore) -> Vec<String> {
    store
        .get(SERVERS_KEY)
        .ok()
        .flatten()
        .and_then(|(bytes, _)| serde_json::from_slice::<Vec<String>>(&bytes).ok())
        .unwrap_or_default()
}

/// Adds `server` to the registry of known servers (bounded by `max_servers`).
pub(crate) fn register_server(
    store: &mut dyn StateStore,
    server: &str,
    max_servers: usize,
) -> Result<(), StateError> {
    for _ in 0..CAS_ATTEMPTS {
        let (mut ids, expect) = match read(store, SERVERS_KEY)? {
            Some((bytes, version)) => (
                serde_json::from_slice::<Vec<String>>(&bytes)
                    .map_err(|e| StateError::Corrupt(format!("server registry: {e}")))?,
                Expect::Version(version),
            ),
            None => (Vec::new(), Expect::Absent),
        };
        if ids.iter().any(|id| id == server) {
            return Ok(());
        }
        if ids.len() >= max_servers {
            return Err(StateError::TooManyServers(max_servers));
        }
        ids.push(server.to_string());
        let bytes = serde_json::to_vec(&ids).map_err(|e| StateError::Corrupt(e.to_string()))?;
        match store.set(SERVERS_KEY, &bytes, expect) {
            Ok(()) => return Ok(()),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(StateError::Store(e)),
        }
    }
    Err(StateError::Store(StoreError::Conflict))
}

/// The fingerprint a stored set's bytes open with: the value is serialized with its keys in
/// order, so `{"fingerprint":"…"` comes first and a slot is recognized without parsing it.
fn holds(bytes: &[u8], fingerprint: &str) -> bool {
    let opening = b"{\"fingerprint\":\"";
    bytes
        .strip_prefix(&opening[..])
        .and_then(|rest| rest.strip_prefix(fingerprint.as_bytes()))
        .is_some_and(|rest| rest.first() == Some(&b'"'))
}

/// Stores a tool set among `server`'s [`SET_SLOTS`] slots, unless one holds it already. The
/// slot written is an empty one, else one whose set the server's record does not name (its
/// baseline, previous baseline and live candidate), written with compare-and-swap so two
/// workers never fill one slot with two sets.
///
/// The record is read again on every attempt, so the sets it names are those of now, not of
/// a read the caller made earlier. One window is left: between that read and the write,
/// another worker may make its record name the set the chosen slot held (it found the set
/// stored, so it did not store it again). The write is therefore followed by one more read
/// of the record, and a set it names that the write replaced is put back in another slot, so
/// a set a record names is never lost to a race.
pub fn put_tool_set(
    store: &mut dyn StateStore,
    server: &str,
    fingerprint: &str,
    tools: &[Value],
) -> Result<(), StateError> {
    let bytes = serde_json::to_vec(&json!({"fingerprint": fingerprint, "tools": tools}))
        .map_err(|e| StateError::Corrupt(e.to_string()))?;
    put_set_document(store, server, fingerprint, &bytes, &[], 2)
}

/// The fingerprints the server's record names now (none for a server not seen yet).
fn named_sets(store: &dyn StateStore, server: &str) -> Result<Vec<String>, StateError> {
    Ok(load_record(store, server)?
        .map(|(record, _)| {
            record
                .set_refs()
                .iter()
                .flatten()
                .map(|f| f.to_string())
                .collect()
        })
        .unwrap_or_default())
}

fn document_fingerprint(bytes: &[u8]) -> Option<&str> {
    let rest = bytes.strip_prefix(&b"{\"fingerprint\":\""[..])?;
    let end = rest.iter().position(|&b| b == b'"')?;
    std::str::from_utf8(rest.get(..end)?).ok()
}

/// Stores a set document as the fleet store holds it (`{"fingerprint", "tools"}`, written
/// by [`put_tool_set`] on some instance), unless a slot holds it already.
pub(crate) fn put_set_bytes(
    store: &mut dyn StateStore,
    server: &str,
    fingerprint: &str,
    bytes: &[u8],
) -> Result<(), StateError> {
    put_set_document(store, server, fingerprint, bytes, &[], 2)
}

/// [`put_tool_set`] of a serialized document; `keep`: sets the caller is about to name that
/// must not be replaced either; `restores`: how many replaced sets may still be put back.
fn put_set_document(
    store: &mut dyn StateStore,
    server: &str,
    fingerprint: &str,
    bytes: &[u8],
    keep: &[&str],
    restores: usize,
) -> Result<(), StateError> {
    for _ in 0..CAS_ATTEMPTS {
        let named = named_sets(store, server)?;
        let in_use = |held: &[u8]| {
            named.iter().any(|f| holds(held, f)) || keep.iter().any(|f| holds(held, f))
        };
        let mut free = None;
        let mut reusable = None;
        for slot in 0..SET_SLOTS {
            match read(store, &set_key(server, slot))? {
                Some((held, _)) if holds(&held, fingerprint) => return Ok(()),
                None => free = free.or(Some((slot, Expect::Absent, None))),
                Some((held, version)) if held.is_empty() => {
                    free = free.or(Some((slot, Expect::Version(version), None)));
                }
                Some((held, version)) if !in_use(&held) && reusable.is_none() => {
                    reusable = Some((slot, Expect::Version(version), Some(held)));
                }
                Some(_) => {}
            }
        }
        let Some((slot, expect, replaced)) = free.or(reusable) else {
            return Err(StateError::Corrupt(format!(
                "server {server}: every tool-set slot holds a referenced set"
            )));
        };
        match store.set(&set_key(server, slot), bytes, expect) {
            Ok(()) => {}
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(StateError::Store(e)),
        }
        let Some(replaced) = replaced else {
            return Ok(());
        };
        if let Some(lost) = document_fingerprint(&replaced)
            && restores > 0
            && named_sets(store, server)?.iter().any(|f| f == lost)
        {
            let mut keep = keep.to_vec();
            keep.push(fingerprint);
            put_set_document(store, server, lost, &replaced, &keep, restores - 1)?;
        }
        return Ok(());
    }
    Err(StateError::Store(StoreError::Conflict))
}

/// Whether one of `server`'s slots holds the set of `fingerprint` (read without parsing).
pub fn holds_tool_set(
    store: &dyn StateStore,
    server: &str,
    fingerprint: &str,
) -> Result<bool, StateError> {
    Ok(tool_set_document(store, server, fingerprint)?.is_some())
}

/// The stored `{"fingerprint", "tools"}` document of `fingerprint` among `server`'s slots,
/// as written (`None`: not stored, or its slot reused since).
pub fn tool_set_document(
    store: &dyn StateStore,
    server: &str,
    fingerprint: &str,
) -> Result<Option<Vec<u8>>, StateError> {
    for slot in 0..SET_SLOTS {
        if let Some((bytes, _)) = read(store, &set_key(server, slot))?
            && holds(&bytes, fingerprint)
        {
            return Ok(Some(bytes));
        }
    }
    Ok(None)
}

/// The stored set document of `fingerprint` among `server`'s slots, parsed (`None`: not
/// stored, or replaced since): `tools`, and for a set that seals more than tools, the
/// surface's other members and `sealed`. The caller checks that it hashes to `fingerprint`
/// ([`crate::policy::approved::Approved::from_document`]).
pub fn get_set(
    store: &dyn StateStore,
    server: &str,
    fingerprint: &str,
) -> Result<Option<Value>, StateError> {
    let Some(bytes) = tool_set_document(store, server, fingerprint)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StateError::Corrupt(format!("server {server}: tool set: {e}")))
}

/// Stores a set that seals more than tools: `surface` holds `tools`, the other sections'
/// members and `sealed` (see [`get_set`]); written as [`put_tool_set`] writes a tool set, with
/// `fingerprint` first.
pub fn put_surface_set(
    store: &mut dyn StateStore,
    server: &str,
    fingerprint: &str,
    surface: &serde_json::Map<String, Value>,
) -> Result<(), StateError> {
    let mut document = serde_json::Map::new();
    document.insert("fingerprint".into(), Value::String(fingerprint.into()));
    for (member, value) in surface
        .iter()
        .filter(|(member, _)| *member != "fingerprint")
    {
        document.insert(member.clone(), value.clone());
    }
    let bytes = serde_json::to_vec(&Value::Object(document))
        .map_err(|e| StateError::Corrupt(e.to_string()))?;
    if !holds(&bytes, fingerprint) {
        return Err(StateError::Corrupt(format!(
            "server {server}: a set document must open with its fingerprint"
        )));
    }
    put_set_document(store, server, fingerprint, &bytes, &[], 2)
}

/// The stored tool definitions of `fingerprint` among `server`'s slots (`None`: not stored,
/// or replaced since). The caller checks that they hash to `fingerprint`.
pub fn get_tool_set(
    store: &dyn StateStore,
    server: &str,
    fingerprint: &str,
) -> Result<Option<Vec<Value>>, StateError> {
    let Some(bytes) = tool_set_document(store, server, fingerprint)? else {
        return Ok(None);
    };
    let mut value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| StateError::Corrupt(format!("server {server}: tool set: {e}")))?;
    match value.get_mut("tools").map(Value::take) {
        Some(Value::Array(tools)) => Ok(Some(tools)),
        _ => Ok(None),
    }
}

/// The first two 64-bit words (little-endian) of the SHA-256 of a (server, session) pair.
fn pair_words(server: &str, session: &str) -> [u64; 2] {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0u8]);
    h.update(session.as_bytes());
    let digest = h.finalize();
    let word = |half: usize| {
        let mut n = [0u8; 8];
        for (dst, src) in n.iter_mut().zip(digest.iter().skip(half * 8)) {
            *dst = *src;
        }
        u64::from_le_bytes(n)
    };
    [word(0), word(1)]
}

/// The slot a (server, session) pair hashes to.
pub fn slot(server: &str, session: &str, slots: usize) -> usize {
    let slots = u64::try_from(slots.max(1)).unwrap_or(u64::MAX);
    let [first, _] = pair_words(server, session);
    usize::try_from(first % slots).unwrap_or(0)
}

/// The slot identity of a client key: the session id itself (as it always was), or the
/// source and the value, so keys of different sources never share an identity.
#[inline(never)]
pub fn key_identity<'k>(key: &'k ClientKey<'_>) -> std::borrow::Cow<'k, str> {
    if key.is_session() {
        std::borrow::Cow::Borrowed(&key.value)
    } else {
        std::borrow::Cow::Owned(format!("{}\0{}", key.source, key.value))
    }
}

fn snapshot_key(server: &str, key: &ClientKey<'_>, slots: usize) -> String {
    format!("ts/v1/sess/{}", slot(server, &key_identity(key), slots))
}

/// Records that the caller of `key` was served the set approved as `fingerprint`.
pub fn put_snapshot(
    store: &mut dyn StateStore,
    server: &str,
    key: &ClientKey<'_>,
    fingerprint: &str,
    slots: usize,
) {
    let value = json!({"server": server, "session": key.value, "fingerprint": fingerprint,
        "source": key.source});
    if let Ok(bytes) = serde_json::to_vec(&value) {
        let _ = store.set(&snapshot_key(server, key, slots), &bytes, Expect::Any);
    }
}

/// The fingerprint of the set last served to the caller of `key` (`Ok(None)`: unknown
/// or evicted).
pub fn get_snapshot(
    store: &dyn StateStore,
    server: &str,
    key: &ClientKey<'_>,
    slots: usize,
) -> Result<Option<String>, StateError> {
    let Some((bytes, _)) = read(store, &snapshot_key(server, key, slots))? else {
        return Ok(None);
    };
    Ok(parse_snapshot(&bytes)
        .filter(|s| s.owns(server, key))
        .map(|s| s.fingerprint))
}

/// [`get_snapshot`] through a worker's cache of parsed snapshots (by slot key): the store
/// is read every time, the parse is skipped while the slot's version and bytes are unchanged.
pub fn get_snapshot_cached(
    store: &dyn StateStore,
    snapshots: &mut ParseCache<Snapshot>,
    server: &str,
    key: &ClientKey<'_>,
    slots: usize,
) -> Result<Option<Rc<Snapshot>>, StateError> {
    let slot_key = snapshot_key(server, key, slots);
    let Some((bytes, version)) = read(store, &slot_key)? else {
        return Ok(None);
    };
    let snapshot = snapshots
        .get_or_parse(&slot_key, bytes, version, |b| parse_snapshot(b).ok_or(()))
        .ok();
    Ok(snapshot.filter(|s| s.owns(server, key)))
}

/// What a snapshot slot holds: the set last served to one (server, caller key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Server id.
    pub server: String,
    /// The key's value (`Mcp-Session-Id` for the session source).
    pub session: String,
    /// The key's source (`session`, `header:NAME`, `metadata:PATH`; absent in slots written
    /// before snapshot keys had sources: `session`).
    pub source: Option<String>,
    /// Fingerprint of the set served.
    pub fingerprint: String,
}

impl Snapshot {
    /// Whether the slot holds this (server, key) and not another that hashed to it.
    fn owns(&self, server: &str, key: &ClientKey<'_>) -> bool {
        let source = self.source.as_deref().unwrap_or("session");
        self.server == server && self.session == key.value && source == key.source
    }
}

fn parse_snapshot(bytes: &[u8]) -> Option<Snapshot> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let text = |name: &str| value.get(name)?.as_str().map(str::to_string);
    Some(Snapshot {
        server: text("server")?,
        session: text("session")?,
        source: text("source"),
        fingerprint: text("fingerprint")?,
    })
}

/// Items accumulated over the pages of one paginated list (`tools/list`, or the list of a
/// sealed section).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageAccumulator {
    /// Pages seen so far.
    pub pages: u32,
    /// Every item seen so far, in order.
    pub items: Vec<Value>,
    /// Bytes of definitions held (bounded by `limits.max_response_bytes`).
    pub bytes: usize,
}

/// Reads the page accumulator of a (server, listing) pair (`Ok(None)`: none, or evicted).
pub fn get_pages(
    store: &dyn StateStore,
    server: &str,
    session: &str,
    slots: usize,
) -> Result<Option<PageAccumulator>, StateError> {
    let key = format!("ts/v1/page/{}", slot(server, session, slots));
    let Some((bytes, _)) = read(store, &key)? else {
        return Ok(None);
    };
    Ok(parse_pages(&bytes, server, session))
}

fn parse_pages(bytes: &[u8], server: &str, session: &str) -> Option<PageAccumulator> {
    let mut value: Value = serde_json::from_slice(bytes).ok()?;
    if value.get("server")?.as_str()? != server || value.get("session")?.as_str()? != session {
        return None;
    }
    let pages = u32::try_from(value.get("pages")?.as_u64()?).ok()?;
    let size = usize::try_from(value.get("bytes")?.as_u64()?).ok()?;
    match value.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Some(PageAccumulator {
            pages,
            items,
            bytes: size,
        }),
        _ => None,
    }
}

/// Writes (or clears, with `None`) the page accumulator of a (server, listing) pair.
pub fn put_pages(
    store: &mut dyn StateStore,
    server: &str,
    session: &str,
    slots: usize,
    acc: Option<&PageAccumulator>,
) -> Result<(), StateError> {
    let key = format!("ts/v1/page/{}", slot(server, session, slots));
    let bytes = match acc {
        None => Vec::new(),
        Some(acc) => serde_json::to_vec(&json!({
            "server": server, "session": session, "pages": acc.pages, "bytes": acc.bytes, "items": acc.items,
        }))
        .unwrap_or_default(),
    };
    store
        .set(&key, &bytes, Expect::Any)
        .map_err(StateError::Store)
}

/// Appends an audit event to the ring of `ring_size` slots.
pub fn push_audit(store: &mut dyn StateStore, event: &Value, ring_size: usize) {
    let Ok(bytes) = serde_json::to_vec(event) else {
        return;
    };
    for _ in 0..CAS_ATTEMPTS {
        let (head, expect) = match store.get(AUDIT_HEAD_KEY) {
            // The ring is a convenience copy of what the host log already has.
            Err(_) => return,
            Ok(Some((b, v))) => (
                std::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(0),
                Expect::Version(v),
            ),
            Ok(None) => (0, Expect::Absent),
        };
        let next = head.wrapping_add(1);
        if store
            .set(AUDIT_HEAD_KEY, next.to_string().as_bytes(), expect)
            .is_ok()
        {
            let ring = u64::try_from(ring_size.max(1)).unwrap_or(1);
            let _ = store.set(&format!("ts/v1/audit/{}", head % ring), &bytes, Expect::Any);
            return;
        }
    }
}

/// The most recent audit events, oldest first.
pub fn recent_audit(store: &dyn StateStore, ring_size: usize) -> Vec<Value> {
    let head = store
        .get(AUDIT_HEAD_KEY)
        .ok()
        .flatten()
        .and_then(|(b, _)| {
            std::str::from_utf8(&b)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
        })
        .unwrap_or(0);
    let ring = u64::try_from(ring_size.max(1)).unwrap_or(1);
    let start = head.saturating_sub(ring);
    (start..head)
        .filter_map(|n| {
            store
                .get(&format!("ts/v1/audit/{}", n % ring))
                .ok()
                .flatten()
        })
        .filter_map(|(b, _)| serde_json::from_slice(&b).ok())
        .collect()
}

/// The two slots a session's capabilities may live in: both are read for it, and it takes
/// the first that is its own or free, so two sessions of one slot do not make each other's
/// views untellable (with one slot, 16 sessions among 4,096 slots collide 3% of the time).
pub fn capabilities_keys(server: &str, session: &str, slots: usize) -> [String; 2] {
    let slots = u64::try_from(slots.max(1)).unwrap_or(u64::MAX);
    let [one, two] = pair_words(server, session);
    // The first is the pair's slot; the second is another one whenever there are two.
    let first = one % slots;
    let second = match slots {
        1 => first,
        _ => (first + 1 + two % (slots - 1)) % slots,
    };
    [first, second].map(|index| format!("ts/v1/caps/{index}"))
}

/// What a 2025 session declared in its `initialize`, as its slot keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCaps {
    /// The capability names it declared.
    pub names: Vec<String>,
    /// Whether its `notifications/initialized` was seen (slots written before this was kept
    /// count as initialized).
    pub initialized: bool,
    /// When its `initialize` was seen (ms since the epoch; absent in older slots).
    pub at_ms: Option<u64>,
}

/// Whose capabilities a slot holds: `Some` when they are `session`'s of `server`.
fn caps_owned(bytes: &[u8], server: &str, session: &str) -> Option<SessionCaps> {
    parse_caps_slot(bytes)
        .filter(|slot| slot.owned_by(server, session))
        .map(|slot| slot.caps)
}

/// The slot value of a session's capabilities.
fn caps_value(server: &str, session: &str, caps: &SessionCaps) -> Value {
    let mut value = json!({"server": server, "session": session, "capabilities": caps.names,
        "initialized": caps.initialized});
    if let (Some(at), Some(object)) = (caps.at_ms, value.as_object_mut()) {
        object.insert("at_ms".into(), json!(at));
    }
    value
}

/// Records the client capability names a 2025 session declared in its `initialize` at
/// `at_ms` (the `capabilities` view source reads them back for the session's lists and
/// calls), its handshake not finished yet: in the first of its two slots that holds them
/// already or is free, else over the first slot's holder. A slot that cannot be read is not
/// written.
pub fn put_capabilities(
    store: &mut dyn StateStore,
    server: &str,
    session: &str,
    (names, at_ms): (&[String], u64),
    slots: usize,
) -> Result<(), StateError> {
    let caps = SessionCaps {
        names: names.to_vec(),
        initialized: false,
        at_ms: Some(at_ms),
    };
    let value = caps_value(server, session, &caps);
    let bytes = serde_json::to_vec(&value).map_err(|e| StateError::Corrupt(e.to_string()))?;
    let keys = capabilities_keys(server, session, slots);
    let mut chosen = None;
    for key in &keys {
        match read(store, key)? {
            None => {
                chosen = chosen.or(Some(key));
            }
            Some((held, _)) if caps_owned(&held, server, session).is_some() => {
                chosen = Some(key);
                break;
            }
            Some(_) => {}
        }
    }
    let [first, _] = &keys;
    store
        .set(chosen.unwrap_or(first), &bytes, Expect::Any)
        .map_err(StateError::Store)
}

/// Marks a 2025 session's handshake finished (its `notifications/initialized` passed), by
/// compare-and-swap on the slot that holds its capabilities (`Ok(false)`: no slot holds
/// them: nothing to mark).
pub fn session_initialized(
    store: &mut dyn StateStore,
    server: &str,
    session: &str,
    slots: usize,
) -> Result<bool, StateError> {
    // A conflict is another writer on the slot (this session's other request, or a session
    // taking the slot over): read again. Bounded: each round reads the slot's latest value.
    for _ in 0..4 {
        let mut found = None;
        for key in capabilities_keys(server, session, slots) {
            if let Some((bytes, version)) = read(store, &key)?
                && let Some(caps) = caps_owned(&bytes, server, session)
            {
                found = Some((key, version, caps));
                break;
            }
        }
        let Some((key, version, mut caps)) = found else {
            return Ok(false);
        };
        if caps.initialized {
            return Ok(true);
        }
        caps.initialized = true;
        let bytes = serde_json::to_vec(&caps_value(server, session, &caps))
            .map_err(|e| StateError::Corrupt(e.to_string()))?;
        match store.set(&key, &bytes, Expect::Version(version)) {
            Ok(()) => return Ok(true),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(StateError::Store(e)),
        }
    }
    Err(StateError::Store(StoreError::Conflict))
}

/// A capabilities slot as parsed: whose it is and what they declared.
#[derive(Debug)]
pub struct CapsSlot {
    server: String,
    session: String,
    caps: SessionCaps,
}

impl CapsSlot {
    /// Whether the slot holds `session` of `server` and not another pair that hashed to it.
    fn owned_by(&self, server: &str, session: &str) -> bool {
        self.server == server && self.session == session
    }
}

/// A capabilities slot's bytes (`None`: not a slot this version writes).
fn parse_caps_slot(bytes: &[u8]) -> Option<CapsSlot> {
    let value = serde_json::from_slice::<Value>(bytes).ok()?;
    let text = |member: &str| {
        value
            .get(member)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let names = value.get("capabilities").and_then(Value::as_array)?;
    Some(CapsSlot {
        server: text("server")?,
        session: text("session")?,
        caps: SessionCaps {
            names: names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            initialized: value
                .get("initialized")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            at_ms: value.get("at_ms").and_then(Value::as_u64),
        },
    })
}

/// [`get_capabilities`] through a worker's cache of parsed slots (by slot key): the store is
/// read every time, the parse is skipped while a slot's version and bytes are unchanged.
/// `keys`: the pair's [`capabilities_keys`].
pub fn get_capabilities_cached(
    store: &dyn StateStore,
    cache: &mut ParseCache<CapsSlot>,
    (server, session): (&str, &str),
    keys: &[String; 2],
) -> Result<Option<SessionCaps>, StateError> {
    for key in keys {
        let Some((bytes, version)) = read(store, key)? else {
            continue;
        };
        let parsed = cache.get_or_parse(key, bytes, version, |b| parse_caps_slot(b).ok_or(()));
        if let Ok(slot) = parsed
            && slot.owned_by(server, session)
        {
            return Ok(Some(slot.caps.clone()));
        }
    }
    Ok(None)
}

/// What a 2025 session declared (`Ok(None)`: not remembered: never seen, or both its slots
/// taken by other sessions since).
pub fn get_capabilities(
    store: &dyn StateStore,
    server: &str,
    session: &str,
    slots: usize,
) -> Result<Option<SessionCaps>, StateError> {
    for key in capabilities_keys(server, session, slots) {
        if let Some((bytes, _)) = read(store, &key)?
            && let Some(names) = caps_owned(&bytes, server, session)
        {
            return Ok(Some(names));
        }
    }
    Ok(None)
}
