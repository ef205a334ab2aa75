//! Plugin configuration (docs/config.md): one JSON document, parsed and validated in one
//! pass.
//!
//! Main design decision: parsing is hand-written over a strictly parsed `Value` rather than
//! derived, so that every error names the exact field (`servers.deploy.pin`) and unknown keys
//! are refused at every level. A config that does not validate never loads: Envoy refuses it.

use crate::policy::containment::DriftScope;
use crate::policy::fingerprint::{FingerprintFields, digest_tools};
use crate::policy::rules::Policy;
use crate::policy::section::Section;
use crate::policy::status::Posture;
use crate::policy::views::{MAX_VIEW_SOURCES, ViewSource};
use crate::state::snapshot_key::SnapshotSource;
use crate::wire::json::parse_strict;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Where the server id of a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerIdSource {
    /// The Envoy route name.
    Route,
    /// The upstream cluster name.
    Cluster,
    /// A request header (lower-cased name).
    Header(String),
}

/// What a `notifications/tools/list_changed` does to calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListChanged {
    /// Refuse calls (`SCHEMA_UNVERIFIED`) until a fresh `tools/list` has verified.
    Hold,
    /// Keep checking calls against the baseline.
    Observe,
}

/// What a result that breaks the approved `outputSchema` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsMode {
    /// Audit `result.mismatch`, pass the result.
    Observe,
    /// Replace the result with a `RESULT_CONTRACT_CHANGED` tool error.
    Enforce,
}

/// A baseline fixed in config.
#[derive(Debug, Clone, PartialEq)]
pub enum Pin {
    /// Only the fingerprint: calls wait until a live list verifies against it.
    Fingerprint(String),
    /// The approved definitions themselves: calls are checked at once.
    Lock {
        /// The fingerprint of `tools` (checked at load); of the whole surface for a lock
        /// that seals more (`surface`).
        fingerprint: String,
        /// The approved tool definitions.
        tools: Vec<Value>,
        /// A lock of a whole surface: the lock without its `fingerprint` (`tools`, `sealed`
        /// and the sealed sections' members), the catalogue document it stores (`None`: a
        /// lock of tools alone).
        surface: Option<serde_json::Map<String, Value>>,
    },
}

impl Pin {
    /// The pinned server fingerprint.
    pub fn fingerprint(&self) -> &str {
        match self {
            Pin::Fingerprint(fp) => fp,
            Pin::Lock { fingerprint, .. } => fingerprint,
        }
    }
}

/// Per-server settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Overrides the top-level posture.
    pub posture: Option<Posture>,
    /// A baseline fixed in config.
    pub pin: Option<Pin>,
    /// A live list that is a strict subset of the baseline still verifies.
    pub allow_subset: bool,
    /// Reaction to `notifications/tools/list_changed`.
    pub list_changed: ListChanged,
    /// Held by an operator in config, with the reason.
    pub quarantine: Option<String>,
    /// Result contract enforcement.
    pub results: ResultsMode,
    /// What a drift closes: the whole server, or only the tools that differ.
    pub drift_scope: DriftScope,
    /// Where a `tools/list` request's view comes from (`None`: the top-level `views`).
    pub views: Option<Vec<ViewSource>>,
    /// What is done with the server's resources.
    pub resources: ResourcesMode,
    /// The sections beyond tools whose lists the lifecycle seals (`seal`): the tool fields
    /// beside the tool fingerprint's, instructions, prompts, resource templates. Empty (the
    /// default): tools alone.
    pub seal: Vec<Section>,
}

/// What is done with a server's resources (`resources`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourcesMode {
    /// Listed resources and read URIs are screened (`"screen"`, the default).
    Screen,
    /// Left alone: neither listed resources nor reads are screened (`"pass"`: a server whose
    /// resources honestly live on this machine).
    Pass,
    /// Screened as `Screen`, and a `resources/read` forwarded only for a URI the server listed
    /// through this gateway or one of its approved resource templates names (`"listed"`).
    Listed,
    /// Screened as `Screen` and sealed in the catalogue like templates (`"seal"`: the
    /// resources section is sealed), and a `resources/read` forwarded only for a URI of an
    /// approved resource or one an approved resource template names.
    Seal,
}

/// The settings of a server the config does not list, lent by [`Config::server`] so that
/// looking a server up never copies its settings.
const UNLISTED_SERVER: &ServerConfig = &ServerConfig {
    posture: None,
    pin: None,
    allow_subset: false,
    list_changed: ListChanged::Hold,
    quarantine: None,
    results: ResultsMode::Observe,
    drift_scope: DriftScope::Server,
    views: None,
    seal: Vec::new(),
    resources: ResourcesMode::Screen,
};

impl Default for ServerConfig {
    fn default() -> Self {
        UNLISTED_SERVER.clone()
    }
}

/// Size and shape limits on what the plugin reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body read (bigger: HTTP 413).
    pub max_request_bytes: usize,
    /// Largest response body inspected (bigger `tools/list`: fail closed).
    pub max_response_bytes: usize,
    /// Deepest JSON nesting accepted.
    pub max_depth: usize,
    /// Most servers tracked at once; requests for more are refused.
    pub max_servers: usize,
    /// Fixed number of session snapshot slots (memory bound; eviction by hash).
    pub session_slots: usize,
    /// Longest cache lifetime (`ttlMs`, MCP 2026-07-28) a verified `tools/list` result may
    /// carry to the client; a longer one is lowered to it.
    pub max_list_ttl_ms: u64,
    /// Most views recorded per server; a list of a new view past it is checked against the
    /// catalogue alone.
    pub max_views: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 1 << 20,
            max_response_bytes: 8 << 20,
            max_depth: 64,
            max_servers: 1024,
            session_slots: 4096,
            max_list_ttl_ms: 60_000,
            max_views: 16,
        }
    }
}

/// The largest `limits.max_list_ttl_ms` accepted (one day).
pub const MAX_LIST_TTL_MS: u64 = 86_400_000;

/// Most sources `snapshots.key` may list.
pub const MAX_SNAPSHOT_SOURCES: usize = 8;

/// The admin API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// Path prefix, starting and ending with `/`.
    pub prefix: String,
    /// SHA-256 of each accepted bearer token (several while a token is rotated); empty turns
    /// the admin API off.
    pub token_sha256: Vec<[u8; 32]>,
    /// Where the approver's name comes from; `None`: admin audit events say `"by": null`.
    pub identity: Option<IdentitySource>,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            prefix: "/toolseal/".into(),
            token_sha256: Vec::new(),
            identity: None,
        }
    }
}

/// Where a request names the person or system behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentitySource {
    /// A request header (lower-cased name), set by something the operator trusts in front.
    Header(String),
    /// Envoy dynamic metadata at `NAMESPACE/key/…` (e.g. a `jwt_authn` claim).
    Metadata(String),
}

/// Most tokens `admin.token_sha256` may list (a rotation needs two).
pub const MAX_ADMIN_TOKENS: usize = 8;

/// Audit options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditConfig {
    /// Write `call.allowed` events too (denials are always written).
    pub call_allowed: bool,
    /// Size of the in-memory ring served by `GET {prefix}audit`.
    pub ring_size: usize,
}

/// What the plugin hands to the host's telemetry besides its counters and log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Write each decision's fields into the stream's filter state (Envoy's access log reads
    /// them); `false` saves those writes on every request for operators who do not log them.
    pub filter_state: bool,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig { filter_state: true }
    }
}

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Default posture.
    pub posture: Posture,
    /// Where server ids come from.
    pub server_id: ServerIdSource,
    /// Per-server settings.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Per-call policy rules.
    pub policy: Policy,
    /// Limits.
    pub limits: Limits,
    /// Fingerprinted tool fields.
    pub fingerprint: FingerprintFields,
    /// Admin API.
    pub admin: AdminConfig,
    /// Audit options.
    pub audit: AuditConfig,
    /// First-contact screening.
    pub screening: crate::policy::screening::ScreeningConfig,
    /// Where the client snapshot key of a request comes from, first present source first.
    pub snapshot_key: Vec<SnapshotSource>,
    /// Host telemetry options.
    pub telemetry: TelemetryConfig,
    /// Where a request's view comes from, for servers that do not set their own.
    pub views: Vec<ViewSource>,
    /// Whether any server's views read the request path (it is kept with the exchange then).
    pub views_read_path: bool,
    /// The fleet store (`store.etcd`): server records shared by every instance. `None`:
    /// runtime state lives in this process's shared data only.
    pub store: Option<crate::state::fleet::EtcdSettings>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            posture: Posture::Discovery,
            server_id: ServerIdSource::Route,
            servers: BTreeMap::new(),
            policy: Policy::default(),
            limits: Limits::default(),
            fingerprint: FingerprintFields::default(),
            admin: AdminConfig::default(),
            audit: AuditConfig {
                call_allowed: false,
                ring_size: 256,
            },
            screening: crate::policy::screening::ScreeningConfig::default(),
            snapshot_key: vec![SnapshotSource::Session],
            telemetry: TelemetryConfig::default(),
            views: crate::policy::views::default_sources(),
            views_read_path: false,
            store: None,
        }
    }
}

/// A config that cannot load, with the field to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the bad field (`servers.deploy.pin`), or empty for the document.
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl From<crate::policy::screening::settings::SettingError> for ConfigError {
    fn from(e: crate::policy::screening::settings::SettingError) -> Self {
        ConfigError {
            field: e.field,
            message: e.message,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "invalid toolseal config: {}", self.message)
        } else {
            write!(
                f,
                "invalid toolseal config: field `{}`: {}",
                self.field, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

// Out of line: a config is parsed once, and error paths are many (the .wasm stays small).
#[cold]
#[inline(never)]
fn err(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.to_string(),
        message: message.into(),
    }
}

impl Config {
    /// Parses and validates a config document. Empty or whitespace-only bytes give the
    /// defaults (discovery posture, route name as server id, admin API off).
    pub fn parse(bytes: &[u8]) -> Result<Config, ConfigError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Config::default());
        }
        let value = parse_strict(bytes, 64).map_err(|e| err("", format!("not valid JSON: {e}")))?;
        Config::from_value(&value)
    }

    /// Validates an already parsed config document.
    pub fn from_value(value: &Value) -> Result<Config, ConfigError> {
        let root = object(value, "")?;
        known_keys(
            root,
            "",
            &[
                "posture",
                "server_id",
                "servers",
                "policy",
                "limits",
                "fingerprint",
                "admin",
                "audit",
                "screening",
                "snapshots",
                "telemetry",
                "views",
                "store",
            ],
        )?;
        let mut config = Config::default();
        if let Some(v) = root.get("posture") {
            config.posture = posture(v, "posture")?;
        }
        if let Some(v) = root.get("server_id") {
            config.server_id = server_id(v)?;
        }
        if let Some(v) = root.get("fingerprint") {
            let fp = object(v, "fingerprint")?;
            known_keys(fp, "fingerprint", &["fields"])?;
            if let Some(fields) = fp.get("fields") {
                let names = string_list(fields, "fingerprint.fields")?;
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                config.fingerprint =
                    FingerprintFields::parse(&refs).map_err(|m| err("fingerprint.fields", m))?;
                // The fields may only add to the default surface: a fingerprint blind to a
                // description or an input schema would let that change pass as no drift.
                let missing: Vec<&str> = ["name", "description", "inputSchema"]
                    .into_iter()
                    .filter(|default| !names.iter().any(|n| n == default))
                    .collect();
                if !missing.is_empty() {
                    return Err(err(
                        "fingerprint.fields",
                        format!(
                            "must keep the default fields name, description and inputSchema (it may only add fields); add {}",
                            missing.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(v) = root.get("servers") {
            let servers = object(v, "servers")?;
            for (id, entry) in servers {
                let field = format!("servers.{id}");
                if id.is_empty() {
                    return Err(err("servers", "a server id must not be empty"));
                }
                let server = server_config(entry, &field, &config.fingerprint)?;
                config.servers.insert(id.clone(), server);
            }
        }
        if let Some(v) = root.get("policy") {
            config.policy = Policy::from_json(v).map_err(|m| match m.split_once(": ") {
                // The policy parser already names the field (`policy.rules[2].tool: …`).
                Some((field, message)) if field.starts_with("policy") => err(field, message),
                _ => err("policy", m),
            })?;
        }
        if let Some(v) = root.get("limits") {
            config.limits = limits(v)?;
        }
        if let Some(v) = root.get("admin") {
            config.admin = admin(v)?;
        }
        if let Some(v) = root.get("audit") {
            config.audit = audit(v)?;
        }
        if let Some(v) = root.get("screening") {
            config.screening = crate::policy::screening::ScreeningConfig::from_json(v)?;
        }
        if let Some(v) = root.get("snapshots") {
            config.snapshot_key = snapshots(v)?;
        }
        if let Some(v) = root.get("telemetry") {
            config.telemetry = telemetry(v)?;
        }
        if let Some(v) = root.get("views") {
            config.views = views(v, "views")?;
        }
        if let Some(v) = root.get("store") {
            config.store = store(v)?;
        }
        let reads_path = |sources: &[ViewSource]| sources.contains(&ViewSource::Path);
        config.views_read_path = reads_path(&config.views)
            || config
                .servers
                .values()
                .any(|s| s.views.as_deref().is_some_and(reads_path));
        Ok(config)
    }

    /// The settings of one server (defaults for a server not listed), borrowed: the list
    /// and call paths read a field or two of them per message.
    pub fn server(&self, id: &str) -> &ServerConfig {
        self.servers.get(id).unwrap_or(UNLISTED_SERVER)
    }

    /// Whether server `id` seals `section` (its `seal` names it).
    pub fn seals(&self, id: &str, section: Section) -> bool {
        self.server(id).seal.contains(&section)
    }

    /// Whether the resources of server `id` are screened (screening on, and not `"pass"`).
    pub fn screens_resources(&self, id: &str) -> bool {
        self.screening.enabled && self.server(id).resources != ResourcesMode::Pass
    }

    /// Whether server `id` reads only what it listed or an approved template names
    /// (`"listed"`).
    pub fn reads_listed(&self, id: &str) -> bool {
        self.server(id).resources == ResourcesMode::Listed
    }

    /// Whether server `id` reads only approved resources and what an approved template names
    /// (`"seal"`).
    pub fn reads_approved(&self, id: &str) -> bool {
        self.server(id).resources == ResourcesMode::Seal
    }

    /// The drift scope of one server.
    pub fn drift_scope_of(&self, id: &str) -> DriftScope {
        self.server(id).drift_scope
    }

    /// The view sources of one server.
    pub fn views_of(&self, id: &str) -> &[ViewSource] {
        self.server(id).views.as_deref().unwrap_or(&self.views)
    }

    /// The effective posture of one server.
    pub fn posture_of(&self, id: &str) -> Posture {
        self.server(id).posture.unwrap_or(self.posture)
    }
}

#[inline(never)]
fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, ConfigError> {
    v.as_object()
        .ok_or_else(|| err(field, "expected a JSON object"))
}

#[inline(never)]
fn known_keys(obj: &Map<String, Value>, field: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    for key in obj.keys() {
        if !allowed.contains(&key.as_str()) {
            let path = if field.is_empty() {
                key.clone()
            } else {
                format!("{field}.{key}")
            };
            return Err(err(
                &path,
                format!("unknown key; expected one of: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

#[inline(never)]
fn string<'a>(v: &'a Value, field: &str) -> Result<&'a str, ConfigError> {
    v.as_str().ok_or_else(|| err(field, "expected a string"))
}

#[inline(never)]
fn boolean(v: &Value, field: &str) -> Result<bool, ConfigError> {
    v.as_bool()
        .ok_or_else(|| err(field, "expected true or false"))
}

fn string_list(v: &Value, field: &str) -> Result<Vec<String>, ConfigError> {
    let items = v
        .as_array()
        .ok_or_else(|| err(field, "expected an array of strings"))?;
    items
        .iter()
        .map(|i| string(i, field).map(str::to_string))
        .collect()
}

#[inline(never)]
fn positive(v: &Value, field: &str, max: u64) -> Result<usize, ConfigError> {
    match v.as_u64() {
        Some(n) if n >= 1 && n <= max => usize::try_from(n).map_err(|_| err(field, "too large")),
        _ => Err(err(
            field,
            format!("expected a whole number from 1 to {max}"),
        )),
    }
}

fn posture(v: &Value, field: &str) -> Result<Posture, ConfigError> {
    match string(v, field)? {
        "discovery" => Ok(Posture::Discovery),
        "strict" => Ok(Posture::Strict),
        other => Err(err(
            field,
            format!("unknown posture {other:?}; expected \"discovery\" or \"strict\""),
        )),
    }
}

#[inline(never)]
fn server_id(v: &Value) -> Result<ServerIdSource, ConfigError> {
    let obj = object(v, "server_id")?;
    known_keys(obj, "server_id", &["from", "name"])?;
    let from = obj
        .get("from")
        .map(|f| string(f, "server_id.from"))
        .transpose()?;
    let name = obj
        .get("name")
        .map(|n| string(n, "server_id.name"))
        .transpose()?;
    match (from.unwrap_or("route"), name) {
        ("route", None) => Ok(ServerIdSource::Route),
        ("cluster", None) => Ok(ServerIdSource::Cluster),
        ("header", Some(name)) if valid_header_name(name) => {
            Ok(ServerIdSource::Header(name.to_ascii_lowercase()))
        }
        ("header", Some(_)) => Err(err("server_id.name", "not a valid HTTP header name")),
        ("header", None) => Err(err(
            "server_id.name",
            "required when server_id.from is \"header\"",
        )),
        ("route" | "cluster", Some(_)) => Err(err(
            "server_id.name",
            "only used when server_id.from is \"header\"",
        )),
        (other, _) => Err(err(
            "server_id.from",
            format!("unknown source {other:?}; expected \"route\", \"cluster\" or \"header\""),
        )),
    }
}

#[inline(never)]
fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(':')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

#[inline(never)]
fn server_config(
    v: &Value,
    field: &str,
    fields: &FingerprintFields,
) -> Result<ServerConfig, ConfigError> {
    let obj = object(v, field)?;
    known_keys(
        obj,
        field,
        &[
            "posture",
            "pin",
            "lock",
            "allow_subset",
            "list_changed",
            "quarantine",
            "results",
            "drift_scope",
            "views",
            "resources",
            "seal",
        ],
    )?;
    let mut server = ServerConfig::default();
    let at = |key: &str| format!("{field}.{key}");
    if let Some(p) = obj.get("posture") {
        server.posture = Some(posture(p, &at("posture"))?);
    }
    match (obj.get("pin"), obj.get("lock")) {
        (Some(_), Some(_)) => {
            return Err(err(field, "a server has at most one of `pin` and `lock`"));
        }
        (Some(pin), None) => {
            let fp = string(pin, &at("pin"))?;
            check_fingerprint(fp, &at("pin"))?;
            server.pin = Some(Pin::Fingerprint(fp.to_string()));
        }
        (None, Some(lock_value)) => server.pin = Some(lock(lock_value, &at("lock"), fields)?),
        (None, None) => {}
    }
    if let Some(b) = obj.get("allow_subset") {
        server.allow_subset = boolean(b, &at("allow_subset"))?;
    }
    if let Some(l) = obj.get("list_changed") {
        server.list_changed = match string(l, &at("list_changed"))? {
            "hold" => ListChanged::Hold,
            "observe" => ListChanged::Observe,
            other => {
                return Err(err(
                    &at("list_changed"),
                    format!("unknown mode {other:?}; expected \"hold\" or \"observe\""),
                ));
            }
        };
    }
    if let Some(q) = obj.get("quarantine") {
        server.quarantine = Some(string(q, &at("quarantine"))?.to_string());
    }
    if let Some(r) = obj.get("results") {
        server.results = match string(r, &at("results"))? {
            "observe" => ResultsMode::Observe,
            "enforce" => ResultsMode::Enforce,
            other => {
                return Err(err(
                    &at("results"),
                    format!("unknown mode {other:?}; expected \"observe\" or \"enforce\""),
                ));
            }
        };
    }
    if let Some(v) = obj.get("views") {
        server.views = Some(views(v, &at("views"))?);
    }
    if let Some(r) = obj.get("resources") {
        server.resources = match string(r, &at("resources"))? {
            "screen" => ResourcesMode::Screen,
            "pass" => ResourcesMode::Pass,
            "listed" => ResourcesMode::Listed,
            "seal" => ResourcesMode::Seal,
            other => {
                return Err(err(
                    &at("resources"),
                    format!(
                        "unknown mode {other:?}; expected \"screen\" (listed resources and read URIs are screened), \"listed\" (screened, and reads limited to listed URIs and approved templates), \"seal\" (screened and sealed in the catalogue, reads limited to approved resources and templates) or \"pass\" (left alone)"
                    ),
                ));
            }
        };
    }
    if let Some(v) = obj.get("seal") {
        server.seal = seal(v, &at("seal"))?;
    }
    // Resources are sealed by their own mode, which `seal` then names like the others.
    if server.resources == ResourcesMode::Seal {
        server.seal.push(Section::Resources);
        crate::wire::order::sort(&mut server.seal);
    }
    // A pin names a tool set, unless it is a lock of a whole surface: then `seal` names the
    // sections it seals, no more and no fewer.
    let locked: Option<Vec<Section>> = match &server.pin {
        Some(Pin::Lock {
            surface: Some(document),
            ..
        }) => Some(crate::policy::approved::sealed_of(document)),
        _ => None,
    };
    match locked {
        None if !server.seal.is_empty() && server.pin.is_some() => {
            return Err(err(
                &at("seal"),
                "a server with `pin` or a lock of tools alone seals its tools alone: a pin names a tool set, and the other sections are sealed in the server's own catalogue; remove `seal`, or lock the whole surface (`toolseal pin --surface`)",
            ));
        }
        Some(sealed) if sealed != server.seal => {
            return Err(err(
                &at("seal"),
                "the lock seals other sections than `seal` names: name the lock's `sealed`",
            ));
        }
        _ => {}
    }
    if let Some(d) = obj.get("drift_scope") {
        server.drift_scope = match string(d, &at("drift_scope"))? {
            "server" => DriftScope::Server,
            "tool" => DriftScope::Tool,
            other => {
                return Err(err(
                    &at("drift_scope"),
                    format!(
                        "unknown scope {other:?}; expected \"server\" (any drift closes the server) or \"tool\" (only changed and new tools are withheld)"
                    ),
                ));
            }
        };
    }
    Ok(server)
}

/// The sections a server's `seal` names: `"tool-fields"`, `"instructions"`, `"prompts"`,
/// `"resource-templates"`, each at most once.
fn seal(v: &Value, field: &str) -> Result<Vec<Section>, ConfigError> {
    const SEALABLE: [Section; 4] = [
        Section::ToolFields,
        Section::Instructions,
        Section::Prompts,
        Section::ResourceTemplates,
    ];
    let Some(names) = v.as_array() else {
        return Err(err(field, "expected an array of section names"));
    };
    let mut sections = Vec::new();
    for name in names {
        let name = string(name, field)?;
        let section = match Section::from_name(name) {
            Some(section) if SEALABLE.contains(&section) => section,
            Some(Section::Tools) => {
                return Err(err(
                    field,
                    "tools are always sealed; name the other sections",
                ));
            }
            Some(Section::Resources) => {
                return Err(err(
                    field,
                    "resources are screened by default and sealed with `\"resources\": \"seal\"`: name that instead",
                ));
            }
            _ => {
                return Err(err(
                    field,
                    format!(
                        "unknown section {name:?}; expected \"tool-fields\", \"instructions\", \"prompts\" or \"resource-templates\""
                    ),
                ));
            }
        };
        if sections.contains(&section) {
            return Err(err(field, format!("{name:?} is named twice")));
        }
        sections.push(section);
    }
    crate::wire::order::sort(&mut sections);
    Ok(sections)
}

/// A server fingerprint is `sha256:` and 64 lowercase hex digits.
pub fn check_fingerprint(fp: &str, field: &str) -> Result<(), ConfigError> {
    let hex = fp.strip_prefix("sha256:").unwrap_or("");
    if hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(err(
            field,
            "expected \"sha256:\" followed by 64 lowercase hex digits",
        ))
    }
}

#[inline(never)]
fn lock(v: &Value, field: &str, fields: &FingerprintFields) -> Result<Pin, ConfigError> {
    let obj = object(v, field)?;
    const SECTIONS: [&str; 4] = ["instructions", "prompts", "resourceTemplates", "resources"];
    known_keys(
        obj,
        field,
        &[
            "fingerprint",
            "tools",
            "sealed",
            SECTIONS[0],
            SECTIONS[1],
            SECTIONS[2],
            SECTIONS[3],
        ],
    )?;
    let fp_field = format!("{field}.fingerprint");
    let fingerprint = string(
        obj.get("fingerprint")
            .ok_or_else(|| err(&fp_field, "required"))?,
        &fp_field,
    )?;
    check_fingerprint(fingerprint, &fp_field)?;
    let tools_field = format!("{field}.tools");
    let tools = obj
        .get("tools")
        .ok_or_else(|| err(&tools_field, "required"))?;
    let digests = digest_tools(tools, fields).map_err(|e| err(&tools_field, e.to_string()))?;
    // A lock of a whole surface names its catalogue by the surface fingerprint (sealed
    // sections counted even when empty), as the gateway names the catalogue it keeps.
    let surface = match obj.get("sealed") {
        Some(_) => {
            let mut document = obj.clone();
            document.remove("fingerprint");
            let named = Value::Object(document);
            let computed = crate::policy::approved::document_fingerprint(&named, fields)
                .ok_or_else(|| {
                    err(
                        field,
                        "is not a surface lock (see `toolseal pin --surface`)",
                    )
                })?;
            let Value::Object(document) = named else {
                return Err(err(field, "expected a JSON object"));
            };
            Some((computed, document))
        }
        None if SECTIONS.iter().any(|k| obj.contains_key(*k)) => {
            return Err(err(
                field,
                "a lock's sections need `sealed`: the sections it seals beyond its tools",
            ));
        }
        None => None,
    };
    let (computed, what) = match &surface {
        Some((computed, _)) => (computed.clone(), "surface"),
        None => (digests.fingerprint(), "tools"),
    };
    if computed != fingerprint {
        return Err(err(
            &fp_field,
            format!(
                "does not match the locked {what} (they fingerprint to {computed}); regenerate the lock with `toolseal pin`"
            ),
        ));
    }
    let tools = tools.as_array().cloned().unwrap_or_default();
    Ok(Pin::Lock {
        fingerprint: fingerprint.to_string(),
        tools,
        surface: surface.map(|(_, document)| document),
    })
}

#[inline(never)]
fn limits(v: &Value) -> Result<Limits, ConfigError> {
    // (key, largest value): every limit is a whole number from 1 to its largest value.
    const KEYS: [(&str, u64); 7] = [
        ("max_request_bytes", 64 << 20),
        ("max_response_bytes", 256 << 20),
        ("max_depth", 128),
        ("max_servers", 1 << 16),
        ("session_slots", 1 << 20),
        ("max_list_ttl_ms", MAX_LIST_TTL_MS),
        ("max_views", 256),
    ];
    let obj = object(v, "limits")?;
    known_keys(obj, "limits", &KEYS.map(|(key, _)| key))?;
    let d = Limits::default();
    let mut values = [
        d.max_request_bytes,
        d.max_response_bytes,
        d.max_depth,
        d.max_servers,
        d.session_slots,
        usize::try_from(d.max_list_ttl_ms).unwrap_or(usize::MAX),
        d.max_views,
    ];
    for ((key, max), value) in KEYS.iter().zip(values.iter_mut()) {
        if let Some(v) = obj.get(*key) {
            *value = positive(v, &format!("limits.{key}"), *max)?;
        }
    }
    let [
        max_request_bytes,
        max_response_bytes,
        max_depth,
        max_servers,
        session_slots,
        ttl,
        max_views,
    ] = values;
    Ok(Limits {
        max_request_bytes,
        max_response_bytes,
        max_depth,
        max_servers,
        session_slots,
        max_list_ttl_ms: u64::try_from(ttl).unwrap_or(MAX_LIST_TTL_MS),
        max_views,
    })
}

#[inline(never)]
/// `views` (top level or per server): 1 to 8 distinct sources.
fn views(v: &Value, field: &str) -> Result<Vec<ViewSource>, ConfigError> {
    let items = v.as_array().map_or(&[][..], Vec::as_slice);
    if items.is_empty() || items.len() > MAX_VIEW_SOURCES {
        return Err(err(
            field,
            "expected a list of 1 to 8 sources, e.g. [\"revision\", \"capabilities\", {\"header\": \"x-mcp-toolsets\"}]",
        ));
    }
    let mut sources: Vec<ViewSource> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let source = match (item.as_str(), identity_source(item)) {
            (Some("revision"), _) => ViewSource::Revision,
            (Some("capabilities"), _) => ViewSource::Capabilities,
            (Some("path"), _) => ViewSource::Path,
            (_, Some(IdentitySource::Header(name))) => ViewSource::Header(name),
            (_, Some(IdentitySource::Metadata(path))) => ViewSource::Metadata(path),
            _ => {
                return Err(err(
                    &format!("{field}[{i}]"),
                    "expected \"revision\", \"capabilities\", \"path\", {\"header\": NAME} or {\"metadata\": \"NAMESPACE/key/…\"}",
                ));
            }
        };
        if sources.contains(&source) {
            return Err(err(
                &format!("{field}[{i}]"),
                format!("{} is listed twice", source.label()),
            ));
        }
        sources.push(source);
    }
    Ok(sources)
}

#[inline(never)]
fn snapshots(v: &Value) -> Result<Vec<SnapshotSource>, ConfigError> {
    let obj = object(v, "snapshots")?;
    known_keys(obj, "snapshots", &["key"])?;
    let Some(list) = obj.get("key") else {
        return Ok(vec![SnapshotSource::Session]);
    };
    let items = list.as_array().map_or(&[][..], Vec::as_slice);
    if items.is_empty() || items.len() > MAX_SNAPSHOT_SOURCES {
        return Err(err(
            "snapshots.key",
            "expected a list of 1 to 8 sources, e.g. [\"session\", {\"header\": \"x-agent-id\"}]",
        ));
    }
    let mut sources = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let source = match identity_source(item) {
            _ if item.as_str() == Some("session") => SnapshotSource::Session,
            Some(IdentitySource::Header(name)) => SnapshotSource::Header(name),
            Some(IdentitySource::Metadata(path)) => SnapshotSource::Metadata(path),
            None => {
                return Err(err(
                    &format!("snapshots.key[{i}]"),
                    "expected \"session\", {\"header\": NAME} or {\"metadata\": \"NAMESPACE/key/…\"}",
                ));
            }
        };
        sources.push(source);
    }
    Ok(sources)
}

#[inline(never)]
fn admin(v: &Value) -> Result<AdminConfig, ConfigError> {
    let obj = object(v, "admin")?;
    known_keys(obj, "admin", &["prefix", "token_sha256", "identity"])?;
    let mut admin = AdminConfig::default();
    if let Some(p) = obj.get("prefix") {
        let prefix = string(p, "admin.prefix")?;
        if !prefix.starts_with('/') || !prefix.ends_with('/') || prefix.len() < 2 {
            return Err(err(
                "admin.prefix",
                "must start and end with '/' and not be \"/\" alone",
            ));
        }
        admin.prefix = prefix.to_string();
    }
    if let Some(t) = obj.get("token_sha256") {
        const FIELD: &str = "admin.token_sha256";
        const EXPECTED: &str = "expected the sha256 of the token as 64 hex digits, or a list of 1 to 8 distinct ones (leave the key out to turn the admin API off)";
        let items = match t {
            Value::Array(items) => items.as_slice(),
            one => std::slice::from_ref(one),
        };
        for item in items {
            if let Some(hash) = item.as_str().and_then(parse_hex32)
                && !admin.token_sha256.contains(&hash)
            {
                admin.token_sha256.push(hash);
            }
        }
        if admin.token_sha256.len() != items.len()
            || items.is_empty()
            || items.len() > MAX_ADMIN_TOKENS
        {
            return Err(err(FIELD, EXPECTED));
        }
    }
    if let Some(i) = obj.get("identity") {
        const FIELD: &str = "admin.identity";
        let identity = object(i, FIELD)?;
        known_keys(identity, FIELD, &["header", "metadata"])?;
        admin.identity = match identity_source(i) {
            Some(IdentitySource::Header(name)) if name == "authorization" => None,
            source => source,
        };
        if admin.identity.is_none() {
            return Err(err(
                FIELD,
                "expected {\"header\": NAME} (a header name other than authorization) or {\"metadata\": \"NAMESPACE/key/…\"} (e.g. envoy.filters.http.jwt_authn/payload/sub)",
            ));
        }
    }
    Ok(admin)
}

/// A caller named by `{"header": NAME}` or `{"metadata": "NAMESPACE/key/…"}` (exactly one),
/// as `admin.identity` and `snapshots.key` name one.
fn identity_source(v: &Value) -> Option<IdentitySource> {
    let obj = v.as_object().filter(|o| o.len() == 1)?;
    let text = |key: &str| obj.get(key).and_then(Value::as_str);
    match (text("header"), text("metadata")) {
        (Some(name), _) if valid_header_name(name) => {
            Some(IdentitySource::Header(name.to_ascii_lowercase()))
        }
        (_, Some(path)) if path.trim_matches('/').contains('/') => {
            Some(IdentitySource::Metadata(path.to_string()))
        }
        _ => None,
    }
}

fn parse_hex32(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let hi = char::from(*pair.first()?).to_digit(16)?;
        let lo = char::from(*pair.get(1)?).to_digit(16)?;
        *slot = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

#[inline(never)]
fn telemetry(v: &Value) -> Result<TelemetryConfig, ConfigError> {
    let obj = object(v, "telemetry")?;
    known_keys(obj, "telemetry", &["filter_state"])?;
    let mut telemetry = TelemetryConfig::default();
    if let Some(b) = obj.get("filter_state") {
        telemetry.filter_state = boolean(b, "telemetry.filter_state")?;
    }
    Ok(telemetry)
}

#[inline(never)]
/// `store`: `{"etcd": {"cluster", "prefix", "timeout_ms", "sync_ms"}}`.
fn store(v: &Value) -> Result<Option<crate::state::fleet::EtcdSettings>, ConfigError> {
    let obj = object(v, "store")?;
    known_keys(obj, "store", &["etcd"])?;
    let Some(etcd) = obj.get("etcd") else {
        return Err(err(
            "store",
            "name the store: {\"etcd\": {\"cluster\": \"<Envoy cluster of the etcd endpoints>\"}}",
        ));
    };
    let etcd = object(etcd, "store.etcd")?;
    known_keys(
        etcd,
        "store.etcd",
        &["cluster", "prefix", "timeout_ms", "sync_ms"],
    )?;
    let cluster = match etcd.get("cluster") {
        Some(c) => string(c, "store.etcd.cluster")?,
        None => {
            return Err(err(
                "store.etcd.cluster",
                "required: the name of the Envoy cluster that reaches etcd",
            ));
        }
    };
    if cluster.is_empty() {
        return Err(err("store.etcd.cluster", "must not be empty"));
    }
    let mut settings = crate::state::fleet::EtcdSettings::new(cluster);
    if let Some(p) = etcd.get("prefix") {
        let prefix = string(p, "store.etcd.prefix")?;
        if !prefix.ends_with('/') || prefix.len() > 200 {
            return Err(err(
                "store.etcd.prefix",
                "must end with `/` and be at most 200 bytes (one prefix per fleet, e.g. \"/toolseal/prod/\")",
            ));
        }
        settings.prefix = prefix.to_string();
    }
    if let Some(n) = etcd.get("timeout_ms") {
        settings.timeout_ms = bounded_ms(n, "store.etcd.timeout_ms", 10, 60_000)?;
    }
    if let Some(n) = etcd.get("sync_ms") {
        settings.sync_ms = bounded_ms(n, "store.etcd.sync_ms", 50, 600_000)?;
    }
    Ok(Some(settings))
}

fn bounded_ms(v: &Value, field: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
    match v.as_u64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(err(
            field,
            format!("expected milliseconds from {min} to {max}"),
        )),
    }
}

fn audit(v: &Value) -> Result<AuditConfig, ConfigError> {
    let obj = object(v, "audit")?;
    known_keys(obj, "audit", &["call_allowed", "ring_size"])?;
    let mut audit = AuditConfig {
        call_allowed: false,
        ring_size: 256,
    };
    if let Some(b) = obj.get("call_allowed") {
        audit.call_allowed = boolean(b, "audit.call_allowed")?;
    }
    if let Some(n) = obj.get("ring_size") {
        audit.ring_size = positive(n, "audit.ring_size", 65536)?;
    }
    Ok(audit)
}

#[cfg(test)]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
mod tests;
