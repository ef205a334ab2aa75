//! The `schema_status` lifecycle of one server, as a pure state machine.
//!
//! Main design decision: one function, [`apply`], takes a server's record and one event and
//! returns the next record plus what to audit. No I/O and no clock: the engine reads the
//! record from the shared store, applies, and writes it back with compare-and-swap, so the
//! lifecycle can be tested exhaustively (every state × every event) without a host.

use crate::policy::containment::{Differing, DriftReach};
use crate::policy::section::Section;
use crate::policy::views::{LAST_SEEN_STEP_MS, SectionNames, SectionView, ViewRecord};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Trust posture for servers that have no baseline yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posture {
    /// Trust on first use: the first live tool set becomes the baseline.
    Discovery,
    /// Nothing is served until an admin approves (or config pins) a baseline.
    Strict,
}

impl Posture {
    /// The config and audit spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::Discovery => "discovery",
            Posture::Strict => "strict",
        }
    }
}

/// A server's schema status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaStatus {
    /// First use, no baseline yet.
    Unbaselined,
    /// The live set matches the approved baseline.
    Verified,
    /// Drift: the live set differs from the baseline (sticky until an admin acts).
    Changed,
    /// Awaiting approval (strict posture, or held by first-contact screening).
    Pending,
    /// Held by an admin.
    Quarantined,
}

impl SchemaStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaStatus::Unbaselined => "unbaselined",
            SchemaStatus::Verified => "verified",
            SchemaStatus::Changed => "changed",
            SchemaStatus::Pending => "pending",
            SchemaStatus::Quarantined => "quarantined",
        }
    }

    /// Closed states serve no tools and refuse every call.
    pub fn is_closed(self) -> bool {
        matches!(
            self,
            SchemaStatus::Changed | SchemaStatus::Pending | SchemaStatus::Quarantined
        )
    }

    /// Every status, for exhaustive tests and docs.
    pub const ALL: [SchemaStatus; 5] = [
        SchemaStatus::Unbaselined,
        SchemaStatus::Verified,
        SchemaStatus::Changed,
        SchemaStatus::Pending,
        SchemaStatus::Quarantined,
    ];
}

impl fmt::Display for SchemaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who put a quarantine in place (a config quarantine is lifted by config only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The admin API.
    Admin,
    /// The plugin configuration (control plane).
    Config,
}

/// Everything the lifecycle knows about one server. Stored as JSON in the state store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Current status.
    pub status: SchemaStatus,
    /// Approved fingerprint.
    pub baseline: Option<String>,
    /// The baseline before the last approval (to recognise stale sessions and dropped tools).
    pub previous: Option<String>,
    /// Fingerprint of the last complete live set seen: the candidate an admin reviews.
    pub live: Option<String>,
    /// Why the last live set was invalid (it then has no fingerprint).
    pub live_invalid: Option<String>,
    /// Whether the last live set verified against the baseline.
    pub live_matches: bool,
    /// When drift was first seen (ms since the epoch).
    pub drift_at_ms: Option<u64>,
    /// `list_changed` seen (hold mode): calls wait for a fresh verified list.
    pub reverify: bool,
    /// Baseline pinned by fingerprint only: calls wait for a live list to verify.
    pub awaiting_live: bool,
    /// Quarantine reason and who set it.
    pub quarantine: Option<(String, Actor)>,
    /// First-contact screening findings that hold the server `pending`.
    pub findings: Vec<String>,
    /// Tools of the last live set the baseline lacks, when its drift is told tool by tool
    /// (see [`crate::policy::containment`]; the three lists are empty when that is not known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_added: Vec<String>,
    /// Tools of the last live set that differ from the baseline's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_changed: Vec<String>,
    /// Baseline tools the last live set lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_removed: Vec<String>,
    /// Items a list checked against the catalogue alone showed other than approved while this
    /// drift awaited review under tool scope (tools by name, other items as `SECTION/KEY`):
    /// withheld and refused as changed, kept when a tool list measures the drift again, and
    /// cleared with the rest of the reach when the drift is reviewed or a list verifies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_also: Vec<String>,
    /// Why the last live set's drift reaches the server as a whole (it cannot be told tool by
    /// tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_whole: Option<String>,
    /// The server's views: each kind of caller seen, with the names it is listed (see
    /// [`crate::policy::views`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub views: Vec<ViewRecord>,
    /// The view whose list made the live candidate, when that differs from the baseline or
    /// awaits approval, with the names it listed: approving the candidate records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_view: Option<ViewRecord>,
    /// Other views that listed the same candidate before `live_view` did (one deploy seen
    /// through several views): approving the candidate records their names too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live_views_also: Vec<ViewRecord>,
    /// The section beyond tools whose list made the live candidate (`None`: tools): a list
    /// of another section that verifies leaves that candidate for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_section: Option<Section>,
    /// The views that listed each sealed section beyond tools, as `SECTION/VIEW-KEY` (see
    /// [`crate::policy::views::SectionView`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub section_views: Vec<String>,
    /// The items of each keyed section each view was listed (see
    /// [`crate::policy::views::SectionNames`]).
    #[serde(default, skip_serializing_if = "SectionNames::is_empty")]
    pub section_names: SectionNames,
    /// The view whose list of `live_section` made the live candidate (`SECTION/VIEW-KEY`):
    /// approving it records the view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_section_view: Option<String>,
    /// Last change (ms since the epoch).
    pub updated_ms: u64,
    /// With a fleet store: the store's `mod_revision` of the fleet record this local copy was
    /// read from or last written as (`None`: not from the fleet). Local bookkeeping, never
    /// written to the fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_rev: Option<u64>,
    /// With a fleet store: this copy holds a change the fleet has not accepted yet (a closure
    /// made here, to be written). Local bookkeeping, never written to the fleet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fleet_dirty: bool,
}

impl ServerRecord {
    /// A server seen for the first time.
    pub fn new(now_ms: u64) -> Self {
        ServerRecord {
            status: SchemaStatus::Unbaselined,
            baseline: None,
            previous: None,
            live: None,
            live_invalid: None,
            live_matches: false,
            drift_at_ms: None,
            reverify: false,
            awaiting_live: false,
            quarantine: None,
            findings: Vec::new(),
            drift_added: Vec::new(),
            drift_changed: Vec::new(),
            drift_removed: Vec::new(),
            drift_also: Vec::new(),
            drift_whole: None,
            views: Vec::new(),
            live_view: None,
            live_views_also: Vec::new(),
            live_section: None,
            section_views: Vec::new(),
            section_names: SectionNames::default(),
            live_section_view: None,
            updated_ms: now_ms,
            fleet_rev: None,
            fleet_dirty: false,
        }
    }

    /// The fingerprints of the tool sets the record references (baseline, previous baseline,
    /// live candidate): the stored sets that must not be replaced.
    pub fn set_refs(&self) -> [Option<&str>; 3] {
        [
            self.baseline.as_deref(),
            self.previous.as_deref(),
            self.live.as_deref(),
        ]
    }

    /// The recorded view of `key`.
    pub fn view(&self, key: &str) -> Option<&ViewRecord> {
        self.views.iter().find(|v| v.key == key)
    }

    /// Whether the view of `key` is recorded with a last sighting that a list of it verified
    /// at `now_ms` leaves as it is (within [`LAST_SEEN_STEP_MS`]). This is all the clock
    /// decides of a verified list of a known view.
    pub fn sighting_current(&self, key: &str, now_ms: u64) -> bool {
        self.view(key)
            .is_some_and(|known| now_ms.saturating_sub(known.last_ms) < LAST_SEEN_STEP_MS)
    }

    /// Records `seen` (a view and the names it was listed), or the names of the view of its
    /// key; keeps when the view was first seen. Returns whether the view is new.
    fn record_view(&mut self, seen: &ViewRecord) -> bool {
        match self.views.iter_mut().find(|v| v.key == seen.key) {
            Some(known) => {
                known.names.clone_from(&seen.names);
                known.last_ms = seen.last_ms;
                false
            }
            None => {
                self.views.push(seen.clone());
                true
            }
        }
    }

    /// Whether the view of `key` listed `section` before.
    pub fn lists_section(&self, section: Section, key: &str) -> bool {
        let seen = crate::policy::views::recorded_section_view(section, key);
        self.section_views.contains(&seen)
    }

    /// How many views listed `section`.
    pub fn section_view_count(&self, section: Section) -> usize {
        let prefix = format!("{}/", section.name());
        let of_section = |v: &&String| v.starts_with(&prefix);
        self.section_views.iter().filter(of_section).count()
    }

    /// Records that a view listed a section (`SECTION/VIEW-KEY`, kept once).
    fn record_section_view(&mut self, seen: String) {
        if !self.section_views.contains(&seen) {
            self.section_views.push(seen);
        }
    }

    /// Records that `seen` listed its section, and the items it was listed.
    fn record_section_listing(&mut self, seen: &SectionView, now_ms: u64) {
        self.section_names.record(seen, now_ms);
        self.record_section_view(seen.recorded());
    }

    /// Calls are refused until a live list verifies (pin by fingerprint, or list_changed hold).
    pub fn awaiting_verification(&self) -> bool {
        self.reverify || self.awaiting_live || self.status == SchemaStatus::Unbaselined
    }
}

/// How a complete live set relates to the baseline (computed by the engine from digests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveSet {
    /// A valid set with its fingerprint; `matches` is true when it equals the baseline (or is
    /// an allowed subset of it).
    Valid {
        /// Server fingerprint of the live set.
        fingerprint: String,
        /// Verifies against the baseline.
        matches: bool,
        /// First-contact screening findings (only consulted without a baseline).
        findings: Vec<String>,
        /// How far its difference from the baseline reaches, when it does not match.
        reach: DriftReach,
        /// The view the list was seen through, with the names it listed (`None`: a view
        /// that cannot be told).
        view: Option<ViewRecord>,
        /// Under discovery, a new view lists tools the catalogue lacks: `fingerprint` is the
        /// grown catalogue, trusted on first use as the new baseline (unless screening holds
        /// it). Also the first tool list of a catalogue another section began (no tools, no
        /// view): trusted so under discovery, awaiting approval under strict.
        grows: bool,
    },
    /// An invalid set (duplicate names, a tool without a name, ...): it never verifies.
    Invalid {
        /// Why it is invalid.
        reason: String,
    },
    /// A page of a paginated list differs from the baseline in these tools (the complete set
    /// is not known before its last page).
    Partial {
        /// Why, in words.
        reason: String,
        /// The page's tools that differ (new or changed).
        withheld: Differing,
    },
}

/// What a complete list of a section beyond tools (prompts, resource templates, the
/// instructions of a handshake) makes of a catalogue that has a baseline, when it does not
/// verify (see [`crate::gateway::sealed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionLive {
    /// The section.
    pub section: Section,
    /// The candidate catalogue: the baseline with the section as listed.
    pub fingerprint: String,
    /// The baseline did not seal the section yet: this list seals it first (trusted on first
    /// use under discovery unless `findings`; awaiting approval under strict).
    pub first: bool,
    /// First-contact screening findings on the listed items (a first sealing only).
    pub findings: Vec<String>,
    /// A first sealing of what the baseline approved already (its tools' other fields, as
    /// its definitions hold them): sealed under every posture.
    pub approved: bool,
    /// What differs, in words (a drift).
    pub reason: String,
    /// The view the list was seen through (`None`: one that cannot be told, or past
    /// `limits.max_views`).
    pub view: Option<SectionView>,
    /// Under discovery, a view that never listed the section before lists items the
    /// catalogue lacks (and no item otherwise): `fingerprint` is the grown catalogue, trusted
    /// on first use unless `findings`.
    pub grows: bool,
    /// Under `drift_scope: "tool"`, what a drift reaches: tools by name (their other fields),
    /// other items as `SECTION/KEY` ([`Section::item_name`]), withheld on their own (as
    /// changed) while the server serves the rest. `None`: the server as a whole.
    pub reach: Option<Vec<String>>,
}

/// One thing that happens to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A complete live `tools/list` was seen.
    Live(LiveSet),
    /// A list of a sealed section beyond tools differs from the baseline (or seals it first).
    Section(SectionLive),
    /// A view that never listed a sealed section before listed it, and it verified.
    SectionViewed(SectionView),
    /// Under `drift_scope: "tool"`, while a drift of something else awaits review, a list
    /// checked against the catalogue alone showed these items other than approved (tools by
    /// name, for their other fields; other items as `SECTION/KEY`): the drift reaches them
    /// too, so they are refused, not only withheld from that list, until it is reviewed.
    Withheld(Vec<String>),
    /// `notifications/tools/list_changed` was seen (hold mode).
    ListChanged,
    /// An admin approves the fingerprint they reviewed.
    Approve {
        /// The reviewed fingerprint.
        fingerprint: String,
    },
    /// An admin or the config holds the server.
    Quarantine {
        /// Why.
        reason: String,
        /// Who.
        by: Actor,
    },
    /// The hold is lifted (re-evaluates the status).
    Release {
        /// Who.
        by: Actor,
    },
    /// Config pins a baseline (fingerprint only, or a full lock).
    Pin {
        /// The pinned fingerprint.
        fingerprint: String,
        /// A full lock (definitions known) rather than a fingerprint only.
        lock: bool,
    },
}

/// Why an event was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The reviewed fingerprint is not the current candidate.
    Conflict {
        /// The current candidate, if any.
        candidate: Option<String>,
    },
    /// Release of a server that is not quarantined.
    NotQuarantined,
    /// A config quarantine can only be lifted by config.
    HeldByConfig,
    /// An administrator's quarantine is not lifted by a config change (only by a release
    /// through the admin API).
    HeldByAdmin,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Conflict { candidate: Some(c) } => write!(
                f,
                "the reviewed fingerprint is not the current candidate ({c}); review the current diff and approve that"
            ),
            Refusal::Conflict { candidate: None } => {
                write!(
                    f,
                    "there is no live tool set to approve yet; let a client list tools first"
                )
            }
            Refusal::NotQuarantined => write!(f, "the server is not quarantined"),
            Refusal::HeldByConfig => {
                write!(
                    f,
                    "the quarantine comes from the plugin config; remove it there"
                )
            }
            Refusal::HeldByAdmin => write!(
                f,
                "an administrator holds the server; only a release through the admin API lifts it"
            ),
        }
    }
}

/// An audit entry produced by a transition: event name and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Audit event name (`schema.changed`, ...).
    pub event: &'static str,
    /// Why, in words.
    pub reason: String,
}

fn note(event: &'static str, reason: impl Into<String>) -> Note {
    Note {
        event,
        reason: reason.into(),
    }
}

/// Applies one event. On success returns the next record and what to audit (empty when
/// nothing changed that an operator needs to see).
pub fn apply(
    record: &ServerRecord,
    event: &Event,
    posture: Posture,
    now_ms: u64,
) -> Result<(ServerRecord, Vec<Note>), Refusal> {
    let mut next = record.clone();
    let notes = match event {
        Event::Live(live) => observe_live(&mut next, live, posture, now_ms),
        Event::Section(live) => observe_section(&mut next, live, posture, now_ms),
        Event::SectionViewed(view) => section_viewed(&mut next, view, now_ms),
        Event::Withheld(items) => withheld(&mut next, items),
        Event::ListChanged => {
            next.reverify = true;
            vec![note(
                "schema.reverify",
                "notifications/tools/list_changed: calls wait for a fresh tools/list",
            )]
        }
        Event::Approve { fingerprint } => approve(&mut next, fingerprint)?,
        Event::Quarantine { reason, by } => {
            next.quarantine = Some((reason.clone(), *by));
            next.status = SchemaStatus::Quarantined;
            vec![note("server.quarantined", reason.clone())]
        }
        Event::Release { by } => release(&mut next, *by, posture, now_ms)?,
        Event::Pin { fingerprint, lock } => pin(&mut next, fingerprint, *lock, posture, now_ms),
    };
    if next != *record {
        next.updated_ms = now_ms;
    }
    Ok((next, notes))
}

fn observe_live(
    next: &mut ServerRecord,
    live: &LiveSet,
    posture: Posture,
    now_ms: u64,
) -> Vec<Note> {
    let previous_live = next.live.clone();
    match live {
        LiveSet::Invalid { reason } => {
            next.live = None;
            next.live_invalid = Some(reason.clone());
            next.live_matches = false;
            next.set_reach(&DriftReach::Server(reason.clone()));
        }
        LiveSet::Partial { reason, withheld } => {
            next.live = None;
            next.live_invalid = Some(reason.clone());
            next.live_matches = false;
            next.add_page_reach(withheld);
        }
        LiveSet::Valid {
            fingerprint,
            matches,
            reach,
            view,
            ..
        } => {
            // A drift, or a new view awaiting approval, is not moved by another view's list
            // that verifies: its candidate stays the one to approve.
            let held = matches!(next.status, SchemaStatus::Changed | SchemaStatus::Pending);
            let under_review = held
                && next.live_view.as_ref().is_some_and(|drifted| {
                    view.as_ref().map(|v| v.key.as_str()) != Some(drifted.key.as_str())
                });
            // Nor is a drift of another section's list (prompts, instructions), or its first
            // sealing awaiting approval: a tool list that verifies leaves it for review.
            let under_review = under_review || (held && next.live_section.is_some());
            if *matches && under_review {
                next.reverify = false;
                return Vec::new();
            }
            // A tool list that drifts while a section's drift awaits review replaces that
            // candidate: what the section's drift withheld is no longer told, so the drift
            // reaches the server as a whole.
            let section_drift =
                next.status == SchemaStatus::Changed && next.live_section.is_some() && !*matches;
            next.live_section = None;
            next.live_section_view = None;
            let same_candidate = next.live.as_deref() == Some(fingerprint.as_str());
            next.live = Some(fingerprint.clone());
            next.live_invalid = None;
            next.live_matches = *matches && next.baseline.is_some();
            let earlier = next.live_view.take();
            let seen_by = match (next.live_matches, same_candidate, &earlier, view) {
                (true, ..) => None,
                // The view that showed the candidate showing it again keeps its sighting to
                // the step: a drifted server's clients list on, and a sighting moved on every
                // list rewrote the server's record on every list.
                (false, true, Some(e), Some(now))
                    if e.key == now.key
                        && e.names == now.names
                        && now.last_ms.saturating_sub(e.last_ms) < LAST_SEEN_STEP_MS =>
                {
                    Some(e.clone())
                }
                (false, ..) => view.clone(),
            };
            // Another view listing the candidate already under review joins it: one approval
            // records every view that showed it.
            match (same_candidate, earlier, &seen_by) {
                (true, Some(earlier), Some(now)) if earlier.key != now.key => {
                    next.live_views_also
                        .retain(|v| v.key != earlier.key && v.key != now.key);
                    next.live_views_also.push(earlier);
                }
                (true, _, Some(now)) => next.live_views_also.retain(|v| v.key != now.key),
                _ => next.live_views_also.clear(),
            }
            next.live_view = seen_by;
            let whole;
            next.set_reach(match (next.live_matches, section_drift) {
                (true, _) => &DriftReach::Unknown,
                (false, true) => {
                    whole = DriftReach::Server(
                        "the tool list changed while a section's drift awaited review".into(),
                    );
                    &whole
                }
                (false, false) => reach,
            });
        }
    }
    if next.quarantine.is_some() {
        return Vec::new();
    }
    let moved = next.live != previous_live || next.live_invalid.is_some();
    let incomplete = !matches!(live, LiveSet::Valid { .. });
    match (next.status, live) {
        (SchemaStatus::Changed, _) => {
            // A complete list shows the live set again: what it serves under tool scope no
            // longer waits for one (list_changed hold).
            if !incomplete {
                next.reverify = false;
            }
            if moved {
                vec![note("schema.changed", drift_reason(live))]
            } else {
                Vec::new()
            }
        }
        (_, _) if incomplete && next.status != SchemaStatus::Pending => {
            next.status = SchemaStatus::Changed;
            next.drift_at_ms.get_or_insert(now_ms);
            vec![note("schema.changed", drift_reason(live))]
        }
        (_, LiveSet::Invalid { .. } | LiveSet::Partial { .. }) => Vec::new(),
        (
            SchemaStatus::Unbaselined | SchemaStatus::Pending,
            LiveSet::Valid {
                fingerprint,
                findings,
                ..
            },
        ) if next.baseline.is_none() => {
            let notes = first_contact(next, fingerprint, findings, posture, moved);
            if let (SchemaStatus::Verified, LiveSet::Valid { view: Some(v), .. }) =
                (next.status, live)
            {
                next.live_view = None;
                next.record_view(v);
            }
            notes
        }
        (_, LiveSet::Valid { view, .. }) if next.live_matches => {
            let was_waiting = next.awaiting_verification() || next.status != SchemaStatus::Verified;
            next.status = SchemaStatus::Verified;
            next.reverify = false;
            next.awaiting_live = false;
            let mut notes = Vec::new();
            if was_waiting {
                notes.push(note(
                    "schema.verified",
                    "the live tool set matches the approved baseline",
                ));
            }
            if let Some(view) = view {
                notes.extend(seen_view(next, view));
            }
            notes
        }
        (
            SchemaStatus::Verified,
            LiveSet::Valid {
                fingerprint,
                findings,
                view: Some(view),
                grows: true,
                ..
            },
        ) => grow(next, fingerprint, findings, view, posture),
        // A new view awaiting approval is sticky, as a first contact is: its candidate moves.
        (SchemaStatus::Pending, LiveSet::Valid { .. }) => match moved {
            true => vec![note("schema.pending", drift_reason(live))],
            false => Vec::new(),
        },
        (_, LiveSet::Valid { .. }) => {
            next.status = SchemaStatus::Changed;
            next.drift_at_ms = Some(now_ms);
            vec![note("schema.changed", drift_reason(live))]
        }
    }
}

/// A list of a sealed section beyond tools that does not verify. A first sealing under
/// discovery makes the catalogue with the section the baseline (`section.sealed`; on a server
/// without a baseline, a catalogue without tools, and the server `verified`), unless
/// screening flags it; under strict (or flagged) it awaits approval (`pending`). Any other
/// difference is drift (`changed`, sticky), the server closed as a whole. A server already
/// closed keeps the candidate under review, but for one made by this section, which moves.
fn observe_section(
    next: &mut ServerRecord,
    live: &SectionLive,
    posture: Posture,
    now_ms: u64,
) -> Vec<Note> {
    if next.quarantine.is_some() {
        return Vec::new();
    }
    let word = live.section.name();
    let moved = next.live.as_deref() != Some(live.fingerprint.as_str());
    match next.status {
        SchemaStatus::Verified => {}
        // A server whose tools were never listed: the section begins its catalogue.
        SchemaStatus::Unbaselined if next.baseline.is_none() && live.first => {}
        SchemaStatus::Changed | SchemaStatus::Pending
            if next.live_section == Some(live.section) && moved =>
        {
            next.live = Some(live.fingerprint.clone());
            next.live_matches = false;
            section_reach(next, live);
            return vec![note("schema.changed", live.reason.clone())];
        }
        _ => return Vec::new(),
    }
    next.live = Some(live.fingerprint.clone());
    next.live_invalid = None;
    next.live_view = None;
    next.live_views_also.clear();
    let trusted = posture == Posture::Discovery || live.approved;
    let grows = live.grows && posture == Posture::Discovery;
    if (live.first || grows) && trusted && live.findings.is_empty() {
        next.previous = next.baseline.take();
        next.baseline = Some(live.fingerprint.clone());
        next.live_matches = true;
        next.live_section = None;
        next.live_section_view = None;
        next.status = SchemaStatus::Verified;
        if let Some(view) = &live.view {
            next.record_section_listing(view, now_ms);
        }
        if let (true, Some(view)) = (grows, &live.view) {
            return vec![note(
                "view.baselined",
                format!(
                    "a new view ({}) was trusted on first use (discovery posture); the catalogue grew to {} with the {word} it lists",
                    view.describe(),
                    live.fingerprint
                ),
            )];
        }
        let how = match live.approved {
            true => "as the approved definitions hold them",
            false => "on first use (discovery posture)",
        };
        return vec![note(
            "section.sealed",
            format!(
                "the server's {word} were sealed {how}; the catalogue is now {}",
                live.fingerprint
            ),
        )];
    }
    next.live_matches = false;
    next.live_section = Some(live.section);
    next.live_section_view = live.view.as_ref().map(SectionView::recorded);
    // The items the view was listed are recorded now: none is used before the catalogue has
    // it, and approving the candidate puts them there.
    if let Some(view) = &live.view {
        next.section_names.record(view, now_ms);
    }
    section_reach(next, live);
    if grows {
        // A new view's items flagged by first-contact screening.
        next.status = SchemaStatus::Pending;
        next.findings = live.findings.clone();
        let view = live
            .view
            .as_ref()
            .map(SectionView::describe)
            .unwrap_or_default();
        return vec![note(
            "schema.pending",
            format!(
                "first-contact screening flagged the {word} a new view ({view}) adds: {}",
                live.findings.join("; ")
            ),
        )];
    }
    if live.first {
        next.status = SchemaStatus::Pending;
        next.findings = live.findings.clone();
        let why = match live.findings.is_empty() {
            true => format!(
                "the server's {word} are listed for the first time and await approval (strict posture)"
            ),
            false => format!(
                "first-contact screening flagged the server's {word}: {}",
                live.findings.join("; ")
            ),
        };
        return vec![note("schema.pending", why)];
    }
    next.status = SchemaStatus::Changed;
    next.drift_at_ms = Some(now_ms);
    vec![note("schema.changed", live.reason.clone())]
}

/// Records how far a section's list reaches when it does not verify: the items it names under
/// tool scope, the server as a whole otherwise (a first sealing awaiting approval, a new
/// view's flagged items).
fn section_reach(next: &mut ServerRecord, live: &SectionLive) {
    match (&live.reach, live.first || live.grows) {
        (Some(items), false) => next.set_reach(&DriftReach::Tools(Differing {
            changed: items.clone(),
            ..Differing::default()
        })),
        _ => next.set_reach(&DriftReach::Server(live.reason.clone())),
    }
}

/// A view listed a section it had not listed, or items of it it had not been listed, and the
/// list verified: the view is recorded, so its next list of the section that adds an item is
/// drift, not a first use, and so are the items, so that it may use them.
fn section_viewed(next: &mut ServerRecord, view: &SectionView, now_ms: u64) -> Vec<Note> {
    if next.baseline.is_some() {
        next.record_section_listing(view, now_ms);
    }
    Vec::new()
}

/// Items a list showed other than approved while a drift told item by item (under tool scope)
/// awaits review join that drift's reach. A server closed as a whole, or no longer drifted,
/// is left as it is: its reach is not widened into a narrower one.
fn withheld(next: &mut ServerRecord, items: &[String]) -> Vec<Note> {
    let told =
        crate::policy::containment::serving(next, crate::policy::containment::DriftScope::Tool);
    if next.status == SchemaStatus::Changed && told == crate::policy::containment::Serving::AllBut {
        for item in items {
            if !next.drift_also.contains(item) {
                next.drift_also.push(item.clone());
            }
        }
    }
    Vec::new()
}

fn drift_reason(live: &LiveSet) -> String {
    match live {
        LiveSet::Invalid { reason } | LiveSet::Partial { reason, .. } => reason.clone(),
        LiveSet::Valid {
            fingerprint,
            view: Some(view),
            ..
        } => format!(
            "the live tool set ({fingerprint}) differs from the approved baseline (shown to the view {})",
            view.describe()
        ),
        LiveSet::Valid { fingerprint, .. } => {
            format!("the live tool set ({fingerprint}) differs from the approved baseline")
        }
    }
}

/// A list of `view` verified: a new view is recorded (`view.baselined`); a known one's last
/// sighting is kept to [`LAST_SEEN_STEP_MS`].
fn seen_view(next: &mut ServerRecord, view: &ViewRecord) -> Vec<Note> {
    if next.sighting_current(&view.key, view.last_ms) {
        return Vec::new();
    }
    match next.view(&view.key) {
        Some(_) => {
            next.record_view(view);
            Vec::new()
        }
        None => {
            next.record_view(view);
            vec![note(
                "view.baselined",
                format!(
                    "a new view ({}) lists only tools of the approved catalogue; its names are recorded",
                    view.describe()
                ),
            )]
        }
    }
}

/// Under discovery, a new view's list adds tools to the catalogue: trusted on first use like
/// a first contact (first-contact screening holds it `pending` when it flags them).
fn grow(
    next: &mut ServerRecord,
    fingerprint: &str,
    findings: &[String],
    view: &ViewRecord,
    posture: Posture,
) -> Vec<Note> {
    if !findings.is_empty() || posture == Posture::Strict {
        next.status = SchemaStatus::Pending;
        next.findings = findings.to_vec();
        next.live_matches = false;
        let why = match findings.is_empty() {
            true => format!(
                "strict posture: the server's first tool list ({}) awaits approval",
                view.describe()
            ),
            false => format!(
                "first-contact screening flagged the tools a new view ({}) adds: {}",
                view.describe(),
                findings.join("; ")
            ),
        };
        return vec![note("schema.pending", why)];
    }
    if next.baseline.as_deref() != Some(fingerprint) {
        next.previous = next.baseline.take();
    }
    next.baseline = Some(fingerprint.to_string());
    next.live_matches = true;
    next.live_view = None;
    next.live_views_also.clear();
    // A list that grows the catalogue verified every tool it shows, as a first contact does.
    next.reverify = false;
    next.awaiting_live = false;
    next.set_reach(&DriftReach::Unknown);
    next.record_view(view);
    vec![note(
        "view.baselined",
        format!(
            "a new view ({}) was trusted on first use (discovery posture); the catalogue grew to {} with its tools",
            view.describe(),
            fingerprint
        ),
    )]
}

fn first_contact(
    next: &mut ServerRecord,
    fingerprint: &str,
    findings: &[String],
    posture: Posture,
    moved: bool,
) -> Vec<Note> {
    // Pending is sticky like changed: a held server waits for an admin even if its set moves.
    if posture == Posture::Discovery
        && findings.is_empty()
        && next.status == SchemaStatus::Unbaselined
    {
        next.baseline = Some(fingerprint.to_string());
        next.live_matches = true;
        next.status = SchemaStatus::Verified;
        next.reverify = false;
        next.awaiting_live = false;
        next.findings.clear();
        return vec![note(
            "schema.baselined",
            "trust on first use (discovery posture)",
        )];
    }
    let was_pending = next.status == SchemaStatus::Pending;
    next.status = SchemaStatus::Pending;
    next.findings = findings.to_vec();
    if was_pending && !moved {
        return Vec::new();
    }
    let reason = if findings.is_empty() {
        "strict posture: awaiting admin approval".to_string()
    } else {
        format!(
            "first-contact screening flagged the tool set: {}",
            findings.join("; ")
        )
    };
    vec![note("schema.pending", reason)]
}

fn approve(next: &mut ServerRecord, fingerprint: &str) -> Result<Vec<Note>, Refusal> {
    if next.live.as_deref() != Some(fingerprint) {
        return Err(Refusal::Conflict {
            candidate: next.live.clone(),
        });
    }
    if next.baseline.as_deref() != Some(fingerprint) {
        next.previous = next.baseline.take();
    }
    next.baseline = Some(fingerprint.to_string());
    next.live_matches = true;
    next.live_section = None;
    if let Some(view) = next.live_section_view.take() {
        next.record_section_view(view);
    }
    next.set_reach(&DriftReach::Unknown);
    // The drifted view's names are part of what was reviewed.
    for view in std::mem::take(&mut next.live_views_also) {
        next.record_view(&view);
    }
    if let Some(view) = next.live_view.take() {
        next.record_view(&view);
    }
    next.drift_at_ms = None;
    next.reverify = false;
    next.awaiting_live = false;
    next.findings.clear();
    if next.quarantine.is_none() {
        next.status = SchemaStatus::Verified;
    }
    Ok(vec![note(
        "schema.approved",
        format!("baseline set to the reviewed fingerprint {fingerprint}"),
    )])
}

fn release(
    next: &mut ServerRecord,
    by: Actor,
    posture: Posture,
    now_ms: u64,
) -> Result<Vec<Note>, Refusal> {
    match &next.quarantine {
        None => return Err(Refusal::NotQuarantined),
        Some((_, Actor::Config)) if by == Actor::Admin => return Err(Refusal::HeldByConfig),
        Some((_, Actor::Admin)) if by == Actor::Config => return Err(Refusal::HeldByAdmin),
        Some(_) => {}
    }
    next.quarantine = None;
    reevaluate(next, posture, now_ms);
    Ok(vec![note(
        "server.released",
        format!("re-evaluated to {}", next.status),
    )])
}

/// The status a server has on its own merits (after a release or a new pin).
fn reevaluate(next: &mut ServerRecord, posture: Posture, now_ms: u64) {
    next.status = match (&next.baseline, &next.live, &next.live_invalid) {
        (None, _, _) if posture == Posture::Strict => SchemaStatus::Pending,
        (None, _, _) => SchemaStatus::Unbaselined,
        (Some(_), None, None) => SchemaStatus::Verified,
        (Some(_), _, _) if next.live_matches => SchemaStatus::Verified,
        (Some(_), _, _) => SchemaStatus::Changed,
    };
    if next.status == SchemaStatus::Changed {
        next.drift_at_ms.get_or_insert(now_ms);
    } else {
        next.drift_at_ms = None;
    }
    if next.quarantine.is_some() {
        next.status = SchemaStatus::Quarantined;
    }
}

fn pin(
    next: &mut ServerRecord,
    fingerprint: &str,
    lock: bool,
    posture: Posture,
    now_ms: u64,
) -> Vec<Note> {
    if next.baseline.as_deref() == Some(fingerprint) {
        if lock {
            next.awaiting_live = false;
        }
        return Vec::new();
    }
    next.previous = next.baseline.take();
    next.baseline = Some(fingerprint.to_string());
    next.live_matches = next.live.as_deref() == Some(fingerprint);
    // The views' names were recorded against the old catalogue: each view is learned again
    // against the pinned one by its next list (trusted within the catalogue, as a new view).
    next.views.clear();
    next.live_view = None;
    next.live_views_also.clear();
    next.section_views.clear();
    next.section_names.clear();
    next.live_section_view = None;
    // The reach was measured against the old baseline: the next list measures it again.
    next.set_reach(&DriftReach::Unknown);
    next.awaiting_live = !lock && !next.live_matches;
    next.findings.clear();
    reevaluate(next, posture, now_ms);
    vec![note(
        "schema.approved",
        format!("baseline pinned by config to {fingerprint}"),
    )]
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
