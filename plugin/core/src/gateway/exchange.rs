//! What one HTTP exchange is to the engine: the facts a host adapter gathers about a
//! request, the verdicts it gets back, and what the exchange remembers between callbacks
//! (the requests awaiting their answer, in the order forwarded, and how its response is read).
//!
//! Main design decision: these are the types every part of the data path and every host
//! adapter share, so they depend on nothing of the data path: a reader follows a request
//! from the stream callbacks to its decision and back without going in circles, and an
//! adapter needs the engine only for what it asks of it.

use crate::gateway::held_json::HeldJson;
use crate::policy::rules::CallerIdentity;
use crate::policy::section::{Section, TOOLS_CALL, TOOLS_LIST};
use crate::policy::views::view_key;
use crate::state::snapshot_key::ClientKey;
use crate::wire::jsonrpc::same_id;
use crate::wire::revision::RoutingHeaders;
use crate::wire::sse::SseParser;
use serde_json::Value;

/// Facts about one client request, gathered by the host adapter.
pub struct RequestInfo<'a> {
    /// HTTP method.
    pub http_method: &'a str,
    /// `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// `Mcp-Session-Id` header.
    pub session: Option<&'a str>,
    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` (MCP 2026-07-28 routes on them).
    pub routing: RoutingHeaders<'a>,
    /// Headers and metadata for policy principals and snapshot keys.
    pub caller: &'a dyn CallerIdentity,
}

/// An answer the host sends instead of forwarding the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type` of `body`.
    pub content_type: &'static str,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl LocalReply {
    /// A JSON reply.
    pub fn json(status: u16, body: &Value) -> Self {
        LocalReply {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
        }
    }
}

/// What to do with a client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestVerdict {
    /// Send it on to the server unchanged.
    Forward,
    /// Answer locally; the server never sees the request.
    Reply(LocalReply),
}

/// A forwarded request awaiting its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// A request whose answer shows a section of the surface: a list (`tools/list`, and the
    /// list of a section the server seals beyond tools), or a handshake for its instructions.
    /// Its answer is checked against the catalogue.
    List(PendingList),
    /// A `tools/call`: its result may be held to the tool's output contract.
    Call(PendingCall),
    /// Any other request (id, method), so its answer's record names its method.
    Other(Value, String),
}

impl Pending {
    /// The request's JSON-RPC id.
    pub fn id(&self) -> &Value {
        match self {
            Pending::List(list) => &list.id,
            Pending::Call(call) => &call.id,
            Pending::Other(id, _) => id,
        }
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        match self {
            Pending::List(list) => list.method,
            Pending::Call(_) => TOOLS_CALL,
            Pending::Other(_, method) => method,
        }
    }

    /// Lists of tools (0), calls (1) and the rest (2): bounded apart, and answered in that
    /// order by an error that answers several.
    pub(crate) fn kind_index(&self) -> usize {
        match self {
            Pending::List(list) if list.shows_tools() => 0,
            Pending::Call(_) => 1,
            Pending::List(_) | Pending::Other(..) => 2,
        }
    }

    /// Whether it is a list of tools.
    pub(crate) fn lists_tools(&self) -> bool {
        matches!(self, Pending::List(list) if list.shows_tools())
    }
}

/// A forwarded `tools/call` awaiting its result.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// JSON-RPC id.
    pub id: Value,
    /// Tool name.
    pub tool: String,
    /// The approved tool has an `outputSchema`: check the result against it.
    pub check_result: bool,
    /// Asked under a stateless revision (MCP 2026-07-28): the answer may be an interim
    /// `input_required` one, and a replacement must carry `resultType`.
    pub stateless: bool,
    /// The server's status when the call was allowed (`None`: not known, read it again). A
    /// result checked against no contract is recorded with it, so its response does not read
    /// the server record again.
    pub allowed_at: Option<crate::policy::status::SchemaStatus>,
}

/// What a checked section answer leaves to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionVerdict {
    /// Served as any other answer: it verified, moved the lifecycle (a drift closes the
    /// server, and the closed answer follows), or the server has no baseline to check it
    /// against yet.
    Checked,
    /// Served without these items (the instructions: without them), and why: they are not
    /// the catalogue's, and this answer could not move the lifecycle.
    Withhold {
        /// The keys of the items withheld (`None`: every item).
        keys: Option<Vec<String>>,
        /// Why, in words.
        reason: String,
    },
}

/// A forwarded request whose answer shows a section, awaiting its result: a `tools/list`,
/// the list of a section the server seals beyond tools, or a handshake for the instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingList {
    /// JSON-RPC id.
    pub id: Value,
    /// The request's method, as the section table spells it ([`Section::shown_by`]).
    pub method: &'static str,
    /// The section its answer shows first ([`Section::Tools`] for a tool list, whose answer
    /// shows the tools' other fields too).
    pub section: Section,
    /// The cursor the request sent (a later page), as its text: pages accumulate along the
    /// chain of cursors, so listings that run at once never mix their pages.
    pub cursor: Option<String>,
    /// Asked under a stateless revision (MCP 2026-07-28): a rewritten result must carry that
    /// revision's members (`resultType`, cache hints).
    pub stateless: bool,
    /// The caller's snapshot key: a verified tool list is recorded as what this caller saw,
    /// and the pages of one listing are kept for it.
    pub key: Option<ClientKey<'static>>,
    /// The view the list belongs to (`None`: the request was not seen, so its view cannot be
    /// told).
    pub view: Option<crate::policy::views::ViewRead>,
    /// The caller's principal outcomes, read with the request when policy can hide tools
    /// from a list (`None`: it cannot, or the request was not seen: every principal unread).
    pub caller: Option<crate::policy::rules::CallerView>,
}

impl PendingList {
    /// A pending list of a request of `method`, if its answer shows a section (a handshake
    /// shows the instructions); the rest is not known yet.
    pub fn of(id: &Value, method: &str) -> Option<PendingList> {
        let (method, section) = Section::shown_by(method)?;
        Some(PendingList {
            id: id.clone(),
            method,
            section,
            cursor: None,
            stateless: false,
            key: None,
            view: None,
            caller: None,
        })
    }

    /// A pending handshake-era tool list of `session` (no cursor).
    pub fn new(id: Value, session: Option<&str>) -> Self {
        PendingList {
            id,
            method: TOOLS_LIST,
            section: Section::Tools,
            cursor: None,
            stateless: false,
            key: session.map(|s| ClientKey::session(s).into_owned()),
            view: None,
            caller: None,
        }
    }

    /// Whether its answer is a list of tools.
    pub fn shows_tools(&self) -> bool {
        self.section == Section::Tools
    }

    /// Whose pages of one listing these are (the caller's snapshot key identity; `None`: none
    /// could be read).
    pub fn key_identity(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.key.as_ref().map(crate::state::key_identity)
    }

    /// The request's view, when it could be told.
    pub fn view_id(&self) -> Option<&crate::policy::views::ViewId> {
        self.view.as_ref().and_then(|v| v.as_ref().ok())
    }
}

/// What one HTTP exchange (a request and its response stream) remembers between callbacks.
#[derive(Debug, Default, Clone)]
pub struct Exchange {
    /// Server id.
    pub server: String,
    /// `Mcp-Session-Id` of the request.
    pub session: Option<String>,
    /// The stateless revision the request declared (header or `_meta`: MCP 2026-07-28 or
    /// later), once its body was read; `None` for the handshake era.
    pub protocol_version: Option<String>,
    /// The requests awaiting their answer, in the order they were forwarded.
    pub pending: Vec<Pending>,
    /// The ids a resumed stream took over from its session's earlier exchanges (see
    /// [`crate::gateway::resume`]): those it answers leave the session's slot at its end.
    pub resumed: Vec<Value>,
    /// Response framing state.
    pub response: ResponseState,
    /// The request path without its query, kept when a view reads it.
    pub path: String,
    /// The view of the request's lists and calls, once its body was read.
    pub surface: Option<crate::policy::views::ViewRead>,
    /// The caller's principal outcomes for the rules about prompts and resources, read with
    /// a request that lists prompts or resources when those rules can hide some
    /// ([`crate::policy::rules::Policy::use_caller_view`]).
    pub uses_caller: Option<crate::policy::rules::CallerView>,
    /// The capability names an `initialize` request declared and when it was seen, until
    /// the server names the session they belong to
    /// ([`Engine::session_assigned`](crate::gateway::engine::Engine::session_assigned)).
    pub declared: Option<(Vec<String>, u64)>,
    /// What the fleet store answered the callback that waits for it (see
    /// [`crate::gateway::fleet`]).
    pub fleet: crate::state::fleet::FleetProgress,
}

impl Exchange {
    /// A new exchange for `server`.
    pub fn new(server: &str, session: Option<&str>) -> Self {
        Exchange {
            server: server.to_string(),
            session: session.map(str::to_string),
            ..Default::default()
        }
    }

    /// Whether the response is a JSON body to hold whose declared length the host has not
    /// been asked for yet: ask it once, with the response headers (before the adapter removes
    /// `Content-Length`), and hand it over with [`Exchange::declare_length`].
    pub fn wants_declared_length(&self) -> bool {
        matches!(&self.response, ResponseState::Json(held) if held.length_unasked())
    }

    /// The response's `Content-Length` (`None`: none, or the host could not hand it over): a
    /// JSON body held within it is read at its end only.
    pub fn declare_length(&mut self, content_length: Option<&str>) {
        if let ResponseState::Json(held) = &mut self.response {
            held.declare(content_length);
        }
    }

    /// Whether the answer's `Mcp-Session-Id` header is wanted: the request was an
    /// `initialize` whose declared capabilities wait for the session they belong to.
    pub fn awaits_session(&self) -> bool {
        self.declared.is_some()
    }

    /// Whether the request was made under a stateless revision (MCP 2026-07-28 or later).
    pub fn stateless(&self) -> bool {
        self.protocol_version
            .as_deref()
            .is_some_and(crate::wire::revision::is_stateless)
    }

    /// Takes over what `later` (a forwarded message of the same server and session) left
    /// pending, for hosts that keep one exchange per session across messages (the WIT
    /// component); keeps at most `max_pending` ids of each kind, dropping the oldest, so the
    /// exchange stays bounded when answers never come.
    pub fn absorb(&mut self, later: Exchange, max_pending: usize) {
        if later.protocol_version.is_some() {
            self.protocol_version = later.protocol_version;
        }
        // What the later message's request told (its view, an initialize's declared
        // capabilities) is what its answer is checked with.
        if later.surface.is_some() {
            self.surface = later.surface;
        }
        if later.uses_caller.is_some() {
            self.uses_caller = later.uses_caller;
        }
        if later.declared.is_some() {
            self.declared = later.declared;
        }
        if !later.path.is_empty() {
            self.path = later.path;
        }
        self.pending.extend(later.pending);
        // The newest `max_pending` of each kind stay.
        let mut kept = [0usize; 3];
        let mut newest_first: Vec<Pending> = std::mem::take(&mut self.pending)
            .into_iter()
            .rev()
            .filter(|pending| match kept.get_mut(pending.kind_index()) {
                Some(count) if *count < max_pending => {
                    *count += 1;
                    true
                }
                _ => false,
            })
            .collect();
        newest_first.reverse();
        self.pending = newest_first;
    }

    /// Whether a request still waits for its answer.
    pub fn awaits_answer(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Whether a request with this id still waits for its answer.
    pub fn waits(&self, id: &Value) -> bool {
        self.pending.iter().any(|p| same_id(p.id(), id))
    }

    /// Whether a `tools/list` request awaits its result.
    pub fn awaits_tool_list(&self) -> bool {
        self.pending.iter().any(Pending::lists_tools)
    }

    /// Whether a request whose answer shows a section (a list, or a handshake for the
    /// instructions of a server that seals them) awaits its result.
    pub fn awaits_list(&self) -> bool {
        self.pending.iter().any(|p| matches!(p, Pending::List(_)))
    }

    /// The `tools/call` requests awaiting their result.
    pub fn calls(&self) -> impl Iterator<Item = &PendingCall> {
        self.pending.iter().filter_map(|p| match p {
            Pending::Call(call) => Some(call),
            _ => None,
        })
    }

    /// How many requests other than tool lists and calls wait.
    pub(crate) fn others_waiting(&self) -> usize {
        self.pending.iter().filter(|p| p.kind_index() == 2).count()
    }

    /// Takes out the request `id` answers (an error answers it as a result would).
    pub(crate) fn settle(&mut self, id: &Value) -> Option<Pending> {
        let index = self.pending.iter().position(|p| same_id(p.id(), id))?;
        Some(self.pending.remove(index))
    }

    /// The section and view key of the first list request awaiting its result (a list of
    /// tools, of a section sealed or not; an empty key: the view cannot be told): where a
    /// worker looks for the list it remembers.
    pub(crate) fn awaited_list(&self) -> Option<(Section, &str)> {
        self.pending.iter().find_map(|p| match p {
            Pending::List(list) => Some((list.section, view_key(list.view.as_ref()))),
            Pending::Other(_, method) => {
                Section::other_listed_by(method).map(|s| (s, view_key(self.surface.as_ref())))
            }
            Pending::Call(_) => None,
        })
    }

    /// Takes out the list of `section` request `id` answers, if it is one.
    pub(crate) fn settle_list(&mut self, id: &Value, section: Section) -> Option<Pending> {
        let index = self.pending.iter().position(|p| {
            let lists = match p {
                Pending::List(list) => list.section == section,
                Pending::Other(_, method) => Section::other_listed_by(method) == Some(section),
                Pending::Call(_) => false,
            };
            lists && same_id(p.id(), id)
        })?;
        Some(self.pending.remove(index))
    }
}

/// How the host must feed the response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Forward as it comes; nothing to inspect.
    Pass,
    /// Buffer to the end, then call
    /// [`Engine::response_json`](crate::gateway::engine::Engine::response_json).
    Buffer,
    /// Call [`Engine::response_sse`](crate::gateway::engine::Engine::response_sse) with each
    /// chunk and forward what it returns.
    Stream,
}

/// Response framing state of one exchange.
#[derive(Debug, Default, Clone)]
pub enum ResponseState {
    /// Not decided yet.
    #[default]
    Unknown,
    /// Passing through.
    Pass,
    /// Buffered JSON: an HTTP body, replaced whole if it changes; the scan of what arrived
    /// so far tells a body holding more than one value before it ends.
    Json(HeldJson),
    /// One whole message of a transport that delivers messages one by one (stdio): it
    /// answers one of the requests in flight, not all of them.
    Message,
    /// A body that must be inspected but cannot be read (why).
    Unreadable(String),
    /// SSE in progress.
    Sse(Box<SseParser>),
    /// An SSE stream that failed closed: the rest is dropped.
    Dropped,
}

/// Something the gateway could not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The host could not hand over the response headers: the content type is unknown.
    Headers,
    /// The host could not hand over a body chunk.
    Chunk,
    /// A JSON or event-stream body sent compressed.
    Compressed,
    /// A body that is neither JSON nor an event stream.
    Foreign,
    /// A body already found unreadable at its headers, now at hand.
    Withheld,
    /// A JSON body over `limits.max_response_bytes`.
    Oversized,
    /// A JSON body the strict parser refused.
    MalformedBody,
    /// A JSON body that goes on after its first value (newline-separated messages): found
    /// before the body ends.
    SeveralValues,
    /// The data of one event of a stream, refused by the strict parser.
    MalformedEvent,
}

impl Unread {
    /// The reason given to the client and the audit trail.
    pub fn why(self) -> &'static str {
        match self {
            Unread::Headers => "the host could not hand over the response headers",
            Unread::Chunk => "the host could not hand over the response body",
            Unread::Compressed => "the response is compressed",
            Unread::Foreign => "the response is neither JSON nor an event stream",
            Unread::Withheld => "the response cannot be read",
            Unread::Oversized => "the response is over limits.max_response_bytes",
            Unread::MalformedBody => "unreadable response",
            Unread::SeveralValues => {
                "the response holds more than one JSON value (an application/json body is one JSON-RPC message)"
            }
            Unread::MalformedEvent => "unreadable event data",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(exchange: &Exchange) -> Vec<Value> {
        exchange.pending.iter().map(|p| p.id().clone()).collect()
    }

    /// A later message's requests join in the order they were forwarded; past the bound,
    /// the oldest of that kind leave, and the other kinds keep theirs.
    #[test]
    fn absorbing_keeps_the_newest_of_each_kind_in_the_order_they_were_forwarded() {
        let mut exchange = Exchange::new("s", Some("a"));
        let mut later = Exchange::new("s", Some("a"));
        for n in 0..4 {
            later
                .pending
                .push(Pending::List(PendingList::new(json!(n), Some("a"))));
            later
                .pending
                .push(Pending::Other(json!(format!("o{n}")), "ping".into()));
        }
        exchange.absorb(later, 3);
        let expected = [1, 2, 3].map(|n| [json!(n), json!(format!("o{n}"))]);
        assert_eq!(ids(&exchange), expected.concat());
        exchange.absorb(Exchange::default(), 2);
        assert_eq!(
            ids(&exchange),
            [json!(2), json!("o2"), json!(3), json!("o3")]
        );
        assert_eq!(exchange.others_waiting(), 2);
    }
}
