//! The sections of a server's surface and the surface fingerprint over them
//! (docs/fingerprint.md, "The surface fingerprint").
//!
//! Main design decision: a section is one row of a table (the list that shows it, the member
//! its items are in, the member that keys an item, what an item's digest covers, the request
//! that uses an item), so tools are one row among others and every other row is read by the
//! same code. Each section is fingerprinted as section 1 fingerprints tools (sorted
//! `[key, digest]` pairs), and the surface fingerprint combines the sections that have items.
//! A surface whose only items are tools, sealed with the tool fingerprint's own fields, has the
//! tool fingerprint as its surface fingerprint: every baseline, lock and pin made before the
//! other sections were sealed keeps naming the same surface.

use crate::policy::fingerprint::{
    BufferedHasher, FingerprintFields, ToolDigests, ToolSetError, digest_tools,
    fingerprint_of_sorted, tool_digest, tool_name,
};
use crate::wire::canonical::{self, Layout};
use serde_json::Value;
use std::fmt;

/// One kind of item a server shows an agent (stored by its [`Section::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Tools, by `name`: the fields of the tool fingerprint (`fingerprint.fields`).
    Tools,
    /// Tools, by `name`: every other field but `_meta` (`title`, `annotations`,
    /// `outputSchema`, `execution`, `icons`), for a tool that has one.
    ToolFields,
    /// The server's `instructions` (one text).
    Instructions,
    /// Prompts, by `name`: every field but `_meta`.
    Prompts,
    /// Resource templates, by `uriTemplate`: every field but `_meta`.
    ResourceTemplates,
    /// Concrete resources, by `uri`: every field but `_meta` and `size` (sealed only on
    /// request; screened otherwise).
    Resources,
}

/// The request that lists tools, as the table spells it.
pub const TOOLS_LIST: &str = Section::Tools.row().list_method;
/// The request that calls one tool (the use of a tool), as the table spells it.
pub const TOOLS_CALL: &str = match Section::Tools.row().use_request {
    Some((method, _)) => method,
    None => "",
};
/// The handshake of MCP 2026-07-28, which shows the instructions as `initialize` does.
const SERVER_DISCOVER: &str = "server/discover";

/// What the data path knows of one kind of item: the request that lists it, where its items
/// are in that answer, what keys one, and the request that uses one.
#[derive(Clone, Copy)]
struct Row {
    name: &'static str,
    list_method: &'static str,
    items_member: &'static str,
    key_member: Option<&'static str>,
    item_word: &'static str,
    use_request: Option<(&'static str, &'static str)>,
}

impl Section {
    /// Every section, in the order the surface fingerprint takes them.
    pub const ALL: [Section; 6] = [
        Section::Tools,
        Section::ToolFields,
        Section::Instructions,
        Section::Prompts,
        Section::ResourceTemplates,
        Section::Resources,
    ];

    /// The section of this name ([`Section::name`]).
    pub fn from_name(name: &str) -> Option<Section> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The section's row of the table: everything the data path knows of a kind of item.
    const fn row(self) -> Row {
        match self {
            Section::Tools => Row {
                name: "tools",
                list_method: "tools/list",
                items_member: "tools",
                key_member: Some("name"),
                item_word: "tool",
                use_request: Some(("tools/call", "name")),
            },
            // A tool's other fields are listed, keyed and used with the tool itself.
            Section::ToolFields => Row {
                name: "tool-fields",
                ..Section::Tools.row()
            },
            Section::Instructions => Row {
                name: "instructions",
                list_method: "initialize",
                items_member: "instructions",
                key_member: None,
                item_word: "instructions",
                use_request: None,
            },
            Section::Prompts => Row {
                name: "prompts",
                list_method: "prompts/list",
                items_member: "prompts",
                key_member: Some("name"),
                item_word: "prompt",
                use_request: Some(("prompts/get", "name")),
            },
            Section::ResourceTemplates => Row {
                name: "resource-templates",
                list_method: "resources/templates/list",
                items_member: "resourceTemplates",
                key_member: Some("uriTemplate"),
                item_word: "resource template",
                use_request: Some(("resources/read", "uri")),
            },
            Section::Resources => Row {
                name: "resources",
                list_method: "resources/list",
                items_member: "resources",
                key_member: Some("uri"),
                item_word: "resource",
                use_request: Some(("resources/read", "uri")),
            },
        }
    }

    /// The section's name in the surface fingerprint, reviews and audit events.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// How an item of the section is named where tools are named by theirs (a drift's
    /// reach under `drift_scope: "tool"`): `SECTION/KEY`, e.g. `prompts/summarize`; a tool
    /// (its other fields too) by its name.
    pub fn item_name(self, key: &str) -> String {
        match self {
            Section::Tools | Section::ToolFields => key.to_string(),
            _ => format!("{}/{key}", self.name()),
        }
    }

    /// The request whose result shows the section: a list, or the handshake for
    /// instructions (`initialize`; `server/discover` on 2026-07-28, see [`Section::shown_by`]).
    pub fn list_method(self) -> &'static str {
        self.row().list_method
    }

    /// The member of that result the section's items are in (for instructions: the text).
    pub fn items_member(self) -> &'static str {
        self.row().items_member
    }

    /// The member of an item that keys it (`None`: the section is one text).
    pub fn key_member(self) -> Option<&'static str> {
        self.row().key_member
    }

    /// What one item is called in words (`tool`, `prompt`, ...).
    pub fn item_word(self) -> &'static str {
        self.row().item_word
    }

    /// The request that uses one item, and the parameter that names it (`None`: nothing
    /// names an item of this section).
    pub fn use_request(self) -> Option<(&'static str, &'static str)> {
        self.row().use_request
    }

    /// The request whose answer shows a section, as the table spells it, and the section it
    /// shows first (a tool list shows the tools, and their other fields with them; a
    /// handshake of either era shows the instructions).
    pub fn shown_by(method: &str) -> Option<(&'static str, Section)> {
        if method == SERVER_DISCOVER {
            return Some((SERVER_DISCOVER, Section::Instructions));
        }
        Self::ALL
            .into_iter()
            .find(|s| s.list_method() == method && *s != Section::ToolFields)
            .map(|s| (s.list_method(), s))
    }

    /// The section other than tools a list request of `method` shows (prompts, templates,
    /// resources).
    pub fn other_listed_by(method: &str) -> Option<Section> {
        Self::shown_by(method)
            .map(|(_, s)| s)
            .filter(|s| !matches!(s, Section::Tools | Section::Instructions))
    }

    /// The section other than tools one of whose items a request of `method` uses
    /// (`prompts/get`: a prompt; `resources/read`: a resource, listed or from a template).
    pub fn used_by(method: &str) -> Option<Section> {
        [Section::Prompts, Section::Resources]
            .into_iter()
            .find(|s| s.use_request().is_some_and(|(m, _)| m == method))
    }

    /// The position of an item's members for the canonical writer.
    fn layout(self) -> ItemPosition {
        match self {
            Section::Prompts => ItemPosition::Prompt,
            _ => ItemPosition::Item,
        }
    }

    /// Whether an item's member `key` is left out of its digest.
    fn unsealed(self, key: &str) -> bool {
        key == "_meta" || (self == Section::Resources && key == "size")
    }
}

// By hand, not derived: a section is its name, and the derived visitor is more code in the
// `.wasm` than reading a string.
impl serde::Serialize for Section {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Section {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Section::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown section {name:?}")))
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a section's items can never verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionError {
    /// The tool list is invalid (section 1's rules).
    Tools(ToolSetError),
    /// The section's member is not of its type (an array of items; a string for
    /// instructions).
    NotItems(Section),
    /// The item at this index is not an object.
    NotAnObject(Section, usize),
    /// The item at this index has no string key.
    MissingKey(Section, usize),
    /// Two items share this key.
    DuplicateKey(Section, String),
}

impl fmt::Display for SectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let member = |s: &Section| s.items_member();
        match self {
            SectionError::Tools(e) => e.fmt(f),
            SectionError::NotItems(Section::Instructions) => {
                write!(f, "invalid surface: `instructions` must be a string")
            }
            SectionError::NotItems(s) => {
                write!(f, "invalid surface: `{}` must be a JSON array", member(s))
            }
            SectionError::NotAnObject(s, index) => write!(
                f,
                "invalid surface: {}[{index}] is not a JSON object",
                member(s)
            ),
            SectionError::MissingKey(s, index) => write!(
                f,
                "invalid surface: {}[{index}] has no string `{}`",
                member(s),
                s.key_member().unwrap_or("key")
            ),
            SectionError::DuplicateKey(s, key) => write!(
                f,
                "invalid surface: two {}s have the key {key:?}; keys must be unique",
                s.item_word()
            ),
        }
    }
}

impl std::error::Error for SectionError {}

/// Positions inside a prompt, template or resource, as far as its digest cares: all data,
/// except a prompt's `arguments`, which is a set (listed in any order, the same prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemPosition {
    /// A template's or resource's members.
    Item,
    /// A prompt's members.
    Prompt,
    /// A prompt's `arguments`.
    Arguments,
    /// Anything else: hashed as served.
    Data,
}

impl Layout for ItemPosition {
    fn member(self, key: &str) -> Self {
        match (self, key) {
            (ItemPosition::Prompt, "arguments") => ItemPosition::Arguments,
            _ => ItemPosition::Data,
        }
    }

    fn element(self) -> Self {
        ItemPosition::Data
    }

    fn is_set(self) -> bool {
        self == ItemPosition::Arguments
    }
}

/// The digest of one item of `section` (a prompt, template or resource object; the
/// instructions text): lowercase hex SHA-256 of its canonical view. Tools are digested by
/// [`digest_section`], which knows the fingerprinted fields.
pub(crate) fn item_digest(section: Section, item: &Value) -> String {
    BufferedHasher::digest(|hasher| match item.as_object() {
        Some(members) => {
            let members: Vec<(&str, &Value)> = members
                .iter()
                .filter(|(key, _)| !section.unsealed(key))
                .map(|(key, value)| (key.as_str(), value))
                .collect();
            canonical::write_members(members, section.layout(), hasher);
        }
        None => canonical::write_value(item, ItemPosition::Data, hasher),
    })
}

/// The key of the item at `index`.
fn item_key(section: Section, item: &Value, index: usize) -> Result<&str, SectionError> {
    let object = item
        .as_object()
        .ok_or(SectionError::NotAnObject(section, index))?;
    let member = section.key_member().unwrap_or("name");
    object
        .get(member)
        .and_then(Value::as_str)
        .ok_or(SectionError::MissingKey(section, index))
}

/// The digests of one section shown by `items` (the member [`Section::items_member`] of a
/// result; `Value::Null` when it is absent: no items). `fields`: the tool fingerprint's
/// fields (tools are digested over them, `tool-fields` over the others).
pub fn digest_section(
    section: Section,
    items: &Value,
    fields: &FingerprintFields,
) -> Result<ToolDigests, SectionError> {
    match section {
        Section::Tools if items.is_null() => Ok(ToolDigests::default()),
        Section::Tools => digest_tools(items, fields).map_err(SectionError::Tools),
        Section::ToolFields => tool_fields(items, fields),
        Section::Instructions => match items {
            Value::Null => Ok(ToolDigests::default()),
            Value::String(_) | Value::Array(_) => {
                let texts = match items {
                    Value::Array(texts) => texts.as_slice(),
                    text => std::slice::from_ref(text),
                };
                if !texts.iter().all(Value::is_string) {
                    return Err(SectionError::NotItems(section));
                }
                let digests = texts.iter().map(|t| item_digest(section, t)).collect();
                instruction_texts(digests)
                    .map_err(|_| SectionError::DuplicateKey(section, INSTRUCTIONS_KEY.into()))
            }
            _ => Err(SectionError::NotItems(section)),
        },
        Section::Prompts | Section::ResourceTemplates | Section::Resources => {
            let list = match items {
                Value::Null => return Ok(ToolDigests::default()),
                Value::Array(list) => list,
                _ => return Err(SectionError::NotItems(section)),
            };
            let mut entries = Vec::with_capacity(list.len());
            for (index, item) in list.iter().enumerate() {
                let key = item_key(section, item, index)?;
                entries.push((key.to_owned(), item_digest(section, item)));
            }
            ToolDigests::from_entries(entries).map_err(|e| match e {
                ToolSetError::DuplicateName(key) => SectionError::DuplicateKey(section, key),
                other => SectionError::Tools(other),
            })
        }
    }
}

/// The `instructions` section of these texts' digests: one text is keyed `instructions`;
/// several (a catalogue that approved a text per kind of caller) are each keyed by their own
/// digest, so the section is a set of texts. A text given twice is an error.
pub fn instruction_texts(digests: Vec<String>) -> Result<ToolDigests, ToolSetError> {
    let one = digests.len() == 1;
    let key = |d: &String| match one {
        true => INSTRUCTIONS_KEY.to_string(),
        false => d.clone(),
    };
    ToolDigests::from_entries(digests.into_iter().map(|d| (key(&d), d)).collect())
}

/// The key of the instructions of a section that has one text.
pub const INSTRUCTIONS_KEY: &str = "instructions";

/// The `tool-fields` digests of a tool list: for each tool with a field outside `fields`
/// (other than `_meta`), the digest of its name and those fields, normalized as section 1
/// normalizes a tool (an `outputSchema` is a schema).
fn tool_fields(tools: &Value, fields: &FingerprintFields) -> Result<ToolDigests, SectionError> {
    let list = match tools {
        Value::Null => return Ok(ToolDigests::default()),
        Value::Array(list) => list,
        _ => return Err(SectionError::Tools(ToolSetError::NotAnArray)),
    };
    let beside = fields.beside();
    let mut entries = Vec::new();
    for (index, tool) in list.iter().enumerate() {
        let name = tool_name(tool, index).map_err(SectionError::Tools)?;
        let has_any = beside
            .iter()
            .any(|f| f.as_str() != "name" && tool.get(f.as_str()).is_some());
        if has_any {
            let digest = tool_digest(tool, &beside).map_err(SectionError::Tools)?;
            entries.push((name.to_owned(), digest));
        }
    }
    ToolDigests::from_entries(entries).map_err(SectionError::Tools)
}

/// The digests of every section of a surface, by [`Section`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surface {
    sections: [ToolDigests; 6],
}

impl Surface {
    /// The digests of `section`.
    pub fn section(&self, section: Section) -> &ToolDigests {
        // `sections` has one entry per variant, indexed by declaration order.
        let index = section as usize;
        match self.sections.get(index) {
            Some(digests) => digests,
            None => &EMPTY,
        }
    }

    /// Sets the digests of `section`.
    pub fn set(&mut self, section: Section, digests: ToolDigests) {
        if let Some(slot) = self.sections.get_mut(section as usize) {
            *slot = digests;
        }
    }

    /// The surface of a document naming each section by its result member (`tools`,
    /// `instructions`, `prompts`, `resourceTemplates`, `resources`), as `toolseal
    /// fingerprint --surface` reads it. `resources` are digested only when `seal_resources`.
    pub fn of_document(
        document: &Value,
        fields: &FingerprintFields,
        seal_resources: bool,
    ) -> Result<Surface, SectionError> {
        let mut surface = Surface::default();
        for section in Section::ALL {
            if section == Section::Resources && !seal_resources {
                continue;
            }
            let items = document.get(section.items_member()).unwrap_or(&Value::Null);
            surface.set(section, digest_section(section, items, fields)?);
        }
        Ok(surface)
    }

    /// The surface fingerprint. A surface whose only items are tools (or that has none) has
    /// the tool fingerprint of section 1; any other is `sha256:` + hex SHA-256 of the JCS
    /// array of `[section name, section fingerprint]` for every section with an item, in
    /// [`Section::ALL`] order, a section fingerprint being the server fingerprint of its
    /// `[key, digest]` pairs.
    pub fn fingerprint(&self) -> String {
        self.sealed_fingerprint(&[])
    }

    /// The fingerprint of a catalogue that seals `sealed` beyond tools: as
    /// [`Surface::fingerprint`], with each section of `sealed` counted even when it has no
    /// items. A section sealed empty and one not sealed are different catalogues (an item
    /// showing up is drift in the one, a first sealing in the other), so they are named apart.
    pub fn sealed_fingerprint(&self, sealed: &[Section]) -> String {
        let counted = |s: Section| !self.section(s).is_empty() || sealed.contains(&s);
        let beyond_tools = Section::ALL
            .into_iter()
            .any(|s| s != Section::Tools && counted(s));
        if !beyond_tools {
            return self.section(Section::Tools).fingerprint();
        }
        let parts: Vec<(&'static str, String)> = Section::ALL
            .into_iter()
            .filter(|s| counted(*s))
            .map(|s| (s.name(), self.section(s).fingerprint()))
            .collect();
        // Not a name-sorted pair list: sections keep their table order. The writer is the
        // same JCS array writer, given the pairs in that order.
        fingerprint_of_sorted(parts.iter().map(|(name, fp)| (*name, fp.as_str())))
    }
}

static EMPTY: ToolDigests = ToolDigests {
    entries: Vec::new(),
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::policy::fingerprint::FingerprintField;
    use serde_json::json;

    #[test]
    fn each_list_method_shows_its_section_and_each_use_names_one() {
        assert_eq!(
            Section::shown_by("tools/list"),
            Some((TOOLS_LIST, Section::Tools))
        );
        assert_eq!(Section::other_listed_by("tools/list"), None);
        for section in [
            Section::Prompts,
            Section::ResourceTemplates,
            Section::Resources,
        ] {
            assert_eq!(
                Section::other_listed_by(section.list_method()),
                Some(section)
            );
        }
        for handshake in ["initialize", "server/discover"] {
            assert_eq!(
                Section::shown_by(handshake),
                Some((handshake, Section::Instructions))
            );
            assert_eq!(Section::other_listed_by(handshake), None);
        }
        assert_eq!(Section::shown_by("tools/call"), None);
        assert_eq!(Section::shown_by("prompts/get"), None);
        assert_eq!(Section::used_by("prompts/get"), Some(Section::Prompts));
        assert_eq!(Section::used_by("resources/read"), Some(Section::Resources));
        assert_eq!(Section::used_by("tools/call"), None);
        assert_eq!(Section::used_by("resources/list"), None);
    }

    #[test]
    fn tool_fields_seal_what_the_tool_fingerprint_leaves_out() {
        let tools = json!([
            {"name": "a", "description": "d", "annotations": {"readOnlyHint": true}},
            {"name": "b", "description": "d", "_meta": {"x": 1}}
        ]);
        let default = FingerprintFields::default();
        let beside = digest_section(Section::ToolFields, &tools, &default).unwrap();
        // `b` has nothing but sealed fields and `_meta`.
        assert_eq!(beside.len(), 1);
        assert!(beside.get("a").is_some());
        // Fingerprinting annotations with the tool leaves nothing beside it.
        let with = FingerprintFields::from_fields(&[
            FingerprintField::Description,
            FingerprintField::InputSchema,
            FingerprintField::Annotations,
        ]);
        let beside = digest_section(Section::ToolFields, &tools, &with).unwrap();
        assert!(beside.is_empty());
    }

    #[test]
    fn a_prompt_is_the_same_whatever_the_order_of_its_arguments() {
        let fields = FingerprintFields::default();
        let one =
            json!([{"name": "p", "arguments": [{"name": "a"}, {"name": "b", "required": true}]}]);
        let two =
            json!([{"name": "p", "arguments": [{"name": "b", "required": true}, {"name": "a"}]}]);
        let three = json!([{"name": "p", "arguments": [{"name": "b"}, {"name": "a"}]}]);
        let digest = |v: &Value| digest_section(Section::Prompts, v, &fields).unwrap();
        assert_eq!(digest(&one), digest(&two));
        assert_ne!(digest(&one), digest(&three));
        // Elsewhere an array is data: a template's members in another order differ.
        let t1 = json!([{"uriTemplate": "u/{x}", "tags": ["a", "b"]}]);
        let t2 = json!([{"uriTemplate": "u/{x}", "tags": ["b", "a"]}]);
        let templates = |v: &Value| digest_section(Section::ResourceTemplates, v, &fields).unwrap();
        assert_ne!(templates(&t1), templates(&t2));
    }
}
