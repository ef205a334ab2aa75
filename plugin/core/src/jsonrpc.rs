//! JSON-RPC 2.0 / MCP frames.
