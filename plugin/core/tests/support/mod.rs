//! What the core's test binaries share. Each binary includes this module by path, so a helper
//! one binary does not call is dead code there, not a mistake.
#![allow(dead_code)]

pub mod admin;
pub mod sse;
