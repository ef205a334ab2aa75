//! The admin API (docs/admin.md): review drift (with the stored definitions of a server's
//! baseline, previous baseline and candidate), approve the reviewed fingerprint, quarantine
//! and release, read the audit ring.
//!
//! Main design decision: the admin API is answered by the engine of the plugin instance whose
//! config has an `admin` block with token hashes; the shipped Envoy config gives that block
//! only to an instance on its own (loopback) listener, in the same VM id as the data
//! listener's instance, so both see one shared state while agents on the data listener get
//! 404 whatever token they send. A request without an accepted token, or without the
//! approver's identity when `admin.identity` asks for one, changes nothing; every refusal is
//! audited (`admin.refused`) with its source and reason, never with token material.

use crate::config::IdentitySource;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::LocalReply;
use crate::policy::rules::CallerIdentity;
use crate::policy::status::{Actor, Event, ServerRecord};
use crate::state::audit::{AuditEvent, Counter, Outputs};
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Largest admin request body read; a bigger one is refused (413) before it is parsed.
pub const MAX_ADMIN_BODY: usize = 64 * 1024;

/// One admin API request, as the host adapter gathered it.
pub struct AdminRequest<'a> {
    /// HTTP method.
    pub method: &'a str,
    /// `:path`, query included.
    pub path: &'a str,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The peer address (Envoy `source.address`), for the audit trail.
    pub source: Option<&'a str>,
    /// Headers and dynamic metadata, where `admin.identity` is read.
    pub caller: &'a dyn CallerIdentity,
    /// The request body.
    pub body: &'a [u8],
}

/// Who sent an admin request, as far as it is known: recorded in every admin audit event.
struct Requester {
    source: Option<String>,
    by: Option<String>,
    /// Position in `admin.token_sha256` of the token it presented, once accepted.
    token: Option<usize>,
}

impl Requester {
    fn detail(&self) -> Map<String, Value> {
        let mut detail = Map::new();
        detail.insert("by".into(), Value::from(self.by.clone()));
        detail.insert("source".into(), Value::from(self.source.clone()));
        if let Some(index) = self.token {
            detail.insert("token_index".into(), Value::from(index));
        }
        detail
    }
}

/// Why an admin request was refused: the status, the server it named, the reason.
struct Refused {
    status: u16,
    server: Option<String>,
    reason: String,
}

fn refused(status: u16, server: Option<&str>, reason: String) -> Refused {
    Refused {
        status,
        server: server.map(str::to_string),
        reason,
    }
}

impl Engine {
    /// Whether `path` is under the admin prefix (the host then calls [`Engine::admin`]).
    pub fn is_admin_path(&self, path: &str) -> bool {
        path.starts_with(&self.config.admin.prefix)
    }

    /// Answers one admin request. Anything but a 200 is audited as `admin.refused`.
    pub fn admin(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        request: &AdminRequest<'_>,
    ) -> LocalReply {
        let mut who = Requester {
            source: request.source.map(|s| clip(s, 128).to_string()),
            by: None,
            token: None,
        };
        match self.admin_checked(store, out, now_ms, request, &mut who) {
            Ok(reply) => reply,
            Err(refusal) => {
                let mut detail = who.detail();
                detail.insert("http_status".into(), Value::from(refusal.status));
                detail.insert("method".into(), Value::from(clip(request.method, 16)));
                let path = request.path.split('?').next().unwrap_or_default();
                detail.insert("path".into(), Value::from(clip(path, 256)));
                let event = AuditEvent {
                    event: "admin.refused",
                    time_ms: now_ms,
                    server: refusal.server.unwrap_or_default(),
                    session: None,
                    status_before: None,
                    status_after: None,
                    baseline: None,
                    live: None,
                    reason: refusal.reason.clone(),
                    detail,
                };
                out.count(Counter::AdminRefused, Some(&refusal.status.to_string()));
                self.emit(store, out, &event);
                reply(refusal.status, json!({"error": refusal.reason}))
            }
        }
    }

    fn admin_checked(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        request: &AdminRequest<'_>,
        who: &mut Requester,
    ) -> Result<LocalReply, Refused> {
        let rest = request
            .path
            .strip_prefix(&self.config.admin.prefix)
            .unwrap_or_default();
        let rest = rest.split('?').next().unwrap_or_default();
        // Segments are percent-decoded, so a server id holding '/' (an Envoy Gateway cluster
        // name, say) is addressed as `servers/httproute%2Fns%2Fname`.
        let parts = rest
            .split('/')
            .filter(|p| !p.is_empty())
            .map(percent_decode)
            .collect::<Option<Vec<String>>>();
        let server = match parts.as_deref() {
            Some([first, id, ..]) if first == "servers" => Some(id.as_str()),
            _ => None,
        };
        let identity = self.config.admin.identity.as_ref();
        who.by = identity.and_then(|source| identity_of(source, request.caller));
        if self.config.admin.token_sha256.is_empty() {
            return Err(refused(404, server, "the toolseal admin API is off on this listener (its config has no admin.token_sha256)".into()));
        }
        let token = request
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or_default();
        if token.is_empty() {
            return Err(refused(401, server, "missing bearer token".into()));
        }
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        who.token = accepted_token(&presented, &self.config.admin.token_sha256);
        if who.token.is_none() {
            return Err(refused(
                401,
                server,
                "the bearer token is not one that admin.token_sha256 accepts".into(),
            ));
        }
        if let (Some(source), None) = (identity, &who.by) {
            let source = match source {
                IdentitySource::Header(name) => format!("header {name}"),
                IdentitySource::Metadata(path) => format!("metadata {path}"),
            };
            return Err(refused(
                403,
                server,
                format!(
                    "admin requests must say who makes them: {source} is missing or not one name (admin.identity)"
                ),
            ));
        }
        if request.body.len() > MAX_ADMIN_BODY {
            return Err(refused(
                413,
                server,
                format!("admin request bodies are at most {MAX_ADMIN_BODY} bytes"),
            ));
        }
        let Some(parts) = parts.as_deref() else {
            return Err(refused(
                400,
                None,
                "malformed percent-encoding in the admin path".into(),
            ));
        };
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        match (request.method, parts.as_slice()) {
            ("GET", ["servers"]) => {
                let servers: Vec<Value> = state::server_ids(store)
                    .iter()
                    .filter_map(|id| self.server_view(store, id, false))
                    .collect();
                Ok(reply(200, json!({"servers": servers})))
            }
            ("GET", ["servers", id]) => self
                .server_view(store, id, true)
                .map(|view| reply(200, view))
                .ok_or_else(|| refused(404, Some(id), format!("unknown server {id:?}"))),
            ("GET", ["servers", id, "tools", fingerprint]) => {
                self.stored_tools(store, id, fingerprint)
            }
            ("GET", ["store"]) => Ok(reply(200, crate::gateway::fleet::store_report(self, store))),
            ("GET", ["audit"]) => Ok(reply(
                200,
                json!({"events": state::recent_audit(store, self.config.audit.ring_size)}),
            )),
            ("POST", ["servers", id, action]) => {
                self.admin_action(store, out, now_ms, id, action, request.body, who)
            }
            _ => Err(refused(404, server, "unknown admin endpoint; see GET servers, GET servers/{id}, GET servers/{id}/tools/{fingerprint}, POST servers/{id}/approve|quarantine|release, GET audit, GET store".into())),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn admin_action(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        id: &str,
        action: &str,
        body: &[u8],
        who: &Requester,
    ) -> Result<LocalReply, Refused> {
        if !matches!(state::load_record(store, id), Ok(Some(_))) {
            return Err(refused(404, Some(id), format!("unknown server {id:?}")));
        }
        let body = if body.is_empty() {
            Ok(json!({}))
        } else {
            crate::wire::json::parse_strict(body, 16)
        };
        let Ok(body) = body else {
            return Err(refused(
                400,
                Some(id),
                "the request body must be a JSON object".into(),
            ));
        };
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
        let event = match action {
            "approve" => match text("fingerprint") {
                Some(fingerprint) => Event::Approve { fingerprint },
                None => {
                    return Err(refused(400, Some(id), "body must be {\"fingerprint\": \"sha256:…\"} with the reviewed fingerprint".into()));
                }
            },
            "quarantine" => Event::Quarantine {
                reason: text("reason").unwrap_or_else(|| "quarantined by an admin".into()),
                by: Actor::Admin,
            },
            "release" => Event::Release { by: Actor::Admin },
            other => {
                return Err(refused(
                    404,
                    Some(id),
                    format!("unknown action {other:?}; expected approve, quarantine or release"),
                ));
            }
        };
        match self.transition_with(store, out, id, None, &event, now_ms, &who.detail()) {
            Ok(_) => self
                .server_view(store, id, true)
                .map(|view| reply(200, view))
                .ok_or_else(|| refused(500, Some(id), "state vanished".into())),
            Err(StateError::Refused(r)) => Err(refused(409, Some(id), r.to_string())),
            Err(e) => Err(refused(503, Some(id), e.to_string())),
        }
    }

    /// `{"fingerprint", "tools"}`: the definitions stored for one of `id`'s own sets (its
    /// baseline, previous baseline or live candidate) — what a reviewer diffs and what a lock
    /// pins — served as stored. Any other fingerprint is refused like an unknown one, so the
    /// endpoint never tells which sets other servers have.
    fn stored_tools(
        &self,
        store: &dyn StateStore,
        id: &str,
        fingerprint: &str,
    ) -> Result<LocalReply, Refused> {
        let unavailable = |e: StateError| refused(503, Some(id), e.to_string());
        let Some((record, _)) = state::load_record(store, id).map_err(unavailable)? else {
            return Err(refused(404, Some(id), format!("unknown server {id:?}")));
        };
        let own = record.set_refs().contains(&Some(fingerprint));
        let stored = match own {
            true => state::tool_set_document(store, id, fingerprint).map_err(unavailable)?,
            false => None,
        };
        match stored {
            Some(body) => Ok(LocalReply {
                status: 200,
                content_type: "application/json",
                body,
            }),
            None => Err(refused(404, Some(id), "not a stored tool set of this server: only its baseline, previous baseline and live candidate are served, once listed".into())),
        }
    }

    /// The admin view for a trusted in-process host (the WIT component, which has no HTTP
    /// listener and no token): every server (`{"servers": [...]}`, as `GET {prefix}servers`),
    /// or one server with its full diff (as `GET {prefix}servers/{id}`); `None` for an unknown
    /// server.
    pub fn admin_view(&mut self, store: &dyn StateStore, server: Option<&str>) -> Option<Value> {
        match server {
            Some(id) => self.server_view(store, id, true),
            None => {
                let servers: Vec<Value> = state::server_ids(store)
                    .iter()
                    .filter_map(|id| self.server_view(store, id, false))
                    .collect();
                Some(json!({"servers": servers}))
            }
        }
    }

    /// An admin lifecycle event (approve, quarantine, release) for a trusted in-process host:
    /// the same transition and audit as the admin API's POST. Returns the server's view after
    /// it; `Ok(None)` for an unknown server (nothing changed).
    pub fn admin_event(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        server: &str,
        event: &Event,
    ) -> Result<Option<Value>, StateError> {
        if state::load_record(store, server)?.is_none() {
            return Ok(None);
        }
        self.transition(store, out, server, None, event, now_ms)?;
        Ok(self.server_view(store, server, true))
    }

    /// The admin view of one server (with the full classified diff and each withheld tool's
    /// changes when `full`).
    fn server_view(&mut self, store: &dyn StateStore, id: &str, full: bool) -> Option<Value> {
        let (record, _) = state::load_record(store, id).ok().flatten()?;
        let diff = self.diff(store, id, &record);
        let mut view = record_view(id, &record, self.config.posture_of(id).as_str());
        if let Some(obj) = view.as_object_mut() {
            obj.insert(
                "diff_summary".into(),
                diff.as_ref().map_or(Value::Null, |d| d.summary_json()),
            );
            let scope = self.config.drift_scope_of(id);
            let changes = diff.as_ref().filter(|_| full);
            crate::gateway::admin_views::drift_scope(obj, &record, scope, changes);
            crate::gateway::admin_views::views(obj, &record);
            if self.config.store.is_some() {
                // Whether this copy is the fleet's: `in_step` is false while a closure made
                // here waits to be written to the store.
                obj.insert(
                    "fleet".into(),
                    json!({"mod_revision": record.fleet_rev, "in_step": !record.fleet_dirty}),
                );
            }
            if full {
                obj.insert(
                    "diff".into(),
                    diff.as_ref().map_or(Value::Null, |d| d.to_json()),
                );
            }
            // The sections beyond tools the candidate changes (prompts, instructions, ...).
            if let Some(sections) = self.section_diff(store, id, &record) {
                obj.insert("sections_diff".into(), sections.by_section(full));
            }
        }
        Some(view)
    }
}

fn record_view(id: &str, record: &ServerRecord, posture: &str) -> Value {
    json!({
        "server": id,
        "schema_status": record.status.as_str(),
        "posture": posture,
        "baseline_fingerprint": record.baseline,
        "live_fingerprint": record.live,
        // A view whose names changed makes a candidate of the very baseline fingerprint.
        "candidate_fingerprint": record.live.as_ref().filter(|l| Some(*l) != record.baseline.as_ref() || record.live_view.is_some()),
        "live_invalid": record.live_invalid,
        "drift_at_ms": record.drift_at_ms,
        "awaiting_verification": record.awaiting_verification(),
        "quarantine": record.quarantine.as_ref().map(|(reason, by)| json!({"reason": reason, "by": by})),
        "findings": record.findings,
        "updated_ms": record.updated_ms,
    })
}

fn reply(status: u16, body: Value) -> LocalReply {
    LocalReply::json(status, &body)
}

/// The position of `presented` in `accepted`. Every entry is compared in full whatever
/// matches, so the time taken says nothing about which one did (or how close a guess came).
fn accepted_token(presented: &[u8; 32], accepted: &[[u8; 32]]) -> Option<usize> {
    let mut found = 0usize;
    let mut any = 0u8;
    for (index, hash) in accepted.iter().enumerate() {
        let mut diff = 0u8;
        for (x, y) in presented.iter().zip(hash.iter()) {
            diff |= x ^ y;
        }
        // 1 when equal, 0 otherwise, without a branch on the bytes.
        let equal = u8::from(diff == 0);
        found |= usize::from(equal).wrapping_neg() & index;
        any |= equal;
    }
    (any == 1).then_some(found)
}

/// The approver's name from `source`: one non-empty string of at most 256 characters without
/// control characters (it is written into audit lines), or `None` (also when the host could
/// not read the metadata: a configured identity that cannot be told refuses the request).
fn identity_of(source: &IdentitySource, caller: &dyn CallerIdentity) -> Option<String> {
    let name = match source {
        IdentitySource::Header(header) => caller.header(header)?,
        IdentitySource::Metadata(path) => match caller.metadata(path).ok().flatten()? {
            Value::String(name) => name,
            _ => return None,
        },
    };
    (!name.is_empty() && name.len() <= 256 && !name.chars().any(char::is_control)).then_some(name)
}

/// `text` cut to at most `max` bytes on a character boundary.
fn clip(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or_default()
}

/// Decodes `%XX` escapes of a path segment; `None` when an escape or the result is malformed.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
