//! Drift diff and classification: additive, breaking, semantic, authority.
//!
//! Main design decision: the diff is structural and conservative. Baseline and candidate
//! tools are matched by name and compared field by field; inside `inputSchema` the walk
//! follows JSON Schema keywords, so each change lands on a JSON pointer (for example
//! `/inputSchema/properties/region`) with a kind and a class. Sets (`required`, `enum`,
//! `type`) are compared as sets and numbers by value, so key order, set order and `1` vs
//! `1.0` never show up as drift. Whatever the walker does not understand is reported as
//! `schema_changed`/breaking rather than dropped, and a tool whose digest (over every
//! fingerprintable field) moved without any classified change gets one `schema_changed`
//! for the whole tool: the diff is empty exactly when the fingerprint holds. Classification
//! informs a reviewer and never approves anything by itself.
//!
//! Classes, from mildest to worst: `additive` (old calls keep their meaning), `breaking`
//! (old calls now fail: loud), `semantic` (meaning or model-facing text changed: silent),
//! `authority` (the tool accepts or may do more: silent and widening). The order is how
//! quietly a change can cause harm; [`DriftDiff::worst`] uses it.
//!
//! A renamed tool is a removal and an addition, and stays so. For review only (feature
//! `review`), `DriftDiff::renames` pairs a removed and an added tool that take the same
//! arguments as a likely rename and says what else changed.

#[cfg(feature = "review")]
mod renames;
mod report;
mod schema_diff;
mod sections;
mod tool_fields;

#[cfg(feature = "review")]
pub use renames::{PossibleRenames, Rename, Renames, find_renames};

use crate::policy::section::Section;
use serde_json::Value;

/// How a change affects a client that planned against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeClass {
    /// Old calls keep working with the same meaning (a new tool, a new optional property).
    Additive,
    /// Old calls now fail (a removed tool or property, a new required property, a
    /// narrowed type, enum or constraint).
    Breaking,
    /// The meaning or model-facing text changed (every description change, defaults,
    /// titles, hints that claim less authority).
    Semantic,
    /// The tool now accepts or may do more (enum widened, constraint loosened,
    /// `additionalProperties` opened, `readOnlyHint` true→false, `destructiveHint`
    /// false→true, `openWorldHint` false→true).
    Authority,
}

impl ChangeClass {
    /// Every class, mildest first.
    pub const ALL: [ChangeClass; 4] = [
        ChangeClass::Additive,
        ChangeClass::Breaking,
        ChangeClass::Semantic,
        ChangeClass::Authority,
    ];

    /// `additive`, `breaking`, `semantic` or `authority`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeClass::Additive => "additive",
            ChangeClass::Breaking => "breaking",
            ChangeClass::Semantic => "semantic",
            ChangeClass::Authority => "authority",
        }
    }
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// A tool appeared (additive).
    ToolAdded,
    /// A tool disappeared (breaking). A renamed tool is removed + added (for review, a
    /// likely rename is also named as such, without changing any class).
    ToolRemoved,
    /// A tool of the set is not an object with a string `name`, or repeats a name.
    InvalidTool,
    /// `description` changed, appeared or disappeared, at tool or schema level (semantic).
    DescriptionChanged,
    /// `title` changed, appeared or disappeared, at tool or schema level (semantic).
    TitleChanged,
    /// A new property that is not required (additive).
    PropertyAddedOptional,
    /// A new property that is required (breaking).
    PropertyAddedRequired,
    /// A property disappeared (breaking).
    PropertyRemoved,
    /// `type` admits more types (authority).
    TypeWidened,
    /// `type` admits fewer types (breaking).
    TypeNarrowed,
    /// `type` changed otherwise (breaking).
    TypeChanged,
    /// `enum` gained members, or was removed (authority).
    EnumWidened,
    /// `enum` lost members, or was added (breaking).
    EnumNarrowed,
    /// `additionalProperties` opened: `false` → schema/`true`/absent, schema → `true`/absent
    /// (authority).
    AdditionalPropertiesLoosened,
    /// `additionalProperties` closed the other way (breaking).
    AdditionalPropertiesTightened,
    /// An existing property became required (breaking).
    RequiredAdded,
    /// A property stopped being required (authority: calls without it are now accepted).
    RequiredRemoved,
    /// A constraint admits more values: `minLength` down, `maximum` up, `pattern`/`const`/
    /// `format`/`not` removed… (authority).
    ConstraintLoosened,
    /// A constraint admits fewer values (breaking).
    ConstraintTightened,
    /// A schema annotation that guides the caller changed: `default`, `examples`,
    /// `deprecated`, `readOnly`, `writeOnly`, `$comment`, content keywords (semantic).
    SchemaAnnotationChanged,
    /// A tool `annotations` hint changed; class by direction (see module docs).
    AnnotationChanged,
    /// Something in `outputSchema` changed; class by what it means for consumers.
    OutputSchemaChanged,
    /// `execution` changed (by `taskSupport` direction; anything else breaking).
    ExecutionChanged,
    /// `icons` changed (semantic: what users see to recognize the tool).
    IconsChanged,
    /// Any other change (a different `$ref`, changed `pattern`, combinator shape, unknown
    /// field...): breaking, conservatively.
    SchemaChanged,
    /// A prompt, resource template or resource appeared (additive).
    ItemAdded,
    /// A prompt, resource template or resource disappeared (breaking).
    ItemRemoved,
    /// An item is not an object with its string key, or repeats a key (breaking).
    InvalidItem,
    /// The server's instructions changed, appeared or disappeared (semantic).
    InstructionsChanged,
    /// A prompt argument that is not required appeared (additive).
    ArgumentAddedOptional,
    /// A required prompt argument appeared (breaking).
    ArgumentAddedRequired,
    /// A prompt argument disappeared (breaking).
    ArgumentRemoved,
    /// A prompt argument became required (breaking).
    ArgumentRequired,
    /// A prompt argument stopped being required (authority: the prompt runs without it).
    ArgumentOptional,
    /// Another member of a prompt, template or resource changed (a `mimeType`, a template's
    /// `uriTemplate` spelling, an unknown member): breaking, conservatively.
    FieldChanged,
}

impl ChangeKind {
    /// The snake_case name, e.g. `property_added_required`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::ToolAdded => "tool_added",
            ChangeKind::ToolRemoved => "tool_removed",
            ChangeKind::InvalidTool => "invalid_tool",
            ChangeKind::DescriptionChanged => "description_changed",
            ChangeKind::TitleChanged => "title_changed",
            ChangeKind::PropertyAddedOptional => "property_added_optional",
            ChangeKind::PropertyAddedRequired => "property_added_required",
            ChangeKind::PropertyRemoved => "property_removed",
            ChangeKind::TypeWidened => "type_widened",
            ChangeKind::TypeNarrowed => "type_narrowed",
            ChangeKind::TypeChanged => "type_changed",
            ChangeKind::EnumWidened => "enum_widened",
            ChangeKind::EnumNarrowed => "enum_narrowed",
            ChangeKind::AdditionalPropertiesLoosened => "additional_properties_loosened",
            ChangeKind::AdditionalPropertiesTightened => "additional_properties_tightened",
            ChangeKind::RequiredAdded => "required_added",
            ChangeKind::RequiredRemoved => "required_removed",
            ChangeKind::ConstraintLoosened => "constraint_loosened",
            ChangeKind::ConstraintTightened => "constraint_tightened",
            ChangeKind::SchemaAnnotationChanged => "schema_annotation_changed",
            ChangeKind::AnnotationChanged => "annotation_changed",
            ChangeKind::OutputSchemaChanged => "output_schema_changed",
            ChangeKind::ExecutionChanged => "execution_changed",
            ChangeKind::IconsChanged => "icons_changed",
            ChangeKind::SchemaChanged => "schema_changed",
            ChangeKind::ItemAdded => "item_added",
            ChangeKind::ItemRemoved => "item_removed",
            ChangeKind::InvalidItem => "invalid_item",
            ChangeKind::InstructionsChanged => "instructions_changed",
            ChangeKind::ArgumentAddedOptional => "argument_added_optional",
            ChangeKind::ArgumentAddedRequired => "argument_added_required",
            ChangeKind::ArgumentRemoved => "argument_removed",
            ChangeKind::ArgumentRequired => "argument_required",
            ChangeKind::ArgumentOptional => "argument_optional",
            ChangeKind::FieldChanged => "field_changed",
        }
    }
}

/// One classified change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The tool's name (for an invalid tool: `#` and its index in the candidate list); in
    /// another section, the item's key (`instructions` for the instructions).
    pub tool: String,
    /// JSON pointer inside the tool, e.g. `/inputSchema/properties/region`; `""` for the
    /// whole tool.
    pub path: String,
    /// What changed.
    pub kind: ChangeKind,
    /// Its class.
    pub class: ChangeClass,
    /// The baseline value at `path` (absent: `None`).
    pub before: Option<Value>,
    /// The candidate value at `path` (absent: `None`).
    pub after: Option<Value>,
}

/// The classified difference between a baseline and a candidate tool set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DriftDiff {
    /// Changes ordered by tool name, then path (then kind).
    pub changes: Vec<Change>,
}

impl DriftDiff {
    /// The worst class present (see [`ChangeClass`] order); `None` without changes.
    pub fn worst(&self) -> Option<ChangeClass> {
        self.changes.iter().map(|c| c.class).max()
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Release-gate exit code: 0 no change, 1 additive only, 2 anything breaking,
    /// semantic or authority.
    pub fn exit_code(&self) -> i32 {
        exit_code_of(self.worst())
    }
}

/// The release-gate exit code of a diff whose worst class is `worst`.
fn exit_code_of(worst: Option<ChangeClass>) -> i32 {
    match worst {
        None => 0,
        Some(ChangeClass::Additive) => 1,
        Some(_) => 2,
    }
}

/// Compares `old` (baseline) with `new` (candidate) tool definitions, matched by name.
/// `_meta` is ignored. See the module docs for the classification.
pub fn diff_tools(old: &[Value], new: &[Value]) -> DriftDiff {
    let mut changes = tool_fields::diff_sets(old, new);
    crate::wire::order::sort_by(&mut changes, |a, b| {
        (a.tool.as_str(), a.path.as_str(), a.kind).cmp(&(b.tool.as_str(), b.path.as_str(), b.kind))
    });
    DriftDiff { changes }
}

/// The classified difference between two surfaces, section by section: tools as
/// [`diff_tools`] compares them (every field, so `tool-fields` too), then the instructions,
/// prompts, resource templates and, when sealed, resources (see `sections.rs` for their
/// classes).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SurfaceDiff {
    /// The sections that changed, in [`Section::ALL`] order, each with its changes.
    pub sections: Vec<(Section, DriftDiff)>,
}

impl SurfaceDiff {
    /// The worst class of any section.
    pub fn worst(&self) -> Option<ChangeClass> {
        self.sections.iter().filter_map(|(_, d)| d.worst()).max()
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// [`DriftDiff::exit_code`] over every section.
    pub fn exit_code(&self) -> i32 {
        exit_code_of(self.worst())
    }

    /// `{section: DriftDiff::summary_json}` (`full`: `{section: DriftDiff::to_json}`) for
    /// each section that changed: what the admin view and the audit event show a reviewer
    /// (the `toolseal diff --surface` report is [`SurfaceDiff::to_json`]).
    pub fn by_section(&self, full: bool) -> Value {
        // Inserted one by one: a map collected from an iterator sorts its entries first, one
        // more sort instantiated in the `.wasm`.
        let mut sections = serde_json::Map::new();
        for (section, diff) in &self.sections {
            let shown = match full {
                true => diff.to_json(),
                false => diff.summary_json(),
            };
            sections.insert(section.name().to_string(), shown);
        }
        Value::Object(sections)
    }
}

/// Compares two surfaces, each one JSON object with any of `tools`, `instructions`,
/// `prompts`, `resourceTemplates`, `resources` (the members of the results that show them).
/// `resources` are compared only when `seal_resources`.
pub fn diff_surface(old: &Value, new: &Value, seal_resources: bool) -> SurfaceDiff {
    let member = |surface: &Value, section: Section| -> Value {
        surface
            .get(section.items_member())
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut sections = Vec::new();
    let tools = |surface: &Value| match member(surface, Section::Tools) {
        Value::Array(tools) => tools,
        _ => Vec::new(),
    };
    let tool_diff = diff_tools(&tools(old), &tools(new));
    if !tool_diff.is_empty() {
        sections.push((Section::Tools, tool_diff));
    }
    for section in [
        Section::Instructions,
        Section::Prompts,
        Section::ResourceTemplates,
        Section::Resources,
    ] {
        if section == Section::Resources && !seal_resources {
            continue;
        }
        let mut changes =
            sections::diff_section(section, &member(old, section), &member(new, section));
        if changes.is_empty() {
            continue;
        }
        crate::wire::order::sort_by(&mut changes, |a, b| {
            (a.tool.as_str(), a.path.as_str(), a.kind).cmp(&(
                b.tool.as_str(),
                b.path.as_str(),
                b.kind,
            ))
        });
        sections.push((section, DriftDiff { changes }));
    }
    SurfaceDiff { sections }
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
