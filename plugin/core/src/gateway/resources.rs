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

use crate::gateway::denial::ErrorCode;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, RequestInfo};
use crate::gateway::listing::answer;
use crate::policy::screening::{self, Kind, Role};
use crate::policy::section::Section;
use crate::policy::uri_template;
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

/// Why a read of a resource the catalogue has is refused: it was not listed to this caller.
const OUTSIDE: &str = "it is not listed to this caller's view of the server (the server offers it, or the template that names it, to other kinds of callers only)";

/// Withheld resources named in one audit event, at most.
const NAMED: usize = 16;

/// Resources whose verdict one worker remembers (the set is emptied when it is full): a
/// data server lists mostly the same items again, and screening a string is far dearer than
/// looking it up.
const REMEMBERED: usize = 1024;

/// A listed resource's screened strings longer than this are screened every time (the
/// memory of verdicts stays small).
const REMEMBERED_BYTES: usize = 1024;

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
        let section = Section::Resources;
        if method != section.list_method() || !self.config.screens_resources(&exchange.server) {
            return None;
        }
        let listed = result.get(section.items_member())?;
        let items = listed.as_array()?;
        let flagged = self.flagged_resources(&exchange.server, listed);
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
        let status = self.status_of(store, &exchange.server);
        let mut decision = self.decision(exchange, "response", method, Some(id), status);
        decision.decision = "rewrite";
        out.decision(&decision);
        let mut rewritten = result.as_object()?.clone();
        put(
            &mut rewritten,
            section.items_member(),
            unflagged(items, &flagged),
        );
        let mut note = Map::new();
        put(&mut note, "server", Value::from(exchange.server.as_str()));
        put(&mut note, "reason", Value::from(reason));
        put(&mut note, "withheld", Value::from(flagged.len()));
        answer::put_note(&mut rewritten, Value::Object(note));
        Some(Value::Object(rewritten))
    }
}

impl Engine {
    /// The listed resources screening withholds, by index, and why: worked out once per list
    /// this worker remembers ([`crate::gateway::known_list`]: `items` read from its very
    /// bytes), and otherwise item by item ([`Engine::screened_items`]).
    fn flagged_resources(&mut self, server: &str, items: &Value) -> Vec<(usize, String)> {
        let list = items.as_array().map_or(&[][..], Vec::as_slice);
        match self.known_lists.holding(server, Section::Resources, items) {
            Some(known) => known.flagged(|| self.screened_items(list)).to_vec(),
            None => self.screened_items(list),
        }
    }

    /// The resources of `items` screening withholds, by index, and why (each verdict
    /// remembered by the item's screened strings, so an item seen again is not screened
    /// again).
    fn screened_items(&mut self, items: &[Value]) -> Vec<(usize, String)> {
        let mut flagged: Vec<(usize, String)> = Vec::new();
        let mut strings = None;
        for (index, item) in items.iter().enumerate() {
            let key = screened_key(item);
            let known = key.as_ref().and_then(|k| self.screened.get(k));
            let verdict = match known {
                Some(verdict) => verdict.as_str().map(str::to_string),
                None => {
                    let strings = strings
                        .get_or_insert_with(|| screening::Strings::new(&self.config.screening));
                    let verdict = resource_finding(strings, item);
                    if let Some(key) = key {
                        if self.screened.len() >= REMEMBERED {
                            self.screened.clear();
                        }
                        let remembered = verdict.clone().map_or(Value::Null, Value::from);
                        self.screened.insert(key, remembered);
                    }
                    verdict
                }
            };
            if let Some(why) = verdict {
                flagged.push((index, why));
            }
        }
        flagged
    }

    /// The listed resources a server that seals them seals: those screening serves (`None`:
    /// every item, or screening is off for the server). An item screening withholds never
    /// reaches a client, so it is no part of the surface and never closes the server.
    pub(crate) fn served_resources(&mut self, server: &str, items: &Value) -> Option<Value> {
        if !self.config.screens_resources(server) {
            return None;
        }
        let list = items.as_array()?;
        let flagged = self.flagged_resources(server, items);
        (!flagged.is_empty()).then(|| unflagged(list, &flagged))
    }

    /// For a server whose reads are limited to what it listed (`resources: "listed"`, and
    /// `"seal"` until its resources are sealed): keeps the URIs of a `resources/list` answer
    /// as served (`served`: its result after screening). A write that fails only leaves those
    /// URIs unreadable until they are listed again.
    pub(crate) fn remember_listed(
        &mut self,
        store: &mut dyn StateStore,
        exchange: &Exchange,
        method: &str,
        served: &Value,
    ) {
        let section = Section::Resources;
        let server = exchange.server.as_str();
        let sealing = self.config.reads_approved(server);
        if method != section.list_method() || !(self.config.reads_listed(server) || sealing) {
            return;
        }
        // Once sealed, the catalogue is what may be read: nothing to remember.
        if sealing && self.seals_resources_now(store, server) {
            return;
        }
        let items = served.get(section.items_member()).and_then(Value::as_array);
        let uris: Vec<&str> = items
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|item| item.get("uri").and_then(Value::as_str))
            .collect();
        if !uris.is_empty() {
            let _kept = crate::state::listed::remember(store, &exchange.server, &uris);
        }
    }

    /// Whether `server`'s approved catalogue seals its resources (no: it cannot be read).
    fn seals_resources_now(&mut self, store: &dyn StateStore, server: &str) -> bool {
        let Ok(Some(record)) = self.record(store, server) else {
            return false;
        };
        let Some(baseline) = record.baseline.clone() else {
            return false;
        };
        match self.approved(store, server, &baseline) {
            Ok(Some(catalogue)) => catalogue.sealed.contains(&Section::Resources),
            _ => false,
        }
    }

    /// Why a `resources/read` of `uri` is refused on a server whose reads are limited
    /// (`None`: they are not, or a resource template of the approved catalogue listed to the
    /// caller's view names the URI, or it is an approved resource of a server that seals
    /// them, listed to the caller's view, or, for one that does not or not yet, it was
    /// listed through this gateway). A store or catalogue that cannot be read refuses: what
    /// was listed is unknown.
    pub(crate) fn unlisted_read(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        params: Option<&Value>,
        uri: &str,
    ) -> Option<(ErrorCode, String)> {
        let server = exchange.server.as_str();
        let sealing = self.config.reads_approved(server);
        if !self.config.reads_listed(server) && !sealing {
            return None;
        }
        let record = match self.record(store, server) {
            Ok(record) => record,
            Err(e) => return Some((ErrorCode::SchemaUnverified, e.to_string())),
        };
        let templates = Section::ResourceTemplates;
        let caller = (exchange, info);
        // A URI listed as a resource is read as listed (below), whatever template names it.
        let mut why = "";
        if let Some((record, baseline)) =
            record.as_ref().and_then(|r| Some((r, r.baseline.clone()?)))
        {
            match self.approved(store, server, &baseline) {
                Ok(Some(catalogue)) => {
                    let named = catalogue.section_items(templates);
                    let named = named.filter(|t| uri_template::matches(&t.key, uri));
                    for template in named {
                        let item = (templates, template.key.as_str());
                        if !self.outside_view(store, caller, params, record, item) {
                            return None;
                        }
                        // A template names the URI, for other kinds of caller only.
                        why = OUTSIDE;
                    }
                    // Once a whole list sealed the resources, the catalogue is what may be
                    // read, on every instance of the fleet.
                    if sealing && catalogue.sealed.contains(&Section::Resources) {
                        let item = (Section::Resources, uri);
                        return match catalogue.item(Section::Resources, uri) {
                            Some(_) if !self.outside_view(store, caller, params, record, item) => {
                                None
                            }
                            Some(_) => Some((ErrorCode::ResourceNotApproved, OUTSIDE.into())),
                            None => Some((ErrorCode::ResourceNotApproved, why.into())),
                        };
                    }
                }
                Ok(None) | Err(_) => {
                    let why = format!("the approved catalogue {baseline} cannot be read");
                    return Some((ErrorCode::SchemaUnverified, why));
                }
            }
        }
        match crate::state::listed::holds(store, server, uri) {
            Ok(true) => None,
            Ok(false) => Some((ErrorCode::ResourceNotApproved, why.to_string())),
            Err(e) => Some((ErrorCode::SchemaUnverified, e.to_string())),
        }
    }
}

/// The listed resources screening serves: `items` without those `flagged` (by index).
fn unflagged(items: &[Value], flagged: &[(usize, String)]) -> Value {
    let kept = items
        .iter()
        .enumerate()
        .filter(|(index, _)| !flagged.iter().any(|(f, _)| f == index))
        .map(|(_, item)| item.clone());
    Value::Array(kept.collect())
}

/// What a listed resource's verdict is remembered by: its screened strings, each ended by a
/// NUL (`None`: too long to remember).
fn screened_key(item: &Value) -> Option<String> {
    let mut key = String::new();
    for field in ["uri", "name", "title", "description"] {
        key.push_str(item.get(field).and_then(Value::as_str).unwrap_or(""));
        key.push('\0');
    }
    (key.len() <= REMEMBERED_BYTES).then_some(key)
}

/// Why a listed resource is withheld (`None`: it is served).
fn resource_finding(strings: &mut screening::Strings<'_>, item: &Value) -> Option<String> {
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
        let found = strings.screen(label, &at, text, Role::Prose);
        if let Some(finding) = found.iter().find(|f| FINDINGS.contains(&f.kind)) {
            return Some(finding.to_string());
        }
    }
    None
}

/// Why a resource URI is withheld: a path that climbs out of its root, or a host that is
/// loopback, link-local, unspecified or a cloud metadata service (`None`: neither).
pub fn uri_finding(uri: &str) -> Option<String> {
    // One pattern type for every split (each array of characters would be its own code).
    type Split = fn(char) -> bool;
    let end_of_authority: Split = |c| matches!(c, '/' | '\\' | '?' | '#');
    let end_of_path: Split = |c| matches!(c, '?' | '#');
    let separator: Split = |c| matches!(c, '/' | '\\');
    let end_of_v6: Split = |c| matches!(c, ']' | '%');
    let decoded = percent_decoded(uri);
    let (scheme, rest) = decoded.split_once(':').unwrap_or(("", decoded.as_str()));
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => match after.find(end_of_authority) {
            Some(at) => after.split_at(at),
            None => (after, ""),
        },
        None => ("", rest),
    };
    let path = path.split(end_of_path).next().unwrap_or("");
    let why = if path.split(separator).any(|segment| segment == "..") {
        "climbs out of its root (a `..` segment)"
    } else {
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let host = match host.strip_prefix('[') {
            // An IPv6 literal, without its zone (`fe80::1%eth0`).
            Some(v6) => v6.split(end_of_v6).next().unwrap_or(""),
            None => host.split(':').next().unwrap_or(""),
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if !internal_host(&host) {
            return None;
        }
        "points at a loopback, link-local or metadata address"
    };
    Some(format!("{scheme} URI {why}"))
}

/// Whether `host` (lower case, without port or brackets) is this machine, a link-local or
/// unspecified address, or a cloud metadata service, in any spelling a URL parser accepts for
/// an IP address (`127.1`, `0177.0.0.1`, `2852039166`, `0xa9fea9fe`, `::ffff:169.254.169.254`).
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
    if let Some(ip) = ipv4(host) {
        return internal_v4(ip);
    }
    let Some(groups) = ipv6(host) else {
        return false;
    };
    match groups {
        // IPv4-mapped: what the embedded address is.
        [0, 0, 0, 0, 0, 0xffff, high, low] => internal_v4((u32::from(high) << 16) | u32::from(low)),
        // Unspecified, loopback.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => true,
        // AWS's metadata service over IPv6.
        [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254] => true,
        // Link-local, fe80::/10.
        [first, ..] => first & 0xffc0 == 0xfe80,
    }
}

/// Loopback (127/8), unspecified (0/8), link-local (169.254/16, the metadata services of most
/// clouds) or Alibaba's metadata address.
fn internal_v4(ip: u32) -> bool {
    let [a, b, _, _] = ip.to_be_bytes();
    a == 127 || a == 0 || (a == 169 && b == 254) || ip == 0x6464_64c8
}

/// An IPv4 host as a URL parser reads it: one to four parts, each decimal, octal (`0`-led) or
/// hexadecimal (`0x`-led), the last filling the bytes the others leave.
fn ipv4(host: &str) -> Option<u32> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut value: u64 = 0;
    for (index, part) in parts.iter().enumerate() {
        let number = if let Some(hex) = part.strip_prefix("0x") {
            u64::from_str_radix(if hex.is_empty() { "0" } else { hex }, 16).ok()?
        } else if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(part.get(1..)?, 8).ok()?
        } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse::<u64>().ok()?
        } else {
            return None;
        };
        let last = index + 1 == parts.len();
        let room = if last { 4 - index as u32 } else { 1 };
        if number >= 1u64 << (8 * room) {
            return None;
        }
        value = if last {
            (value << (8 * room)) | number
        } else {
            (value << 8) | number
        };
    }
    u32::try_from(value).ok()
}

/// An IPv6 host's eight groups (`::` expanded, a trailing dotted IPv4 part read as two).
fn ipv6(host: &str) -> Option<[u16; 8]> {
    if !host.contains(':') {
        return None;
    }
    let read = |side: &str| -> Option<Vec<u16>> {
        let mut groups = Vec::new();
        for (index, part) in side.split(':').enumerate() {
            if side.is_empty() {
                break;
            }
            let last = index + 1 == side.split(':').count();
            if last && part.contains('.') {
                let v4 = ipv4(part)?;
                groups.push((v4 >> 16) as u16);
                groups.push(v4 as u16);
            } else if (1..=4).contains(&part.len()) {
                groups.push(u16::from_str_radix(part, 16).ok()?);
            } else {
                return None;
            }
        }
        Some(groups)
    };
    let (head, tail) = match host.split_once("::") {
        Some((head, tail)) => (read(head)?, Some(read(tail)?)),
        None => (read(host)?, None),
    };
    let mut groups = [0u16; 8];
    match tail {
        None if head.len() == 8 => groups.copy_from_slice(&head),
        Some(tail) if head.len() + tail.len() < 8 => {
            groups.get_mut(..head.len())?.copy_from_slice(&head);
            groups.get_mut(8 - tail.len()..)?.copy_from_slice(&tail);
        }
        _ => return None,
    }
    Some(groups)
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
            "http://127.1/",
            "http://0177.0.0.1/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://[fe80::1%25eth0]/",
            "http://[::]/",
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
            "http://10.0.0.1/",
            "http://[2001:db8::1]/",
            "http://1.2.3.4.5/",
            "http://999.1.1.1/",
            "",
        ] {
            assert!(uri_finding(uri).is_none(), "{uri}");
        }
    }
}
