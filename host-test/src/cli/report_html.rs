//! `toolseal report OLD NEW`: the classified drift of two tool sets as one HTML page a
//! reviewer reads before approving (`toolseal report OLD NEW > report.html`).
//!
//! Main design decision: the page is the console's review page (`toolseal_console::
//! report_html`, re-exported here), so a reviewer reads the same page from the command line
//! and in the console; this module reads the files and the configuration. Exit codes are
//! those of `toolseal diff` (0 same, 1 additive, 2 otherwise), so one command can gate a
//! release and attach the page.

mod command;
mod replayed;

pub use command::{USAGE, run};
pub use toolseal_console::report_html::*;
