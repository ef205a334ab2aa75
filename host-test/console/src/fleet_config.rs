//! The fleet's plugin configuration as its two ECDS resources: the agents' listener's
//! (`toolseal`, the document without `admin`) and the admin listener's (`toolseal-admin`, the
//! same document plus its `admin` block), read together, checked to agree, written together.
//!
//! Main design decision: the two plugin instances of an Envoy share one state and each applies
//! its own configuration's pins, locks and quarantines to it whenever it loads, so a change
//! written to one resource only would be undone by the other's next load (a restart, a token
//! rotation). The console therefore never writes one without the other: the admin resource is
//! always the agents' document plus the `admin` block exactly as the admin file holds it, and
//! while the two disagree on anything but `admin` every action is refused.
//!
//! Write order: both new files are staged and synced, both old files are checked unchanged,
//! then the agents' resource is renamed into place, then the admin listener's. The agents'
//! resource is the fleet's configuration (the one the console shows and changes, the one every
//! Envoy's data path loads), and the admin one is derived from it, so the source is written
//! before its copy, in the order `fleet.py publish` uses too. What agents are served does not
//! depend on the order: the first instance to load the new document changes the shared state
//! for both. If the second rename fails, the first file is put back as it was, so the pair
//! never stays split by the console's own failure; if the console is killed between the two
//! renames, the next read shows the disagreement and refuses to act until both are published
//! again from one document.

use super::ecds::{EcdsDocument, EntryChange, Staged, changed_config};
use super::fleet::Fleet;
use serde_json::{Map, Value};
use toolseal_core::config::{Config, IdentitySource};

/// The two resources, as read.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The agents' listener's resource: the fleet's plugin configuration.
    pub agents: EcdsDocument,
    /// The admin listener's resource.
    pub admin: EcdsDocument,
    /// Why the two cannot be acted on, when they disagree.
    disagreement: Option<String>,
}

/// The `version_info` each resource was written with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    /// The agents' listener's resource.
    pub agents: String,
    /// The admin listener's resource.
    pub admin: String,
}

impl FleetConfig {
    /// Reads both resources named in the fleet file. Each must be readable and valid; whether
    /// they agree is kept (see [`FleetConfig::disagreement`]) so the page can still show them.
    pub fn read(fleet: &Fleet) -> Result<FleetConfig, String> {
        let agents = EcdsDocument::read(&fleet.ecds_file, &fleet.ecds_resource)?;
        let admin = EcdsDocument::read(&fleet.admin_ecds_file, &fleet.admin_ecds_resource)?;
        let disagreement = disagreement(&agents.plugin_config, &admin.plugin_config).map(|what| {
            format!(
                "the agents' resource {} and the admin listener's {} {what}; both plugin instances \
                 apply theirs to one shared state, so whichever loads last would win: publish \
                 both from one document (python envoy/ecds/fleet.py publish PLUGIN.json {} \
                 --admin-ecds {}) before acting",
                agents.path().display(),
                admin.path().display(),
                agents.path().display(),
                admin.path().display(),
            )
        });
        Ok(FleetConfig {
            agents,
            admin,
            disagreement,
        })
    }

    /// The fleet's validated plugin configuration (the agents' resource).
    pub fn config(&self) -> &Config {
        &self.agents.config
    }

    /// Why the two resources cannot be acted on, if they disagree.
    pub fn disagreement(&self) -> Option<&str> {
        self.disagreement.as_deref()
    }

    /// The request header the admin listener reads the approver's name from, when its
    /// `admin.identity` names one.
    pub fn identity_header(&self) -> Option<&str> {
        match &self.admin.config.admin.identity {
            Some(IdentitySource::Header(name)) => Some(name),
            _ => None,
        }
    }

    /// Writes `change` to `server`'s entry in both resources (see the module's write order).
    /// Refused, with nothing written, while they disagree, when a new configuration would not
    /// load, or when either file changed since it was read.
    pub fn write_change(&self, server: &str, change: &EntryChange) -> Result<Versions, String> {
        if let Some(why) = &self.disagreement {
            return Err(format!("refused: {why}"));
        }
        let agents_config = changed_config(&self.agents.plugin_config, server, change)?;
        let mut admin_config = agents_config.clone();
        if let (Some(block), Some(root)) = (
            self.admin.plugin_config.get("admin"),
            admin_config.as_object_mut(),
        ) {
            root.insert("admin".into(), block.clone());
        }
        let (agents_bytes, agents_version) = self.agents.rendered(&agents_config)?;
        let (admin_bytes, admin_version) = self.admin.rendered(&admin_config)?;
        let agents_new = Staged::new(self.agents.path(), &agents_bytes)?;
        let admin_new = Staged::new(self.admin.path(), &admin_bytes)?;
        self.agents.unchanged()?;
        self.admin.unchanged()?;
        commit_pair(agents_new, admin_new, || {
            self.agents.stage_original().and_then(Staged::commit)
        })?;
        Ok(Versions {
            agents: agents_version,
            admin: admin_version,
        })
    }
}

/// Renames `first` into place, then `second`; if `second` fails, `restore` puts `first`'s
/// file back as it was.
fn commit_pair(
    first: Staged,
    second: Staged,
    restore: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let restored = first.target().display().to_string();
    first.commit()?;
    second.commit().map_err(|failed| match restore() {
        Ok(()) => format!("{failed}; {restored} was put back as it was: nothing changed"),
        Err(e) => format!(
            "{failed}; putting {restored} back failed too ({e}): the two resources now \
             disagree; publish both from one document before any Envoy restarts"
        ),
    })
}

/// How the admin listener's configuration differs from the agents' beyond its `admin` block
/// (`None` when it does not).
pub fn disagreement(agents: &Value, admin: &Value) -> Option<String> {
    let empty = Map::new();
    let agents = agents.as_object().unwrap_or(&empty);
    let admin = admin.as_object().unwrap_or(&empty);
    if agents.contains_key("admin") {
        return Some(
            "are not kept apart: the agents' resource has an `admin` block, which turns the \
             admin API on where agents are"
                .into(),
        );
    }
    let mut keys: Vec<&String> = agents.keys().chain(admin.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut differ = Vec::new();
    for key in keys.into_iter().filter(|k| *k != "admin") {
        match (agents.get(key), admin.get(key)) {
            (Some(Value::Object(a)), Some(Value::Object(b))) if key == "servers" => {
                let mut ids: Vec<&String> = a.keys().chain(b.keys()).collect();
                ids.sort();
                ids.dedup();
                differ.extend(
                    ids.into_iter()
                        .filter(|id| a.get(*id) != b.get(*id))
                        .map(|id| format!("servers.{id}")),
                );
            }
            (a, b) if a != b => differ.push(key.clone()),
            _ => {}
        }
    }
    (!differ.is_empty()).then(|| format!("differ beyond `admin`, in {}", differ.join(", ")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::{Path, PathBuf};

    fn ecds(name: &str, config: &Value, version: &str) -> Value {
        json!({"version_info": version, "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": name,
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
                "config": {"name": name, "root_id": "toolseal",
                    "vm_config": {"vm_id": "toolseal", "runtime": "envoy.wasm.runtime.v8",
                                  "code": {"local": {"filename": "toolseal_plugin.wasm"}}},
                    "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue",
                                      "value": config.to_string()}}}}]})
    }

    /// A directory with both resources and a fleet naming them.
    fn fleet(tag: &str, agents: &Value, admin: &Value) -> (Fleet, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("toolseal-fleetcfg-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let write = |file: &str, doc: Value| {
            std::fs::write(dir.join(file), serde_json::to_vec(&doc).unwrap()).unwrap();
        };
        write("toolseal.json", ecds("toolseal", agents, "3"));
        write("admin-toolseal.json", ecds("toolseal-admin", admin, "7"));
        let text = json!({
            "instances": [{"name": "a", "admin_url": "http://127.0.0.1:1/toolseal/", "token": {"env": "T"}}],
            "plugin_config": {"ecds_file": "toolseal.json", "admin_ecds_file": "admin-toolseal.json"},
            "audit_log": "audit.jsonl",
        });
        (
            Fleet::parse(text.to_string().as_bytes(), &dir).unwrap(),
            dir,
        )
    }

    fn admin_block() -> Value {
        json!({"token_sha256": ["ab".repeat(32)], "identity": {"header": "x-operator"}})
    }

    fn plugin_config(path: &Path) -> Value {
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let text = doc["resources"][0]["typed_config"]["config"]["configuration"]["value"]
            .as_str()
            .unwrap();
        serde_json::from_str(text).unwrap()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_change_goes_to_both_resources_and_the_admin_block_stays_as_it_was() {
        let data = json!({"posture": "strict", "servers": {"demo": {"results": "enforce"}}});
        let mut admin = data.clone();
        admin["admin"] = admin_block();
        let (fleet, dir) = fleet("write", &data, &admin);
        let pair = FleetConfig::read(&fleet).unwrap();
        assert_eq!(pair.disagreement(), None);
        assert_eq!(pair.identity_header(), Some("x-operator"));
        let versions = pair
            .write_change("demo", &EntryChange::Quarantine("incident 7".into()))
            .unwrap();
        assert_eq!(
            versions,
            Versions {
                agents: "4".into(),
                admin: "8".into()
            }
        );
        let held = json!({"posture": "strict", "servers": {"demo": {"results": "enforce", "quarantine": "incident 7"}}});
        assert_eq!(plugin_config(&fleet.ecds_file), held);
        let mut held_admin = held.clone();
        held_admin["admin"] = admin_block();
        assert_eq!(plugin_config(&fleet.admin_ecds_file), held_admin);
        // The resource names are kept, and no temporary file is left behind.
        let again = FleetConfig::read(&fleet).unwrap();
        assert_eq!(
            again.config().servers["demo"].quarantine.as_deref(),
            Some("incident 7")
        );
        assert_eq!(
            (again.agents.version.as_str(), again.admin.version.as_str()),
            ("4", "8")
        );
        assert_eq!(files(&dir), ["admin-toolseal.json", "toolseal.json"]);

        // `pair` is stale now: writing from it would undo the quarantine. Refused, and
        // neither file is touched.
        let err = pair
            .write_change("demo", &EntryChange::Release)
            .unwrap_err();
        assert!(
            err.contains("changed while this action was prepared"),
            "{err}"
        );
        assert_eq!(plugin_config(&fleet.ecds_file), held);
        assert_eq!(plugin_config(&fleet.admin_ecds_file), held_admin);
        // A lock whose fingerprint does not match its tools would not load: refused.
        let bad = json!({"fingerprint": "sha256:00", "tools": [{"name": "a", "inputSchema": {}}]});
        let err = again
            .write_change("demo", &EntryChange::Lock(bad))
            .unwrap_err();
        assert!(
            err.contains("would not load") && err.contains("servers.demo"),
            "{err}"
        );
        assert_eq!(files(&dir), ["admin-toolseal.json", "toolseal.json"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_concurrent_write_of_the_admin_resource_alone_is_not_undone() {
        let data = json!({"posture": "strict"});
        let mut admin = data.clone();
        admin["admin"] = admin_block();
        let (fleet, dir) = fleet("race", &data, &admin);
        let pair = FleetConfig::read(&fleet).unwrap();
        // A token rotation published meanwhile rewrites only the admin listener's resource.
        let mut rotated = admin.clone();
        rotated["admin"]["token_sha256"] = json!(["cd".repeat(32)]);
        std::fs::write(
            &fleet.admin_ecds_file,
            serde_json::to_vec(&ecds("toolseal-admin", &rotated, "8")).unwrap(),
        )
        .unwrap();
        let err = pair
            .write_change("demo", &EntryChange::Quarantine("x".into()))
            .unwrap_err();
        assert!(
            err.contains("admin-toolseal.json changed while this action was prepared"),
            "{err}"
        );
        assert_eq!(plugin_config(&fleet.ecds_file), data);
        assert_eq!(files(&dir), ["admin-toolseal.json", "toolseal.json"]);
        // Read again, the rotated block is the one carried forward.
        FleetConfig::read(&fleet)
            .unwrap()
            .write_change("demo", &EntryChange::Quarantine("x".into()))
            .unwrap();
        assert_eq!(
            plugin_config(&fleet.admin_ecds_file)["admin"],
            rotated["admin"]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn resources_that_disagree_are_shown_but_never_acted_on() {
        let data = json!({"posture": "strict", "servers": {"demo": {"quarantine": "held"}}});
        let mut admin =
            json!({"posture": "strict", "servers": {"demo": {}}, "audit": {"call_allowed": true}});
        admin["admin"] = admin_block();
        let (fleet, dir) = fleet("split", &data, &admin);
        let pair = FleetConfig::read(&fleet).unwrap();
        let why = pair.disagreement().unwrap();
        assert!(
            why.contains("differ beyond `admin`, in audit, servers.demo; both plugin instances"),
            "{why}"
        );
        assert!(why.contains("fleet.py publish"), "{why}");
        let err = pair
            .write_change("demo", &EntryChange::Release)
            .unwrap_err();
        assert!(err.starts_with("refused: the agents' resource"), "{err}");
        assert_eq!(plugin_config(&fleet.ecds_file), data);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn when_the_second_rename_fails_the_first_file_is_put_back() {
        let dir =
            std::env::temp_dir().join(format!("toolseal-fleetcfg-pair-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("admin.json")).unwrap();
        // A non-empty directory where the second file should go: its rename fails.
        std::fs::write(dir.join("admin.json").join("keep"), b"x").unwrap();
        let agents = dir.join("agents.json");
        std::fs::write(&agents, b"old").unwrap();
        let first = Staged::new(&agents, b"new").unwrap();
        let second = Staged::new(&dir.join("admin.json"), b"new").unwrap();
        let restore = || Staged::new(&agents, b"old").and_then(Staged::commit);
        let err = commit_pair(first, second, restore).unwrap_err();
        assert!(err.starts_with("cannot rename over"), "{err}");
        assert!(
            err.ends_with("agents.json was put back as it was: nothing changed"),
            "{err}"
        );
        assert_eq!(std::fs::read(&agents).unwrap(), b"old");
        assert_eq!(files(&dir), ["admin.json", "agents.json"]);
        // When putting it back fails too, the message says the pair is split.
        let first = Staged::new(&agents, b"new").unwrap();
        let second = Staged::new(&dir.join("admin.json"), b"new").unwrap();
        let err = commit_pair(first, second, || Err("disk full".into())).unwrap_err();
        assert!(
            err.contains("putting")
                && err.contains("back failed too (disk full): the two resources now disagree"),
            "{err}"
        );
        assert_eq!(std::fs::read(&agents).unwrap(), b"new");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn disagreement_names_what_differs_beyond_admin() {
        let a = json!({"posture": "strict", "servers": {"x": {"pin": "sha256:1"}, "y": {}}});
        let mut b = a.clone();
        b["admin"] = admin_block();
        assert_eq!(disagreement(&a, &b), None);
        assert_eq!(disagreement(&a, &a), None);
        b["servers"]["x"]["pin"] = json!("sha256:2");
        b["servers"]["z"] = json!({});
        b["posture"] = json!("discovery");
        assert_eq!(
            disagreement(&a, &b).unwrap(),
            "differ beyond `admin`, in posture, servers.x, servers.z"
        );
        let mut with_admin = a.clone();
        with_admin["admin"] = admin_block();
        assert!(
            disagreement(&with_admin, &with_admin)
                .unwrap()
                .contains("the agents' resource has an `admin` block")
        );
    }
}
