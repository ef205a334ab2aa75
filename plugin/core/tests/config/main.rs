//! The configuration: parse → validate, and docs/config.md held to the parser.

#[path = "../support/mod.rs"]
mod support;

mod doc;
mod parse;
