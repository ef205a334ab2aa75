//! `toolseal-stdio`: toolseal between an MCP client and a local stdio MCP server, on
//! wasmtime, through the `guard` world of `wit/toolseal.wit`.
//!
//! Main design decision: the host decides nothing. It embeds the very component any other
//! embedding would load ([`policy`]), gives it a versioned key-value store persisted to one
//! state file ([`state_file`]), an audit sink ([`audit_sink`]), a clock and, with `--store`,
//! the way to the fleet's etcd ([`store_option`], [`store_client`]), and moves lines
//! between the client, the policy and the child process ([`stdio`]). The admin subcommands
//! instantiate the same component on the same state file, so the lifecycle code that decides
//! an approval is the one that enforces it.

pub mod audit_sink;
mod bindings;
pub mod cli;
pub mod compile_cache;
pub mod host_state;
pub mod line_reader;
pub mod persistent;
pub mod policy;
pub mod state_file;
pub mod stdio;
pub mod store_client;
pub mod store_option;

pub use bindings::toolseal::policy::state::{Entry, Expect, SetError};
pub use bindings::{AdminError, LocalReply, MessageContext, Transport, Verdict};
