//! Argument validation against an approved `inputSchema`.
