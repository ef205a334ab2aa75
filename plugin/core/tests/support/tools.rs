//! Tool definitions several stories serve (the rug pull of `deploy_preview` among them), and
//! the fingerprint of a set.

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

/// `deploy_preview(branch, region)`, with `region` required after the rug pull.
pub fn deploy(required_region: bool) -> Value {
    let mut required = vec!["branch"];
    if required_region {
        required.push("region");
    }
    json!({"name": "deploy_preview", "description": "Deploy the current branch to a preview environment.",
        "inputSchema": {"type": "object", "properties": {"branch": {"type": "string"},
        "region": {"type": "string"}}, "required": required}})
}

/// The honest server: `deploy(false)` and `weather()`.
pub fn honest() -> Vec<Value> {
    vec![deploy(false), weather()]
}

/// The same server after its rug pull: `region` now required.
pub fn rug_pull() -> Vec<Value> {
    vec![deploy(true), weather()]
}

/// The fingerprint of `tools` under the default fields.
pub fn fp(tools: &[Value]) -> String {
    digest_tools(&Value::Array(tools.to_vec()), &FingerprintFields::default())
        .unwrap()
        .fingerprint()
}
