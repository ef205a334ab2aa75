//! The benchmark scenarios: which exchanges bring a gateway into the state under test, which
//! exchange is then measured over and over, and what its outcome must be.
//!
//! Main design decision: a scenario is data (setup exchanges, one measured exchange, the
//! expected outcome), so the native engine and the `.wasm` run exactly the same traffic and
//! every measured message is checked for the outcome it is supposed to have: a benchmark
//! that silently measured a refusal instead of a verified list would be worthless.

use super::workload::{self, Framing, Revision};
use toolseal_core::transcript::HttpExchange;

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `tools/call` with a `content` argument of this many bytes.
    Call(usize),
    /// `tools/list` with this many tools.
    List(usize),
    /// `resources/list` with this many resources (screened, never sealed).
    Resources(usize),
    /// `prompts/list` with this many prompts (passed, or emptied for a closed server).
    Prompts(usize),
    /// `prompts/get` of the last of this many prompts, on a server that seals them.
    PromptGet(usize),
}

/// Which path through the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// The server serves its approved baseline: lists pass, calls are allowed.
    Verified,
    /// The server drifted (`changed`): lists are filtered, calls refused locally.
    Filtered,
    /// The server drifted in its last tool under `drift_scope: "tool"`: lists are served
    /// without that tool, calls to the others are allowed.
    Contained,
    /// Verified, with a policy that refuses the `delete_*` tools to every caller: lists are
    /// served without them (one tool in eight), calls pass.
    Scoped,
    /// A server with no baseline under the strict posture: every list is screened as a first
    /// contact and held `pending` (served with no tools). The cost of first-contact
    /// screening, paid on every list until someone approves.
    Screened,
    /// Verified, on a server that seals every section beyond its tools (`seal`, and
    /// `"resources": "seal"`): a tool list also has its tools' other fields compared, a prompt
    /// or resource list is compared with the sealed ones.
    Sealed,
}

/// The plugin configuration of a [`Path::Contained`] row.
const CONTAINED_CONFIG: &[u8] = br#"{"posture": "discovery", "server_id": {"from": "route"},
    "servers": {"bench": {"drift_scope": "tool"}}}"#;

/// The plugin configuration of a [`Path::Scoped`] row.
const SCOPED_CONFIG: &[u8] = br#"{"posture": "discovery", "server_id": {"from": "route"},
    "policy": {"rules": [{"action": "deny", "tool": "delete_*"}]}}"#;

/// The plugin configuration of a [`Path::Sealed`] row.
const SEALED_CONFIG: &[u8] = br#"{"posture": "discovery", "server_id": {"from": "route"},
    "servers": {"bench": {"seal": ["tool-fields", "instructions", "prompts", "resource-templates"],
        "resources": "seal"}}}"#;

/// The plugin configuration of a [`Path::Screened`] row.
const SCREENED_CONFIG: &[u8] = br#"{"posture": "strict", "server_id": {"from": "route"}}"#;

/// What the measured exchange must produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Forwarded upstream, the response reaches the client unchanged.
    PassedUnchanged,
    /// Forwarded upstream, the response rewritten (tools removed).
    Rewritten,
    /// Answered locally (the upstream never sees the request).
    LocalReply,
    /// Forwarded upstream, the response reaches the client with only its list's `ttlMs`
    /// lowered to the gateway's default cap (a verified 2026-07-28 list).
    TtlLowered,
}

/// One benchmark scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Row label.
    pub name: String,
    /// What is measured.
    pub kind: Kind,
    /// Verified or filtered.
    pub path: Path,
    /// Response framing.
    pub framing: Framing,
    /// Tools the server lists.
    pub tool_count: usize,
    /// The MCP revision of client and server.
    pub revision: Revision,
    /// The size of the chunks the response body arrives in (0: whole, in one callback).
    pub chunk: usize,
    /// Whether the measured answer declares its length (`Content-Length`).
    pub declared: bool,
    /// Whether two kinds of callers list in turn (a 2026-07-28 list: one declaring no
    /// capabilities, one declaring `sampling`, which the server lists one tool more).
    pub views: bool,
}

/// Argument sizes of the `tools/call` rows (bytes of the `content` argument).
pub const SMALL_ARGS: usize = 64;
/// The large `tools/call` argument (a 64 KiB document body).
pub const LARGE_ARGS: usize = 64 * 1024;
/// Tools listed by the server in the `tools/call` rows.
pub const CALL_TOOLS: usize = 100;
/// The chunk size of the `chunked` rows (bytes).
pub const CHUNK: usize = 16 * 1024;

impl Scenario {
    /// A handshake-era scenario row.
    pub fn new(kind: Kind, path: Path, framing: Framing) -> Self {
        Self::in_revision(kind, path, framing, Revision::Handshake)
    }

    /// A scenario row in `revision`.
    pub fn in_revision(kind: Kind, path: Path, framing: Framing, revision: Revision) -> Self {
        let (what, tool_count) = match kind {
            Kind::Call(SMALL_ARGS) => ("call small".to_string(), CALL_TOOLS),
            Kind::Call(n) => (format!("call {}K", n / 1024), CALL_TOOLS),
            Kind::List(n) => (format!("list {n}"), n),
            Kind::Resources(n) => (format!("resources {n}"), CALL_TOOLS),
            Kind::Prompts(n) => (format!("prompts {n}"), CALL_TOOLS),
            Kind::PromptGet(n) => (format!("prompt get of {n}"), CALL_TOOLS),
        };
        let path_name = match path {
            Path::Verified => "verified",
            Path::Filtered => "filtered",
            Path::Contained => "contained",
            Path::Scoped => "scoped",
            Path::Screened => "screened",
            Path::Sealed => "sealed",
        };
        Scenario {
            name: format!("{what} {path_name} {}{}", framing.name(), revision.suffix()),
            kind,
            path,
            framing,
            tool_count,
            revision,
            chunk: 0,
            declared: false,
            views: false,
        }
    }

    /// The same row with its response body arriving in chunks of [`CHUNK`] bytes, as Envoy
    /// hands a large body over: each chunk is read and scanned before the body ends.
    pub fn chunked(mut self) -> Self {
        self.chunk = CHUNK;
        self.name.push_str(" chunked");
        self
    }

    /// The chunked row whose answer declares its length, as most servers' JSON answers do
    /// (Envoy then reads a body held within it at its end only).
    pub fn declared(mut self) -> Self {
        self.declared = true;
        self.name.push_str(" declared");
        self
    }

    /// The 2026-07-28 list row with two kinds of callers listing in turn, each its own tools
    /// (prompts) (the measured exchanges alternate: a figure is the mean of the two).
    pub fn two_views(mut self) -> Self {
        self.views = true;
        self.name.push_str(" two views");
        self
    }

    /// Every scenario of the default run.
    pub fn all() -> Vec<Scenario> {
        let mut all = Vec::new();
        for framing in [Framing::Json, Framing::Sse] {
            for path in [Path::Verified, Path::Filtered] {
                all.push(Scenario::new(Kind::Call(SMALL_ARGS), path, framing));
                all.push(Scenario::new(Kind::Call(LARGE_ARGS), path, framing));
                for n in [10, 100, 1000] {
                    all.push(Scenario::new(Kind::List(n), path, framing));
                }
            }
        }
        // A drift contained to one tool, and lists cut for their caller by policy.
        for framing in [Framing::Json, Framing::Sse] {
            all.push(Scenario::new(
                Kind::Call(SMALL_ARGS),
                Path::Contained,
                framing,
            ));
            for n in [100, 1000] {
                all.push(Scenario::new(Kind::List(n), Path::Contained, framing));
                all.push(Scenario::new(Kind::List(n), Path::Scoped, framing));
            }
        }
        // The other sections of a server beside its tool list: 100 resources screened on a
        // verified server, 100 prompts passed on a verified one and emptied on a closed one.
        for path in [Path::Verified, Path::Filtered] {
            all.push(Scenario::new(Kind::Resources(100), path, Framing::Json));
            all.push(Scenario::new(Kind::Prompts(100), path, Framing::Json));
        }
        // The same lists on a server that seals its prompts, resources and its tools' other
        // fields.
        all.push(Scenario::new(
            Kind::Prompts(100),
            Path::Sealed,
            Framing::Json,
        ));
        all.push(Scenario::new(
            Kind::Resources(100),
            Path::Sealed,
            Framing::Json,
        ));
        all.push(Scenario::new(Kind::List(100), Path::Sealed, Framing::Json));
        // A use of one sealed prompt, checked against the catalogue and the caller's view.
        all.push(Scenario::new(
            Kind::PromptGet(100),
            Path::Sealed,
            Framing::Json,
        ));
        // A list whose body arrives in chunks, verified and filtered.
        for path in [Path::Verified, Path::Filtered] {
            all.push(Scenario::new(Kind::List(100), path, Framing::Json).chunked());
        }
        all.push(
            Scenario::new(Kind::List(100), Path::Verified, Framing::Json)
                .chunked()
                .declared(),
        );
        // First-contact screening of a list of 100 tools.
        all.push(Scenario::new(
            Kind::List(100),
            Path::Screened,
            Framing::Json,
        ));
        // MCP 2026-07-28 beside them: the call, and lists of 10 and 100 tools.
        let stateless = Revision::Stateless;
        for framing in [Framing::Json, Framing::Sse] {
            all.push(Scenario::in_revision(
                Kind::Call(SMALL_ARGS),
                Path::Verified,
                framing,
                stateless,
            ));
            all.push(Scenario::in_revision(
                Kind::Call(SMALL_ARGS),
                Path::Filtered,
                framing,
                stateless,
            ));
            for n in [10, 100] {
                all.push(Scenario::in_revision(
                    Kind::List(n),
                    Path::Verified,
                    framing,
                    stateless,
                ));
                if n == 100 && framing == Framing::Json {
                    for path in [Path::Verified, Path::Sealed] {
                        all.push(
                            Scenario::in_revision(Kind::List(n), path, framing, stateless)
                                .two_views(),
                        );
                    }
                    // Two kinds of callers of a server that seals its prompts, each listed its
                    // own prompts, in turn.
                    all.push(
                        Scenario::in_revision(Kind::Prompts(n), Path::Sealed, framing, stateless)
                            .two_views(),
                    );
                }
                all.push(Scenario::in_revision(
                    Kind::List(n),
                    Path::Filtered,
                    framing,
                    stateless,
                ));
            }
        }
        all
    }

    /// The plugin configuration the scenario's gateway runs.
    pub fn config(&self) -> &'static [u8] {
        match self.path {
            Path::Verified | Path::Filtered => super::messages::CONFIG,
            Path::Contained => CONTAINED_CONFIG,
            Path::Scoped => SCOPED_CONFIG,
            Path::Screened => SCREENED_CONFIG,
            Path::Sealed => SEALED_CONFIG,
        }
    }

    /// The tools the server lists once the scenario is set up (`count` of them).
    fn listed(&self, count: usize) -> Vec<serde_json::Value> {
        match self.path {
            Path::Verified | Path::Scoped | Path::Screened | Path::Sealed => {
                workload::tools(count, false)
            }
            Path::Filtered => workload::tools(count, true),
            Path::Contained => workload::tools_with_last_drifted(count),
        }
    }

    /// Exchanges that bring a fresh gateway into the scenario's state: in the handshake era
    /// the session's `initialize` and `notifications/initialized`, then a first `tools/list` (trust on first use makes it the
    /// baseline), then for the drifted paths a drifted one.
    pub fn setup(&self) -> Vec<HttpExchange> {
        let list = |id, tools: &[serde_json::Value]| {
            workload::list_exchange_in(self.revision, id, tools, self.framing)
        };
        let mut setup = Vec::new();
        if self.revision == Revision::Handshake {
            setup.push(workload::initialize_exchange(0));
            setup.push(workload::initialized_exchange());
        }
        setup.push(list(1, &workload::tools(self.tool_count, false)));
        if self.views && matches!(self.kind, Kind::List(_)) {
            // The second view's first list grows the catalogue (trust on first use).
            setup.push(self.second_view_list(2));
        }
        if matches!(self.path, Path::Filtered | Path::Contained) {
            setup.push(list(2, &self.listed(self.tool_count)));
        }
        // A sealed section is sealed by its first list (the measured ones verify).
        match (self.path, self.kind) {
            (Path::Sealed, Kind::Prompts(n) | Kind::PromptGet(n)) => {
                let prompts = (true, n);
                let first =
                    workload::section_exchange_in(self.revision, 2, prompts, &[], self.framing);
                setup.push(first);
                if self.views {
                    // The second view's first list adds its prompt (trust on first use).
                    setup.push(self.second_view_list(2));
                }
            }
            (Path::Sealed, Kind::Resources(n)) => {
                setup.push(workload::section_exchange(2, false, n, self.framing));
            }
            _ => {}
        }
        if self.views {
            // Both views' lists twice, so that what a worker remembers of each (a verified
            // list of a sealed section, then the very answer it was read from) is in place
            // before the measured ones: a figure is the steady cost of a list.
            for _ in 0..2 {
                setup.extend(self.measured_all());
            }
        }
        setup
    }

    /// The exchange measured over and over.
    pub fn measured(&self) -> HttpExchange {
        let mut exchange = self.measured_undeclared();
        if self.declared {
            let length = exchange.response_body.len().to_string();
            exchange
                .response_headers
                .push(("content-length".into(), length));
        }
        exchange
    }

    /// The exchanges measured in turn: [`Scenario::measured`], and for a `two views` row the
    /// other view's list after it.
    pub fn measured_all(&self) -> Vec<HttpExchange> {
        let mut all = vec![self.measured()];
        if self.views {
            all.push(self.second_view_list(3));
        }
        all
    }

    /// The list of the second view of a `two views` row: the tools (prompts) and the one only
    /// clients declaring `sampling` are listed.
    fn second_view_list(&self, id: u64) -> HttpExchange {
        let list = match self.kind {
            Kind::Prompts(n) => {
                let more = [workload::sampling_prompt()];
                let prompts = (true, n);
                workload::section_exchange_in(self.revision, id, prompts, &more, self.framing)
            }
            _ => {
                let mut tools = workload::tools(self.tool_count, false);
                tools.push(workload::sampling_tool());
                workload::list_exchange_in(self.revision, id, &tools, self.framing)
            }
        };
        workload::declaring_sampling(list)
    }

    /// The measured exchange, its answer's length not declared.
    fn measured_undeclared(&self) -> HttpExchange {
        match self.kind {
            Kind::Call(bytes) => workload::call_exchange_in(self.revision, 3, bytes, self.framing),
            Kind::List(n) => {
                workload::list_exchange_in(self.revision, 3, &self.listed(n), self.framing)
            }
            Kind::Resources(n) => {
                workload::section_exchange_in(self.revision, 3, (false, n), &[], self.framing)
            }
            Kind::Prompts(n) => {
                workload::section_exchange_in(self.revision, 3, (true, n), &[], self.framing)
            }
            Kind::PromptGet(n) => workload::prompt_get_exchange(3, n - 1, self.framing),
        }
    }

    /// The outcome every measured exchange must have.
    pub fn expect(&self) -> Expect {
        match (self.kind, self.path) {
            (Kind::List(_), Path::Verified | Path::Sealed)
                if self.revision == Revision::Stateless =>
            {
                Expect::TtlLowered
            }
            (Kind::Call(_) | Kind::PromptGet(_), _) if self.path != Path::Filtered => {
                Expect::PassedUnchanged
            }
            (
                Kind::List(_) | Kind::Resources(_) | Kind::Prompts(_),
                Path::Verified | Path::Sealed,
            ) => Expect::PassedUnchanged,
            (Kind::Call(_) | Kind::PromptGet(_), _) => Expect::LocalReply,
            (Kind::List(_) | Kind::Resources(_) | Kind::Prompts(_), _) => Expect::Rewritten,
        }
    }

    /// Whether `filter` (a substring of the row name; empty = all) selects this row.
    pub fn selected(&self, filter: &str) -> bool {
        filter.is_empty() || self.name.contains(filter)
    }
}

/// The body a client must receive for a [`Expect::TtlLowered`] exchange (the server's with
/// only the list's `ttlMs` lowered to the default cap), computed once, outside the timed
/// loop; empty for every other scenario.
pub fn lowered_body(scenario: &Scenario, exchange: &HttpExchange) -> Vec<u8> {
    if scenario.expect() != Expect::TtlLowered {
        return Vec::new();
    }
    let server = String::from_utf8_lossy(&exchange.response_body);
    let hint = format!("\"ttlMs\":{}", workload::SERVER_LIST_TTL_MS);
    match server.contains(&hint) {
        true => server.replace(&hint, "\"ttlMs\":60000").into_bytes(),
        false => Vec::new(),
    }
}

/// Checks an outcome: `local` is whether the plugin answered locally, `body` what the client
/// received as the response body (`lowered`: see [`lowered_body`]).
pub fn check(
    scenario: &Scenario,
    exchange: &HttpExchange,
    lowered: &[u8],
    local: bool,
    body: &[u8],
) -> Result<(), String> {
    let unchanged = !local && body == exchange.response_body.as_slice();
    let ok = match scenario.expect() {
        Expect::PassedUnchanged => unchanged,
        Expect::Rewritten => !local && !unchanged && !body.is_empty(),
        Expect::LocalReply => local,
        Expect::TtlLowered => !local && !lowered.is_empty() && !unchanged && body == lowered,
    };
    if ok {
        return Ok(());
    }
    Err(format!(
        "{}: expected {:?}, got local reply {local}, body {} bytes ({}unchanged)",
        scenario.name,
        scenario.expect(),
        body.len(),
        if unchanged { "" } else { "not " }
    ))
}
