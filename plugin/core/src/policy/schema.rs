//! Validation of `tools/call` arguments against the approved `inputSchema`, and of results'
//! `structuredContent` against `outputSchema`.
//!
//! Main design decision: a strict, hand-written subset of JSON Schema that fails closed. A
//! full validator crate would more than double the `.wasm` (docs/performance.md), so the
//! subset below is implemented here, and a schema that uses anything else does not compile
//! ([`SchemaError::Unsupported`]): an approved tool whose schema cannot be fully checked is
//! never silently waved through. Compilation resolves `$ref`s into an arena of nodes once;
//! validation walks it with a depth limit and a work budget, so no schema or value can make
//! it recurse without bound, hang, or panic. Running out of budget is a violation.
//!
//! Assertions supported: `type` (a name or a list; `integer` accepts `1.0`), `enum`, `const`
//! (JSON equality, `1 == 1.0`), `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (number form, and draft-4 boolean form next to `minimum`/`maximum`),
//! `multipleOf` (exact decimal arithmetic), `minLength`/`maxLength` (Unicode code points),
//! `pattern` (see below), `minItems`, `maxItems`, `uniqueItems`, `items`
//! (a schema, or a draft-07 tuple array with `additionalItems`), `prefixItems`, `contains`
//! with `minContains`/`maxContains`, `minProperties`, `maxProperties`, `required`,
//! `properties`, `patternProperties`, `additionalProperties` (boolean or schema),
//! `propertyNames`, `dependentRequired`, `dependentSchemas`, draft-07 `dependencies`,
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref` to `#`, `#/$defs/…` and
//! `#/definitions/…` (recursion allowed, bounded at validation), `$defs`/`definitions`,
//! and the boolean schemas `true`/`false`.
//!
//! Accepted and ignored (annotations): `title`, `description`, `default`, `examples`,
//! `$schema`, `$id` (root only), `$comment`, `deprecated`, `readOnly`, `writeOnly`,
//! `contentMediaType`, `contentEncoding`, keys starting with `x-`, and `format`: as in
//! JSON Schema 2020-12, `format` is an annotation and is **not asserted** (an `"email"`
//! format accepts any string).
//!
//! Refused: every other keyword (for example `unevaluatedProperties`, `$dynamicRef`,
//! `$anchor`, `nullable`, a nested `$id`), remote or non-`$defs` `$ref`s, and patterns using
//! backreferences, lookbehind, Unicode property escapes or undefined escapes.
//!
//! Patterns are ECMAScript regular expressions matched by code point (like the `u` flag),
//! as unanchored searches; see the `regex` submodule.
//!
//! Dialect differences, all on the strict side: keywords next to a `$ref` are applied
//! (2019-09 and later) even in a draft-07 schema, where a validator would ignore them; and
//! the draft-4 boolean `exclusiveMinimum`/`exclusiveMaximum` are honoured in any dialect.
//! The work budget is 1M units plus 16 per value and string byte of the instance, so it
//! grows with the request and never with the schema.

mod compiler;
pub(crate) mod json_value;
mod keyword_values;
mod keywords;
pub(crate) mod number;
mod regex;
mod validator;

use serde_json::Value;
use std::fmt;

/// Most violations one validation reports.
pub const MAX_VIOLATIONS: usize = 10;

/// A schema compiled for validation. Immutable; build it once per approved tool and keep
/// it (wrap it in an `Rc`/`Arc` to share).
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    nodes: Vec<keywords::Node>,
}

/// One reason an instance does not satisfy a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer to the offending value inside the instance (`""` is the whole value).
    pub instance_path: String,
    /// What is wrong, phrased so that a model can repair the call, e.g.
    /// `required property 'region' is missing`.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.instance_path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.instance_path, self.message)
        }
    }
}

/// Why a schema cannot be compiled. Every variant means "this tool cannot be checked":
/// the caller must refuse, never pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    /// The schema uses a keyword (or a `$ref` form, or a regex construct, named in
    /// `keyword`) that this validator does not implement.
    Unsupported {
        /// The keyword or construct, e.g. `unevaluatedProperties` or
        /// `pattern: lookahead (?= or (?!`.
        keyword: String,
        /// JSON pointer inside the schema where it appears.
        path: String,
    },
    /// The schema is malformed at `path` (a keyword with a value of the wrong kind, an
    /// invalid regex, a dangling `$ref`...).
    Invalid {
        /// JSON pointer inside the schema.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The schema nests deeper than the compiler accepts.
    TooDeep,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Unsupported { keyword, path } => write!(
                f,
                "schema uses `{keyword}` at '{path}', which toolseal's validator does not \
                 support; calls to this tool are refused. Rewrite the schema with supported \
                 keywords (see the schema module docs) or ask the server to publish one"
            ),
            SchemaError::Invalid { path, reason } => write!(
                f,
                "schema is invalid at '{path}': {reason}; calls to this tool are refused \
                 until the server publishes a valid schema"
            ),
            SchemaError::TooDeep => write!(
                f,
                "schema nests deeper than {} levels; calls to this tool are refused. Flatten \
                 the schema (use $defs and $ref)",
                compiler::MAX_SCHEMA_DEPTH
            ),
        }
    }
}

impl std::error::Error for SchemaError {}

/// Compiles `schema` (an `inputSchema` or `outputSchema`). Fails on anything outside the
/// supported subset.
pub fn compile(schema: &Value) -> Result<CompiledSchema, SchemaError> {
    let nodes = compiler::compile(schema)?;
    Ok(CompiledSchema { nodes })
}

impl CompiledSchema {
    /// Validates `instance`; on failure returns up to [`MAX_VIOLATIONS`] violations in
    /// document order. A value too deep or too costly to check fails with a violation that
    /// says so (fail closed).
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<Violation>> {
        validator::validate(&self.nodes, instance, MAX_VIOLATIONS)
    }

    /// Whether `instance` is valid (stops at the first violation).
    pub fn is_valid(&self, instance: &Value) -> bool {
        validator::validate(&self.nodes, instance, 1).is_ok()
    }

    /// Number of compiled schema nodes (a rough size measure).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
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
