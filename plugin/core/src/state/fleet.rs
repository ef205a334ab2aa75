//! The fleet store: server records and the tool sets they name, kept in etcd for every
//! instance, with each instance's shared data as its node-local replica.
//!
//! Main design decision: the replica is read and written exactly as before, through the one
//! compare-and-swap chokepoint ([`crate::state::update_record_with`]); what the fleet adds is
//! a [`FleetView`] of the host's store that the engine decides through. The view tells the
//! two kinds of record change apart ([`opens`]): a change that lets something be served that
//! was not (trust on first use, a view trusted, approve, release, a pin) is not written
//! locally at all: the view asks for a store transaction comparing the record's
//! `mod_revision`, and the engine waits for it ([`crate::gateway::fleet`]); a change that only
//! closes (drift, pending, quarantine) is written locally at once, marked `fleet_dirty`, and
//! pushed afterwards. A record the replica does not hold is read from the store before
//! anything is decided from it. The view never does I/O: it says what it needs and the
//! engine hands that to the host.
//!
//! Keys in the store: `{prefix}servers/{server id}` holds `{"format":1,"record":{…}}` (the
//! record without its local bookkeeping), `{prefix}sets/{fingerprint}` holds the set document
//! `{"fingerprint","tools"}` (content addressed, written once).

#[cfg(feature = "memory-store")]
pub mod memory_etcd;

use crate::policy::status::{SchemaStatus, ServerRecord};
use crate::state::store::{Expect, StateStore, StoreError};
use std::cell::RefCell;

/// The `store.etcd` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdSettings {
    /// The Envoy cluster the store is reached through (other hosts use their own URL).
    pub cluster: String,
    /// Every key starts with it; ends with `/`.
    pub prefix: String,
    /// How long an answer waits for the store before it fails closed.
    pub timeout_ms: u64,
    /// How often each worker reads what other instances wrote.
    pub sync_ms: u64,
}

impl EtcdSettings {
    /// Settings with the defaults but for the cluster.
    pub fn new(cluster: &str) -> Self {
        EtcdSettings {
            cluster: cluster.to_string(),
            prefix: "/toolseal/".to_string(),
            timeout_ms: 1000,
            sync_ms: 1000,
        }
    }

    /// The store key of a server's record.
    pub fn record_key(&self, server: &str) -> Vec<u8> {
        format!("{}servers/{server}", self.prefix).into_bytes()
    }

    /// The store key of a tool set.
    pub fn set_key(&self, fingerprint: &str) -> Vec<u8> {
        format!("{}sets/{fingerprint}", self.prefix).into_bytes()
    }

    /// The prefix of every record key.
    pub fn records_prefix(&self) -> Vec<u8> {
        format!("{}servers/", self.prefix).into_bytes()
    }

    /// The server id of a record key (`None`: not one of this prefix's record keys).
    pub fn server_of(&self, key: &[u8]) -> Option<String> {
        let rest = key.strip_prefix(self.records_prefix().as_slice())?;
        let id = std::str::from_utf8(rest).ok()?;
        (!id.is_empty()).then(|| id.to_string())
    }
}

/// The format version of a record in the store.
pub const RECORD_FORMAT: u64 = 1;

/// A record as the store holds it: the format, then the record.
#[derive(serde::Serialize)]
struct Stored<'r> {
    format: u64,
    record: &'r ServerRecord,
}

/// A record read from the store.
#[derive(serde::Deserialize)]
struct Read {
    format: u64,
    record: ServerRecord,
}

/// A record as the store holds it: without the replica's bookkeeping.
pub fn encode_record(record: &ServerRecord) -> Vec<u8> {
    let mut clean = record.clone();
    clean.fleet_rev = None;
    clean.fleet_dirty = false;
    serde_json::to_vec(&Stored {
        format: RECORD_FORMAT,
        record: &clean,
    })
    .unwrap_or_default()
}

/// Reads a record from the store's bytes; the error says why it cannot be used (the server
/// then fails closed, and the key is never overwritten from here). Parsed with the same
/// reader as the replica's records (duplicate keys: the store is written only by toolseal,
/// whose writer never repeats one).
pub fn decode_record(bytes: &[u8]) -> Result<ServerRecord, String> {
    match serde_json::from_slice::<Read>(bytes) {
        Ok(read) if read.format == RECORD_FORMAT => {
            let mut record = read.record;
            record.fleet_rev = None;
            record.fleet_dirty = false;
            Ok(record)
        }
        Ok(read) => Err(format!("unknown record format {}", read.format)),
        Err(e) => Err(format!(
            "not a server record of format {RECORD_FORMAT}: {e}"
        )),
    }
}

/// What the replica holds in place of a store record that cannot be used: bytes no record
/// parses from, saying why, so every read of it fails closed as a corrupt record does.
pub fn unusable_record(key: &[u8], why: &str) -> Vec<u8> {
    format!(
        "fleet record {} unusable: {why}",
        String::from_utf8_lossy(key)
    )
    .into_bytes()
}

fn serving_level(record: &ServerRecord) -> u8 {
    match record.status {
        SchemaStatus::Verified => 2,
        SchemaStatus::Unbaselined => 1,
        SchemaStatus::Changed | SchemaStatus::Pending | SchemaStatus::Quarantined => 0,
    }
}

/// Whether `after` lets something be served that `before` (`None`: no record) did not: such
/// a change takes effect only once the fleet store has accepted it. Anything else (a drift, a
/// hold, a quarantine, a candidate moving on a closed server, bookkeeping) only closes.
pub fn opens(before: Option<&ServerRecord>, after: &ServerRecord) -> bool {
    let fresh;
    let before = match before {
        Some(b) => b,
        None => {
            fresh = ServerRecord::new(after.updated_ms);
            &fresh
        }
    };
    let view_grew = after.views.iter().any(|view| {
        before
            .view(&view.key)
            .is_none_or(|known| known.names != view.names)
    });
    // A view's items growing lets it use them (a prompt, a template). A drift records the
    // items its list showed as it closes the server: they are used only once an approval
    // (which opens anyway) puts them in the catalogue, so that write stays a closure, applied
    // here first even when the store cannot be reached.
    let items_grew = after.status == before.status
        && after.section_names.iter().any(|view| {
            let names = view.names.iter().map(String::as_str);
            before.section_names.lack(&view.key, names)
        });
    let lost = |was: &[String], now: &[String]| was.iter().any(|name| !now.contains(name));
    let drift_shrank = before.status == SchemaStatus::Changed
        && after.status == SchemaStatus::Changed
        && ((before.drift_whole.is_some() && after.drift_whole.is_none())
            || lost(&before.drift_added, &after.drift_added)
            || lost(&before.drift_changed, &after.drift_changed)
            || lost(&before.drift_removed, &after.drift_removed)
            || lost(&before.drift_also, &after.drift_also));
    serving_level(after) > serving_level(before)
        || after.baseline != before.baseline
        || view_grew
        || items_grew
        || (before.reverify && !after.reverify)
        || (before.awaiting_live && !after.awaiting_live)
        || (before.quarantine.is_some() && after.quarantine.is_none())
        || drift_shrank
}

/// Whether `after` differs from `before` in anything the fleet keeps: a write that only moves
/// the time of the last change or of a view's last list stays local.
pub fn differs_for_fleet(before: &ServerRecord, after: &ServerRecord) -> bool {
    let plain = |record: &ServerRecord| {
        let mut plain = record.clone();
        plain.updated_ms = 0;
        plain.fleet_rev = None;
        plain.fleet_dirty = false;
        for view in &mut plain.views {
            view.last_ms = 0;
        }
        plain
    };
    plain(before) != plain(after)
}

/// What a closure made here becomes when the store holds another record (another instance
/// wrote in between).
#[derive(Debug, Clone, PartialEq)]
pub enum Merged {
    /// The local closure still stands on the store's record: write this (and push it).
    Push(ServerRecord),
    /// The store's record is taken as it is: it holds the closure already, or its baseline
    /// moved (an approval elsewhere, decided after what this instance saw; the next list here
    /// is decided against it). `superseded`: a local closure was dropped for it.
    Take {
        /// The store's record.
        record: ServerRecord,
        /// A local closure was dropped.
        superseded: bool,
    },
}

/// Merges a local record holding a closure the store has not accepted (`local`) with the
/// record the store holds (`fleet`): closing wins on the same baseline.
pub fn merge(fleet: ServerRecord, local: &ServerRecord) -> Merged {
    if fleet.baseline != local.baseline {
        return Merged::Take {
            record: fleet,
            superseded: true,
        };
    }
    let held = fleet.status == local.status
        && fleet.quarantine == local.quarantine
        && fleet.live == local.live
        && fleet.live_invalid == local.live_invalid;
    if held {
        return Merged::Take {
            record: fleet,
            superseded: false,
        };
    }
    Merged::Push(closing_on(&fleet, local))
}

/// Whether `record` is a copy made before this instance had a fleet store (never read from it
/// nor accepted by it) that holds a closure: turning the store on must not open it, so it is
/// carried into the store like a closure made here, whatever baseline the store holds.
pub fn closed_before_the_store(record: &ServerRecord) -> bool {
    record.fleet_rev.is_none() && serving_level(record) == 0
}

/// A local closure applied over the store's record: the local copy, with the store's
/// quarantine when the copy has none and the views (of tools and of sections, and the
/// sections' items listed to them) the store knows that it lacks.
pub fn closing_on(fleet: &ServerRecord, local: &ServerRecord) -> ServerRecord {
    let mut merged = local.clone();
    if merged.quarantine.is_none() && fleet.quarantine.is_some() {
        merged.quarantine = fleet.quarantine.clone();
        merged.status = SchemaStatus::Quarantined;
    }
    for view in &fleet.views {
        if merged.view(&view.key).is_none() {
            merged.views.push(view.clone());
        }
    }
    for view in &fleet.section_views {
        if !merged.section_views.contains(view) {
            merged.section_views.push(view.clone());
        }
    }
    merged.section_names.merge(&fleet.section_names);
    merged
}

/// What the engine needs from the fleet store before it can decide.
#[derive(Debug, Clone, PartialEq)]
pub enum Need {
    /// A record the replica does not hold (and the sets it names).
    Read {
        /// Server id.
        server: String,
    },
    /// A change that opens: write `record` if the store's record is still at `mod_revision`.
    Open {
        /// Server id.
        server: String,
        /// The `mod_revision` the decision was made on (0: no record in the store).
        mod_revision: u64,
        /// The record to write (without bookkeeping).
        record: Box<ServerRecord>,
    },
}

/// What one engine callback learned from the fleet store so far (kept across the rounds of
/// that callback, cleared when it completes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetProgress {
    /// The run that proposed an opening change, kept by the engine under this ticket until
    /// the store answers.
    pub ticket: Option<u64>,
    /// The store accepted that change: the kept run's answer stands.
    pub accepted: bool,
    /// Servers the store holds no record of.
    pub absent: Vec<String>,
    /// Why the store could not answer: what needs it fails closed.
    pub failed: Option<String>,
    /// Servers whose record was read from the store during this callback: a drift is decided
    /// against a copy at least that fresh.
    pub refreshed: Vec<String>,
    /// Round trips made for this callback (bounded).
    pub rounds: u32,
}

/// The shared-data key prefix of server records.
const RECORD_KEY_PREFIX: &str = "ts/v1/srv/";
/// The version the view gives a key it holds back (see [`FleetView`]).
const HELD_VERSION: u32 = u32::MAX;

/// How one run of a callback through the view ended.
#[derive(Debug, Default)]
pub struct ViewEnd {
    /// What the run needs from the store (`None`: it decided without waiting).
    pub need: Option<Need>,
    /// The run decided with an opening change held back as if written: once the store
    /// accepts that change, the run's answer stands as it is, with these writes.
    pub decided: Option<Vec<(String, Vec<u8>)>>,
    /// The servers whose records it closed locally (to push).
    pub closed: Vec<String>,
}

/// The host's store as the engine sees it with a fleet store: reads of records the replica
/// lacks become a [`Need::Read`] (the run is done again once the record is in); the first
/// change that opens becomes a [`Need::Open`], held back as if written, with every write
/// after it, so the run finishes on the record it proposes and its answer (and its audit
/// events) can stand once the store accepts, never before.
pub struct FleetView<'a> {
    local: &'a mut dyn StateStore,
    progress: &'a FleetProgress,
    need: RefCell<Option<Need>>,
    /// A second need came after the first: the run cannot stand, it is done again.
    again: RefCell<bool>,
    /// Writes held back behind an opening change.
    held: Option<Vec<(String, Vec<u8>)>>,
    closed: Vec<String>,
}

impl<'a> FleetView<'a> {
    /// A view of `local` for one run of a callback.
    pub fn new(local: &'a mut dyn StateStore, progress: &'a FleetProgress) -> Self {
        FleetView {
            local,
            progress,
            need: RefCell::new(None),
            again: RefCell::new(false),
            held: None,
            closed: Vec::new(),
        }
    }

    /// How the run ended.
    pub fn finish(self) -> ViewEnd {
        let again = self.again.into_inner();
        let need = self.need.into_inner();
        let decided = match (&need, again) {
            (Some(Need::Open { .. }), false) => self.held.map(|held| {
                held.into_iter()
                    .filter(|(key, _)| !key.starts_with(RECORD_KEY_PREFIX))
                    .collect()
            }),
            _ => None,
        };
        ViewEnd {
            need,
            decided,
            closed: self.closed,
        }
    }

    fn ask(&self, need: Need) -> StoreError {
        let mut slot = self.need.borrow_mut();
        match *slot {
            None => *slot = Some(need),
            Some(_) => *self.again.borrow_mut() = true,
        }
        StoreError::Unreadable("waiting for the fleet store".into())
    }

    fn unreachable(why: &str) -> String {
        format!("fleet store unreachable ({why})")
    }

    fn held_value(&self, key: &str) -> Option<&[u8]> {
        self.held
            .as_ref()?
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    fn record_write(
        &mut self,
        server: &str,
        key: &str,
        value: &[u8],
        expect: Expect,
    ) -> Result<(), StoreError> {
        let held = self.local.get(key)?;
        // The decision was made from the record `expect` names: one read since is another
        // worker's write, decided again from it (never a decision carried over).
        let current = held.as_ref().map(|(_, version)| *version);
        let expect = match (expect, &held) {
            // An emptied key is a record not held: it is written over, not created.
            (Expect::Absent, Some((bytes, version))) if bytes.is_empty() => {
                Expect::Version(*version)
            }
            (Expect::Version(want), _) if current != Some(want) => {
                return Err(StoreError::Conflict);
            }
            (Expect::Absent, Some(_)) => return Err(StoreError::Conflict),
            (expect, _) => expect,
        };
        let before = match held {
            Some((bytes, _)) if !bytes.is_empty() => Some(
                serde_json::from_slice::<ServerRecord>(&bytes)
                    .map_err(|e| StoreError::Failed(format!("record unreadable: {e}")))?,
            ),
            _ => None,
        };
        let mut after: ServerRecord = serde_json::from_slice(value)
            .map_err(|e| StoreError::Failed(format!("record unwritable: {e}")))?;
        if opens(before.as_ref(), &after) {
            if let Some(why) = &self.progress.failed {
                return Err(StoreError::Failed(Self::unreachable(why)));
            }
            let mod_revision = before.as_ref().and_then(|b| b.fleet_rev).unwrap_or(0);
            let held = value.to_vec();
            after.fleet_rev = None;
            after.fleet_dirty = false;
            let refused = self.ask(Need::Open {
                server: server.to_string(),
                mod_revision,
                record: Box::new(after),
            });
            if *self.again.borrow() {
                return Err(refused);
            }
            self.held = Some(vec![(key.to_string(), held)]);
            return Ok(());
        }
        // A new drift on a copy from the store is decided against the store's latest record
        // first (one read, on drift only): a copy that has not synced yet may predate an
        // approval another instance made, and closing on it would close an honest server.
        let new_drift = after.status == SchemaStatus::Changed
            && before
                .as_ref()
                .is_some_and(|b| b.status != SchemaStatus::Changed && b.fleet_rev.is_some());
        if new_drift
            && self.progress.failed.is_none()
            && !self.progress.refreshed.iter().any(|s| s == server)
        {
            return Err(self.ask(Need::Read {
                server: server.to_string(),
            }));
        }
        let for_fleet = before
            .as_ref()
            .is_none_or(|before| differs_for_fleet(before, &after));
        if for_fleet {
            after.fleet_dirty = true;
        }
        let bytes =
            serde_json::to_vec(&after).map_err(|e| StoreError::Failed(format!("record: {e}")))?;
        self.local.set(key, &bytes, expect)?;
        if for_fleet && !self.closed.iter().any(|s| s == server) {
            self.closed.push(server.to_string());
        }
        Ok(())
    }
}

impl StateStore for FleetView<'_> {
    fn get(&self, key: &str) -> Result<Option<(Vec<u8>, u32)>, StoreError> {
        if let Some(value) = self.held_value(key) {
            return Ok(Some((value.to_vec(), HELD_VERSION)));
        }
        let held = self.local.get(key)?;
        let Some(server) = key.strip_prefix(RECORD_KEY_PREFIX) else {
            return Ok(held);
        };
        let missing = held.as_ref().is_none_or(|(bytes, _)| bytes.is_empty());
        if !missing || self.progress.absent.iter().any(|s| s == server) {
            return Ok(held);
        }
        if let Some(why) = &self.progress.failed {
            return Err(StoreError::Unreadable(Self::unreachable(why)));
        }
        Err(self.ask(Need::Read {
            server: server.to_string(),
        }))
    }

    fn set(&mut self, key: &str, value: &[u8], expect: Expect) -> Result<(), StoreError> {
        if self.held.is_some() {
            // Behind an opening change, every write waits for the store's yes with it.
            let current = self.held_value(key).is_some();
            if expect == Expect::Absent && current {
                return Err(StoreError::Conflict);
            }
            if let Some(held) = self.held.as_mut() {
                held.push((key.to_string(), value.to_vec()));
            }
            return Ok(());
        }
        if self.need.borrow().is_some() {
            // The run is done again once the store answered: nothing it writes is real.
            return Err(StoreError::Unreadable("waiting for the fleet store".into()));
        }
        if let Some(server) = key.strip_prefix(RECORD_KEY_PREFIX) {
            let server = server.to_string();
            return self.record_write(&server, key, value, expect);
        }
        self.local.set(key, value, expect)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::policy::status::Actor;

    fn verified(baseline: &str) -> ServerRecord {
        let mut r = ServerRecord::new(1);
        r.status = SchemaStatus::Verified;
        r.baseline = Some(baseline.into());
        r.live = Some(baseline.into());
        r.live_matches = true;
        r
    }

    #[test]
    fn what_opens_and_what_closes() {
        let v = verified("sha256:a");
        assert!(opens(None, &v), "trust on first use opens");
        assert!(!opens(Some(&v), &v));
        let mut changed = v.clone();
        changed.status = SchemaStatus::Changed;
        changed.live = Some("sha256:b".into());
        assert!(!opens(Some(&v), &changed), "a drift closes");
        assert!(opens(Some(&changed), &v), "going back to verified opens");
        let mut approved = changed.clone();
        approved.baseline = Some("sha256:b".into());
        assert!(opens(Some(&changed), &approved), "a new baseline opens");
        let mut held = v.clone();
        held.status = SchemaStatus::Quarantined;
        held.quarantine = Some(("why".into(), Actor::Admin));
        assert!(!opens(Some(&v), &held), "a quarantine closes");
        assert!(opens(Some(&held), &v), "a release opens");
        let mut later = v.clone();
        later.updated_ms = 99;
        assert!(!opens(Some(&v), &later));
        assert!(!differs_for_fleet(&v, &later), "time alone stays local");
        let mut pending = ServerRecord::new(1);
        pending.status = SchemaStatus::Pending;
        assert!(
            !opens(None, &pending),
            "a first contact held pending closes"
        );
        // A view listed a prompt it was not listed before: it may use it.
        let seen = |names: &[&str]| crate::policy::views::SectionView {
            section: crate::policy::section::Section::Prompts,
            key: "k".into(),
            sources: Vec::new(),
            names: names.iter().map(|n| (*n).to_string()).collect(),
        };
        let mut listed = v.clone();
        listed.section_names.record(&seen(&["a"]), 1);
        assert!(opens(Some(&v), &listed), "a view's first items open");
        let mut more = listed.clone();
        more.section_names.record(&seen(&["a", "b"]), 2);
        assert!(opens(Some(&listed), &more), "a view's new item opens");
        assert!(!opens(Some(&more), &listed), "items lost close");
        let mut drifted = listed.clone();
        drifted.status = SchemaStatus::Changed;
        drifted.live = Some("sha256:b".into());
        drifted.section_names.record(&seen(&["a", "c"]), 3);
        assert!(
            !opens(Some(&listed), &drifted),
            "a drift that records its list's items closes"
        );
        // Items a drift under review reaches beyond its list close; losing them opens.
        let mut reached = changed.clone();
        reached.drift_changed = vec!["t".into()];
        let mut also = reached.clone();
        also.drift_also = vec!["prompts/p".into()];
        assert!(!opens(Some(&reached), &also));
        assert!(opens(Some(&also), &reached));
    }

    #[test]
    fn closing_wins_on_the_same_baseline_and_a_new_baseline_supersedes() {
        let fleet = verified("sha256:a");
        let mut local = fleet.clone();
        local.status = SchemaStatus::Changed;
        local.live = Some("sha256:b".into());
        assert_eq!(merge(fleet.clone(), &local), Merged::Push(local.clone()));
        let approved = verified("sha256:c");
        assert_eq!(
            merge(approved.clone(), &local),
            Merged::Take {
                record: approved,
                superseded: true
            }
        );
        let mut quarantined = fleet.clone();
        quarantined.status = SchemaStatus::Quarantined;
        quarantined.quarantine = Some(("held".into(), Actor::Admin));
        match merge(quarantined, &local) {
            Merged::Push(m) => {
                assert_eq!(m.status, SchemaStatus::Quarantined);
                assert_eq!(m.live.as_deref(), Some("sha256:b"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            merge(local.clone(), &local),
            Merged::Take {
                superseded: false,
                ..
            }
        ));
    }

    #[test]
    fn store_records_round_trip_without_bookkeeping_and_refuse_unknown_formats() {
        let mut r = verified("sha256:a");
        r.fleet_rev = Some(7);
        r.fleet_dirty = true;
        let bytes = encode_record(&r);
        assert!(!String::from_utf8_lossy(&bytes).contains("fleet_"));
        let back = decode_record(&bytes).unwrap();
        assert_eq!(back.fleet_rev, None);
        assert_eq!(back.baseline, r.baseline);
        assert!(decode_record(br#"{"format":99,"record":{}}"#).is_err());
        assert!(decode_record(b"garbage").is_err());
        assert!(decode_record(br#"{"format":1,"record":{"status":"weird"}}"#).is_err());
    }
}
