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
mod tool_fields;

#[cfg(feature = "review")]
pub use renames::{PossibleRenames, Rename, Renames, find_renames};

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
        }
    }
}

/// One classified change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The tool's name (for an invalid tool: `#` and its index in the candidate list).
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
        match self.worst() {
            None => 0,
            Some(ChangeClass::Additive) => 1,
            Some(_) => 2,
        }
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
