//! The views a gateway under the report's configuration records from the recordings under
//! review (`toolseal report --config CONFIG.json OLD NEW`, both recorded transcripts): OLD,
//! then NEW, replayed through the plugin's own core, and the admin API's view of the server
//! afterwards.
//!
//! Main design decision: which kind of caller a list was shown to is told from its request
//! (the revision, the capabilities its session's `initialize` declared, the path, the
//! headers), which a bare tool list does not carry; so views are told only from transcripts,
//! and by the core itself (`NativeReplay`, the driver the core's own tests use), never by a
//! second reading of the recordings here. A bare list gets a note saying so.

use super::ServerViews;
use serde_json::Value;
use toolseal_core::config::Config;
use toolseal_core::transcript::{HttpExchange, NativeReplay};

/// Body chunk size the recordings are fed in (as `toolseal replay` does by default).
const CHUNK: usize = 61;

/// The admin API's view of `server` after `recordings` were replayed in order under
/// `config` (`None`: the gateway recorded nothing of the server, for instance when it is
/// refused before any list).
pub fn admin_view_after(
    config: &Config,
    server: &str,
    recordings: &[&[HttpExchange]],
) -> Option<Value> {
    let mut gateway = NativeReplay::new(config.clone());
    for exchanges in recordings {
        for exchange in *exchanges {
            gateway.exchange(server, exchange, CHUNK);
        }
    }
    gateway.engine.admin_view(&gateway.store, Some(server))
}

/// Where a replayed answer comes from, for the page.
pub fn source(config_file: &str, server: &str, old: &str, new: &str) -> String {
    format!(
        "{old} then {new} replayed as server {server} through the plugin's core under \
         {config_file} (first and last seen are the replay's own clock)"
    )
}

/// What the replay says of NEW that the drift sections cannot: when the server ends
/// verified with no list awaiting review although OLD and NEW differ, the gateway read NEW as
/// the list of another kind of caller (a new view, trusted or verified against the catalogue).
pub fn outcome(admin_view: &Value, lists_differ: bool) -> Option<&'static str> {
    let verified = admin_view.get("schema_status").and_then(Value::as_str) == Some("verified");
    let awaiting = admin_view.get("drifted_view").is_some_and(|v| !v.is_null());
    (lists_differ && verified && !awaiting).then_some(
        "The two lists differ, yet the gateway ends verified with no list awaiting review: it \
         read NEW as the list of another kind of caller (a view of its own), served as listed. \
         What this page says of a drift does not arise under this configuration.",
    )
}

/// The note shown when the views cannot be told.
pub fn untold(why: &str) -> ServerViews<'static> {
    ServerViews {
        admin_view: None,
        note: None,
        source: format!(
            "Which view lists which tool cannot be told here: {why}. A view is told from the \
             request a list answers (its revision, declared capabilities, path, headers): give \
             recorded transcripts, or the admin API's answer with --admin-view."
        ),
    }
}
