//! Tool digests and the server fingerprint (SPEC section 1).

use serde_json::Value;

/// A fingerprinted field of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FingerprintField {
    /// `name`
    Name,
    /// `description`
    Description,
    /// `inputSchema`
    InputSchema,
    /// `title`
    Title,
    /// `annotations`
    Annotations,
    /// `outputSchema`
    OutputSchema,
    /// `execution`
    Execution,
    /// `icons`
    Icons,
}
