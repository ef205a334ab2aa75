//! First-contact screening of a tool set before trust on first use: a set
//! with findings is held `pending` until an admin reviews it (docs/screening.md).
//!
//! Main design decision: screening runs only when there is no baseline yet, and a finding
//! never blocks silently: it holds the server `pending` with the findings in the audit event
//! and the admin view, for a human to approve. Once a baseline exists, drift detection takes
//! over and screening never runs again for that server. The checks are heuristics that look
//! at what the model will read (names, titles, descriptions, every string and key of the
//! schemas): hidden characters, instruction cues, redirects to other tools, URLs, overlong
//! text, names that are not plain or look like another tool's. Work is bounded on hostile
//! input: each string is examined up to the length limit (a longer one is flagged anyway),
//! the whole set up to a character budget (past it the set is flagged as not fully
//! screened), and at most [`MAX_FINDINGS`] findings are kept, in a deterministic order.

#[cfg(feature = "review")]
pub mod corpus;
pub mod cues;
pub mod hidden;
pub mod intent;
pub mod names;
pub mod references;
pub mod settings;

pub use settings::ScreeningConfig;

use crate::policy::status::ServerRecord;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Most findings kept for one tool set (the last one says how many more there were).
pub const MAX_FINDINGS: usize = 50;
/// Characters examined over a whole tool set before screening gives up (and flags it).
pub const MAX_SCAN_CHARS: usize = 1 << 20;
/// Deepest schema nesting walked.
const MAX_SCHEMA_DEPTH: usize = 64;
/// Findings collected before sorting, so that a hostile set cannot make the list grow.
const MAX_RAW_FINDINGS: usize = 4096;
/// Characters of untrusted text quoted in a finding.
const MAX_QUOTED: usize = 60;

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A name that is not `^[A-Za-z0-9_.-]{1,128}$`.
    InvalidName,
    /// A name that looks like another tool's, or mixes scripts.
    ConfusableName,
    /// Characters a reviewer does not see (tags, zero-width, bidi, controls, ...).
    HiddenUnicode,
    /// A phrase that speaks to the model instead of describing the tool, or asks for secrets.
    InstructionCue,
    /// Text that redirects or shadows another tool.
    ToolReference,
    /// A URL in model-facing prose.
    Url,
    /// A description, title or schema string over the length limit.
    OverlongText,
    /// The set was too large to screen completely.
    Incomplete,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 8] = [
        Kind::InvalidName,
        Kind::ConfusableName,
        Kind::HiddenUnicode,
        Kind::InstructionCue,
        Kind::ToolReference,
        Kind::Url,
        Kind::OverlongText,
        Kind::Incomplete,
    ];

    /// The spelling in findings and in `screening.ignore`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::InvalidName => "invalid_name",
            Kind::ConfusableName => "confusable_name",
            Kind::HiddenUnicode => "hidden_unicode",
            Kind::InstructionCue => "instruction_cue",
            Kind::ToolReference => "tool_reference",
            Kind::Url => "url",
            Kind::OverlongText => "overlong_text",
            Kind::Incomplete => "incomplete",
        }
    }

    /// The kind spelled `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        let kind = match name {
            "invalid_name" => Kind::InvalidName,
            "confusable_name" => Kind::ConfusableName,
            "hidden_unicode" => Kind::HiddenUnicode,
            "instruction_cue" => Kind::InstructionCue,
            "tool_reference" => Kind::ToolReference,
            "url" => Kind::Url,
            "overlong_text" => Kind::OverlongText,
            "incomplete" => Kind::Incomplete,
            _ => return None,
        };
        Some(kind)
    }
}

/// One finding: `tool: kind: detail`. Untrusted text in it is escaped and cut.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The tool's name as shown (escaped), or `*` for the whole set.
    pub tool: String,
    /// What it is about.
    pub kind: Kind,
    /// What was found and where.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.tool, self.kind.as_str(), self.detail)
    }
}

/// Untrusted text made safe to show: printable ASCII stays, everything else becomes
/// `\u{…}`, and it is cut after `max` characters.
pub fn shown(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i >= max {
            out.push('…');
            break;
        }
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out
}

/// Findings on a first tool set, as `tool: kind: detail` lines (empty: nothing suspicious,
/// screening off, or a baseline already exists so drift detection decides).
pub fn screen(
    tools: &Value,
    record: Option<&ServerRecord>,
    config: &ScreeningConfig,
) -> Vec<String> {
    if !config.enabled || record.is_some_and(|r| r.baseline.is_some()) {
        return Vec::new();
    }
    findings(tools, config)
        .iter()
        .map(Finding::to_string)
        .collect()
}

/// Screens a tool set (a `tools` array) whatever the server's state: sorted, deduplicated,
/// at most [`MAX_FINDINGS`].
pub fn findings(tools: &Value, config: &ScreeningConfig) -> Vec<Finding> {
    let list: &[Value] = tools.as_array().map_or(&[], Vec::as_slice);
    let names = crate::wire::order::name_set(
        list.iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str)),
    );
    let mut screen = Screen {
        config,
        names: &names,
        params: Vec::new(),
        index: intent::Index::new(),
        raw: Vec::new(),
        budget: MAX_SCAN_CHARS,
        incomplete: false,
    };
    screen.confusables(&names);
    for tool in list {
        screen.params = parameter_names(tool);
        if screen.incomplete || screen.raw.len() >= MAX_RAW_FINDINGS {
            break;
        }
        screen.tool(tool);
    }
    if screen.incomplete {
        let detail = format!(
            "the set exceeds the screening budget of {MAX_SCAN_CHARS} characters; review it by hand"
        );
        screen.raw.push(Finding {
            tool: "*".into(),
            kind: Kind::Incomplete,
            detail,
        });
    }
    finish(screen.raw, &config.ignore)
}

/// Screens one model-visible string outside a tool list: a server's `instructions`, a
/// prompt's or a resource template's description, a resource's name. The same checks as a
/// tool's fields, for the role the string plays; findings name `item` and the place `at`
/// (`instructions`, `prompts/summarize/description`). Sorted, at most [`MAX_FINDINGS`].
pub fn screen_string(
    item: &str,
    at: &str,
    text: &str,
    role: Role,
    config: &ScreeningConfig,
) -> Vec<Finding> {
    Strings::new(config).screen(item, at, text, role)
}

/// [`screen_string`] for many strings: the patterns are indexed once, not per string (a
/// list of a hundred resources screens three hundred strings).
pub struct Strings<'a> {
    screen: Screen<'a>,
}

impl<'a> Strings<'a> {
    /// A screener under `config`.
    pub fn new(config: &'a ScreeningConfig) -> Self {
        Strings {
            screen: Screen {
                config,
                names: &[],
                params: Vec::new(),
                index: intent::Index::new(),
                raw: Vec::new(),
                budget: MAX_SCAN_CHARS,
                incomplete: false,
            },
        }
    }

    /// The findings on one string (see [`screen_string`]).
    pub fn screen(&mut self, item: &str, at: &str, text: &str, role: Role) -> Vec<Finding> {
        let screen = &mut self.screen;
        screen.raw.clear();
        screen.budget = MAX_SCAN_CHARS;
        screen.incomplete = false;
        let label = shown(item, MAX_QUOTED);
        screen.text(item, &label, at, text, role);
        if screen.incomplete {
            screen.raw.push(Finding {
                tool: label,
                kind: Kind::Incomplete,
                detail: format!("{at} exceeds the screening budget of {MAX_SCAN_CHARS} characters"),
            });
        }
        finish(std::mem::take(&mut screen.raw), &screen.config.ignore)
    }
}

#[inline(never)]
fn finish(mut raw: Vec<Finding>, ignore: &[Kind]) -> Vec<Finding> {
    raw.retain(|f| !ignore.contains(&f.kind));
    crate::wire::order::sort(&mut raw);
    raw.dedup();
    if raw.len() > MAX_FINDINGS {
        let more = raw.len().saturating_sub(MAX_FINDINGS.saturating_sub(1));
        raw.truncate(MAX_FINDINGS.saturating_sub(1));
        let detail = format!("{more} more finding(s) not shown");
        raw.push(Finding {
            tool: "*".into(),
            kind: Kind::Incomplete,
            detail,
        });
    }
    raw
}

/// How a string is read by the model, which decides the checks that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A tool name.
    Name,
    /// A description or title: prose the model reads as guidance.
    Prose,
    /// A schema value (enum member, default, format, ...).
    Data,
    /// An object key (a property name): at least 128 characters are allowed whatever the
    /// description limit.
    Key,
}

/// Every property name under `tool`'s `inputSchema` (a parameter such as `projectSlug` or
/// `next_range` is not another server's tool), sorted.
fn parameter_names(tool: &Value) -> Vec<&str> {
    let mut known: Vec<&str> = Vec::new();
    let mut stack: Vec<(&Value, usize)> = tool
        .get("inputSchema")
        .map(|s| (s, 0))
        .into_iter()
        .collect();
    while let Some((node, depth)) = stack.pop() {
        if depth >= MAX_SCHEMA_DEPTH || known.len() >= MAX_RAW_FINDINGS {
            break;
        }
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    known.extend(properties.keys().map(String::as_str));
                }
                stack.extend(map.values().map(|v| (v, depth.saturating_add(1))));
            }
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth.saturating_add(1)))),
            _ => {}
        }
    }
    // The shared sort: another `sort_unstable` instance would add about 9 KB of `.wasm`.
    crate::wire::order::name_set(known)
}

struct Screen<'a> {
    config: &'a ScreeningConfig,
    /// The set's names, sorted and unique.
    names: &'a [&'a str],
    /// The property names of the tool being screened, sorted: words that are not another
    /// server's tool.
    params: Vec<&'a str>,
    /// Where the intent patterns start.
    index: intent::Index,
    raw: Vec<Finding>,
    budget: usize,
    incomplete: bool,
}

impl<'a> Screen<'a> {
    fn push(&mut self, tool: &str, kind: Kind, detail: String) {
        if self.raw.len() < MAX_RAW_FINDINGS {
            self.raw.push(Finding {
                tool: tool.to_string(),
                kind,
                detail,
            });
        }
    }

    /// Names whose skeletons collide, and names that mix scripts.
    #[inline(never)]
    fn confusables(&mut self, names: &[&str]) {
        let mut by_skeleton: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for name in names.iter().take(MAX_RAW_FINDINGS) {
            by_skeleton
                .entry(names::skeleton(name))
                .or_default()
                .push(name);
            if let Some(scripts) = names::mixed_scripts(name) {
                let list: Vec<&str> = scripts.iter().map(|s| s.as_str()).collect();
                self.push(
                    &shown(name, MAX_QUOTED),
                    Kind::ConfusableName,
                    format!("mixed-script name ({})", list.join(" + ")),
                );
            }
        }
        for group in by_skeleton.values().filter(|g| g.len() > 1) {
            for name in group {
                for other in group.iter().filter(|o| *o != name) {
                    let detail = format!("looks like tool \"{}\"", shown(other, MAX_QUOTED));
                    self.push(&shown(name, MAX_QUOTED), Kind::ConfusableName, detail);
                }
            }
        }
    }

    #[inline(never)]
    fn tool(&mut self, tool: &'a Value) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        let label = shown(name, MAX_QUOTED);
        if !names::is_plain(name) {
            self.push(
                &label,
                Kind::InvalidName,
                "name is not plain ASCII [A-Za-z0-9_.-]{1,128}".into(),
            );
        }
        self.text(name, &label, "name", name, Role::Name);
        for field in ["title", "description"] {
            if let Some(text) = tool.get(field).and_then(Value::as_str) {
                self.text(name, &label, field, text, Role::Prose);
            }
        }
        for field in ["inputSchema", "outputSchema", "annotations"] {
            if let Some(value) = tool.get(field) {
                self.walk(name, &label, field, value);
            }
        }
    }

    /// Every key and string under `value`, with an explicit stack (no recursion).
    #[inline(never)]
    fn walk(&mut self, own: &str, label: &str, root: &str, value: &Value) {
        let mut stack: Vec<(String, &Value, usize, bool)> =
            vec![(root.to_string(), value, 0, false)];
        while let Some((path, node, depth, prose)) = stack.pop() {
            if self.incomplete {
                return;
            }
            match node {
                Value::String(text) => {
                    let role = if prose { Role::Prose } else { Role::Data };
                    self.text(own, label, &path, text, role);
                }
                Value::Array(items) if depth < MAX_SCHEMA_DEPTH => {
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push((format!("{path}/{i}"), item, depth.saturating_add(1), false));
                    }
                }
                Value::Object(map) if depth < MAX_SCHEMA_DEPTH => {
                    for (key, item) in map.iter().rev() {
                        let key_path = format!("{path}/{}", shown(key, 24));
                        self.text(own, label, &format!("key {key_path}"), key, Role::Key);
                        let prose = matches!(key.as_str(), "description" | "title");
                        stack.push((key_path, item, depth.saturating_add(1), prose));
                    }
                }
                Value::Array(_) | Value::Object(_) => {
                    self.push(
                        label,
                        Kind::Incomplete,
                        format!("{path} is nested deeper than {MAX_SCHEMA_DEPTH} levels"),
                    );
                }
                _ => {}
            }
        }
    }

    /// The checks on one string. `own` is the tool's raw name, `label` its shown form.
    #[inline(never)]
    fn text(&mut self, own: &str, label: &str, at: &str, text: &str, role: Role) {
        let limit = match role {
            Role::Key => self.config.max_description_chars.max(128),
            _ => self.config.max_description_chars,
        };
        let cost = text
            .len()
            .clamp(1, limit.saturating_add(1).saturating_mul(4));
        if cost > self.budget {
            self.incomplete = true;
            return;
        }
        self.budget = self.budget.saturating_sub(cost);
        let chars = text.chars().take(limit.saturating_add(1)).count();
        if chars > limit && role != Role::Name {
            let total = text.chars().count();
            self.push(
                label,
                Kind::OverlongText,
                format!("{at} has {total} characters (limit {limit})"),
            );
        }
        let examined: &str = text
            .char_indices()
            .nth(limit)
            .map_or(text, |(i, _)| text.get(..i).unwrap_or(text));
        if let Some(scan) = hidden::scan(examined) {
            let (c, class) = scan.first;
            let detail = format!(
                "{} hidden character(s) in {at}, first U+{:04X} ({})",
                scan.count,
                u32::from(c),
                class.as_str()
            );
            self.push(label, Kind::HiddenUnicode, detail);
        }
        if role != Role::Name {
            self.phrases(own, label, at, examined, limit, role);
        }
    }

    /// The checks on what a string says: cues, intents, secret requests, destinations,
    /// references and URLs, each where it applies to `role`.
    #[inline(never)]
    fn phrases(
        &mut self,
        own: &str,
        label: &str,
        at: &str,
        examined: &str,
        limit: usize,
        role: Role,
    ) {
        if role == Role::Key
            && let Some(what) = cues::find_key_request(examined)
        {
            let detail = format!("property name asks for \"{what}\" in {at}");
            self.push(label, Kind::InstructionCue, detail);
        }
        let plain = cues::fold(examined, limit);
        let folded = plain.to_ascii_lowercase();
        // A single token (`string`, `additionalProperties`) can hold no phrase: every cue,
        // secret request and redirect has a space or a bracket in it.
        if !folded.contains([' ', '<', '[']) {
            if role == Role::Prose {
                self.urls(label, at, &folded);
            }
            return;
        }
        let mut literal = false;
        for (cue, pos) in cues::find_cues(&folded) {
            literal = true;
            // Quote the phrase as the server wrote it (case kept, spacing folded).
            let written = plain
                .get(pos..pos.saturating_add(cue.phrase.len()))
                .unwrap_or(cue.phrase);
            let detail = format!("\"{}\" in {at}", shown(written, MAX_QUOTED));
            self.push(label, Kind::InstructionCue, detail);
        }
        // Latin-1 capitals (French `É`, `À`) are lower-cased too; ASCII text is used as is.
        // Not `str::to_lowercase`: its Unicode tables cost the module kilobytes.
        let lower = if folded.is_ascii() {
            std::borrow::Cow::Borrowed(folded.as_str())
        } else {
            std::borrow::Cow::Owned(folded.chars().map(cues::lower_latin).collect())
        };
        // A listed phrase already says what the string does; an intent adds one line only
        // where no phrase matched.
        if !literal
            && let Some((intent, from, to)) =
                intent::find_intent(&lower, &self.index, self.names, &self.params)
        {
            let quoted = shown(lower.get(from..to).unwrap_or(""), MAX_QUOTED);
            let detail = format!("{}: \"{quoted}\" in {at}", intent.as_str());
            self.push(label, Kind::InstructionCue, detail);
        }
        if let Some((verb, secret)) = cues::find_secret_request(&lower) {
            let detail = format!("asks to {verb} \"{secret}\" in {at}");
            self.push(label, Kind::InstructionCue, detail);
        }
        if let Some(address) = cues::find_destination(&lower) {
            let detail = format!("sends data to \"{}\" in {at}", shown(&address, MAX_QUOTED));
            self.push(label, Kind::InstructionCue, detail);
        }
        if role != Role::Prose {
            return;
        }
        if let Some(reference) =
            references::find_reference(&plain, &folded, self.names, &self.params, own)
        {
            let detail = format!("\"{}\" in {at}", shown(&reference, MAX_QUOTED));
            self.push(label, Kind::ToolReference, detail);
        }
        self.urls(label, at, &folded);
    }

    /// Inline data and local files anywhere in prose; web URLs only where data is sent to
    /// them (a link to documentation is not a cue).
    fn urls(&mut self, label: &str, at: &str, folded: &str) {
        if self.config.allow_urls {
            return;
        }
        let prefixes = &self.config.url_prefixes;
        if let Some(url) = cues::find_url(folded, prefixes)
            .or_else(|| cues::find_url_destination(folded, prefixes))
        {
            let detail = format!("\"{}\" in {at}", shown(&url, MAX_QUOTED));
            self.push(label, Kind::Url, detail);
        }
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
