//! The resources a server lists: screened, not sealed.
//!
//! Main design decision: on many servers a concrete resource is data (a file, a row, a
//! ticket) that changes without any contract changing, so a `resources/list` answer is not
//! compared with a baseline: a changed resource never closes a server. Each listed item is
//! screened instead, on every answer: the strings a model reads (`name`, `title`,
//! `description`) for what speaks to the model rather than describing data (an instruction,
//! hidden characters, a reference that redirects to another tool), and its `uri` for a path
//! that climbs out of its root (a `..` segment, percent-encoded or not) or a host that is the
//! gateway's own machine, a link-local address or a cloud metadata service. A flagged item is
//! withheld from that answer (the others are served), the answer says how many in its
//! `_meta` note, and an audit event says which and why. Length, URLs in prose and naming
//! rules are not findings here: they describe tools, and data is what it is.

use crate::gateway::engine::{Engine, Exchange};
use crate::gateway::listing::answer::META_KEY;
use crate::policy::screening::{self, Kind, Role};
use crate::state::audit::{Counter, Outputs};
use crate::state::store::StateStore;
use crate::wire::json::put;
use serde_json::{Map, Value};

/// The screening findings that make a listed resource withheld (the others describe tools).
const FINDINGS: [Kind; 3] = [
    Kind::HiddenUnicode,
    Kind::InstructionCue,
    Kind::ToolReference,
];

/// Withheld resources named in one audit event, at most.
const NAMED: usize = 16;

impl Engine {
    /// A `resources/list` answer without the items screening flags (`None`: forwarded as it
    /// is: nothing flagged, screening off, or another method).
    pub(crate) fn screened_resources(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        (id, method): (&Value, &str),
        result: &Value,
    ) -> Option<Value> {
        if method != "resources/list" || !self.config.screening.enabled {
            return None;
        }
        let items = result.get("resources")?.as_array()?;
        let mut flagged: Vec<(usize, String)> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            if let Some(why) = self.resource_finding(item) {
                flagged.push((index, why));
            }
        }
        if flagged.is_empty() {
            return None;
        }
        let reason = format!(
            "{} listed resource(s) withheld: screening flagged them",
            flagged.len()
        );
        let mut detail = Map::new();
        put(&mut detail, "method", Value::from(method));
        let named: Vec<Value> = flagged
            .iter()
            .take(NAMED)
            .map(|(index, why)| {
                let uri = items.get(*index).and_then(|i| i.get("uri")).cloned();
                serde_json::json!({"uri": uri, "finding": why})
            })
            .collect();
        put(&mut detail, "withheld", Value::Array(named));
        let event = self.event("resource.withheld", exchange, now_ms, None, &reason, detail);
        self.emit(store, out, &event);
        out.count(Counter::ResourcesWithheld, None);
        let status = self
            .record(store, &exchange.server)
            .ok()
            .flatten()
            .map_or(crate::policy::status::SchemaStatus::Unbaselined, |r| {
                r.status
            });
        let mut decision = self.decision(exchange, "response", method, Some(id), status);
        decision.decision = "rewrite";
        out.decision(&decision);
        let mut answer = result.as_object()?.clone();
        let kept: Vec<Value> = items
            .iter()
            .enumerate()
            .filter(|(index, _)| !flagged.iter().any(|(f, _)| f == index))
            .map(|(_, item)| item.clone())
            .collect();
        put(&mut answer, "resources", Value::Array(kept));
        let meta = answer
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(meta) = meta.as_object_mut() {
            let mut note = Map::new();
            put(&mut note, "server", Value::from(exchange.server.as_str()));
            put(&mut note, "reason", Value::from(reason));
            put(&mut note, "withheld", Value::from(flagged.len()));
            put(meta, META_KEY, Value::Object(note));
        }
        Some(Value::Object(answer))
    }

    /// Why a listed resource is withheld (`None`: it is served).
    fn resource_finding(&self, item: &Value) -> Option<String> {
        let uri = item.get("uri").and_then(Value::as_str).unwrap_or("");
        if let Some(why) = uri_finding(uri) {
            return Some(why);
        }
        let label = item.get("name").and_then(Value::as_str).unwrap_or(uri);
        for field in ["name", "title", "description"] {
            let Some(text) = item.get(field).and_then(Value::as_str) else {
                continue;
            };
            let at = format!("resources/{field}");
            let found =
                screening::screen_string(label, &at, text, Role::Prose, &self.config.screening);
            if let Some(finding) = found.iter().find(|f| FINDINGS.contains(&f.kind)) {
                return Some(finding.to_string());
            }
        }
        None
    }
}

/// Why a resource URI is withheld: a path that climbs out of its root, or a host that is
/// loopback, link-local, unspecified or a cloud metadata service (`None`: neither).
pub fn uri_finding(uri: &str) -> Option<String> {
    let decoded = percent_decoded(uri);
    let (scheme, rest) = decoded.split_once(':').unwrap_or(("", decoded.as_str()));
    let path_start = rest.strip_prefix("//").map_or(rest, |after| {
        after
            .find(['/', '\\', '?', '#'])
            .map_or("", |at| after.get(at..).unwrap_or(""))
    });
    let path = path_start.split(['?', '#']).next().unwrap_or("");
    if path.split(['/', '\\']).any(|segment| segment == "..") {
        return Some(format!(
            "{scheme} URI climbs out of its root (a `..` segment)"
        ));
    }
    let authority = rest.strip_prefix("//")?;
    let authority = authority.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    internal_host(&host).then(|| {
        format!("{scheme} URI points at a loopback, link-local or metadata address ({host})")
    })
}

/// Whether `host` (lower case, without port or brackets) is this machine, a link-local or
/// unspecified address, or a cloud metadata service, in any spelling an HTTP client accepts
/// for an IPv4 address (dotted, one decimal or hexadecimal number).
fn internal_host(host: &str) -> bool {
    const NAMES: [&str; 4] = [
        "localhost",
        "metadata.google.internal",
        "metadata",
        "instance-data",
    ];
    if NAMES.contains(&host) || host.ends_with(".localhost") {
        return true;
    }
    let v4 = host.parse::<core::net::Ipv4Addr>().ok().or_else(|| {
        let number = match host.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => host.parse::<u32>().ok(),
        };
        number.map(core::net::Ipv4Addr::from)
    });
    if let Some(ip) = v4 {
        return internal_v4(ip);
    }
    let Ok(ip) = host.parse::<core::net::Ipv6Addr>() else {
        return false;
    };
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return internal_v4(mapped);
    }
    let first = ip.segments().first().copied().unwrap_or(0);
    ip.is_loopback()
        || ip.is_unspecified()
        || first & 0xffc0 == 0xfe80
        || ip == core::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
}

fn internal_v4(ip: core::net::Ipv4Addr) -> bool {
    ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip == core::net::Ipv4Addr::new(100, 100, 100, 200)
}

/// `text` with its `%XX` escapes decoded (as Latin-1 bytes: only ASCII matters here); a
/// malformed escape is kept as it is.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (byte, hex(index + 1), hex(index + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push(char::from((high * 16 + low) as u8));
                index += 3;
            }
            _ => {
                out.push(char::from(byte));
                index += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::uri_finding;

    #[test]
    fn uris_that_climb_out_or_point_inside_are_flagged() {
        for uri in [
            "file:///srv/data/../../etc/passwd",
            "file:///srv/data/%2e%2e/%2E%2E/etc/shadow",
            "file:///srv/data\\..\\secrets",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "https://localhost:8443/admin",
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://user@127.0.0.1:80/x",
            "http://0.0.0.0/",
            "http://LOCALHOST./",
        ] {
            assert!(uri_finding(uri).is_some(), "{uri}");
        }
        for uri in [
            "file:///srv/data/report.md",
            "test://static/resource/1",
            "https://example.com/a..b/c",
            "memory://notes/42",
            "https://api.example.com/v1/items?next=..",
            "postgres://db.internal/tickets",
            "",
        ] {
            assert!(uri_finding(uri).is_none(), "{uri}");
        }
    }
}
