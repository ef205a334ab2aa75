//! The fleet file: which Envoys the console watches (each one's admin URL and where its
//! bearer token comes from), the two ECDS files that carry the fleet's plugin configuration
//! (the agents' listener's and the admin listener's), where each server's candidate tools can
//! be listed when no instance has them, and the console's audit log.
//!
//! Main design decision: the file names token *sources* (a file or an environment variable),
//! never tokens, and the token is read again at each use, so the file can live in git and a
//! rotated token is picked up without a restart. Unknown keys are refused and every error
//! names the field. A token would cross the network in clear over plain HTTP, so an admin URL
//! whose host is not loopback is refused unless the instance says `"plain_http": true`
//! (reach a remote admin listener through a tunnel instead).

use super::http_client::HttpUrl;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolseal_core::wire::json::parse_strict;

/// Longest instance name.
const MAX_NAME_CHARS: usize = 64;

/// Where an instance's admin bearer token is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// The first line of this file.
    File(PathBuf),
    /// This environment variable of the console's process.
    Env(String),
}

impl TokenSource {
    /// Reads the token now (trailing whitespace trimmed); the error names the source, never
    /// the token.
    pub fn read(&self) -> Result<String, String> {
        let token = match self {
            TokenSource::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?,
            TokenSource::Env(name) => std::env::var(name).map_err(|_| {
                format!("the environment variable {name} holding the token is not set")
            })?,
        };
        let token = token.lines().next().unwrap_or_default().trim().to_owned();
        if token.is_empty() {
            return Err(format!("the token source {} is empty", self.describe()));
        }
        Ok(token)
    }

    /// `file PATH` or `env NAME`, for messages.
    pub fn describe(&self) -> String {
        match self {
            TokenSource::File(path) => format!("file {}", path.display()),
            TokenSource::Env(name) => format!("env {name}"),
        }
    }
}

/// One Envoy of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Its name on the page and in the audit log.
    pub name: String,
    /// The toolseal admin API's base URL, prefix included (`http://127.0.0.1:9902/toolseal/`).
    pub admin_url: HttpUrl,
    /// Where its bearer token comes from.
    pub token: TokenSource,
}

/// Where a server's live tool set can be listed (MCP `tools/list`), to build the lock an
/// approval writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSource {
    /// The server's MCP endpoint (Streamable HTTP).
    pub tools_url: HttpUrl,
}

/// The parsed fleet file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// The Envoys, in file order.
    pub instances: Vec<Instance>,
    /// The agents' listener's ECDS file (a discovery response) holding the plugin
    /// configuration without `admin`.
    pub ecds_file: PathBuf,
    /// The name of the `TypedExtensionConfig` in it (default `toolseal`).
    pub ecds_resource: String,
    /// The admin listener's ECDS file: the same configuration plus its `admin` block.
    pub admin_ecds_file: PathBuf,
    /// The name of the `TypedExtensionConfig` in it (default `toolseal-admin`).
    pub admin_ecds_resource: String,
    /// Per-server candidate sources, by server id.
    pub servers: BTreeMap<String, ServerSource>,
    /// The console's append-only audit log (JSON lines).
    pub audit_log: PathBuf,
    /// The operator identity named in the file, if any.
    pub operator: Option<String>,
}

fn field_err(field: &str, message: impl std::fmt::Display) -> String {
    format!("fleet file: field `{field}`: {message}")
}

fn object<'a>(value: &'a Value, field: &str) -> Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| field_err(field, "expected a JSON object"))
}

fn known_keys(map: &Map<String, Value>, field: &str, known: &[&str]) -> Result<(), String> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(field_err(
            &join(field, key),
            format!("unknown key; expected one of {}", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_owned()
    } else {
        format!("{field}.{key}")
    }
}

fn text<'a>(map: &'a Map<String, Value>, field: &str, key: &str) -> Result<&'a str, String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(field_err(&join(field, key), "expected a non-empty string")),
        None => Err(field_err(&join(field, key), "missing")),
    }
}

fn path_in(base: &Path, text: &str) -> PathBuf {
    let path = Path::new(text);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

impl Fleet {
    /// Reads and validates the fleet file at `path`; relative paths in it are relative to
    /// its directory.
    pub fn load(path: &Path) -> Result<Fleet, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read the fleet file {}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Fleet::parse(&bytes, base)
    }

    /// Validates a fleet file's bytes; `base` resolves relative paths.
    pub fn parse(bytes: &[u8], base: &Path) -> Result<Fleet, String> {
        let value =
            parse_strict(bytes, 32).map_err(|e| format!("fleet file: not valid JSON: {e}"))?;
        let root = object(&value, "")?;
        known_keys(
            root,
            "",
            &[
                "instances",
                "plugin_config",
                "servers",
                "audit_log",
                "operator",
            ],
        )?;
        let instances = match root.get("instances") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| instance(item, &format!("instances[{i}]"), base))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(field_err("instances", "expected a non-empty array")),
            None => return Err(field_err("instances", "missing: list every Envoy to watch")),
        };
        for (i, inst) in instances.iter().enumerate() {
            if instances
                .iter()
                .take(i)
                .any(|other| other.name == inst.name)
            {
                return Err(field_err(
                    &format!("instances[{i}].name"),
                    format!("{:?} is used twice; names must be unique", inst.name),
                ));
            }
        }
        let config = object(
            root.get("plugin_config")
                .ok_or_else(|| field_err("plugin_config", "missing: name the two ECDS files"))?,
            "plugin_config",
        )?;
        known_keys(
            config,
            "plugin_config",
            &["ecds_file", "resource", "admin_ecds_file", "admin_resource"],
        )?;
        let ecds_file = path_in(base, text(config, "plugin_config", "ecds_file")?);
        if !config.contains_key("admin_ecds_file") {
            return Err(field_err(
                "plugin_config.admin_ecds_file",
                "missing: name the admin listener's ECDS file (the same plugin configuration plus \
                 its `admin` block); the console rewrites it with `ecds_file`, so that the two \
                 plugin instances, which share one state, never apply different pins or quarantines",
            ));
        }
        let admin_ecds_file = path_in(base, text(config, "plugin_config", "admin_ecds_file")?);
        if admin_ecds_file == ecds_file {
            return Err(field_err(
                "plugin_config.admin_ecds_file",
                "is `ecds_file` again; each ECDS subscription holds one resource, in a file of its own",
            ));
        }
        let resource_name = |key: &str, default: &str| match config.get(key) {
            None => Ok(default.to_owned()),
            Some(_) => text(config, "plugin_config", key).map(str::to_owned),
        };
        let ecds_resource = resource_name("resource", "toolseal")?;
        let admin_ecds_resource = resource_name("admin_resource", "toolseal-admin")?;
        let servers = match root.get("servers") {
            None => BTreeMap::new(),
            Some(value) => object(value, "servers")?
                .iter()
                .map(|(id, entry)| Ok((id.clone(), server(entry, &join("servers", id))?)))
                .collect::<Result<_, String>>()?,
        };
        let audit_log = path_in(base, text(root, "", "audit_log")?);
        let operator = match root.get("operator") {
            None => None,
            Some(_) => Some(text(root, "", "operator")?.to_owned()),
        };
        Ok(Fleet {
            instances,
            ecds_file,
            ecds_resource,
            admin_ecds_file,
            admin_ecds_resource,
            servers,
            audit_log,
            operator,
        })
    }

    /// The instance called `name`.
    pub fn instance(&self, name: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.name == name)
    }
}

fn instance(value: &Value, field: &str, base: &Path) -> Result<Instance, String> {
    let map = object(value, field)?;
    known_keys(map, field, &["name", "admin_url", "token", "plain_http"])?;
    let name = text(map, field, "name")?;
    let name_ok = name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !name_ok {
        return Err(field_err(
            &join(field, "name"),
            format!("use at most {MAX_NAME_CHARS} letters, digits, `-`, `_` or `.`"),
        ));
    }
    let admin_url = HttpUrl::parse(text(map, field, "admin_url")?)
        .map_err(|e| field_err(&join(field, "admin_url"), e))?;
    let plain_http = match map.get("plain_http") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(field_err(
                &join(field, "plain_http"),
                "expected true or false",
            ));
        }
    };
    if !admin_url.is_loopback() && !plain_http {
        return Err(field_err(
            &join(field, "admin_url"),
            format!(
                "{} is not a loopback address: the bearer token would cross the network in \
                 clear; reach the admin listener through a tunnel (ssh -L, kubectl \
                 port-forward) or set \"plain_http\": true to accept that",
                admin_url.host
            ),
        ));
    }
    let token = token_source(
        map.get("token").ok_or_else(|| {
            field_err(
                &join(field, "token"),
                "missing: {\"file\": PATH} or {\"env\": NAME}",
            )
        })?,
        &join(field, "token"),
        base,
    )?;
    Ok(Instance {
        name: name.to_owned(),
        admin_url,
        token,
    })
}

fn token_source(value: &Value, field: &str, base: &Path) -> Result<TokenSource, String> {
    let map = object(value, field)?;
    known_keys(map, field, &["file", "env"])?;
    match (map.contains_key("file"), map.contains_key("env")) {
        (true, false) => Ok(TokenSource::File(path_in(base, text(map, field, "file")?))),
        (false, true) => Ok(TokenSource::Env(text(map, field, "env")?.to_owned())),
        _ => Err(field_err(
            field,
            "give exactly one of {\"file\": PATH} or {\"env\": NAME}; the token itself never goes in the fleet file",
        )),
    }
}

fn server(value: &Value, field: &str) -> Result<ServerSource, String> {
    let map = object(value, field)?;
    known_keys(map, field, &["tools_url"])?;
    let tools_url = HttpUrl::parse(text(map, field, "tools_url")?)
        .map_err(|e| field_err(&join(field, "tools_url"), e))?;
    Ok(ServerSource { tools_url })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Fleet, String> {
        Fleet::parse(text.as_bytes(), Path::new("/etc/toolseal"))
    }

    const GOOD: &str = r#"{
        "instances": [
            {"name": "envoy-0", "admin_url": "http://127.0.0.1:9902/toolseal/", "token": {"file": "tokens/a"}},
            {"name": "envoy-1", "admin_url": "http://[::1]:9903/toolseal/", "token": {"env": "TS_TOKEN"}},
            {"name": "edge", "admin_url": "http://10.0.0.7:9902/toolseal/", "token": {"env": "T"}, "plain_http": true}
        ],
        "plugin_config": {"ecds_file": "ecds/toolseal.json", "admin_ecds_file": "/etc/envoy/admin.json",
                          "admin_resource": "ts-admin"},
        "servers": {"demo": {"tools_url": "http://127.0.0.1:8000/mcp"}},
        "audit_log": "/var/log/console.jsonl",
        "operator": "alice"
    }"#;

    #[test]
    fn a_complete_fleet_file_parses_with_paths_resolved() {
        let fleet = parse(GOOD).unwrap();
        assert_eq!(fleet.instances.len(), 3);
        let first = &fleet.instances[0];
        assert_eq!(first.name, "envoy-0");
        assert_eq!(
            (
                first.admin_url.host.as_str(),
                first.admin_url.port,
                first.admin_url.path.as_str()
            ),
            ("127.0.0.1", 9902, "/toolseal/")
        );
        assert_eq!(
            first.token,
            TokenSource::File("/etc/toolseal/tokens/a".into())
        );
        assert_eq!(fleet.instances[1].admin_url.host, "::1");
        assert_eq!(
            fleet.instances[1].token,
            TokenSource::Env("TS_TOKEN".into())
        );
        assert_eq!(
            fleet.ecds_file,
            PathBuf::from("/etc/toolseal/ecds/toolseal.json")
        );
        assert_eq!(fleet.ecds_resource, "toolseal");
        assert_eq!(
            fleet.admin_ecds_file,
            PathBuf::from("/etc/envoy/admin.json")
        );
        assert_eq!(fleet.admin_ecds_resource, "ts-admin");
        assert_eq!(fleet.servers["demo"].tools_url.port, 8000);
        assert_eq!(fleet.audit_log, PathBuf::from("/var/log/console.jsonl"));
        assert_eq!(fleet.operator.as_deref(), Some("alice"));
    }

    #[test]
    fn bad_fleet_files_are_refused_naming_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"instances": [], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances`: expected a non-empty array",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "audit_log": "a"}"#,
                "field `plugin_config`: missing",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a", "colour": 1}"#,
                "field `colour`: unknown key",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": "s3cret"}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances[0].token`: expected a JSON object",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T", "file": "f"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances[0].token`: give exactly one of",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://10.1.2.3:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances[0].admin_url`: 10.1.2.3 is not a loopback address",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "https://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "only http:// URLs are supported",
            ),
            (
                r#"{"instances": [{"name": "a b", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances[0].name`: use at most 64",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}, {"name": "a", "admin_url": "http://127.0.0.1:2/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "field `instances[1].name`: \"a\" is used twice",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}}"#,
                "field `audit_log`: missing",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x"}, "audit_log": "a"}"#,
                "field `plugin_config.admin_ecds_file`: missing: name the admin listener's ECDS file",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "./x"}, "audit_log": "a"}"#,
                "field `plugin_config.admin_ecds_file`: is `ecds_file` again",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y", "admin_resource": ""}, "audit_log": "a"}"#,
                "field `plugin_config.admin_resource`: expected a non-empty string",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y", "admin_ecds": "z"}, "audit_log": "a"}"#,
                "field `plugin_config.admin_ecds`: unknown key",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a", "servers": {"demo": {"url": "http://x/"}}}"#,
                "field `servers.demo.url`: unknown key",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://u:p@127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a"}"#,
                "credentials in the URL are not accepted",
            ),
            (
                r#"{"instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/", "token": {"env": "T"}}], "plugin_config": {"ecds_file": "x", "admin_ecds_file": "y"}, "audit_log": "a", "audit_log": "b"}"#,
                "not valid JSON",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(
                err.contains(expected),
                "{text}\n  gave: {err}\n  expected: {expected}"
            );
        }
    }

    #[test]
    fn a_token_is_read_at_use_and_an_empty_source_is_refused() {
        let dir = std::env::temp_dir().join(format!("toolseal-fleet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret-token\n").unwrap();
        assert_eq!(
            TokenSource::File(file.clone()).read().unwrap(),
            "s3cret-token"
        );
        std::fs::write(&file, "rotated\n").unwrap();
        assert_eq!(TokenSource::File(file.clone()).read().unwrap(), "rotated");
        std::fs::write(&file, "\n").unwrap();
        let err = TokenSource::File(file.clone()).read().unwrap_err();
        assert!(err.contains("is empty"), "{err}");
        let missing = TokenSource::Env("TOOLSEAL_CONSOLE_TEST_UNSET_VARIABLE".into()).read();
        assert!(missing.unwrap_err().contains("is not set"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
