//! The decisions with no engine around them: policy rules and caller-scoped lists, the JSON
//! Schema subset, first-contact screening, drift classification, the schema_status lifecycle.

#[path = "../support/mod.rs"]
mod support;

mod caller_lists;
mod drift;
mod rules;
mod schema;
mod screening;
mod screening_corpus;
mod status;
