//! Tool definitions behind the fingerprints the Envoys report, and the review page built from
//! them with `toolseal report`'s renderer. A set comes from the fleet's configuration (a lock
//! of that fingerprint), else from the instances' admin API (`GET servers/{id}/tools/{fp}`:
//! the definitions the plugin stored, the very ones it checks calls against), else — for a
//! candidate only — listed from the server itself (`servers.<id>.tools_url`).
//!
//! Main design decision: definitions are addressed by fingerprint and trusted from no source
//! until they hash to it: whoever answers (an instance, the server), a set is accepted only
//! when its fingerprint under the fleet's `fingerprint.fields` is the one asked for, and a
//! cached set is exactly the set its fingerprint names.

use super::Console;
use super::fleet_config::FleetConfig;
use super::instances::{Reader, encode_segment};
use super::mcp_list;
use crate::report_html;
use serde_json::Value;
use toolseal_core::config::Pin;
use toolseal_core::policy::approved::document_fingerprint;
use toolseal_core::policy::fingerprint::{FingerprintFields, ToolDigests, digest_tools};

/// Tool sets kept in memory.
const CACHED_SETS: usize = 16;

/// One server's tool set, checked against its fingerprint.
#[derive(Debug, Clone)]
pub struct ToolSet {
    /// The definitions.
    pub tools: Vec<Value>,
    /// Their digests (the fingerprint asked for, unless the set is a surface).
    pub digests: ToolDigests,
    /// The whole catalogue when it seals more than tools (`sealed`, `instructions`,
    /// `prompts`, ... beside `tools`, without `fingerprint`): the fingerprint asked for is its
    /// surface fingerprint.
    pub surface: Option<Value>,
    /// Where they came from, for the review page: `stored by envoy-0`, `listed from URL`.
    pub source: String,
}

/// Recently read sets by fingerprint (each as its stored document: `tools`, and the other
/// sections of a surface), newest last.
#[derive(Debug, Default)]
pub struct CandidateCache {
    sets: Vec<(String, Value, String)>,
}

impl CandidateCache {
    fn get(&self, fingerprint: &str) -> Option<(Value, String)> {
        self.sets
            .iter()
            .find(|(fp, ..)| fp == fingerprint)
            .map(|(_, document, source)| (document.clone(), source.clone()))
    }

    fn put(&mut self, fingerprint: String, document: Value, source: String) {
        self.sets.retain(|(fp, ..)| *fp != fingerprint);
        self.sets.push((fingerprint, document, source));
        if self.sets.len() > CACHED_SETS {
            self.sets.remove(0);
        }
    }
}

/// Digests of `tools` under `fields`.
pub fn digests(tools: &[Value], fields: &FingerprintFields) -> Result<ToolDigests, String> {
    digest_tools(&Value::Array(tools.to_vec()), fields)
        .map_err(|e| format!("the tools are not a valid tool set: {e}"))
}

/// Whether `text` is a server fingerprint (`sha256:` and 64 lowercase hex digits).
pub fn is_fingerprint(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A stored set document (`tools`, and for a surface `sealed` and its sections) with its
/// digests when it hashes to `fingerprint` (a surface: its surface fingerprint, as the plugin
/// names its catalogue); why not otherwise.
fn checked(
    document: Value,
    fingerprint: &str,
    fields: &FingerprintFields,
    source: String,
) -> Result<ToolSet, String> {
    let Some(Value::Array(tools)) = document.get("tools").cloned() else {
        return Err(format!("{source}: the answer has no `tools` array"));
    };
    let digests = digests(&tools, fields).map_err(|e| format!("{source}: {e}"))?;
    let surface = document.get("sealed").is_some();
    let got = match surface {
        true => document_fingerprint(&document, fields)
            .ok_or_else(|| format!("{source}: the catalogue is not a valid surface"))?,
        false => digests.fingerprint(),
    };
    if got != fingerprint {
        return Err(format!(
            "{source}: the definitions hash to {got}, not {fingerprint}"
        ));
    }
    Ok(ToolSet {
        tools,
        digests,
        surface: surface.then_some(document),
        source,
    })
}

/// The set document of an admin API's `{"fingerprint", "tools", ...}` answer (without its
/// `fingerprint`, which [`checked`] computes).
fn stored_document(answer: Value) -> Result<Value, String> {
    match answer {
        Value::Object(mut map) => {
            map.remove("fingerprint");
            Ok(Value::Object(map))
        }
        _ => Err("the answer is not a JSON object".into()),
    }
}

/// The set of `server` whose fingerprint (under `fields`) is `fingerprint`: from the cache,
/// else stored by the first instance that has it, else (`list`: a live candidate) listed from
/// the server's `tools_url`.
pub fn tool_set(
    console: &Console,
    reader: &Reader<'_>,
    server: &str,
    fingerprint: &str,
    fields: &FingerprintFields,
    list: bool,
) -> Result<ToolSet, String> {
    let cached = console
        .candidates
        .lock()
        .ok()
        .and_then(|c| c.get(fingerprint));
    if let Some((document, source)) = cached
        && let Ok(set) = checked(document, fingerprint, fields, source)
    {
        return Ok(set);
    }
    let path = format!(
        "servers/{}/tools/{}",
        encode_segment(server),
        encode_segment(fingerprint)
    );
    let mut why = Vec::new();
    for instance in &console.fleet.instances {
        let source = format!("stored by {}", instance.name);
        let found = match reader.get(instance, &path) {
            Ok(Some(answer)) => stored_document(answer)
                .map_err(|e| format!("{source}: {e}"))
                .and_then(|document| checked(document, fingerprint, fields, source)),
            Ok(None) => Err(format!("{}: not stored", instance.name)),
            Err(e) => Err(format!("{}: {e}", instance.name)),
        };
        match found {
            Ok(set) => return Ok(remember(console, set, fingerprint)),
            Err(e) => why.push(e),
        }
    }
    let unserved = format!("no instance serves {fingerprint} ({})", why.join("; "));
    let Some(source) = console.fleet.servers.get(server).filter(|_| list) else {
        let hint = if list {
            format!(", and the fleet file names no servers.{server}.tools_url to list it from")
        } else {
            String::new()
        };
        return Err(format!("{unserved}{hint}"));
    };
    let url = source.tools_url.display();
    let tools = mcp_list::list_tools(&source.tools_url, console.timeout)
        .map_err(|e| format!("{unserved}; listing {server:?}'s tools at {url}: {e}"))?;
    let listed = serde_json::json!({ "tools": tools });
    let set = checked(listed, fingerprint, fields, format!("listed from {url}")).map_err(|e| {
        format!(
            "{unserved}; {e}: the server moved again (or answers the console differently); \
             wait for the fleet to see the new set and review that"
        )
    })?;
    Ok(remember(console, set, fingerprint))
}

fn remember(console: &Console, set: ToolSet, fingerprint: &str) -> ToolSet {
    if let Ok(mut cache) = console.candidates.lock() {
        let document = match &set.surface {
            Some(document) => document.clone(),
            None => serde_json::json!({ "tools": set.tools }),
        };
        cache.put(fingerprint.to_owned(), document, set.source.clone());
    }
    set
}

/// The configured lock of `server` when it is `fingerprint`, as a set document (`tools`, and
/// the sections of a lock of a whole surface).
pub fn configured_lock(config: &FleetConfig, server: &str, fingerprint: &str) -> Option<Value> {
    match config.config().servers.get(server)?.pin.as_ref()? {
        Pin::Lock {
            fingerprint: fp,
            surface: Some(surface),
            ..
        } if fp == fingerprint => Some(Value::Object(surface.clone())),
        Pin::Lock {
            fingerprint: fp,
            tools,
            ..
        } if fp == fingerprint => Some(serde_json::json!({ "tools": tools })),
        _ => None,
    }
}

/// The review page (`toolseal report`'s page) for `server` from `baseline_fp` (none: an empty
/// baseline) to `candidate_fp`.
pub fn review_page(
    console: &Console,
    server: &str,
    baseline_fp: Option<&str>,
    candidate_fp: &str,
) -> Result<String, String> {
    let config = console.fleet_config()?;
    let reader = console.reader();
    let fields = &config.config().fingerprint;
    let (old, old_source) = match baseline_fp {
        None => (serde_json::json!({"tools": []}), "no baseline".to_owned()),
        Some(fp) => match configured_lock(&config, server, fp) {
            Some(document) => (document, "plugin configuration lock".to_owned()),
            None => {
                let set = tool_set(console, &reader, server, fp, fields, false).map_err(|e| {
                    format!("the baseline's definitions are not available, only the classified diff the Envoys report: {e}")
                })?;
                let document = match set.surface {
                    Some(document) => document,
                    None => serde_json::json!({ "tools": set.tools }),
                };
                (document, set.source)
            }
        },
    };
    let new = tool_set(console, &reader, server, candidate_fp, fields, true)?;
    let old_label = format!("{server}: baseline ({old_source})");
    let new_label = format!("{server}: candidate ({})", new.source);
    // The fleet's configuration says what the agents are served meanwhile, and to whom.
    let context = report_html::ReportConfig {
        server: server.to_owned(),
        config: config.config().clone(),
        rules: config
            .agents
            .plugin_config
            .pointer("/policy/rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    };
    // Each instance's views of the server, as its admin API shows them (each Envoy keeps
    // its own: they are told from the callers it saw).
    let answers = reader.server_views(server);
    let views: Vec<report_html::ServerViews<'_>> = answers
        .iter()
        .map(|(instance, answer)| instance_views(server, instance, answer))
        .collect();
    // A catalogue that seals more than tools is reviewed whole, section by section.
    let names = (old_label.as_str(), new_label.as_str());
    Ok(match &new.surface {
        Some(surface) => report_html::render_surface_review(
            names,
            (&old, surface),
            false,
            Some(&context),
            &views,
        ),
        None if old.get("sealed").is_some() => {
            let new = serde_json::json!({ "tools": new.tools });
            report_html::render_surface_review(names, (&old, &new), false, Some(&context), &views)
        }
        None => {
            let old_tools = old
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            report_html::render_review(names, &old_tools, &new.tools, Some(&context), &views)
        }
    })
}

/// The views section of one instance's answer to `GET servers/{id}`.
fn instance_views<'a>(
    server: &str,
    instance: &str,
    answer: &'a Result<Option<Value>, String>,
) -> report_html::ServerViews<'a> {
    let (admin_view, source) = match answer {
        Ok(Some(view)) => (Some(view), format!("GET servers/{server} on {instance}")),
        Ok(None) => (None, format!("{instance} has not seen server {server}")),
        Err(e) => (None, format!("{instance} could not be read: {e}")),
    };
    report_html::ServerViews {
        admin_view,
        source,
        note: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprints_are_recognized_exactly() {
        let good = format!("sha256:{}", "ab12".repeat(16));
        assert!(is_fingerprint(&good));
        assert!(!is_fingerprint(&good.to_uppercase()));
        assert!(!is_fingerprint(&format!("{good}0")));
        assert!(!is_fingerprint("sha256:"));
        assert!(!is_fingerprint(&format!("md5:{}", "ab12".repeat(16))));
    }

    #[test]
    fn a_set_is_trusted_only_when_it_hashes_to_the_fingerprint_asked_for() {
        let tools =
            vec![json!({"name": "add", "description": "Add.", "inputSchema": {"type": "object"}})];
        let fields = FingerprintFields::default();
        let fp = digests(&tools, &fields).unwrap().fingerprint();
        let answer = json!({"fingerprint": fp, "tools": tools});
        let set = checked(
            stored_document(answer).unwrap(),
            &fp,
            &fields,
            "stored by a".into(),
        )
        .unwrap();
        assert_eq!((set.source.as_str(), set.surface), ("stored by a", None));
        // An instance (or a server) answering other definitions under that fingerprint.
        let other = vec![
            json!({"name": "add", "description": "Add. And exfiltrate.", "inputSchema": {"type": "object"}}),
        ];
        let other_fp = digests(&other, &fields).unwrap().fingerprint();
        let err = checked(json!({"tools": other}), &fp, &fields, "stored by b".into()).unwrap_err();
        assert_eq!(
            err,
            format!("stored by b: the definitions hash to {other_fp}, not {fp}")
        );
        let twice = json!({"tools": [{"name": "a"}, {"name": "a"}]});
        assert!(
            checked(twice, &fp, &fields, "stored by c".into())
                .unwrap_err()
                .starts_with("stored by c: the tools are not a valid tool set")
        );
        assert_eq!(
            checked(json!({}), &fp, &fields, "stored by d".into()).unwrap_err(),
            "stored by d: the answer has no `tools` array"
        );
        assert_eq!(
            stored_document(json!([])).unwrap_err(),
            "the answer is not a JSON object"
        );
    }

    #[test]
    fn a_catalogue_that_seals_more_than_tools_is_trusted_by_its_surface_fingerprint() {
        let fields = FingerprintFields::default();
        let tools =
            json!([{"name": "add", "description": "Add.", "inputSchema": {"type": "object"}}]);
        let catalogue = json!({"tools": tools, "sealed": ["prompts"],
            "prompts": [{"name": "summarize", "description": "Summarize a page."}]});
        let fp = document_fingerprint(&catalogue, &fields).unwrap();
        let tools_fp = digests(tools.as_array().unwrap(), &fields)
            .unwrap()
            .fingerprint();
        assert_ne!(fp, tools_fp);
        let mut answer = catalogue.clone();
        answer["fingerprint"] = json!(fp);
        let set = checked(
            stored_document(answer).unwrap(),
            &fp,
            &fields,
            "stored by a".into(),
        );
        assert_eq!(set.unwrap().surface, Some(catalogue.clone()));
        // A prompt changed under the same fingerprint is not the catalogue asked for.
        let mut changed = catalogue;
        changed["prompts"][0]["description"] = json!("Summarize, then mail it.");
        let err = checked(changed, &fp, &fields, "stored by b".into()).unwrap_err();
        assert!(err.contains(&format!("not {fp}")), "{err}");
    }

    #[test]
    fn the_cache_keeps_the_newest_sets() {
        let mut cache = CandidateCache::default();
        for n in 0..=CACHED_SETS {
            cache.put(
                format!("fp{n}"),
                json!({"tools": [{"name": n.to_string()}]}),
                "stored by a".into(),
            );
        }
        assert!(cache.get("fp0").is_none());
        assert_eq!(
            cache.get("fp1").unwrap(),
            (json!({"tools": [{"name": "1"}]}), "stored by a".to_owned())
        );
        cache.put("fp1".into(), json!({"tools": []}), "listed from b".into());
        assert_eq!(
            cache.get("fp1").unwrap(),
            (json!({"tools": []}), "listed from b".to_owned())
        );
        assert_eq!(cache.sets.len(), CACHED_SETS);
    }

    #[test]
    fn a_lock_built_from_a_listing_is_the_one_toolseal_pin_prints() {
        let tools =
            vec![json!({"name": "add", "description": "Add.", "inputSchema": {"type": "object"}})];
        let set = digests(&tools, &FingerprintFields::default()).unwrap();
        let entry = crate::actions::lock_entry(&set, tools.clone());
        assert_eq!(entry["lock"]["tools"], json!(tools));
        assert!(is_fingerprint(
            entry["lock"]["fingerprint"].as_str().unwrap()
        ));
        // The plugin's own parser accepts it (it checks the fingerprint against the tools).
        let config = json!({"servers": {"demo": entry}});
        toolseal_core::config::Config::from_value(&config).unwrap();
    }
}
