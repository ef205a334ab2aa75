//! The admin API (SPEC section 6): review drift, approve the reviewed fingerprint,
//! quarantine and release, read the audit ring.
//!
//! Main design decision: the admin API is answered by the engine itself on the data path's
//! listener, so it sees the same shared state every worker sees; it is off unless a token
//! hash is configured, and a bad or missing token changes nothing (401).

use crate::audit::Outputs;
use crate::engine::{Engine, LocalReply};
use crate::state::{self, StateError};
use crate::status::{Actor, Event, Refusal, ServerRecord};
use crate::store::StateStore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

impl Engine {
    /// Whether `path` is under the admin prefix (the host then calls [`Engine::admin`]).
    pub fn is_admin_path(&self, path: &str) -> bool {
        path.starts_with(&self.config.admin.prefix)
    }

    /// Answers one admin request.
    #[allow(clippy::too_many_arguments)]
    pub fn admin(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        method: &str,
        path: &str,
        authorization: Option<&str>,
        body: &[u8],
    ) -> LocalReply {
        let Some(expected) = self.config.admin.token_sha256 else {
            return reply(
                404,
                json!({"error": "the toolseal admin API is off (no admin.token_sha256 configured)"}),
            );
        };
        let token = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or("");
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if token.is_empty() || !constant_time_eq(&presented, &expected) {
            return reply(401, json!({"error": "missing or invalid bearer token"}));
        }
        let rest = path.strip_prefix(&self.config.admin.prefix).unwrap_or("");
        let rest = rest.split('?').next().unwrap_or("");
        // Segments are percent-decoded, so a server id holding '/' (an Envoy Gateway cluster
        // name, say) is addressed as `servers/httproute%2Fns%2Fname`.
        let Some(decoded) = rest
            .split('/')
            .filter(|p| !p.is_empty())
            .map(percent_decode)
            .collect::<Option<Vec<String>>>()
        else {
            return reply(
                400,
                json!({"error": "malformed percent-encoding in the admin path"}),
            );
        };
        let parts: Vec<&str> = decoded.iter().map(String::as_str).collect();
        match (method, parts.as_slice()) {
            ("GET", ["servers"]) => {
                let servers: Vec<Value> = state::server_ids(store)
                    .iter()
                    .filter_map(|id| self.server_view(store, id, false))
                    .collect();
                reply(200, json!({"servers": servers}))
            }
            ("GET", ["servers", id]) => match self.server_view(store, id, true) {
                Some(view) => reply(200, view),
                None => reply(404, json!({"error": format!("unknown server {id:?}")})),
            },
            ("GET", ["audit"]) => reply(
                200,
                json!({"events": state::recent_audit(store, self.config.audit.ring_size)}),
            ),
            ("POST", ["servers", id, action]) => {
                self.admin_action(store, out, now_ms, id, action, body)
            }
            _ => reply(
                404,
                json!({"error": "unknown admin endpoint; see GET servers, GET servers/{id}, POST servers/{id}/approve|quarantine|release, GET audit"}),
            ),
        }
    }

    fn admin_action(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        id: &str,
        action: &str,
        body: &[u8],
    ) -> LocalReply {
        if !matches!(state::load_record(store, id), Ok(Some(_))) {
            return reply(404, json!({"error": format!("unknown server {id:?}")}));
        }
        let body = if body.is_empty() {
            Ok(json!({}))
        } else {
            crate::json::parse_strict(body, 16)
        };
        let Ok(body) = body else {
            return reply(
                400,
                json!({"error": "the request body must be a JSON object"}),
            );
        };
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
        let event = match action {
            "approve" => match text("fingerprint") {
                Some(fingerprint) => Event::Approve { fingerprint },
                None => {
                    return reply(
                        400,
                        json!({"error": "body must be {\"fingerprint\": \"sha256:…\"} with the reviewed fingerprint"}),
                    );
                }
            },
            "quarantine" => Event::Quarantine {
                reason: text("reason").unwrap_or_else(|| "quarantined by an admin".into()),
                by: Actor::Admin,
            },
            "release" => Event::Release { by: Actor::Admin },
            other => {
                return reply(
                    404,
                    json!({"error": format!("unknown action {other:?}; expected approve, quarantine or release")}),
                );
            }
        };
        match self.transition(store, out, id, None, &event, now_ms) {
            Ok(_) => match self.server_view(store, id, true) {
                Some(view) => reply(200, view),
                None => reply(500, json!({"error": "state vanished"})),
            },
            Err(StateError::Refused(r @ Refusal::Conflict { .. })) => {
                reply(409, json!({"error": r.to_string()}))
            }
            Err(StateError::Refused(r)) => reply(409, json!({"error": r.to_string()})),
            Err(e) => reply(503, json!({"error": e.to_string()})),
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

    /// The admin view of one server (with the full classified diff when `full`).
    fn server_view(&mut self, store: &dyn StateStore, id: &str, full: bool) -> Option<Value> {
        let (record, _) = state::load_record(store, id).ok().flatten()?;
        let diff = self.diff(store, id, &record);
        let mut view = record_view(id, &record, self.config.posture_of(id).as_str());
        if let Some(obj) = view.as_object_mut() {
            obj.insert(
                "diff_summary".into(),
                diff.as_ref().map_or(Value::Null, |d| d.summary_json()),
            );
            if full {
                obj.insert(
                    "diff".into(),
                    diff.as_ref().map_or(Value::Null, |d| d.to_json()),
                );
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
        "candidate_fingerprint": record.live.as_ref().filter(|l| Some(*l) != record.baseline.as_ref()),
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

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    diff == 0
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
