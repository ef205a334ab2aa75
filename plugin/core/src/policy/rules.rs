//! Policy rules for `tools/call`, `prompts/get` and `resources/read` (the `policy` section of
//! the configuration, docs/config.md).
//!
//! Main design decision: rules are an ordered list and the first rule whose every condition
//! matches decides; nothing is merged or scored, so an operator reads the decision off the
//! config from top to bottom, and every decision names its rule in a sentence the model can
//! act on. Conditions are exact: `in`/`annotations` compare JSON values (numbers by value, so
//! `1` and `1.0` are equal), strings code point by code point with no normalization; a missing
//! argument, annotation, header or metadata entry never satisfies `in`, `prefix`,
//! `max_length`, `annotations` or `principal`, and always satisfies `not_in`. The config is
//! validated once, with errors that name the bad field (`policy.rules[2].arguments./region:
//! unknown predicate "foo"`).

use serde_json::Value;

mod parse;
mod visibility;

pub use visibility::{CallerView, Visibility};

/// Nesting bound for comparing two JSON values (inputs are already depth-limited by the
/// strict parser; this keeps the comparison bounded whatever the caller passes).
const MAX_COMPARE_DEPTH: usize = 128;

/// What a rule (or the default) does with a matching call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The call goes on to the server.
    Allow,
    /// The call is refused with `POLICY_DENIED`.
    Deny,
}

impl Action {
    fn verb(self) -> &'static str {
        match self {
            Action::Allow => "allows",
            Action::Deny => "denies",
        }
    }
}

/// Who is calling, as the host sees it (request headers, Envoy dynamic metadata).
pub trait CallerIdentity {
    /// The value of request header `name` (given in lower case; look it up
    /// case-insensitively), `None` when absent.
    fn header(&self, name: &str) -> Option<String>;
    /// The dynamic metadata value at `path` (`NAMESPACE/key/...`, e.g.
    /// `envoy.filters.http.jwt_authn/payload/groups`), `Ok(None)` when absent, an error (what
    /// went wrong) when the host could not read it: a rule that depends on it cannot be
    /// decided, and the call is refused.
    fn metadata(&self, path: &str) -> Result<Option<Value>, String>;
}

/// The kind of item a rule with a `prompt` or `resource` condition is about: such a rule
/// decides uses of that kind only, and a rule without either decides tool calls only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UseKind {
    /// `prompts/get`, by prompt name.
    Prompt,
    /// `resources/read`, by URI.
    Resource,
}

impl UseKind {
    /// The rule condition that names an item of this kind.
    fn condition(self) -> &'static str {
        match self {
            UseKind::Prompt => "prompt",
            UseKind::Resource => "resource",
        }
    }
}

/// Everything the policy looks at for one `prompts/get` or `resources/read`.
pub struct UseFacts<'a> {
    /// The server id of the request.
    pub server: &'a str,
    /// What the request uses.
    pub kind: UseKind,
    /// The prompt's name or the resource's URI.
    pub item: &'a str,
    /// A prompt's `params.arguments`, when present.
    pub arguments: Option<&'a Value>,
    /// The caller's identity.
    pub caller: &'a dyn CallerIdentity,
}

/// Everything the policy looks at for one `tools/call`.
pub struct CallFacts<'a> {
    /// The server id of the request.
    pub server: &'a str,
    /// The tool name (`params.name`).
    pub tool: &'a str,
    /// The approved tool's `annotations` object, when it has one.
    pub annotations: Option<&'a Value>,
    /// The call's `params.arguments`, when present.
    pub arguments: Option<&'a Value>,
    /// The caller's identity.
    pub caller: &'a dyn CallerIdentity,
}

/// The outcome of [`Policy::evaluate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDecision {
    /// Allow or deny.
    pub action: Action,
    /// The index in `policy.rules` of the rule that decided; `None` for the default.
    pub rule_index: Option<usize>,
    /// Why, as one sentence, e.g. `rule 2 denies deploy_preview when /region is not one of
    /// ["us-east-preview"]`.
    pub reason: String,
}

/// An ordered list of rules and a default action.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    default: Action,
    rules: Vec<Rule>,
    /// Whether a tool can be hidden from any caller's list ([`Policy::may_hide`]).
    hides: bool,
    /// Whether a rule decides prompts or resources ([`Policy::evaluate_use`]).
    uses: bool,
    /// Whether a prompt or resource can be hidden from any caller's list
    /// ([`Policy::use_caller_view`]).
    use_hides: bool,
}

impl Default for Policy {
    /// Allow everything: no rules, default `allow`.
    fn default() -> Self {
        Policy {
            default: Action::Allow,
            rules: Vec::new(),
            hides: false,
            uses: false,
            use_hides: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    action: Action,
    server: Option<String>,
    tool: Option<String>,
    /// A `prompt` or `resource` condition: the rule decides uses of that kind, never a call.
    item: Option<(UseKind, String)>,
    annotations: Vec<(String, Value)>,
    arguments: Vec<ArgumentCondition>,
    principal: Option<Principal>,
}

#[derive(Debug, Clone, PartialEq)]
struct ArgumentCondition {
    /// The pointer as written in the config (for reasons).
    pointer: String,
    /// Its unescaped reference tokens.
    tokens: Vec<String>,
    predicates: Vec<Predicate>,
}

#[derive(Debug, Clone, PartialEq)]
enum Predicate {
    In(Vec<Value>),
    NotIn(Vec<Value>),
    Prefix(String),
    MaxLength(usize),
}

#[derive(Debug, Clone, PartialEq)]
struct Principal {
    source: PrincipalSource,
    values: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum PrincipalSource {
    Header(String),
    Metadata(String),
}

impl Policy {
    /// Reads and validates the `policy` object of the plugin config. The error names the bad
    /// field, e.g. `policy.rules[2].arguments./region: unknown predicate "foo"`.
    pub fn from_json(value: &Value) -> Result<Policy, String> {
        parse::policy(value)
    }

    /// True when the policy can never deny: no rules and default `allow`.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.default == Action::Allow
    }

    /// The action taken when no rule matches.
    pub fn default_action(&self) -> Action {
        self.default
    }

    /// Decides one call: the first rule whose every condition matches, else the default. A
    /// rule whose caller metadata cannot be read leaves the call undecided: it is denied,
    /// naming that rule (whether it would have matched is unknown).
    pub fn evaluate(&self, facts: &CallFacts) -> PolicyDecision {
        let asked = Asked::Call {
            tool: facts.tool,
            annotations: facts.annotations,
        };
        let walked = self.first_match(facts.server, &asked, facts.arguments, facts.caller);
        walked.unwrap_or_else(|| {
            let default = match self.default {
                Action::Allow => "allow",
                Action::Deny => "deny",
            };
            PolicyDecision {
                action: self.default,
                rule_index: None,
                reason: format!(
                    "no policy rule matched {}; the default is to {default}",
                    facts.tool
                ),
            }
        })
    }

    /// Decides one use of a prompt or resource: the first rule about that kind of item whose
    /// every condition matches (`None`: no rule is about it, and the use is not the policy's
    /// to refuse: `default` decides tool calls only, so a configuration written before rules
    /// could name prompts and resources means what it meant). A rule whose caller metadata
    /// cannot be read refuses, as for a call.
    pub fn evaluate_use(&self, facts: &UseFacts) -> Option<PolicyDecision> {
        if !self.uses {
            return None;
        }
        let asked = Asked::Use {
            kind: facts.kind,
            item: facts.item,
        };
        self.first_match(facts.server, &asked, facts.arguments, facts.caller)
    }

    /// The decision of the first rule whose every condition matches what is `asked`.
    fn first_match(
        &self,
        server: &str,
        asked: &Asked,
        arguments: Option<&Value>,
        caller: &dyn CallerIdentity,
    ) -> Option<PolicyDecision> {
        let (index, rule, matched) = self.rules.iter().enumerate().find_map(|(index, rule)| {
            let matched = rule.matches(server, asked, arguments, caller);
            (matched != Ok(false)).then_some((index, rule, matched))
        })?;
        let subject = asked.subject();
        let (action, reason) = match matched {
            Ok(_) => (rule.action, rule.describe(index, &subject, asked)),
            Err(e) => (
                Action::Deny,
                format!("rule {index} cannot be decided for {subject}: {e}"),
            ),
        };
        Some(PolicyDecision {
            action,
            rule_index: Some(index),
            reason,
        })
    }
}

/// What a rule is asked about: a call of a tool, or a use of a prompt or resource.
enum Asked<'a> {
    Call {
        tool: &'a str,
        annotations: Option<&'a Value>,
    },
    Use {
        kind: UseKind,
        item: &'a str,
    },
}

impl Asked<'_> {
    /// How a decision names it: the tool's name, `prompt "NAME"`, `resource "URI"`.
    fn subject(&self) -> String {
        match self {
            Asked::Call { tool, .. } => (*tool).to_string(),
            Asked::Use { kind, item } => format!("{} {}", kind.condition(), quote(item)),
        }
    }
}

// ---- evaluation ----

impl Rule {
    /// Whether every condition holds; the caller's identity is read last, only when every
    /// other condition holds (an error: it could not be read).
    fn matches(
        &self,
        server: &str,
        asked: &Asked,
        arguments: Option<&Value>,
        caller: &dyn CallerIdentity,
    ) -> Result<bool, String> {
        let others =
            self.about(server, asked) && self.arguments.iter().all(|cond| cond.matches(arguments));
        match &self.principal {
            Some(principal) if others => principal.matches(caller),
            _ => Ok(others),
        }
    }

    /// Whether the rule is about what is asked (a rule with a `prompt` or `resource`
    /// condition about uses of that kind, any other about calls) and its `server`, `tool`,
    /// `prompt`, `resource` and `annotations` conditions hold.
    fn about(&self, server: &str, asked: &Asked) -> bool {
        let item = match (asked, &self.item) {
            (Asked::Call { tool, annotations }, None) => {
                self.tool.as_deref().is_none_or(|g| glob_matches(g, tool))
                    && self.annotations.iter().all(|(key, expected)| {
                        annotations
                            .and_then(|a| a.get(key))
                            .is_some_and(|actual| json_equal(actual, expected, 0))
                    })
            }
            (Asked::Use { kind, item }, Some((of, glob))) => kind == of && glob_matches(glob, item),
            _ => false,
        };
        item && self
            .server
            .as_deref()
            .is_none_or(|g| glob_matches(g, server))
    }

    /// Whether the rule is about tool calls and its `server`, `tool` and `annotations`
    /// conditions hold.
    fn targets(&self, server: &str, tool: &str, annotations: Option<&Value>) -> bool {
        self.about(server, &Asked::Call { tool, annotations })
    }

    /// The rule's decision on `subject` in a sentence (a rule about calls may have no
    /// condition: it applies to every call).
    fn describe(&self, index: usize, subject: &str, asked: &Asked) -> String {
        let mut conditions = Vec::new();
        if let Some(glob) = self.server.as_deref().filter(|g| *g != "*") {
            conditions.push(describe_glob("server", glob));
        }
        if let Some(glob) = self.tool.as_deref().filter(|g| is_wildcard(g)) {
            conditions.push(describe_glob("tool", glob));
        }
        if let Some((kind, glob)) = self.item.as_ref().filter(|(_, g)| is_wildcard(g)) {
            conditions.push(describe_glob(kind.condition(), glob));
        }
        for (key, value) in &self.annotations {
            conditions.push(format!("its annotation {key} is {value}"));
        }
        for cond in &self.arguments {
            for predicate in &cond.predicates {
                conditions.push(predicate.describe(&cond.pointer));
            }
        }
        if let Some(principal) = &self.principal {
            conditions.push(principal.describe());
        }
        let verb = self.action.verb();
        match (conditions.is_empty(), asked) {
            (true, Asked::Call { .. }) => {
                format!("rule {index} {verb} {subject} (the rule applies to every call)")
            }
            (true, Asked::Use { .. }) => format!("rule {index} {verb} {subject}"),
            (false, _) => format!(
                "rule {index} {verb} {subject} when {}",
                conditions.join(" and ")
            ),
        }
    }
}

fn is_wildcard(glob: &str) -> bool {
    glob.contains(['*', '?'])
}

fn describe_glob(what: &str, glob: &str) -> String {
    if is_wildcard(glob) {
        format!("{what} matches {}", quote(glob))
    } else {
        format!("{what} is {}", quote(glob))
    }
}

fn quote(text: &str) -> String {
    Value::from(text).to_string()
}

fn list(values: &[Value]) -> String {
    Value::Array(values.to_vec()).to_string()
}

impl ArgumentCondition {
    fn matches(&self, arguments: Option<&Value>) -> bool {
        let value = arguments.and_then(|args| resolve_pointer(args, &self.tokens));
        self.predicates.iter().all(|p| p.matches(value))
    }
}

impl Predicate {
    fn matches(&self, value: Option<&Value>) -> bool {
        match self {
            Predicate::In(values) => value.is_some_and(|v| contains(values, v)),
            Predicate::NotIn(values) => value.is_none_or(|v| !contains(values, v)),
            Predicate::Prefix(prefix) => value
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(prefix.as_str())),
            Predicate::MaxLength(max) => value
                .and_then(Value::as_str)
                .is_some_and(|s| s.chars().nth(*max).is_some()),
        }
    }

    fn describe(&self, pointer: &str) -> String {
        match self {
            Predicate::In(values) => format!("{pointer} is one of {}", list(values)),
            Predicate::NotIn(values) => format!("{pointer} is not one of {}", list(values)),
            Predicate::Prefix(prefix) => format!("{pointer} starts with {}", quote(prefix)),
            Predicate::MaxLength(max) => {
                format!("{pointer} is longer than {max} characters")
            }
        }
    }
}

impl Principal {
    fn matches(&self, caller: &dyn CallerIdentity) -> Result<bool, String> {
        Ok(match &self.source {
            PrincipalSource::Header(name) => caller
                .header(name)
                .is_some_and(|v| contains(&self.values, &Value::String(v))),
            PrincipalSource::Metadata(path) => match caller.metadata(path) {
                Ok(Some(Value::Array(items))) => items.iter().any(|v| contains(&self.values, v)),
                Ok(Some(v)) => contains(&self.values, &v),
                Ok(None) => false,
                Err(e) => return Err(format!("caller metadata {path} could not be read ({e})")),
            },
        })
    }

    fn describe(&self) -> String {
        match &self.source {
            PrincipalSource::Header(name) => {
                format!("request header {name} is one of {}", list(&self.values))
            }
            PrincipalSource::Metadata(path) => {
                format!("caller metadata {path} holds one of {}", list(&self.values))
            }
        }
    }
}

/// RFC 6901 resolution; `None` when any step is missing.
fn resolve_pointer<'v>(root: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens.iter().try_fold(root, |node, token| match node {
        Value::Object(map) => map.get(token),
        Value::Array(items) => array_index(token).and_then(|i| items.get(i)),
        _ => None,
    })
}

/// An array index token: `0` or a decimal without leading zeros (`-` never resolves).
fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && !token.is_empty());
    if canonical && token.bytes().all(|b| b.is_ascii_digit()) {
        token.parse().ok()
    } else {
        None
    }
}

/// Glob match on Unicode scalar values: `*` any run (also empty), `?` exactly one. Positions
/// are byte offsets at character boundaries, so nothing is allocated (a list is matched
/// against every rule, tool by tool).
fn glob_matches(pattern: &str, text: &str) -> bool {
    let char_at = |s: &str, at: usize| s.get(at..).and_then(|rest| rest.chars().next());
    let (mut p, mut t) = (0, 0);
    // After a `*`: where the pattern resumes and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = char_at(text, t) {
        match char_at(pattern, p) {
            Some('*') => {
                star = Some((p + 1, t));
                p += 1;
            }
            Some(pc) if pc == '?' || pc == c => {
                p += pc.len_utf8();
                t += c.len_utf8();
            }
            _ => match star {
                Some((resume, tried)) => {
                    let next = char_at(text, tried).map_or(text.len(), |c| tried + c.len_utf8());
                    star = Some((resume, next));
                    p = resume;
                    t = next;
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .is_some_and(|rest| rest.bytes().all(|c| c == b'*'))
}

fn contains(values: &[Value], value: &Value) -> bool {
    values.iter().any(|v| json_equal(v, value, 0))
}

/// JSON equality with numbers compared by value (`1 == 1.0`), bounded in depth.
fn json_equal(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_COMPARE_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else if x.is_f64() || y.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                false
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w, depth + 1)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
