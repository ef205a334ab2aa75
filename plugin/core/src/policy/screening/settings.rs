//! The `screening` section of the plugin config.
//!
//! Main design decision: every switch is named after what it allows, defaults are the strict
//! side (screening on, URLs flagged), and the section is parsed field by field like the rest
//! of the config so that a bad value names its field and an unknown key is refused.

use super::Kind;
use serde_json::Value;

/// Largest `max_description_chars` a config may set (also bounds the work per string).
pub const MAX_DESCRIPTION_CHARS_LIMIT: usize = 65_536;

/// First-contact screening settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreeningConfig {
    /// Screen first contacts at all (off: plain trust on first use under discovery).
    pub enabled: bool,
    /// Longest description, title or schema string (in characters) that is not flagged.
    pub max_description_chars: usize,
    /// Do not flag URLs in model-facing prose.
    pub allow_urls: bool,
    /// URL prefixes that are never flagged (e.g. `https://docs.example.com/`).
    pub url_prefixes: Vec<String>,
    /// Finding kinds that are not reported at all.
    pub ignore: Vec<Kind>,
}

impl Default for ScreeningConfig {
    fn default() -> Self {
        ScreeningConfig {
            enabled: true,
            max_description_chars: 16_384,
            allow_urls: false,
            url_prefixes: Vec::new(),
            ignore: Vec::new(),
        }
    }
}

/// A `screening` setting that cannot load: the dotted field to fix and what is expected (the
/// config reports it as its own error, so this module needs nothing of the config's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    /// Dotted path of the bad field (`screening.ignore[1]`).
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

const KEYS: [&str; 5] = [
    "enabled",
    "max_description_chars",
    "allow_urls",
    "url_prefixes",
    "ignore",
];

fn err(key: &str, message: impl Into<String>) -> SettingError {
    let field = if key.is_empty() {
        "screening".to_string()
    } else {
        format!("screening.{key}")
    };
    SettingError {
        field,
        message: message.into(),
    }
}

impl ScreeningConfig {
    /// Parses and validates the `screening` object of a config document.
    pub fn from_json(value: &Value) -> Result<ScreeningConfig, SettingError> {
        let obj = value
            .as_object()
            .ok_or_else(|| err("", "expected a JSON object"))?;
        if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                key,
                format!("unknown key; expected one of: {}", KEYS.join(", ")),
            ));
        }
        let mut config = ScreeningConfig::default();
        if let Some(v) = obj.get("enabled") {
            config.enabled = v
                .as_bool()
                .ok_or_else(|| err("enabled", "expected true or false"))?;
        }
        if let Some(v) = obj.get("allow_urls") {
            config.allow_urls = v
                .as_bool()
                .ok_or_else(|| err("allow_urls", "expected true or false"))?;
        }
        if let Some(v) = obj.get("max_description_chars") {
            config.max_description_chars = match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if (1..=MAX_DESCRIPTION_CHARS_LIMIT).contains(&n) => n,
                _ => {
                    return Err(err(
                        "max_description_chars",
                        format!("expected a whole number from 1 to {MAX_DESCRIPTION_CHARS_LIMIT}"),
                    ));
                }
            };
        }
        if let Some(v) = obj.get("url_prefixes") {
            config.url_prefixes = url_prefixes(v)?;
        }
        if let Some(v) = obj.get("ignore") {
            config.ignore = kinds(v)?;
        }
        Ok(config)
    }
}

fn url_prefixes(v: &Value) -> Result<Vec<String>, SettingError> {
    let items = v
        .as_array()
        .ok_or_else(|| err("url_prefixes", "expected an array of strings"))?;
    let mut out = Vec::new();
    for item in items {
        let prefix = item
            .as_str()
            .ok_or_else(|| err("url_prefixes", "expected an array of strings"))?;
        let lower = prefix.to_ascii_lowercase();
        // A bare scheme would allow every URL: ask for the host and the path that ends it.
        let host_part = lower
            .strip_prefix("https://")
            .or_else(|| lower.strip_prefix("http://"));
        match host_part {
            Some(rest) if rest.contains('/') && !rest.starts_with('/') => out.push(lower),
            _ => {
                return Err(err(
                    "url_prefixes",
                    format!(
                        "{prefix:?} must start with http:// or https://, name a host and end the host with '/'"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn kinds(v: &Value) -> Result<Vec<Kind>, SettingError> {
    let items = v
        .as_array()
        .ok_or_else(|| err("ignore", "expected an array of finding kinds"))?;
    let mut out = Vec::new();
    for item in items {
        let name = item
            .as_str()
            .ok_or_else(|| err("ignore", "expected an array of finding kinds"))?;
        let kind = Kind::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            err(
                "ignore",
                format!(
                    "unknown finding kind {name:?}; expected one of: {}",
                    names.join(", ")
                ),
            )
        })?;
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    Ok(out)
}
