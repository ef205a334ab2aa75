//! The compiled form of a schema: an arena of nodes, each a list of checks.
//!
//! Keywords that only make sense together are compiled into one check (`properties`,
//! `patternProperties` and `additionalProperties`; `prefixItems`/`items`; `contains` with
//! its bounds; `if`/`then`/`else`), so validation never has to look at siblings.

use super::regex::Regex;
use serde_json::{Number, Value};

/// Index of a node in the arena.
pub(crate) type NodeId = usize;

/// One compiled schema.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// `true` (anything) or `false` (nothing).
    Bool(bool),
    /// An object schema: every check must hold.
    Checks(Vec<Check>),
}

/// The JSON types named by `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TypeSet(u8);

impl TypeSet {
    pub(crate) const NAMES: [&'static str; 7] = [
        "null", "boolean", "object", "array", "number", "integer", "string",
    ];

    /// The empty set.
    pub(crate) fn empty() -> TypeSet {
        TypeSet(0)
    }

    /// Adds a type by name; false for an unknown name.
    pub(crate) fn insert(&mut self, name: &str) -> bool {
        match Self::NAMES.iter().position(|n| *n == name) {
            Some(bit) => {
                self.0 |= 1 << bit;
                true
            }
            None => false,
        }
    }

    /// Whether the set names `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .is_some_and(|bit| self.0 & (1 << bit) != 0)
    }

    /// The names in the set, in [`TypeSet::NAMES`] order.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .enumerate()
            .filter(|(bit, _)| self.0 & (1 << bit) != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// A compiled regex with its source text (for messages).
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(crate) source: String,
    pub(crate) regex: Regex,
}

/// A lower or upper numeric bound.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    pub(crate) limit: Number,
    pub(crate) exclusive: bool,
}

/// One check of an object schema.
#[derive(Debug, Clone)]
pub(crate) enum Check {
    Type(TypeSet),
    Enum(Vec<Value>),
    Const(Value),
    Minimum(Bound),
    Maximum(Bound),
    MultipleOf(Number),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Pattern),
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    Items {
        prefix: Vec<NodeId>,
        rest: Option<NodeId>,
    },
    Contains {
        schema: NodeId,
        min: u64,
        max: Option<u64>,
    },
    MinProperties(u64),
    MaxProperties(u64),
    Required(Vec<String>),
    Properties {
        named: Vec<(String, NodeId)>,
        patterns: Vec<(Pattern, NodeId)>,
        additional: Option<NodeId>,
    },
    PropertyNames(NodeId),
    DependentRequired(Vec<(String, Vec<String>)>),
    DependentSchemas(Vec<(String, NodeId)>),
    AllOf(Vec<NodeId>),
    AnyOf(Vec<NodeId>),
    OneOf(Vec<NodeId>),
    Not(NodeId),
    IfThenElse {
        condition: NodeId,
        then: Option<NodeId>,
        otherwise: Option<NodeId>,
    },
    Ref(NodeId),
}
