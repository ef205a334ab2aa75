//! Tool definitions several stories serve, and the fingerprint of a set.

use serde_json::{Value, json};
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools};

/// `get_weather(city)`.
pub fn weather() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

/// `deploy_preview(branch)`, before any rug pull.
pub fn deploy_v1() -> Value {
    json!({"name": "deploy_preview", "description": "Deploy the current branch to a preview environment.",
        "inputSchema": {"type": "object", "properties": {"branch": {"type": "string"}},
        "required": ["branch"], "additionalProperties": false}})
}

/// The fingerprint of `tools` under the default fields.
pub fn fp(tools: &[Value]) -> String {
    digest_tools(&Value::Array(tools.to_vec()), &FingerprintFields::default())
        .unwrap()
        .fingerprint()
}
