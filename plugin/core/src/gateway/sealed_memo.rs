//! What a worker remembers of the sealed sections' lists that verified: each server's
//! verified lists of each section (one per view that lists its own), with the catalogue they
//! verified against.
//!
//! Main design decision: a list that equals, value for value, one that verified against the
//! same catalogue verifies again, so it is compared instead of digested. A drifted section
//! never gets here, and an honest server lists the same prompts, templates and tool fields
//! again and again: digesting them anew on every answer was three to eight times the cost of a
//! verified tool list (docs/performance.md, "Sealed sections"). Equal values have equal
//! digests, so nothing is decided differently; the memory is bounded and forgets the oldest.
//! A tool list's fields are remembered by the digests the worker's remembered list shares
//! (the very same allocation, [`crate::gateway::known_list`]): a list served again byte for
//! byte carries them, and comparing its tools value for value cost as much as digesting.

use crate::gateway::known_list::KnownList;
use crate::gateway::live::LiveDigests;
use crate::policy::section::Section;
use serde_json::Value;
use std::rc::Rc;

/// Lists remembered per worker (one per server, section and view in the common case).
const ENTRIES: usize = 16;

/// One verified list.
struct Entry {
    server: String,
    section: Section,
    /// The catalogue it verified against.
    baseline: String,
    /// The section's member of the answer (the tools, for their other fields).
    items: Value,
    /// The views (keys) whose recorded items hold every item of `items` (what a view was
    /// listed only grows: a record loses it only with a new catalogue, which this entry is
    /// not for, or when a version that does not know it writes the record, and the view's
    /// uses are then checked against the catalogue alone until its next list is decided).
    covered: Vec<String>,
    /// The remembered answer whose parse holds `items` itself, once a list read from it was
    /// found equal ([`crate::gateway::known_list`]): a list read from those bytes again is
    /// the same value, so it is not compared again.
    known: Option<Rc<KnownList>>,
}

/// Views an entry remembers as covered, at most (then it forgets them all).
const COVERED: usize = 64;

/// A list remembered as verified, found again.
pub(crate) struct Verified<'a> {
    entry: &'a mut Entry,
}

impl Verified<'_> {
    /// Whether the recorded items of the view of `key` hold every item of the list.
    pub(crate) fn covers(&self, key: &str) -> bool {
        self.entry.covered.iter().any(|k| k == key)
    }

    /// Remembers that the recorded items of the view of `key` hold every item of the list.
    pub(crate) fn cover(&mut self, key: &str) {
        if self.entry.covered.len() >= COVERED {
            self.entry.covered.clear();
        }
        self.entry.covered.push(key.to_string());
    }
}

/// The lists of sealed sections this worker saw verify lately.
#[derive(Default)]
pub(crate) struct SealedMemo {
    entries: Vec<Entry>,
    /// Tool lists whose other fields verified: the server, the list's digests (kept alive
    /// here, so never another list's at a reused address) and the catalogue. Several per
    /// server: each view of a server lists its own tools, remembered per view
    /// ([`crate::gateway::known_list`]), and two kinds of callers listing in turn must not
    /// push each other's out.
    tools: Vec<(String, Rc<LiveDigests>, String)>,
}

impl SealedMemo {
    /// The entry of `items` of `section` when they verified against `baseline` on this
    /// worker lately (`known`: the remembered answer whose parse holds `items`, if any).
    pub(crate) fn verified(
        &mut self,
        (server, section, baseline): (&str, Section, &str),
        items: &Value,
        known: Option<&Rc<KnownList>>,
    ) -> Option<Verified<'_>> {
        let entry = self.entries.iter_mut().find(|e| {
            e.section == section
                && e.server == server
                && e.baseline == baseline
                && (e.known.as_ref().is_some_and(|k| k.holds(section, items)) || e.items == *items)
        })?;
        // The parse `items` were read from, when the worker remembers it: equal to this
        // entry's, so a list read from it again is not compared again.
        if let Some(known) = known {
            entry.known = Some(Rc::clone(known));
        }
        Some(Verified { entry })
    }

    /// Whether the tool list of `digests` had its other fields verified against `baseline`.
    pub(crate) fn tools_verified(
        &self,
        server: &str,
        digests: &Rc<LiveDigests>,
        baseline: &str,
    ) -> bool {
        self.tools
            .iter()
            .any(|(s, d, b)| Rc::ptr_eq(d, digests) && s == server && b == baseline)
    }

    /// Remembers that the tool list of `digests` had its other fields verified (the oldest
    /// list goes when the memory is full).
    pub(crate) fn remember_tools(
        &mut self,
        server: &str,
        digests: &Rc<LiveDigests>,
        baseline: &str,
    ) {
        self.tools
            .retain(|(s, d, _)| !(Rc::ptr_eq(d, digests) && s == server));
        if self.tools.len() >= ENTRIES {
            self.tools.remove(0);
        }
        self.tools
            .push((server.to_string(), Rc::clone(digests), baseline.to_string()));
    }

    /// Remembers that `items` of `section` verified against `baseline` (beside the other lists
    /// of the section that verified against it: each view of a server may list its own).
    pub(crate) fn remember(
        &mut self,
        server: &str,
        section: Section,
        baseline: &str,
        items: &Value,
    ) {
        self.entries.retain(|e| {
            let same = e.section == section && e.server == server;
            !(same && (e.baseline != baseline || e.items == *items))
        });
        if self.entries.len() >= ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(Entry {
            server: server.to_string(),
            section,
            baseline: baseline.to_string(),
            items: items.clone(),
            covered: Vec::new(),
            known: None,
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use serde_json::json;

    /// Whether `items` are found verified.
    fn found(
        memo: &mut SealedMemo,
        listed: (&str, Section, &str),
        items: &Value,
        known: Option<&Rc<KnownList>>,
    ) -> bool {
        memo.verified(listed, items, known).is_some()
    }

    #[test]
    fn a_list_is_remembered_per_server_section_and_catalogue_and_the_oldest_forgotten() {
        let mut memo = SealedMemo::default();
        let prompts = json!([{"name": "greet"}]);
        memo.remember("a", Section::Prompts, "sha256:1", &prompts);
        assert!(found(
            &mut memo,
            ("a", Section::Prompts, "sha256:1"),
            &prompts,
            None
        ));
        assert!(!found(
            &mut memo,
            ("a", Section::Prompts, "sha256:2"),
            &prompts,
            None
        ));
        assert!(!found(
            &mut memo,
            ("b", Section::Prompts, "sha256:1"),
            &prompts,
            None
        ));
        assert!(!found(
            &mut memo,
            ("a", Section::ResourceTemplates, "sha256:1"),
            &prompts,
            None
        ));
        assert!(!found(
            &mut memo,
            ("a", Section::Prompts, "sha256:1"),
            &json!([{"name": "bye"}]),
            None
        ));
        for n in 0..ENTRIES {
            memo.remember(&format!("s{n}"), Section::Prompts, "sha256:1", &prompts);
        }
        assert!(!found(
            &mut memo,
            ("a", Section::Prompts, "sha256:1"),
            &prompts,
            None
        ));
        assert!(found(
            &mut memo,
            ("s15", Section::Prompts, "sha256:1"),
            &prompts,
            None
        ));
    }

    #[test]
    fn tool_lists_of_two_views_of_a_server_are_both_remembered() {
        let digests = || {
            Rc::new(LiveDigests::computed(
                crate::policy::fingerprint::ToolDigests {
                    entries: Vec::new(),
                },
            ))
        };
        let mut memo = SealedMemo::default();
        let (plain, capable) = (digests(), digests());
        memo.remember_tools("a", &plain, "sha256:1");
        memo.remember_tools("a", &capable, "sha256:1");
        assert!(memo.tools_verified("a", &plain, "sha256:1"));
        assert!(memo.tools_verified("a", &capable, "sha256:1"));
        assert!(
            !memo.tools_verified("a", &plain, "sha256:2"),
            "another catalogue"
        );
        assert!(!memo.tools_verified("b", &plain, "sha256:1"));
        // Verified again against a new catalogue: one entry for the list, the latest.
        memo.remember_tools("a", &plain, "sha256:2");
        assert!(memo.tools_verified("a", &plain, "sha256:2"));
        assert!(!memo.tools_verified("a", &plain, "sha256:1"));
        assert_eq!(memo.tools.len(), 2);
        for _ in 0..ENTRIES {
            memo.remember_tools("c", &digests(), "sha256:1");
        }
        assert!(
            !memo.tools_verified("a", &capable, "sha256:1"),
            "the oldest forgotten"
        );
        assert_eq!(memo.tools.len(), ENTRIES);
    }

    #[test]
    fn a_list_read_from_a_remembered_answer_is_known_by_its_parse_until_its_entry_goes() {
        let mut memo = SealedMemo::default();
        let prompts = json!([{"name": "greet"}]);
        let answer = json!({"prompts": prompts.clone()});
        let known = Rc::new(KnownList::answer(answer.to_string().into_bytes(), answer));
        let items = &known.result()["prompts"];
        let listed = ("a", Section::Prompts, "sha256:1");
        assert!(
            !found(&mut memo, listed, items, Some(&known)),
            "nothing remembered"
        );
        memo.remember("a", Section::Prompts, "sha256:1", &prompts);
        assert!(
            found(&mut memo, listed, items, Some(&known)),
            "equal, and now known"
        );
        assert!(memo.entries[0].known.is_some());
        assert!(!found(
            &mut memo,
            ("a", Section::Prompts, "sha256:2"),
            items,
            None
        ));
        // A list verified against another catalogue: the known answer goes with the entry it
        // was found equal to.
        memo.remember("a", Section::Prompts, "sha256:2", &json!([{"name": "bye"}]));
        assert_eq!(memo.entries.len(), 1);
        assert!(memo.entries[0].known.is_none());
        assert!(!found(&mut memo, listed, items, None));
    }

    #[test]
    fn a_view_covered_is_remembered_with_its_list_and_forgotten_with_it() {
        let mut memo = SealedMemo::default();
        let prompts = json!([{"name": "greet"}]);
        let listed = ("a", Section::Prompts, "sha256:1");
        memo.remember("a", Section::Prompts, "sha256:1", &prompts);
        memo.verified(listed, &prompts, None).unwrap().cover("k1");
        let verified = memo.verified(listed, &prompts, None).unwrap();
        assert!(verified.covers("k1"));
        assert!(!verified.covers("k2"));
        memo.remember("a", Section::Prompts, "sha256:1", &json!([{"name": "bye"}]));
        let bye = memo
            .verified(listed, &json!([{"name": "bye"}]), None)
            .unwrap();
        assert!(!bye.covers("k1"), "another list");
        // Verified again against a new catalogue: its views are told again.
        memo.remember("a", Section::Prompts, "sha256:2", &prompts);
        let again = memo.verified(("a", Section::Prompts, "sha256:2"), &prompts, None);
        assert!(!again.unwrap().covers("k1"));
    }

    #[test]
    fn two_views_lists_of_one_section_are_both_remembered_until_the_catalogue_changes() {
        let mut memo = SealedMemo::default();
        let plain = json!([{"name": "greet"}]);
        let capable = json!([{"name": "greet"}, {"name": "sample"}]);
        let listed = ("a", Section::Prompts, "sha256:1");
        memo.remember("a", Section::Prompts, "sha256:1", &plain);
        memo.remember("a", Section::Prompts, "sha256:1", &capable);
        memo.remember("a", Section::Prompts, "sha256:1", &plain);
        assert!(found(&mut memo, listed, &plain, None));
        assert!(found(&mut memo, listed, &capable, None));
        assert_eq!(memo.entries.len(), 2, "one entry per list");
        memo.verified(listed, &capable, None).unwrap().cover("k2");
        assert!(!memo.verified(listed, &plain, None).unwrap().covers("k2"));
        // A list verified against a new catalogue: those of the old one go.
        memo.remember("a", Section::Prompts, "sha256:2", &plain);
        assert!(!found(&mut memo, listed, &capable, None));
        assert!(!found(&mut memo, listed, &plain, None));
        assert!(found(
            &mut memo,
            ("a", Section::Prompts, "sha256:2"),
            &plain,
            None
        ));
        assert_eq!(memo.entries.len(), 1);
    }
}
