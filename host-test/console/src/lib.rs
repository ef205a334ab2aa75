//! toolseal's console (`toolseal console FLEET.json`): a local web app to review drift across a
//! fleet of Envoys and approve, quarantine or release through the fleet's plugin configuration;
//! and the review page (`report_html`) it serves, which `toolseal report` also writes.
//!
//! Main design decision: the console is a thin, local HTTP server that holds every secret
//! and does every privileged step itself; the page only shows and asks. It reads each
//! instance's admin API with the instance's token (never sent to the browser), and carries
//! out actions as changes to the ECDS resource the whole fleet watches, bound to what the
//! operator reviewed, audited with who and what. It binds to loopback unless told otherwise,
//! and protects itself against the browser it serves (Host, token, Origin checks, strict
//! Content-Security-Policy). HTTP comes from libraries (hyper serves, ureq calls), bounded
//! by the console (`web`, `http_client`).
//!
//! A crate of its own so that the `toolseal` runner (replay through the `.wasm`, the host
//! ABI, bench) does not carry a web app: the runner depends on this crate for its `console`
//! and `report` commands, and this crate depends on nothing of the runner.

pub mod actions;
pub mod audit_log;
pub mod candidates;
pub mod ecds;
pub mod fleet;
pub mod fleet_config;
pub mod guard;
pub mod http_client;
pub mod instances;
pub mod mcp_list;
pub mod overview;
pub mod renames;
pub mod report_html;
pub mod routes;
pub mod web;

use audit_log::AuditLog;
use candidates::CandidateCache;
use fleet::Fleet;
use fleet_config::FleetConfig;
use guard::Guard;
use instances::Reader;
use overview::ActionQueue;
use std::sync::Mutex;
use std::time::Duration;

/// The running console's state, shared by its connection threads.
#[derive(Debug)]
pub struct Console {
    /// The fleet file.
    pub fleet: Fleet,
    /// Who acts, for the audit log.
    pub operator: String,
    /// Request checks and the per-run token.
    pub guard: Guard,
    /// Timeout of each outgoing call.
    pub timeout: Duration,
    /// The audit log.
    pub audit: AuditLog,
    /// Candidate tool sets listed recently, by fingerprint.
    pub candidates: Mutex<CandidateCache>,
    /// Serializes actions.
    pub action_lock: Mutex<()>,
    /// Actions followed until they converge.
    pub actions: Mutex<ActionQueue>,
    /// The header the admin listener's `admin.identity` names, as last read from its resource.
    pub identity_header: Mutex<Option<String>>,
}

impl Console {
    /// Reads the fleet's two ECDS resources (and notes where the admin listener reads the
    /// approver's name, for [`Console::reader`]).
    pub fn fleet_config(&self) -> Result<FleetConfig, String> {
        let config = FleetConfig::read(&self.fleet)?;
        if let Ok(mut header) = self.identity_header.lock() {
            *header = config.identity_header().map(str::to_owned);
        }
        Ok(config)
    }

    /// Calls the admin APIs with the operator's name in the identity header (as last read).
    pub fn reader(&self) -> Reader<'_> {
        let header = self.identity_header.lock().ok().and_then(|h| h.clone());
        Reader {
            fleet: &self.fleet,
            timeout: self.timeout,
            identity: header.map(|h| (h, self.operator.as_str())),
        }
    }
}
