//! Incremental Server-Sent Events parsing.
