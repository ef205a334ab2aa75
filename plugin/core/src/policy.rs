//! The policy domain: what an approved tool surface is and what may change it.
//!
//! Main design decision: these modules know nothing of HTTP, hosts or the order of callbacks.
//! They decide on values: a tool set's digests and fingerprint, a schema's verdict on
//! arguments, a drift's classes and reach, a server's lifecycle transition, first-contact
//! findings, and the call rules.

pub mod approved;
pub mod containment;
pub mod drift;
pub mod fingerprint;
pub mod rules;
pub mod schema;
pub mod screening;
pub mod section;
pub mod status;
pub mod uri_template;
pub mod views;
