//! `--store etcd=URL[,prefix=P]`: which fleet store the guard reaches, and the `store` block
//! it puts in the plugin config for it.
//!
//! Main design decision: one place says where the fleet is. The guard writes
//! `"store": {"etcd": {"cluster": "stdio", "prefix": P}}` into the config (the cluster names
//! an Envoy cluster, which a stdio guard has none of: the URL is the guard's own), and a
//! config that already names a store with another prefix is refused rather than silently
//! overridden: a guard must never share baselines with a fleet its operator did not mean.

use crate::store_client::StoreClient;
use serde_json::{Map, Value, json};

/// The Envoy cluster name the guard writes (other hosts ignore it).
pub const STDIO_CLUSTER: &str = "stdio";
/// The prefix etcd keys get without `prefix=` (the core's default).
pub const DEFAULT_PREFIX: &str = "/toolseal/";

/// A parsed `--store` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOption {
    /// Where etcd answers.
    pub client: StoreClient,
    /// The URL as given (for messages).
    pub url: String,
    /// `prefix=`, if given.
    pub prefix: Option<String>,
}

impl StoreOption {
    /// Reads `etcd=URL[,prefix=P]`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut parts = spec.split(',');
        let first = parts.next().unwrap_or_default();
        let Some(url) = first.strip_prefix("etcd=") else {
            return Err(format!(
                "--store {spec:?}: give etcd=URL[,prefix=P] (etcd is the only fleet store)"
            ));
        };
        let client = StoreClient::parse(url).map_err(|e| format!("--store: {e}"))?;
        let mut prefix = None;
        for part in parts {
            match part.split_once('=') {
                Some(("prefix", p)) if p.starts_with('/') && p.ends_with('/') => {
                    prefix = Some(p.to_string());
                }
                Some(("prefix", p)) => {
                    return Err(format!(
                        "--store: the prefix {p:?} must start and end with '/' (e.g. /toolseal/team/)"
                    ));
                }
                _ => return Err(format!("--store: unknown part {part:?} (only prefix=P)")),
            }
        }
        Ok(StoreOption {
            client,
            url: url.to_string(),
            prefix,
        })
    }

    /// `config_json` (the plugin config; empty for the defaults) with this store in it. A
    /// config naming a store already is kept as it is (its `timeout_ms`, `sync_ms`) when its
    /// prefix is this one, and refused otherwise.
    pub fn into_config(&self, config_json: &str) -> Result<String, String> {
        let mut config = match config_json.trim().is_empty() {
            true => Map::new(),
            false => match toolseal_core::wire::json::parse_strict(config_json.as_bytes(), 64) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err("the config is not a JSON object".into()),
                Err(e) => return Err(format!("the config is not JSON: {e}")),
            },
        };
        let wanted = self.prefix.as_deref().unwrap_or(DEFAULT_PREFIX);
        if let Some(existing) = config.get("store") {
            let theirs = existing.get("etcd").map(|etcd| {
                etcd.get("prefix")
                    .and_then(Value::as_str)
                    .unwrap_or(DEFAULT_PREFIX)
            });
            return match theirs {
                Some(theirs) if theirs == wanted => Ok(Value::Object(config).to_string()),
                Some(theirs) => Err(format!(
                    "the config's store has prefix {theirs:?} but --store says {wanted:?}: give the prefix in one place (drop the config's \"store\" or --store's prefix=)"
                )),
                None => Err(format!(
                    "the config's \"store\" is not an etcd store: {existing}; drop it to use --store"
                )),
            };
        }
        config.insert(
            "store".into(),
            json!({"etcd": {"cluster": STDIO_CLUSTER, "prefix": wanted}}),
        );
        Ok(Value::Object(config).to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_option_and_refuses_what_it_does_not_know() {
        let o = StoreOption::parse("etcd=http://127.0.0.1:2379,prefix=/toolseal/team/").unwrap();
        assert_eq!(o.prefix.as_deref(), Some("/toolseal/team/"));
        assert!(
            StoreOption::parse("redis=http://x:1")
                .unwrap_err()
                .contains("etcd=URL")
        );
        assert!(
            StoreOption::parse("etcd=http://x:1,prefix=team")
                .unwrap_err()
                .contains("start and end")
        );
        assert!(
            StoreOption::parse("etcd=http://x:1,ttl=3")
                .unwrap_err()
                .contains("unknown part")
        );
    }

    #[test]
    fn adds_the_store_or_refuses_another_one() {
        let o = StoreOption::parse("etcd=http://127.0.0.1:2379,prefix=/t/").unwrap();
        let config: Value = serde_json::from_str(&o.into_config("").unwrap()).unwrap();
        assert_eq!(
            config,
            json!({"store": {"etcd": {"cluster": "stdio", "prefix": "/t/"}}})
        );
        let same =
            r#"{"posture":"strict","store":{"etcd":{"cluster":"c","prefix":"/t/","sync_ms":200}}}"#;
        let kept: Value = serde_json::from_str(&o.into_config(same).unwrap()).unwrap();
        assert_eq!(kept["store"]["etcd"]["sync_ms"], 200);
        let other = r#"{"store":{"etcd":{"cluster":"c","prefix":"/prod/"}}}"#;
        assert!(o.into_config(other).unwrap_err().contains("\"/prod/\""));
        assert!(
            o.into_config(r#"{"a":1,"a":2}"#)
                .unwrap_err()
                .contains("not JSON")
        );
    }
}
