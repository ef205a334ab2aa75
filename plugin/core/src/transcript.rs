//! Recorded MCP traffic (docs/transcripts.md) and a native driver that replays it through the
//! engine exactly as a host adapter would.
//!
//! Main design decision: the native driver mirrors the proxy-wasm adapter's callback order
//! (request headers, whole request body, response headers, response body in chunks), so
//! golden decisions computed natively and through the `.wasm` must agree; a difference is a
//! bug in one of the adapters, never an expected divergence.

use crate::config::Config;
use crate::gateway::admin::AdminRequest;
use crate::gateway::body::BodyVerdict;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{BodyPlan, Exchange, LocalReply, RequestInfo};
use crate::gateway::fleet::{FleetCall, FleetReply};
use crate::gateway::stream::{BodyAnswer, HeadVerdict, RequestHead};
use crate::policy::rules::CallerIdentity;
use crate::state::audit::CollectedOutputs;
use crate::state::store::{MemoryStore, StateStore};
use crate::wire::revision::RoutingHeaders;
use serde_json::Value;

/// One recorded HTTP exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpExchange {
    /// Sequence label from the recording (index when absent).
    pub seq: String,
    /// HTTP method.
    pub http_method: String,
    /// Request path.
    pub path: String,
    /// Request headers in order.
    pub request_headers: Vec<(String, String)>,
    /// Request body (empty when none).
    pub request_body: Vec<u8>,
    /// Response status.
    pub status: u16,
    /// Response headers in order.
    pub response_headers: Vec<(String, String)>,
    /// Raw response body (SSE framing intact).
    pub response_body: Vec<u8>,
}

impl HttpExchange {
    /// The first request header called `name` (case-insensitive).
    pub fn request_header(&self, name: &str) -> Option<&str> {
        header(&self.request_headers, name)
    }

    /// The first response header called `name` (case-insensitive).
    pub fn response_header(&self, name: &str) -> Option<&str> {
        header(&self.response_headers, name)
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Parses a transcript: an array of exchanges or an object with `exchanges` or `entries`.
/// Entries without `http_method` (stdio lines) are skipped.
pub fn parse_transcript(bytes: &[u8]) -> Result<Vec<HttpExchange>, String> {
    let value = crate::wire::json::parse_strict(bytes, 128)
        .map_err(|e| format!("not a JSON transcript: {e}"))?;
    let entries = match &value {
        Value::Array(items) => items,
        Value::Object(obj) => match obj.get("exchanges").or_else(|| obj.get("entries")) {
            Some(Value::Array(items)) => items,
            _ => {
                return Err("a transcript object needs an `exchanges` (or `entries`) array".into());
            }
        },
        _ => {
            return Err(
                "a transcript is an array of exchanges or an object with `exchanges`".into(),
            );
        }
    };
    let mut out = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(method) = entry.get("http_method").and_then(Value::as_str) else {
            continue;
        };
        let seq = match entry.get("seq") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => index.to_string(),
        };
        let status = match entry.get("status") {
            Some(Value::Number(n)) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("exchange {seq}: `status` must be an HTTP status code"))?;
        out.push(HttpExchange {
            seq: seq.clone(),
            http_method: method.to_string(),
            path: entry
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string(),
            request_headers: headers(entry.get("request_headers"), &seq)?,
            request_body: text(entry.get("request_body")),
            status,
            response_headers: headers(entry.get("response_headers"), &seq)?,
            response_body: text(entry.get("response_body_raw")),
        });
    }
    Ok(out)
}

fn text(value: Option<&Value>) -> Vec<u8> {
    match value {
        Some(Value::String(s)) if s != "None" => s.clone().into_bytes(),
        _ => Vec::new(),
    }
}

fn headers(value: Option<&Value>, seq: &str) -> Result<Vec<(String, String)>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let items = value
        .as_array()
        .ok_or_else(|| format!("exchange {seq}: headers must be [[name, value], …]"))?;
    items
        .iter()
        .map(|pair| match pair.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(v)]) => Ok((k.clone(), v.clone())),
            _ => Err(format!("exchange {seq}: a header must be [name, value]")),
        })
        .collect()
}

struct Headers<'a>(&'a HttpExchange, &'a serde_json::Map<String, Value>);

impl CallerIdentity for Headers<'_> {
    fn header(&self, name: &str) -> Option<String> {
        self.0.request_header(name).map(str::to_string)
    }
    fn metadata(&self, path: &str) -> Result<Option<Value>, String> {
        let mut parts = path.split('/').filter(|p| !p.is_empty());
        let Some(first) = parts.next().and_then(|ns| self.1.get(ns)) else {
            return Ok(None);
        };
        Ok(parts.try_fold(first, |v, p| v.get(p)).cloned())
    }
}

/// What one replayed exchange produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// A local answer (the upstream was not contacted).
    pub local_reply: Option<LocalReply>,
    /// The response body as forwarded to the client.
    pub response_body: Vec<u8>,
}

/// How a native driver reaches the fleet store: the answer to one call.
pub type FleetTransport = Box<dyn FnMut(&FleetCall) -> FleetReply>;

/// How many calls one chain may make (each answer may ask for one more).
const FLEET_CHAIN: usize = 16;

/// The engine with an in-memory store and clock: a whole gateway, natively.
pub struct NativeReplay {
    /// The engine.
    pub engine: Engine,
    /// Shared state.
    pub store: MemoryStore,
    /// Everything emitted so far.
    pub out: CollectedOutputs,
    /// Clock (ms), advanced by one second per exchange.
    pub now_ms: u64,
    /// Envoy dynamic metadata every request carries (namespace → struct), as a host would
    /// offer it to policy principals and snapshot keys.
    pub metadata: serde_json::Map<String, Value>,
    /// The fleet store, when the config names one (without it, every call the engine asks
    /// for fails: what needs the store fails closed).
    pub fleet: Option<FleetTransport>,
}

impl NativeReplay {
    /// A configured gateway (runs `configure`).
    pub fn new(config: Config) -> Self {
        let mut replay = NativeReplay {
            engine: Engine::new(config),
            store: MemoryStore::new(),
            out: CollectedOutputs::default(),
            now_ms: 1_800_000_000_000,
            metadata: serde_json::Map::new(),
            fleet: None,
        };
        // An in-memory store never fails; a problem would still be in `config.loaded`.
        let _configured =
            replay
                .engine
                .configure(&mut replay.store, &mut replay.out, replay.now_ms);
        replay
    }

    /// Replays one exchange for `server`, feeding the response body in `chunk`-byte pieces.
    pub fn exchange(&mut self, server: &str, ex: &HttpExchange, chunk: usize) -> Replayed {
        let mut store = std::mem::take(&mut self.store);
        let replayed = self.exchange_on(&mut store, server, ex, chunk);
        self.store = store;
        replayed
    }

    /// [`NativeReplay::exchange`] over another store than its own: a worker of a gateway whose
    /// workers share one store (each a `NativeReplay` with its own engine and caches).
    pub fn exchange_on(
        &mut self,
        store: &mut dyn StateStore,
        server: &str,
        ex: &HttpExchange,
        chunk: usize,
    ) -> Replayed {
        self.now_ms = self.now_ms.saturating_add(1000);
        let now = self.now_ms;
        let metadata = self.metadata.clone();
        let caller = Headers(ex, &metadata);
        let info = RequestInfo {
            http_method: &ex.http_method,
            content_type: ex.request_header("content-type"),
            session: ex.request_header("mcp-session-id"),
            routing: RoutingHeaders {
                present: true,
                version: ex.request_header("mcp-protocol-version"),
                method: ex.request_header("mcp-method"),
                name: ex.request_header("mcp-name"),
                // Only the stateless revision's rules look at repeats (as every host does).
                repeated: ex
                    .request_header("mcp-protocol-version")
                    .is_some_and(crate::wire::revision::is_stateless)
                    && crate::wire::revision::routing_repeated(
                        ex.request_headers.iter().map(|(k, _)| k.as_str()),
                    ),
            },
            caller: &caller,
        };
        // The same entry points as the proxy-wasm adapter: the head, then the whole body in
        // one callback.
        let mut exchange = Exchange::default();
        let head = RequestHead::Read {
            path: &ex.path,
            server: Some(server),
            info: &info,
        };
        let body = &ex.request_body;
        let read = &mut |size: usize| Ok(body.get(..size).unwrap_or(body).to_vec());
        let head = self
            .engine
            .request_head_arrived(store, &mut self.out, now, &mut exchange, head);
        let answer = loop {
            let out = &mut self.out;
            let answer = match &head {
                HeadVerdict::Reply(reply) => BodyAnswer::Reply(reply.clone()),
                HeadVerdict::Admin => {
                    let request = AdminRequest {
                        method: &ex.http_method,
                        path: &ex.path,
                        authorization: ex.request_header("authorization"),
                        source: None,
                        caller: &caller,
                        body: &[],
                    };
                    let size = body.len();
                    self.engine.admin_body_arrived(
                        store,
                        out,
                        now,
                        &mut exchange,
                        &request,
                        size,
                        true,
                        read,
                    )
                }
                HeadVerdict::Mcp => self.engine.request_body_arrived(
                    store,
                    out,
                    now,
                    &mut exchange,
                    &info,
                    body.len(),
                    true,
                    read,
                ),
            };
            match answer {
                BodyAnswer::Fleet(call) => self.drive_fleet(store, Some(&mut exchange), call),
                answer => break answer,
            }
        };
        self.push_closures(store);
        if let BodyAnswer::Reply(reply) = answer {
            return Replayed {
                local_reply: Some(reply),
                response_body: Vec::new(),
            };
        }
        if exchange.awaits_session()
            && let Some(session) = ex.response_header("mcp-session-id")
        {
            self.engine.session_assigned(store, &mut exchange, session);
        }
        let plan = self.engine.response_headers(
            &mut exchange,
            ex.response_header("content-type"),
            ex.response_header("content-encoding"),
        );
        let body = &ex.response_body;
        let response_body = match plan {
            BodyPlan::Pass => body.clone(),
            BodyPlan::Buffer if self.engine.fleet_settings().is_none() => self
                .engine
                .response_json(store, &mut self.out, now, &mut exchange, body)
                .unwrap_or_else(|| body.clone()),
            BodyPlan::Buffer => {
                let verdict = self.response_body(store, &mut exchange, body, true);
                match verdict {
                    BodyVerdict::Replace(bytes) => bytes,
                    _ => body.clone(),
                }
            }
            BodyPlan::Stream => {
                let mut forwarded = Vec::new();
                let pieces: Vec<&[u8]> = if body.is_empty() {
                    vec![&[][..]]
                } else {
                    body.chunks(chunk.max(1)).collect()
                };
                let last = pieces.len().saturating_sub(1);
                for (i, piece) in pieces.into_iter().enumerate() {
                    let replaced = match self.engine.fleet_settings() {
                        None => self.engine.response_sse(
                            store,
                            &mut self.out,
                            now,
                            &mut exchange,
                            piece,
                            i == last,
                        ),
                        Some(_) => match self.response_body(store, &mut exchange, piece, i == last)
                        {
                            BodyVerdict::Replace(bytes) => Some(bytes),
                            _ => None,
                        },
                    };
                    match replaced {
                        Some(bytes) => forwarded.extend(bytes),
                        None => forwarded.extend_from_slice(piece),
                    }
                }
                forwarded
            }
        };
        self.push_closures(store);
        self.engine.exchange_end(store, &exchange);
        Replayed {
            local_reply: None,
            response_body,
        }
    }

    /// One response body callback holding `held` (the whole body so far), through the fleet
    /// store when the engine must wait for it, as a host adapter does.
    fn response_body(
        &mut self,
        store: &mut dyn StateStore,
        exchange: &mut Exchange,
        held: &[u8],
        end: bool,
    ) -> BodyVerdict {
        for _ in 0..FLEET_CHAIN {
            let read = &mut |from: usize| held.get(from..).map(<[u8]>::to_vec);
            let verdict = self.engine.response_body(
                store,
                &mut self.out,
                self.now_ms,
                exchange,
                held.len(),
                end,
                read,
            );
            match verdict {
                BodyVerdict::Fleet(call) => self.drive_fleet(store, Some(exchange), call),
                verdict => return verdict,
            }
        }
        BodyVerdict::Reset
    }

    /// Sends `call` and the calls that follow it to the fleet store, handing every reply to
    /// the engine.
    fn drive_fleet(
        &mut self,
        store: &mut dyn StateStore,
        mut exchange: Option<&mut Exchange>,
        call: FleetCall,
    ) {
        let mut call = call;
        for _ in 0..FLEET_CHAIN {
            let reply = match self.fleet.as_mut() {
                Some(send) => send(&call),
                None => FleetReply::Failed("no fleet store is reachable from this host".into()),
            };
            let next = self.engine.fleet_reply(
                store,
                &mut self.out,
                self.now_ms,
                exchange.as_deref_mut(),
                &call,
                reply,
            );
            match next {
                Some(next) => call = next,
                None => return,
            }
        }
    }

    /// Pushes the closures this worker made to the fleet store.
    fn push_closures(&mut self, store: &mut dyn StateStore) {
        for _ in 0..FLEET_CHAIN {
            let Some(call) = self.engine.fleet_outbox(store) else {
                return;
            };
            self.drive_fleet(store, None, call);
        }
    }

    /// The background work of a host's timer (every `sync_ms`): pushes what was not pushed,
    /// reads what other instances wrote.
    pub fn tick(&mut self) {
        let mut store = std::mem::take(&mut self.store);
        self.tick_on(&mut store);
        self.store = store;
    }

    /// [`NativeReplay::tick`] over another store than its own.
    pub fn tick_on(&mut self, store: &mut dyn StateStore) {
        self.now_ms = self.now_ms.saturating_add(1);
        for _ in 0..FLEET_CHAIN {
            let Some(call) = self.engine.fleet_tick(store, &mut self.out, self.now_ms) else {
                return;
            };
            let sync = call.path == crate::wire::etcd::RANGE_PATH;
            self.drive_fleet(store, None, call);
            if sync {
                return;
            }
        }
    }
}
