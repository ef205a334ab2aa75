//! One ECDS file as it carries toolseal's plugin configuration: a discovery response whose
//! `TypedExtensionConfig` (`toolseal` or `toolseal-admin` by default) holds the wasm filter,
//! whose `configuration` is the plugin JSON as a string.
//!
//! Main design decision: a file is changed only as a whole and atomically — change one
//! server's entry, validate the new plugin JSON with the plugin's own parser, write a
//! temporary file in the same directory, `fsync`, `rename` over the old one — because Envoy
//! watches the path for moves and must never read a half-written or invalid file. Just before
//! the rename the file is read again: if someone else changed it meanwhile, the write is
//! refused instead of silently undoing their change. Which files are written together, and in
//! which order, is `fleet_config`'s business.

use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use toolseal_core::config::Config;
use toolseal_core::wire::json::parse_strict;

/// One read of the ECDS file.
#[derive(Debug, Clone)]
pub struct EcdsDocument {
    path: PathBuf,
    resource: String,
    /// The bytes read (compared again before a write).
    raw: Vec<u8>,
    /// The whole discovery response.
    document: Value,
    /// The plugin configuration (parsed from the resource's `configuration.value`).
    pub plugin_config: Value,
    /// The validated plugin configuration.
    pub config: Config,
    /// `version_info` of the document.
    pub version: String,
}

/// A change to one server's entry in `servers`.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryChange {
    /// Replace any `pin`/`lock` with this lock value (`{"fingerprint", "tools"}`).
    Lock(Value),
    /// Set `quarantine` to this reason.
    Quarantine(String),
    /// Remove `quarantine`.
    Release,
}

/// The plugin configuration's JSON text inside the resource.
fn config_text<'a>(document: &'a Value, resource: &str) -> Result<&'a str, String> {
    let entry = document
        .get("resources")
        .and_then(Value::as_array)
        .ok_or("it has no `resources` array (expected an ECDS discovery response)")?
        .iter()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(resource))
        .ok_or_else(|| format!("it has no resource named {resource:?}"))?;
    entry
        .pointer("/typed_config/config/configuration/value")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!("resource {resource:?} has no typed_config.config.configuration.value string")
        })
}

impl EcdsDocument {
    /// Reads and validates the file.
    pub fn read(path: &Path, resource: &str) -> Result<EcdsDocument, String> {
        let raw = std::fs::read(path)
            .map_err(|e| format!("cannot read the ECDS file {}: {e}", path.display()))?;
        let what = |e: String| format!("ECDS file {}: {e}", path.display());
        let document = parse_strict(&raw, 64).map_err(|e| what(format!("not valid JSON: {e}")))?;
        let text = config_text(&document, resource).map_err(what)?;
        let plugin_config = parse_strict(text.as_bytes(), 64)
            .map_err(|e| what(format!("the plugin configuration is not valid JSON: {e}")))?;
        let config = Config::from_value(&plugin_config).map_err(|e| what(e.to_string()))?;
        let version = match document.get("version_info") {
            Some(Value::String(v)) => v.clone(),
            _ => String::new(),
        };
        Ok(EcdsDocument {
            path: path.to_path_buf(),
            resource: resource.to_owned(),
            raw,
            document,
            plugin_config,
            config,
            version,
        })
    }

    /// The raw `servers.<id>` entry of the plugin configuration.
    pub fn server_entry(&self, server: &str) -> Option<&Map<String, Value>> {
        self.plugin_config
            .get("servers")
            .and_then(|s| s.get(server))
            .and_then(Value::as_object)
    }

    /// The file this document was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes of this document with `plugin_config` in its resource and the next
    /// `version_info`, and that version. Refused when `plugin_config` would not load.
    pub fn rendered(&self, plugin_config: &Value) -> Result<(Vec<u8>, String), String> {
        let text = serde_json::to_string(plugin_config).map_err(|e| e.to_string())?;
        Config::parse(text.as_bytes()).map_err(|e| {
            format!(
                "refused: the changed plugin configuration would not load ({}): {e}",
                self.path.display()
            )
        })?;
        let version = next_version(&self.version);
        let mut document = self.document.clone();
        set_config_text(&mut document, &self.resource, text)?;
        if let Some(root) = document.as_object_mut() {
            root.insert("version_info".into(), Value::String(version.clone()));
        }
        let mut bytes = serde_json::to_vec_pretty(&document).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        Ok((bytes, version))
    }

    /// Refused when the file no longer holds the bytes this document was read from (someone
    /// else wrote it since): writing now would undo their change.
    pub fn unchanged(&self) -> Result<(), String> {
        match std::fs::read(&self.path) {
            Ok(now) if now == self.raw => Ok(()),
            Ok(_) => Err(format!(
                "refused: {} changed while this action was prepared (another writer?); reload and review again",
                self.path.display()
            )),
            Err(e) => Err(format!("cannot read {} again: {e}", self.path.display())),
        }
    }

    /// Stages the bytes this document was read from, to put it back.
    pub fn stage_original(&self) -> Result<Staged, String> {
        Staged::new(&self.path, &self.raw)
    }
}

/// A copy of `plugin_config` with `change` applied to `servers.<server>`.
pub fn changed_config(
    plugin_config: &Value,
    server: &str,
    change: &EntryChange,
) -> Result<Value, String> {
    let mut config = plugin_config.clone();
    let root = config
        .as_object_mut()
        .ok_or("the plugin configuration is not a JSON object")?;
    let servers = root
        .entry("servers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("the plugin configuration's `servers` is not an object")?;
    let entry = servers
        .entry(server)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("servers.{server} is not an object"))?;
    match change {
        EntryChange::Lock(lock) => {
            entry.remove("pin");
            entry.insert("lock".into(), lock.clone());
        }
        EntryChange::Quarantine(reason) => {
            entry.insert("quarantine".into(), Value::String(reason.clone()));
        }
        EntryChange::Release => {
            entry.remove("quarantine");
        }
    }
    if entry.is_empty() {
        servers.remove(server);
    }
    Ok(config)
}

fn set_config_text(document: &mut Value, resource: &str, text: String) -> Result<(), String> {
    let slot = document
        .get_mut("resources")
        .and_then(Value::as_array_mut)
        .and_then(|list| {
            list.iter_mut()
                .find(|r| r.get("name").and_then(Value::as_str) == Some(resource))
        })
        .and_then(|r| r.pointer_mut("/typed_config/config/configuration/value"))
        .ok_or_else(|| format!("resource {resource:?} vanished from the document"))?;
    *slot = Value::String(text);
    Ok(())
}

/// The next `version_info`: a number counts up; anything else gets a `.console-N` suffix
/// counted up (Envoy only needs the value to change).
pub fn next_version(current: &str) -> String {
    if let Ok(n) = current.parse::<u64>() {
        return n.saturating_add(1).to_string();
    }
    if let Some((base, n)) = current.rsplit_once(".console-")
        && let Ok(n) = n.parse::<u64>()
    {
        return format!("{base}.console-{}", n.saturating_add(1));
    }
    if current.is_empty() {
        "1".to_owned()
    } else {
        format!("{current}.console-1")
    }
}

/// A new content for a file, written and synced beside it, not yet in place: [`Staged::commit`]
/// renames it over the file (the one step Envoy's file watch sees); dropped uncommitted, it
/// is removed.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    path: PathBuf,
}

impl Staged {
    /// Writes `bytes` to a temporary file in `path`'s directory, with the mode of the file it
    /// will replace (Envoy may run as another user), and syncs it.
    pub fn new(path: &Path, bytes: &[u8]) -> Result<Staged, String> {
        use std::os::unix::fs::PermissionsExt;
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let staged = Staged {
            temp: dir.join(format!(".{name}.console-{}.tmp", std::process::id())),
            path: path.to_path_buf(),
        };
        let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o777);
        let mut file = std::fs::File::create(&staged.temp)
            .map_err(|e| format!("cannot write {}: {e}", staged.temp.display()))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .and_then(|()| file.write_all(bytes))
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", staged.temp.display()))?;
        Ok(staged)
    }

    /// The file it will replace.
    pub fn target(&self) -> &Path {
        &self.path
    }

    /// Renames the staged file over its target.
    pub fn commit(self) -> Result<(), String> {
        std::fs::rename(&self.temp, &self.path)
            .map_err(|e| format!("cannot rename over {}: {e}", self.path.display()))?;
        // The rename is durable once the directory is synced; failing that, the new file is
        // still in place, so this is not an error for the action.
        if let Some(dir) = self.path.parent()
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a commit there is nothing left to remove.
        let _ = std::fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ecds(config: &Value, version: &str) -> Value {
        json!({"version_info": version, "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": "toolseal",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
                "config": {"name": "toolseal", "root_id": "toolseal",
                    "vm_config": {"vm_id": "toolseal", "runtime": "envoy.wasm.runtime.v8",
                                  "code": {"local": {"filename": "toolseal_plugin.wasm"}}},
                    "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue",
                                      "value": config.to_string()}}}}]})
    }

    fn temp_file(tag: &str, content: &Value) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolseal-ecds-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("toolseal.ecds.json");
        std::fs::write(&path, serde_json::to_vec(content).unwrap()).unwrap();
        path
    }

    #[test]
    fn entry_changes_keep_the_other_settings() {
        let config = json!({"posture": "strict", "servers": {"demo": {"pin": "sha256:aa", "results": "enforce"}}});
        let lock = json!({"fingerprint": "sha256:bb", "tools": []});
        let locked = changed_config(&config, "demo", &EntryChange::Lock(lock.clone())).unwrap();
        assert_eq!(
            locked["servers"]["demo"],
            json!({"lock": lock, "results": "enforce"})
        );
        let held = changed_config(
            &locked,
            "demo",
            &EntryChange::Quarantine("incident 7".into()),
        )
        .unwrap();
        assert_eq!(held["servers"]["demo"]["quarantine"], "incident 7");
        let released = changed_config(&held, "demo", &EntryChange::Release).unwrap();
        assert_eq!(released, locked);
        let fresh =
            changed_config(&json!({}), "new", &EntryChange::Quarantine("r".into())).unwrap();
        assert_eq!(fresh, json!({"servers": {"new": {"quarantine": "r"}}}));
        assert_eq!(
            changed_config(&fresh, "new", &EntryChange::Release).unwrap(),
            json!({"servers": {}})
        );
    }

    #[test]
    fn versions_count_up() {
        assert_eq!(next_version("7"), "8");
        assert_eq!(next_version(""), "1");
        assert_eq!(next_version("v1.2"), "v1.2.console-1");
        assert_eq!(next_version("v1.2.console-9"), "v1.2.console-10");
    }

    #[test]
    fn unusable_files_are_refused_with_the_reason() {
        let path = temp_file("bad", &json!({"resources": [{"name": "other"}]}));
        let err = EcdsDocument::read(&path, "toolseal").unwrap_err();
        assert!(err.contains("no resource named \"toolseal\""), "{err}");
        let bad_config = temp_file("badcfg", &ecds(&json!({"posture": "lenient"}), "1"));
        let err = EcdsDocument::read(&bad_config, "toolseal").unwrap_err();
        assert!(err.contains("field `posture`"), "{err}");
        for p in [path, bad_config] {
            std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
        }
    }
}
