//! The whole surface of a real server sealed (`seal`), replayed from the recordings of
//! `@modelcontextprotocol/server-everything` in `examples/transcripts/`: both releases, a
//! client without capabilities, one with roots, sampling and elicitation, and the SDK 2.x
//! client (its `server/discover` probe refused, then the 2025 handshake), each listing every
//! section twice. Every section is sealed once, every answer reaches the client byte for
//! byte, nothing drifts. Golden files live in `tests/data/golden/`; `BLESS=1` rewrites them.

use serde_json::json;
use toolseal_core::config::Config;
use toolseal_core::policy::status::SchemaStatus;
use toolseal_core::state;
use toolseal_core::transcript::NativeReplay;

use crate::support::examples::transcript;
use crate::support::files::golden;

const SERVER: &str = "everything";

#[test]
fn every_section_of_server_everything_sealed_for_three_clients_never_drifts() {
    for release in ["2026.8.31", "2025.11.25"] {
        let config = json!({"servers": {SERVER: {"seal":
            ["tool-fields", "instructions", "prompts", "resource-templates"]}}});
        let mut gw = NativeReplay::new(Config::parse(config.to_string().as_bytes()).unwrap());
        let mut lines = Vec::new();
        for client in ["no-capabilities", "capabilities", "sdk2-auto"] {
            let name = format!("everything-{release}-surface-{client}");
            for ex in transcript(&name) {
                let before = gw.out.decisions.len();
                let out = gw.exchange(SERVER, &ex, 7);
                assert!(
                    out.local_reply.is_none(),
                    "{name} {}: answered locally",
                    ex.seq
                );
                assert_eq!(
                    out.response_body, ex.response_body,
                    "{name} {}: the client got another answer than the server's",
                    ex.seq
                );
                for d in &gw.out.decisions[before..] {
                    let mut v = d.to_json();
                    let obj = v.as_object_mut().unwrap();
                    obj.insert("transcript".into(), json!(name));
                    obj.insert("seq".into(), json!(ex.seq));
                    obj.remove("session");
                    lines.push(v.to_string());
                }
            }
        }
        golden(&format!("everything-{release}-surface-sealed"), &lines);
        let events = |event: &str| gw.out.audits.iter().filter(|a| a.event == event).count();
        assert_eq!(
            events("schema.changed") + events("schema.pending"),
            0,
            "{release}"
        );
        assert_eq!(events("surface.withheld"), 0, "{release}");
        let sealed: Vec<&str> = gw
            .out
            .audits
            .iter()
            .filter(|a| a.event == "section.sealed")
            .map(|a| a.reason.as_str())
            .collect();
        assert_eq!(sealed.len(), 4, "{release}: {sealed:?}");
        let record = state::load_record(&gw.store, SERVER).unwrap().unwrap().0;
        assert_eq!(record.status, SchemaStatus::Verified, "{release}");
    }
}
