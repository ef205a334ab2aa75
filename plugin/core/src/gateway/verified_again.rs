//! What a worker remembers of the remembered tool lists that verified and left their server's
//! record as it was: a list served again is known to verify again, without deciding it anew.
//!
//! Main design decision: the memory is keyed by everything a whole tool list's check decides
//! from. A list's decision reads the server's record, the list's tools, the caller's view, the
//! approved sets the record names (content addressed: a fingerprint names one set forever) and
//! the configuration (one per engine); and the clock, which moves the outcome of a verified
//! list of a known view only where the view's last sighting is due
//! ([`ServerRecord::sighting_current`]). So when the list is the one remembered (the digests'
//! very allocation, kept alive here so never another list's at a reused address), the view has
//! the same key, and the record is the very one the last check left as it was (the worker's
//! parse of the bytes and version the store holds now, the same allocation), that check's
//! outcome holds again: the record as it is. The store is still read on every list, so a write
//! by any worker or instance (a drift, an approval, a quarantine) is decided at once, the full
//! way. This skips the event the check builds, the record's copy and its comparison with the
//! original: little work, but data and code out of the caches when Envoy calls the plugin
//! (docs/performance.md, "A verified list decided once").

use crate::gateway::live::LiveDigests;
use crate::policy::status::ServerRecord;
use std::rc::Rc;

/// Lists remembered per worker (one per server and view in the common case).
const ENTRIES: usize = 16;

/// One tool list that verified and left its server's record as it was.
struct Entry {
    server: String,
    /// The key of the view it was listed to.
    view: String,
    /// The list's digests (the remembered list's allocation).
    digests: Rc<LiveDigests>,
    /// The record it was decided from (the worker's parse of it).
    record: Rc<ServerRecord>,
}

/// The tool lists this worker saw verify, lately, without changing their server's record.
#[derive(Default)]
pub(crate) struct VerifiedAgain {
    entries: Vec<Entry>,
}

impl VerifiedAgain {
    /// The entry of the list of `digests` listed to the view of `view` for `server` (one per
    /// server and view).
    fn entry(&self, server: &str, view: &str, digests: &Rc<LiveDigests>) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.server == server && e.view == view && Rc::ptr_eq(&e.digests, digests))
    }

    /// Whether a list of `digests` listed to the view of `view` is remembered for `server`,
    /// against any record (then the record is worth reading first).
    pub(crate) fn lists(&self, server: &str, view: &str, digests: &Rc<LiveDigests>) -> bool {
        self.entry(server, view, digests).is_some()
    }

    /// Whether the list of `digests` listed to the view of `view` verified against this very
    /// `record` of `server` without changing it, and still would at `now_ms`.
    pub(crate) fn verified(
        &self,
        server: &str,
        view: &str,
        digests: &Rc<LiveDigests>,
        record: &Rc<ServerRecord>,
        now_ms: u64,
    ) -> bool {
        self.entry(server, view, digests)
            .is_some_and(|e| Rc::ptr_eq(&e.record, record))
            && record.sighting_current(view, now_ms)
    }

    /// Remembers that the list of `digests` listed to the view of `view` verified against
    /// `record` of `server` and left it as it was; the oldest entry goes when the memory is
    /// full.
    pub(crate) fn remember(
        &mut self,
        server: &str,
        view: &str,
        digests: &Rc<LiveDigests>,
        record: &Rc<ServerRecord>,
    ) {
        self.entries
            .retain(|e| !(e.server == server && e.view == view));
        if self.entries.len() >= ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(Entry {
            server: server.to_string(),
            view: view.to_string(),
            digests: Rc::clone(digests),
            record: Rc::clone(record),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::policy::views::{LAST_SEEN_STEP_MS, ViewRecord};

    fn record_with_view(key: &str, last_ms: u64) -> Rc<ServerRecord> {
        let mut record = ServerRecord::new(0);
        record.views.push(ViewRecord {
            key: key.into(),
            sources: Vec::new(),
            names: Rc::from(vec!["echo".to_string()]),
            first_ms: 0,
            last_ms,
        });
        Rc::new(record)
    }

    fn digests() -> Rc<LiveDigests> {
        Rc::new(LiveDigests::computed(
            crate::policy::fingerprint::ToolDigests {
                entries: Vec::new(),
            },
        ))
    }

    #[test]
    fn a_list_is_known_again_for_its_very_record_list_and_view_while_its_sighting_is_current() {
        let mut memo = VerifiedAgain::default();
        let (record, list) = (record_with_view("k1", 1_000), digests());
        memo.remember("a", "k1", &list, &record);
        assert!(memo.lists("a", "k1", &list));
        assert!(memo.verified("a", "k1", &list, &record, 1_000));
        assert!(memo.verified("a", "k1", &list, &record, 1_000 + LAST_SEEN_STEP_MS - 1));
        assert!(
            !memo.verified("a", "k1", &list, &record, 1_000 + LAST_SEEN_STEP_MS),
            "the sighting is due: the record changes"
        );
        let equal = Rc::new(ServerRecord::clone(&record));
        assert!(
            !memo.verified("a", "k1", &list, &equal, 1_000),
            "an equal record parsed again is decided again"
        );
        let other = digests();
        assert!(!memo.lists("a", "k1", &other));
        assert!(!memo.verified("a", "k1", &other, &record, 1_000));
        assert!(!memo.verified("a", "k2", &list, &record, 1_000));
        assert!(!memo.verified("b", "k1", &list, &record, 1_000));
    }

    #[test]
    fn a_view_not_in_the_record_is_never_known_again() {
        let mut memo = VerifiedAgain::default();
        let (record, list) = (record_with_view("k1", 1_000), digests());
        memo.remember("a", "k2", &list, &record);
        assert!(!memo.verified("a", "k2", &list, &record, 1_000));
    }

    #[test]
    fn one_entry_per_server_and_view_and_the_oldest_forgotten() {
        let mut memo = VerifiedAgain::default();
        let (record, list) = (record_with_view("k1", 0), digests());
        memo.remember("a", "k1", &list, &record);
        let newer = record_with_view("k1", 0);
        memo.remember("a", "k1", &list, &newer);
        assert!(!memo.verified("a", "k1", &list, &record, 0));
        assert!(memo.verified("a", "k1", &list, &newer, 0));
        for n in 0..ENTRIES {
            memo.remember(&format!("s{n}"), "k1", &list, &record);
        }
        assert!(!memo.lists("a", "k1", &list));
        assert!(memo.lists("s15", "k1", &list));
        assert_eq!(memo.entries.len(), ENTRIES);
    }
}
