//! The decisions with no engine around them: policy rules and caller-scoped lists, the JSON
//! Schema subset, first-contact screening, drift classification, the schema_status lifecycle.
// A test that cannot go on fails by panicking, and the test data is its own: the
// workspace's denials of panics and unchecked indexing guard the product's code.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

#[path = "../support/mod.rs"]
mod support;

mod caller_lists;
mod screening;
mod screening_corpus;
mod surface_drift;
