//! Per-call authorization of `tools/call`: approved tool, fresh snapshot, valid arguments,
//! policy.
//!
//! Main design decision: checks run in a fixed order and the first failure decides, so a
//! denial always names the most fundamental problem (a drifted server before a bad argument).
//! A call is checked first and recorded once its batch is decided, so a record never says
//! `allow` for a call that was not forwarded. Every audited decision carries the SHA-256 of
//! the call's own raw `arguments` bytes and the normalized arguments that were checked.

mod result;

use crate::gateway::denial::{Denial, ErrorCode};
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, PendingCall, RequestInfo};
use crate::policy::approved::{Approved, ApprovedTool};
use crate::policy::containment::Serving;
use crate::policy::rules::CallFacts;
use crate::policy::section::TOOLS_CALL;
use crate::policy::status::ServerRecord;
use crate::policy::views::ViewRecord;
use crate::state;
use crate::state::audit::Counter;
use crate::state::snapshot_key::KeyRead;
use crate::state::store::StateStore;
use crate::wire::json::put;
use serde_json::{Map, Value, json};
use std::rc::Rc;

/// One `tools/call` request.
pub struct Call<'a> {
    /// JSON-RPC id.
    pub id: &'a Value,
    /// `params`.
    pub params: Option<&'a Value>,
    /// The raw request body that carried it (its `arguments` bytes are hashed into the
    /// audit event).
    pub body: &'a [u8],
    /// The call's position in a batch body; `None` when the body is this one message.
    pub element: Option<usize>,
    /// The caller's snapshot key (`Ok(None)`: the call is checked against the baseline
    /// alone; an error: the host could not say who the caller is, so the call is refused).
    pub key: &'a KeyRead<'a>,
}

/// A `tools/call` checked against the state but not yet recorded: in a batch, whether it
/// goes to the server depends on the other elements.
pub(crate) struct CheckedCall {
    tool: String,
    arguments: Option<Value>,
    record: Option<Rc<ServerRecord>>,
    /// `Ok(check the result against an outputSchema)`, or the denial.
    verdict: Result<bool, Box<Denial>>,
}

impl CheckedCall {
    /// Whether a check refused the call.
    pub(crate) fn denied(&self) -> bool {
        self.verdict.is_err()
    }
}

/// How a checked call ends.
pub(crate) enum CallOutcome {
    /// It goes to the server; its result is awaited.
    Forward(PendingCall),
    /// A check refused it: the denial answers it.
    Denied(Box<Denial>),
    /// It passed its checks, but another element of its batch was refused, so the batch is
    /// answered locally as a whole.
    BatchRefused,
}

/// The call being checked: what every denial names.
struct Checking<'c> {
    exchange: &'c Exchange,
    tool: &'c str,
}

impl Checking<'_> {
    /// A `SCHEMA_UNVERIFIED` denial: the call cannot be checked against an approved set.
    fn unverified(&self, engine: &Engine, r: Option<&ServerRecord>, why: &str) -> Box<Denial> {
        engine
            .denial(
                ErrorCode::SchemaUnverified,
                self.exchange,
                self.tool,
                r,
                why,
            )
            .into()
    }
}

impl Engine {
    /// Runs the checks of a call, in order; nothing is recorded yet ([`Engine::settle_call`]).
    pub(crate) fn check_tools_call(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        call: &Call<'_>,
    ) -> CheckedCall {
        let (tool, arguments) = match crate::wire::jsonrpc::tool_call(call.params) {
            Ok(tc) => (tc.name.to_string(), tc.arguments.cloned()),
            Err(e) => {
                let mut denial = self.denial(
                    ErrorCode::InvalidArguments,
                    exchange,
                    TOOLS_CALL,
                    None,
                    &e.to_string(),
                );
                denial.required_action = "fix_arguments";
                return CheckedCall {
                    tool: String::new(),
                    arguments: None,
                    record: None,
                    verdict: Err(denial.into()),
                };
            }
        };
        let record = self.record(store, &exchange.server);
        let verdict = self.check_call(
            store,
            exchange,
            info,
            call,
            &record,
            &tool,
            arguments.as_ref(),
        );
        CheckedCall {
            tool,
            arguments,
            record: record.ok().flatten(),
            verdict,
        }
    }

    /// The checks of one call, in order; the first that fails decides. `Ok`: whether its
    /// result is to be checked against an `outputSchema`.
    #[allow(clippy::too_many_arguments)]
    fn check_call(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        call: &Call<'_>,
        record: &Result<Option<Rc<ServerRecord>>, state::StateError>,
        tool: &str,
        arguments: Option<&Value>,
    ) -> Result<bool, Box<Denial>> {
        let key = call.key;
        let at = Checking { exchange, tool };
        let record = self.recorded(&at, record)?;
        self.still_serving(&at, &record)?;
        let baseline_fp = self.verified_baseline(&at, &record)?;
        let r = Some(&*record);
        let baseline = self.baseline_set(store, &at, r, &baseline_fp)?;
        let approved = self.approved_tool(store, &at, (info, call.params), &record, &baseline)?;
        self.not_stale(store, &at, r, key, &baseline_fp, &approved.digest)?;
        self.arguments_valid(&at, r, approved, arguments)?;
        self.policy_allows(&at, r, info, approved, arguments)?;
        Ok(approved.output_schema().is_some())
    }

    /// The server's record: without one (no list seen yet, or unreadable) nothing is verified.
    fn recorded(
        &self,
        at: &Checking<'_>,
        record: &Result<Option<Rc<ServerRecord>>, state::StateError>,
    ) -> Result<Rc<ServerRecord>, Box<Denial>> {
        match record {
            Ok(Some(record)) => Ok(Rc::clone(record)),
            Ok(None) => Err(at.unverified(self, None, "no tools/list seen yet")),
            Err(e) => Err(at.unverified(self, None, &e.to_string())),
        }
    }

    /// A closed server serves nothing, unless a drift confined to single tools leaves it
    /// serving every tool but those (which are refused as changed).
    fn still_serving(&self, at: &Checking<'_>, record: &ServerRecord) -> Result<(), Box<Denial>> {
        let Some(code) = ErrorCode::for_closed(record.status) else {
            return Ok(());
        };
        let r = Some(record);
        let scope = self.config.drift_scope_of(&at.exchange.server);
        match crate::policy::containment::serving(record, scope) {
            Serving::Nothing => Err(self.denial(code, at.exchange, at.tool, r, "").into()),
            Serving::AllBut => match record.withheld(at.tool) {
                Some(change) => {
                    let change = change.as_str();
                    let mut denial =
                        self.denial(ErrorCode::ToolChanged, at.exchange, at.tool, r, change);
                    denial.extra.insert("change".into(), json!(change));
                    Err(denial.into())
                }
                None => Ok(()),
            },
            // Drifted back to the baseline: every tool is the approved one.
            Serving::All => Ok(()),
        }
    }

    /// The fingerprint of the baseline the call is checked against: none while this worker
    /// holds the server (its last list could not be checked), while the record awaits a list
    /// that verifies it, or before a baseline is approved.
    fn verified_baseline(
        &self,
        at: &Checking<'_>,
        record: &ServerRecord,
    ) -> Result<String, Box<Denial>> {
        let r = Some(record);
        if self.held.contains(&at.exchange.server) {
            let why = "the last tools/list of this server could not be checked; list tools again";
            return Err(at.unverified(self, r, why));
        }
        if record.awaiting_verification() {
            return Err(at.unverified(self, r, "list tools to verify them"));
        }
        record
            .baseline
            .clone()
            .ok_or_else(|| at.unverified(self, r, "no approved baseline"))
    }

    /// The baseline's approved definitions (refused when they cannot be read).
    fn baseline_set(
        &mut self,
        store: &dyn StateStore,
        at: &Checking<'_>,
        r: Option<&ServerRecord>,
        baseline_fp: &str,
    ) -> Result<Rc<Approved>, Box<Denial>> {
        match self.approved(store, &at.exchange.server, baseline_fp) {
            Ok(Some(baseline)) => Ok(baseline),
            Ok(None) => Err(at.unverified(self, r, "approved definitions unavailable")),
            Err(e) => Err(at.unverified(self, r, &e.to_string())),
        }
    }

    /// The approved definition of the tool called; a tool the baseline lacks is not approved
    /// (the denial says when the previous baseline had it).
    fn approved_tool<'b>(
        &mut self,
        store: &dyn StateStore,
        at: &Checking<'_>,
        (info, params): (&RequestInfo<'_>, Option<&Value>),
        record: &ServerRecord,
        baseline: &'b Approved,
    ) -> Result<&'b ApprovedTool, Box<Denial>> {
        if let Some(approved) = baseline.tools.get(at.tool) {
            // Once the caller's view is recorded, only the tools listed to it may be called.
            // A tool every recorded view lists is listed to any recorded view: which view the
            // caller is (a capabilities slot read and a hash, on every call) is asked only
            // when some view does not list it.
            let listed = |v: &ViewRecord| v.names.iter().any(|n| n == at.tool);
            let outside = !record.views.iter().all(listed) && {
                let read;
                let view = match &at.exchange.surface {
                    Some(surface) => surface,
                    None => {
                        read = self.view_of(store, at.exchange, info, params, None);
                        &read
                    }
                };
                view.as_ref()
                    .ok()
                    .and_then(|v| record.view(&v.key))
                    .is_some_and(|v| !listed(v))
            };
            if !outside {
                return Ok(approved);
            }
            let mut denial = self.denial(
                ErrorCode::ToolNotApproved,
                at.exchange,
                at.tool,
                Some(record),
                "",
            );
            // Listing again will not show it: the server does not offer it to this caller.
            denial.message = format!(
                "{} was refused: it is not listed to this caller's view of the server (the server offers it to other kinds of callers only). No side effect was started.",
                at.tool
            );
            denial.required_action = "none";
            return Err(denial.into());
        }
        let dropped = record
            .previous
            .clone()
            .and_then(|p| self.approved(store, &at.exchange.server, &p).ok().flatten())
            .is_some_and(|prev| prev.tools.contains_key(at.tool));
        let detail = if dropped {
            "the previous baseline had it; the current one dropped it"
        } else {
            ""
        };
        Err(self
            .denial(
                ErrorCode::ToolNotApproved,
                at.exchange,
                at.tool,
                Some(record),
                detail,
            )
            .into())
    }

    /// The caller was not last shown another definition of this tool. A snapshot that is gone
    /// (evicted, or its set replaced) leaves the baseline alone to check against; one that
    /// cannot be read (nor its key) leaves the call undecided: refused.
    #[allow(clippy::too_many_arguments)]
    fn not_stale(
        &mut self,
        store: &dyn StateStore,
        at: &Checking<'_>,
        r: Option<&ServerRecord>,
        key: &KeyRead<'_>,
        baseline_fp: &str,
        approved_digest: &str,
    ) -> Result<(), Box<Denial>> {
        let key = match key {
            Ok(key) => key.as_ref(),
            Err(e) => {
                return Err(at.unverified(self, r, &format!("snapshot key unreadable: {e}")));
            }
        };
        let Some(key) = key else {
            return Ok(());
        };
        let seen = state::get_snapshot_cached(
            store,
            &mut self.snapshots,
            &at.exchange.server,
            key,
            self.config.limits.session_slots,
        )
        .and_then(|seen| match seen {
            Some(seen) if seen.fingerprint != baseline_fp => {
                self.approved(store, &at.exchange.server, &seen.fingerprint)
            }
            _ => Ok(None),
        })
        .map_err(|e| {
            let why = format!("{} snapshot unreadable: {e}", key.source);
            at.unverified(self, r, &why)
        })?;
        match seen {
            Some(seen) if seen.digest(at.tool).is_some_and(|d| d != approved_digest) => Err(self
                .denial(ErrorCode::StaleToolSchema, at.exchange, at.tool, r, "")
                .into()),
            _ => Ok(()),
        }
    }

    /// The arguments (`{}` when absent) validate against the approved `inputSchema`; a schema
    /// toolseal cannot check refuses every call for an admin to review.
    fn arguments_valid(
        &self,
        at: &Checking<'_>,
        r: Option<&ServerRecord>,
        approved: &ApprovedTool,
        arguments: Option<&Value>,
    ) -> Result<(), Box<Denial>> {
        let empty = json!({});
        let args = arguments.unwrap_or(&empty);
        let schema = match approved.input_schema() {
            Ok(schema) => schema,
            Err(e) => {
                let why = format!("toolseal cannot check this tool's input schema: {e}");
                let mut denial =
                    self.denial(ErrorCode::InvalidArguments, at.exchange, at.tool, r, &why);
                denial.required_action = "admin_review";
                return Err(denial.into());
            }
        };
        let Err(violations) = schema.validate(args) else {
            return Ok(());
        };
        let text: Vec<String> = violations
            .iter()
            .map(|v| format!("{}: {}", v.instance_path, v.message))
            .collect();
        let mut denial = self.denial(
            ErrorCode::InvalidArguments,
            at.exchange,
            at.tool,
            r,
            &text.join("; "),
        );
        denial.extra.insert(
            "violations".into(),
            json!(
                violations
                    .iter()
                    .map(|v| json!({"path": v.instance_path, "message": v.message}))
                    .collect::<Vec<_>>()
            ),
        );
        Err(denial.into())
    }

    /// No policy rule denies this caller this call (rules see the approved annotations).
    fn policy_allows(
        &self,
        at: &Checking<'_>,
        r: Option<&ServerRecord>,
        info: &RequestInfo<'_>,
        approved: &ApprovedTool,
        arguments: Option<&Value>,
    ) -> Result<(), Box<Denial>> {
        let facts = CallFacts {
            server: &at.exchange.server,
            tool: at.tool,
            annotations: approved.annotations(),
            arguments,
            caller: info.caller,
        };
        let Some(decision) = self.policy(&facts) else {
            return Ok(());
        };
        let mut denial = self.denial(
            ErrorCode::PolicyDenied,
            at.exchange,
            at.tool,
            r,
            &decision.reason,
        );
        denial
            .extra
            .insert("rule".into(), json!(decision.rule_index));
        denial.extra.insert("reason".into(), json!(decision.reason));
        Err(denial.into())
    }

    /// Records, counts and audits a checked call; `batch_refused`: another element of its
    /// batch was denied, so it is not forwarded either (its record says `deny` /
    /// `BATCH_REFUSED`, and no `call.allowed` event is written for it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn settle_call(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        call: &Call<'_>,
        checked: CheckedCall,
        batch_refused: bool,
    ) -> CallOutcome {
        let CheckedCall {
            tool,
            arguments,
            record,
            verdict,
        } = checked;
        let record = record.as_deref();
        let status = record.map_or(crate::policy::status::SchemaStatus::Unbaselined, |r| {
            r.status
        });
        let mut decision = self.decision(exchange, "request", TOOLS_CALL, Some(call.id), status);
        decision.tool = Some(tool.clone());
        let outcome = match verdict {
            Ok(check_result) if !batch_refused => CallOutcome::Forward(PendingCall {
                id: call.id.clone(),
                tool: tool.clone(),
                check_result,
                stateless: exchange.stateless(),
                allowed_at: record.map(|r| r.status),
            }),
            Ok(_) => CallOutcome::BatchRefused,
            Err(denial) => CallOutcome::Denied(denial),
        };
        let (code, reason) = match &outcome {
            CallOutcome::Forward(_) => (None, "all checks passed"),
            CallOutcome::Denied(denial) => (Some(denial.code.as_str()), denial.message.as_str()),
            CallOutcome::BatchRefused => (
                Some(crate::state::audit::BATCH_REFUSED),
                "not forwarded: another call in the same batch was refused",
            ),
        };
        decision.decision = if code.is_some() { "deny" } else { "allow" };
        decision.error_code = code;
        match code {
            Some(code) => out.count(Counter::CallsDenied, Some(code)),
            None => out.count(Counter::CallsAllowed, None),
        }
        // Only an audited decision pays for hashing the raw bytes and canonicalizing arguments.
        if code.is_some() || self.config.audit.call_allowed {
            let detail = call_detail(call, &tool, arguments.as_ref(), decision.decision, code);
            let name = if code.is_some() {
                "call.denied"
            } else {
                "call.allowed"
            };
            let event = self.event(name, exchange, now_ms, record, reason, detail);
            self.emit(store, out, &event);
        }
        out.decision(&decision);
        outcome
    }
}

/// The audit fields of a call decision: the tool, the SHA-256 of the call's own raw
/// `arguments` bytes as the client sent them (null without arguments), the normalized
/// (canonical) arguments that were checked, which caller snapshot it was compared with (the
/// key's source; null: the baseline alone), the decision and its code.
fn call_detail(
    call: &Call<'_>,
    tool: &str,
    arguments: Option<&Value>,
    decision: &str,
    code: Option<&str>,
) -> Map<String, Value> {
    let mut detail = Map::new();
    put(&mut detail, "tool", Value::from(tool));
    let raw = crate::wire::json_span::call_arguments(call.body, call.element);
    put(
        &mut detail,
        "args_sha256",
        Value::from(raw.map(crate::policy::fingerprint::sha256_hex)),
    );
    let mut canonical = Vec::new();
    if let Some(args) = arguments {
        crate::wire::canonical::write_canonical(args, &mut canonical);
    }
    put(
        &mut detail,
        "arguments",
        Value::from(String::from_utf8_lossy(&canonical).into_owned()),
    );
    let snapshot = call.key.as_ref().ok().and_then(Option::as_ref);
    put(
        &mut detail,
        "snapshot",
        Value::from(snapshot.map(|k| &*k.source)),
    );
    put(&mut detail, "decision", Value::from(decision));
    if let Some(code) = code {
        put(&mut detail, "error_code", Value::from(code));
    }
    detail
}
