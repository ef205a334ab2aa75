//! Tool digests and the server fingerprint (docs/fingerprint.md).
//!
//! Main design decision: the normalized tool view is never built. The canonical writer
//! ([`crate::wire::canonical`]) streams the view straight into SHA-256, told by a [`Layout`] which
//! positions are JSON Schema positions and which arrays there are sets (`required`, `enum`,
//! `type`). Data positions (`const`, `default`, `examples`, enum members, annotations...) are
//! written as they are. The server fingerprint depends only on the sorted `(name, digest)`
//! pairs, so it can be accumulated page by page.
//!
//! Schema keywords walked (the value is a schema, a map of schemas, or a list of schemas):
//! - map of schemas: `properties`, `patternProperties`, `$defs`, `definitions`,
//!   `dependentSchemas`, `dependencies` (its array values are property lists, left as they are);
//! - list of schemas: `allOf`, `anyOf`, `oneOf`, `prefixItems`;
//! - schema or list of schemas: `items`;
//! - schema: `additionalProperties`, `additionalItems`, `unevaluatedProperties`,
//!   `unevaluatedItems`, `not`, `if`, `then`, `else`, `contains`, `propertyNames`,
//!   `contentSchema`.

use crate::wire::canonical::{self, CanonicalSink, Layout, cmp_utf16};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// A fingerprinted field of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FingerprintField {
    /// `name`
    Name,
    /// `description`
    Description,
    /// `inputSchema`
    InputSchema,
    /// `title`
    Title,
    /// `annotations`
    Annotations,
    /// `outputSchema`
    OutputSchema,
    /// `execution`
    Execution,
    /// `icons`
    Icons,
}

impl FingerprintField {
    /// Every field, in declaration order.
    pub const ALL: [FingerprintField; 8] = [
        FingerprintField::Name,
        FingerprintField::Description,
        FingerprintField::InputSchema,
        FingerprintField::Title,
        FingerprintField::Annotations,
        FingerprintField::OutputSchema,
        FingerprintField::Execution,
        FingerprintField::Icons,
    ];

    /// The field's key in a tool object (and in config `fingerprint.fields`).
    pub fn as_str(self) -> &'static str {
        match self {
            FingerprintField::Name => "name",
            FingerprintField::Description => "description",
            FingerprintField::InputSchema => "inputSchema",
            FingerprintField::Title => "title",
            FingerprintField::Annotations => "annotations",
            FingerprintField::OutputSchema => "outputSchema",
            FingerprintField::Execution => "execution",
            FingerprintField::Icons => "icons",
        }
    }

    /// The field named `name` (exact, case-sensitive key), if any.
    #[allow(clippy::should_implement_trait)] // an Option reads better than FromStr's Result
    pub fn from_str(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// Whether the field holds a JSON Schema (normalized at schema positions).
    fn is_schema(self) -> bool {
        matches!(
            self,
            FingerprintField::InputSchema | FingerprintField::OutputSchema
        )
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The set of fingerprinted fields (config `fingerprint.fields`). `name` is always in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FingerprintFields {
    bits: u8,
}

impl Default for FingerprintFields {
    /// `name`, `description`, `inputSchema`: the surface fingerprinted by default.
    fn default() -> Self {
        Self::from_fields(&[
            FingerprintField::Name,
            FingerprintField::Description,
            FingerprintField::InputSchema,
        ])
    }
}

impl FingerprintFields {
    /// The set holding `fields` plus `name`.
    pub fn from_fields(fields: &[FingerprintField]) -> Self {
        let bits = fields
            .iter()
            .fold(FingerprintField::Name.bit(), |bits, f| bits | f.bit());
        FingerprintFields { bits }
    }

    /// Parses config `fingerprint.fields`. `name` is always included even if not listed
    /// (a tool is identified by it); repeats are harmless. An unknown field is an error
    /// whose text names it and lists the known ones.
    pub fn parse(names: &[&str]) -> Result<FingerprintFields, String> {
        let mut fields = Vec::with_capacity(names.len());
        for name in names {
            let field = FingerprintField::from_str(name).ok_or_else(|| {
                let known: Vec<_> = FingerprintField::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown fingerprint field {name:?}; known fields: {}",
                    known.join(", ")
                )
            })?;
            fields.push(field);
        }
        Ok(Self::from_fields(&fields))
    }

    /// Whether `f` is fingerprinted.
    pub fn contains(&self, f: FingerprintField) -> bool {
        self.bits & f.bit() != 0
    }

    /// The fields sealed beside the tool fingerprint (the surface's `tool-fields` section):
    /// every field this set leaves out, plus `name`.
    pub fn beside(&self) -> FingerprintFields {
        FingerprintFields {
            bits: !self.bits | FingerprintField::Name.bit(),
        }
    }

    /// The fields in the set, in [`FingerprintField`] declaration order.
    pub fn iter(&self) -> impl Iterator<Item = FingerprintField> + '_ {
        FingerprintField::ALL
            .into_iter()
            .filter(|f| self.contains(*f))
    }
}

/// Why a tool set can never verify (reason code `INVALID_TOOL_SET`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSetError {
    /// `tools` is not a JSON array.
    NotAnArray,
    /// The tool at this index (0-based) is not a JSON object.
    NotAnObject {
        /// Position in the `tools` array.
        index: usize,
    },
    /// The tool at this index has no `name`, or its `name` is not a string.
    MissingName {
        /// Position in the `tools` array.
        index: usize,
    },
    /// Two tools share this name.
    DuplicateName(String),
}

impl fmt::Display for ToolSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolSetError::NotAnArray => {
                write!(f, "invalid tool set: `tools` must be a JSON array of tools")
            }
            ToolSetError::NotAnObject { index } => {
                write!(f, "invalid tool set: tools[{index}] is not a JSON object")
            }
            ToolSetError::MissingName { index } => {
                write!(f, "invalid tool set: tools[{index}] has no string `name`")
            }
            ToolSetError::DuplicateName(name) => write!(
                f,
                "invalid tool set: two tools are named {name:?}; names must be unique"
            ),
        }
    }
}

impl std::error::Error for ToolSetError {}

/// The position of a value inside a tool view, as far as normalization cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViewPosition {
    /// The tool view object itself.
    Tool,
    /// Data: written as it is.
    Data,
    /// A JSON Schema.
    Schema,
    /// An object whose values are schemas.
    SchemaMap,
    /// An array whose elements are schemas.
    SchemaList,
    /// A schema, or an array of schemas (`items`).
    SchemaOrList,
    /// `required`, `enum`, `type` of a schema: an array here is a set.
    Set,
}

impl ViewPosition {
    /// Position of the value under `key` in a schema.
    fn schema_keyword(key: &str) -> Self {
        match key {
            "required" | "enum" | "type" => ViewPosition::Set,
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" => ViewPosition::SchemaMap,
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => ViewPosition::SchemaList,
            "items" => ViewPosition::SchemaOrList,
            "additionalProperties"
            | "additionalItems"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "contentSchema" => ViewPosition::Schema,
            _ => ViewPosition::Data,
        }
    }
}

impl Layout for ViewPosition {
    fn member(self, key: &str) -> Self {
        match self {
            ViewPosition::Tool => match FingerprintField::from_str(key) {
                Some(field) if field.is_schema() => ViewPosition::Schema,
                _ => ViewPosition::Data,
            },
            ViewPosition::Schema | ViewPosition::SchemaOrList => Self::schema_keyword(key),
            ViewPosition::SchemaMap => ViewPosition::Schema,
            ViewPosition::Data | ViewPosition::SchemaList | ViewPosition::Set => ViewPosition::Data,
        }
    }

    fn element(self) -> Self {
        match self {
            ViewPosition::SchemaList | ViewPosition::SchemaOrList => ViewPosition::Schema,
            _ => ViewPosition::Data,
        }
    }

    fn is_set(self) -> bool {
        self == ViewPosition::Set
    }
}

/// Checks that `tool` is an object with a string `name`; returns the name.
pub(crate) fn tool_name(tool: &Value, index: usize) -> Result<&str, ToolSetError> {
    let object = tool
        .as_object()
        .ok_or(ToolSetError::NotAnObject { index })?;
    object
        .get("name")
        .and_then(Value::as_str)
        .ok_or(ToolSetError::MissingName { index })
}

/// Streams the canonical bytes of `tool`'s normalized view into `sink`.
fn write_tool_view<S: CanonicalSink>(
    tool: &Value,
    fields: &FingerprintFields,
    index: usize,
    sink: &mut S,
) -> Result<(), ToolSetError> {
    tool_name(tool, index)?;
    let members: Vec<(&str, &Value)> = fields
        .iter()
        .filter_map(|f| tool.get(f.as_str()).map(|v| (f.as_str(), v)))
        .collect();
    canonical::write_members(members, ViewPosition::Tool, sink);
    Ok(())
}

/// Canonical bytes (RFC 8785) of the normalized view of one tool: only the fingerprinted
/// fields that are present (absent fields are absent, not null). Errors use index 0.
pub fn canonical_tool_view(
    tool: &Value,
    fields: &FingerprintFields,
) -> Result<Vec<u8>, ToolSetError> {
    let mut out = Vec::new();
    write_tool_view(tool, fields, 0, &mut out)?;
    Ok(out)
}

/// The normalized tool view as a value (the canonical bytes read back): what the digest
/// covers, with sets sorted and deduplicated, so that a field-by-field comparison (drift
/// diff) sees the same changes as the fingerprint. `None` if the tool is not an object with
/// a string `name`, or nests deeper than the strict parser reads
/// ([`crate::wire::json::PARSER_DEPTH_CEILING`]; never for a tool that came through it).
pub fn normalized_tool_view(tool: &Value, fields: &FingerprintFields) -> Option<Value> {
    let bytes = canonical_tool_view(tool, fields).ok()?;
    crate::wire::json::parse_strict(&bytes, crate::wire::json::PARSER_DEPTH_CEILING).ok()
}

/// Lowercase hex SHA-256 of [`canonical_tool_view`] (the tool digest), computed without
/// building the canonical text. Errors use index 0.
pub fn tool_digest(tool: &Value, fields: &FingerprintFields) -> Result<String, ToolSetError> {
    indexed_tool_digest(tool, fields, 0)
}

fn indexed_tool_digest(
    tool: &Value,
    fields: &FingerprintFields,
    index: usize,
) -> Result<String, ToolSetError> {
    let mut hasher = BufferedHasher::default();
    write_tool_view(tool, fields, index, &mut hasher)?;
    Ok(to_hex(&hasher.finish()))
}

/// The digests of a tool set, sorted by name (UTF-16 code units), names unique.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolDigests {
    /// `(name, lowercase hex digest)` pairs in UTF-16 name order.
    pub entries: Vec<(String, String)>,
}

impl ToolDigests {
    /// Builds the set from `(name, digest)` pairs in any order, e.g. gathered page by page
    /// (`nextCursor`): sorts them and refuses a name seen twice (also across pages).
    pub fn from_entries(mut entries: Vec<(String, String)>) -> Result<Self, ToolSetError> {
        // Not `wire::order::sort_by`: this runs on every list (one entry per tool), where an
        // indirect call per comparison is a measurable share of the list's cost
        // (docs/performance.md).
        crate::wire::order::sort_hot_by(&mut entries, |a, b| cmp_utf16(&a.0, &b.0));
        let repeated = entries.windows(2).find_map(|w| match w {
            [a, b] if a.0 == b.0 => Some(a.0.clone()),
            _ => None,
        });
        match repeated {
            Some(name) => Err(ToolSetError::DuplicateName(name)),
            None => Ok(ToolDigests { entries }),
        }
    }

    /// The server fingerprint: `sha256:` + hex SHA-256 of the JCS array of `[name, digest]`.
    pub fn fingerprint(&self) -> String {
        // Sorted by name, names unique: already in the order `server_fingerprint` sorts to,
        // so no sort runs on this path (one per list).
        fingerprint_of_sorted(
            self.entries
                .iter()
                .map(|(name, digest)| (name.as_str(), digest.as_str())),
        )
    }

    /// The digest of the tool named `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .binary_search_by(|(n, _)| cmp_utf16(n, name))
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|(_, digest)| digest.as_str())
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set has no tool.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Digests every tool of `tools` (the `tools` array of a `tools/list` result).
pub fn digest_tools(
    tools: &Value,
    fields: &FingerprintFields,
) -> Result<ToolDigests, ToolSetError> {
    let list = tools.as_array().ok_or(ToolSetError::NotAnArray)?;
    let mut entries = Vec::with_capacity(list.len());
    for (index, tool) in list.iter().enumerate() {
        let name = tool_name(tool, index)?;
        entries.push((name.to_owned(), indexed_tool_digest(tool, fields, index)?));
    }
    ToolDigests::from_entries(entries)
}

/// The server fingerprint of `(name, digest)` pairs in any order (sorted here by UTF-16
/// name): `sha256:` + hex SHA-256 of the JCS text `[["name","digest"],...]`. Lets a caller
/// accumulate pairs page by page (`nextCursor`) and fingerprint the whole set at the end.
/// Does not check for repeated names; [`digest_tools`] does.
pub fn server_fingerprint<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    // Not on the data path (lists go through `ToolDigests::fingerprint`, already sorted):
    // the shared sort, not one more copy of the standard one.
    crate::wire::order::sort_by(&mut pairs, |a, b| {
        cmp_utf16(a.0, b.0).then_with(|| a.1.cmp(b.1))
    });
    fingerprint_of_sorted(pairs.into_iter())
}

/// [`server_fingerprint`] of pairs already in its order (UTF-16 name, then digest).
pub(crate) fn fingerprint_of_sorted<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut hasher = BufferedHasher::default();
    hasher.put(b"[");
    for (i, (name, digest)) in pairs.enumerate() {
        hasher.put(if i == 0 { b"[" } else { b",[" });
        canonical::write_string(name, &mut hasher);
        hasher.put(b",");
        canonical::write_string(digest, &mut hasher);
        hasher.put(b"]");
    }
    hasher.put(b"]");
    format!("sha256:{}", to_hex(&hasher.finish()))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(canonical::hex_digit(b >> 4)));
        out.push(char::from(canonical::hex_digit(b & 0xf)));
    }
    out
}

/// A SHA-256 sink that gathers the writer's many small pieces (`"`, `:`, `,`...) in a
/// buffer and hashes it in large chunks: measured faster in wasm than feeding the hasher
/// piece by piece.
pub(crate) struct BufferedHasher {
    hasher: Sha256,
    buf: Vec<u8>,
}

/// Buffered bytes that trigger hashing.
const HASH_CHUNK: usize = 8 * 1024;

impl Default for BufferedHasher {
    fn default() -> Self {
        BufferedHasher {
            hasher: Sha256::new(),
            buf: Vec::with_capacity(HASH_CHUNK + 256),
        }
    }
}

impl BufferedHasher {
    /// Lowercase hex SHA-256 of the canonical bytes `write` streams into a hasher.
    pub(crate) fn digest(write: impl FnOnce(&mut BufferedHasher)) -> String {
        let mut hasher = BufferedHasher::default();
        write(&mut hasher);
        to_hex(&hasher.finish())
    }

    fn finish(mut self) -> [u8; 32] {
        self.hasher.update(&self.buf);
        self.hasher.finalize().into()
    }
}

impl CanonicalSink for BufferedHasher {
    fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= HASH_CHUNK {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
    }
}
