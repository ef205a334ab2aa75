//! Tool definitions behind the fingerprints the Envoys report: the candidate (listed from the
//! server and accepted only when its fingerprint is the one reported) and the baseline (the
//! lock in the fleet's plugin configuration), and the review page built from both with
//! `toolseal report`'s renderer.
//!
//! Main design decision: definitions are addressed by fingerprint. A listing is kept only
//! under the fingerprint it hashes to, so a cached set is exactly the set that fingerprint
//! names; a listing that hashes to anything else than what was asked for is refused.

use super::Console;
use super::ecds::EcdsDocument;
use super::mcp_list;
use crate::cli::report_html;
use serde_json::Value;
use toolseal_core::config::Pin;
use toolseal_core::fingerprint::{FingerprintFields, ToolDigests, digest_tools};

/// Candidate sets kept in memory.
const CACHED_SETS: usize = 16;

/// Recently listed tool sets by fingerprint, newest last.
#[derive(Debug, Default)]
pub struct CandidateCache {
    sets: Vec<(String, Vec<Value>)>,
}

impl CandidateCache {
    fn get(&self, fingerprint: &str) -> Option<Vec<Value>> {
        self.sets
            .iter()
            .find(|(fp, _)| fp == fingerprint)
            .map(|(_, tools)| tools.clone())
    }

    fn put(&mut self, fingerprint: String, tools: Vec<Value>) {
        self.sets.retain(|(fp, _)| *fp != fingerprint);
        self.sets.push((fingerprint, tools));
        if self.sets.len() > CACHED_SETS {
            self.sets.remove(0);
        }
    }
}

/// Digests of `tools` under `fields`.
pub fn digests(tools: &[Value], fields: &FingerprintFields) -> Result<ToolDigests, String> {
    digest_tools(&Value::Array(tools.to_vec()), fields)
        .map_err(|e| format!("the listed tools are not a valid tool set: {e}"))
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

/// The candidate set of `server` whose fingerprint (under `fields`) is `fingerprint`, from the
/// cache or listed from the server now; with its digests.
pub fn candidate(
    console: &Console,
    server: &str,
    fingerprint: &str,
    fields: &FingerprintFields,
) -> Result<(Vec<Value>, ToolDigests), String> {
    let cached = console
        .candidates
        .lock()
        .ok()
        .and_then(|c| c.get(fingerprint));
    if let Some(tools) = cached {
        let set = digests(&tools, fields)?;
        if set.fingerprint() == fingerprint {
            return Ok((tools, set));
        }
    }
    let source = console.fleet.servers.get(server).ok_or_else(|| {
        format!(
            "the console cannot obtain the definitions of {server:?}'s candidate: the fleet file \
             names no servers.{server}.tools_url to list them from"
        )
    })?;
    let tools = mcp_list::list_tools(&source.tools_url, console.timeout).map_err(|e| {
        format!(
            "listing {server:?}'s tools at {}: {e}",
            source.tools_url.display()
        )
    })?;
    let set = digests(&tools, fields)?;
    let listed = set.fingerprint();
    if listed != fingerprint {
        return Err(format!(
            "{} now lists {listed}, not {fingerprint} that the Envoys report: the server moved \
             again (or answers the console differently); wait for the fleet to see the new set \
             and review that",
            source.tools_url.display()
        ));
    }
    if let Ok(mut cache) = console.candidates.lock() {
        cache.put(listed, tools.clone());
    }
    Ok((tools, set))
}

/// The baseline definitions of `server` for `fingerprint`: none for an empty baseline, the
/// configured lock when it is that fingerprint.
pub fn baseline(
    doc: &EcdsDocument,
    server: &str,
    fingerprint: Option<&str>,
) -> Result<Vec<Value>, String> {
    let Some(fingerprint) = fingerprint else {
        return Ok(Vec::new());
    };
    match doc.config.servers.get(server).and_then(|s| s.pin.as_ref()) {
        Some(Pin::Lock {
            fingerprint: fp,
            tools,
        }) if fp == fingerprint => Ok(tools.clone()),
        _ => Err(format!(
            "the baseline {fingerprint} is not a lock in the fleet's plugin configuration (a \
             trust-on-first-use, fingerprint-pin or runtime baseline): its definitions are not \
             available to the console, only the classified diff the Envoys report"
        )),
    }
}

/// The review page (`toolseal report`'s page) for `server` from `baseline` to `candidate`.
pub fn review_page(
    console: &Console,
    server: &str,
    baseline_fp: Option<&str>,
    candidate_fp: &str,
) -> Result<String, String> {
    let doc = EcdsDocument::read(&console.fleet.ecds_file, &console.fleet.ecds_resource)?;
    let old = baseline(&doc, server, baseline_fp)?;
    let (new, _) = candidate(console, server, candidate_fp, &doc.config.fingerprint)?;
    let old_label = format!("{server}: baseline (plugin configuration lock)");
    let new_label = match console.fleet.servers.get(server) {
        Some(source) => format!(
            "{server}: candidate (listed from {})",
            source.tools_url.display()
        ),
        None => format!("{server}: candidate"),
    };
    Ok(report_html::render((&old_label, &new_label), &old, &new))
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
    fn the_cache_keeps_the_newest_sets() {
        let mut cache = CandidateCache::default();
        for n in 0..=CACHED_SETS {
            cache.put(format!("fp{n}"), vec![json!({"name": n.to_string()})]);
        }
        assert!(cache.get("fp0").is_none());
        assert_eq!(cache.get("fp1").unwrap(), vec![json!({"name": "1"})]);
        cache.put("fp1".into(), vec![]);
        assert_eq!(cache.get("fp1").unwrap(), Vec::<Value>::new());
        assert_eq!(cache.sets.len(), CACHED_SETS);
    }

    #[test]
    fn a_lock_built_from_a_listing_is_the_one_toolseal_pin_prints() {
        let tools =
            vec![json!({"name": "add", "description": "Add.", "inputSchema": {"type": "object"}})];
        let set = digests(&tools, &FingerprintFields::default()).unwrap();
        let entry = crate::cli::tools_cmd::lock_entry(&set, tools.clone());
        assert_eq!(entry["lock"]["tools"], json!(tools));
        assert!(is_fingerprint(
            entry["lock"]["fingerprint"].as_str().unwrap()
        ));
        // The plugin's own parser accepts it (it checks the fingerprint against the tools).
        let config = json!({"servers": {"demo": entry}});
        toolseal_core::config::Config::from_value(&config).unwrap();
    }
}
