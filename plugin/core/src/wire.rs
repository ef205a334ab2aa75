//! Wire formats: how MCP traffic is framed, parsed strictly and bounded before any decision.
//!
//! Main design decision: every untrusted byte goes through these parsers, which accept only
//! unambiguous input and never look at toolseal's state or config.

pub mod canonical;
pub mod envelope;
pub mod etcd;
pub mod first_value;
pub mod json;
pub mod json_span;
pub mod jsonrpc;
pub mod order;
pub mod revision;
pub mod sse;
