//! Caller-scoped lists: a tool that policy refuses to a caller whatever the arguments is
//! hidden from that caller's `tools/list`, and so is a prompt or resource that the rules
//! about prompts or resources refuse it from its `prompts/list` or `resources/list`.
//!
//! Main design decision: a caller's identity is read once per `tools/list` request, as the
//! outcome of each rule's `principal` ([`CallerView`]); the list answer then decides tool by
//! tool from those outcomes and the tool's name and annotations, with string and value
//! comparisons only, no host call. A tool is hidden exactly when the call check would refuse
//! every call to it: the rules are gone through in order, skipping those whose conditions
//! other than `arguments` do not hold; the first remaining rule without an `arguments`
//! condition (the default counts as one) decides, unless a remaining `allow` with an
//! `arguments` condition comes first (then some calls pass). A principal the host could not
//! read refuses every call that reaches its rule, as in the call check. Hiding grants
//! nothing: every call is still checked.

use super::{Action, Asked, CallerIdentity, Policy, Rule, UseKind};
use serde_json::Value;

/// How one caller fares against every rule's `principal`, read once per `tools/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerView {
    /// Per rule, in order: `Some(true)` when the rule has no principal or the caller matches
    /// it, `Some(false)` when the caller does not, `None` when it could not be read.
    principals: Vec<Option<bool>>,
}

/// Who sees a tool in their list, whoever asks (for reviewers: the report, the admin view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// Every caller.
    Everyone,
    /// No caller: policy refuses every call to it.
    Nobody,
    /// It depends on the caller: the principals of these rules (by index) decide.
    Depends(Vec<usize>),
}

/// Most principal rules on one tool whose combinations [`Policy::visibility`] tries (more:
/// it says the tool depends on those rules without trying them).
const MAX_COMBINED_PRINCIPALS: usize = 10;

impl Policy {
    /// Whether policy can hide a tool from anyone: the default denies, or a rule about tools
    /// without an `arguments` condition denies or names a principal (which the host may fail
    /// to read). Decided once per configuration; when false, no caller is read for a list.
    pub(super) fn can_hide(default: Action, rules: &[Rule]) -> bool {
        default == Action::Deny
            || rules
                .iter()
                .any(|rule| rule.item.is_none() && rule.may_hide())
    }

    /// Whether policy can hide a prompt or resource from anyone: a rule about them without an
    /// `arguments` condition denies or names a principal.
    pub(super) fn can_hide_uses(rules: &[Rule]) -> bool {
        rules
            .iter()
            .any(|rule| rule.item.is_some() && rule.may_hide())
    }

    /// The caller's principal outcomes for the rules about prompts and resources, for a
    /// `prompts/list` or `resources/list` request; `None` when those rules hide nothing from
    /// anyone (no header or metadata is read then).
    pub fn use_caller_view(&self, caller: &dyn CallerIdentity) -> Option<CallerView> {
        // A rule about tools never decides a prompt or resource: its principal is not read.
        self.use_hides
            .then(|| self.read_principals(caller, |rule| rule.item.is_some()))
    }

    /// The outcome of the principal of every rule `wanted` keeps (`Some(false)` for the others,
    /// which are not read).
    fn read_principals(
        &self,
        caller: &dyn CallerIdentity,
        wanted: fn(&Rule) -> bool,
    ) -> CallerView {
        let principals = self
            .rules
            .iter()
            .map(|rule| match &rule.principal {
                _ if !wanted(rule) => Some(false),
                None => Some(true),
                Some(principal) => principal.matches(caller).ok(),
            })
            .collect();
        CallerView { principals }
    }

    /// Whether the rules about prompts or resources refuse every use of `item` (a prompt's
    /// name, a resource's URI) of `server` by the caller of `view`, whatever the arguments:
    /// it is then hidden from that caller's list.
    pub fn hides_use(&self, view: &CallerView, server: &str, kind: UseKind, item: &str) -> bool {
        let asked = Asked::Use { kind, item };
        self.refuses_always(server, &asked, &|index| {
            view.principals.get(index).copied().flatten()
        })
    }

    /// Whether a list may be shown differently to different callers (see
    /// `Policy::can_hide`).
    pub fn may_hide(&self) -> bool {
        self.hides
    }

    /// The caller's principal outcomes, for a `tools/list` request; `None` when policy hides
    /// nothing from anyone (no header or metadata is read then).
    pub fn caller_view(&self, caller: &dyn CallerIdentity) -> Option<CallerView> {
        // A rule about prompts or resources never decides a tool: its principal is not read.
        self.hides
            .then(|| self.read_principals(caller, |rule| rule.item.is_none()))
    }

    /// A caller the host said nothing about (a tool list answer no request was seen for):
    /// every principal unread, so whatever a principal would decide is refused.
    pub fn unknown_caller(&self) -> CallerView {
        self.unknown(|rule| rule.item.is_none())
    }

    /// [`Policy::unknown_caller`] for a `prompts/list` or `resources/list` answer; `None` when
    /// the rules about prompts and resources hide nothing from anyone.
    pub fn unknown_use_caller(&self) -> Option<CallerView> {
        self.use_hides
            .then(|| self.unknown(|rule| rule.item.is_some()))
    }

    /// Every principal of the rules `wanted` keeps unread (`Some(false)` for the others).
    fn unknown(&self, wanted: fn(&Rule) -> bool) -> CallerView {
        let principals = self
            .rules
            .iter()
            .map(|rule| match wanted(rule) {
                false => Some(false),
                true => rule.principal.is_none().then_some(true),
            })
            .collect();
        CallerView { principals }
    }

    /// Whether policy refuses every call to `tool` of `server` (with the approved
    /// `annotations`) by the caller of `view`, whatever the arguments: the tool is then hidden
    /// from that caller's list.
    pub fn hides(
        &self,
        view: &CallerView,
        server: &str,
        tool: &str,
        annotations: Option<&Value>,
    ) -> bool {
        let asked = Asked::Call { tool, annotations };
        self.refuses_always(server, &asked, &|index| {
            view.principals.get(index).copied().flatten()
        })
    }

    /// The rule walk of [`Policy::hides`] and [`Policy::hides_use`], with the principal
    /// outcome of each rule given by `principal` (by rule index); the default decides calls
    /// only.
    fn refuses_always(
        &self,
        server: &str,
        asked: &Asked,
        principal: &dyn Fn(usize) -> Option<bool>,
    ) -> bool {
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.about(server, asked) {
                continue;
            }
            let unconditional = rule.arguments.is_empty();
            match principal(index) {
                Some(false) => {}
                Some(true) if unconditional => return rule.action == Action::Deny,
                // Some arguments pass: the tool is callable.
                Some(true) if rule.action == Action::Allow => return false,
                // A deny for some arguments: the others go on to the next rules.
                Some(true) => {}
                // Unread: every call that reaches this rule is refused.
                None if unconditional => return true,
                None => {}
            }
        }
        matches!(asked, Asked::Call { .. }) && self.default == Action::Deny
    }

    /// Who sees `tool` of `server` (with the approved `annotations`) in their list: every
    /// combination of the principals that could decide is tried.
    pub fn visibility(&self, server: &str, tool: &str, annotations: Option<&Value>) -> Visibility {
        let deciding: Vec<usize> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.principal.is_some() && rule.targets(server, tool, annotations))
            .map(|(index, _)| index)
            .collect();
        if deciding.len() > MAX_COMBINED_PRINCIPALS {
            return Visibility::Depends(deciding);
        }
        let mut hidden = 0usize;
        let combinations = 1usize << deciding.len();
        for bits in 0..combinations {
            let outcome = |index: usize| match deciding.iter().position(|&d| d == index) {
                Some(at) => Some(bits & (1 << at) != 0),
                None => Some(true),
            };
            let asked = Asked::Call { tool, annotations };
            if self.refuses_always(server, &asked, &outcome) {
                hidden += 1;
            }
        }
        match hidden {
            0 => Visibility::Everyone,
            n if n == combinations => Visibility::Nobody,
            _ => Visibility::Depends(deciding),
        }
    }
}

impl Rule {
    /// Whether the rule alone can leave an item out of a caller's list: it has no `arguments`
    /// condition, and it denies or names a principal (which the host may fail to read).
    fn may_hide(&self) -> bool {
        self.arguments.is_empty() && (self.action == Action::Deny || self.principal.is_some())
    }
}
