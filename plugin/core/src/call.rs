//! Per-call authorization of `tools/call` (SPEC section 4, checks 1 to 5).
//!
//! Main design decision: checks run in the SPEC's order and the first failure decides, so a
//! denial always names the most fundamental problem (a drifted server before a bad argument).
//! A call is checked first and recorded once its batch is decided, so a record never says
//! `allow` for a call that was not forwarded. Every audited decision carries the SHA-256 of
//! the call's own raw `arguments` bytes and the normalized arguments that were checked.

use crate::audit::Counter;
use crate::containment::Serving;
use crate::denial::{Denial, ErrorCode};
use crate::engine::{Engine, Exchange, PendingCall, RequestInfo};
use crate::json::put;
use crate::policy::CallFacts;
use crate::snapshot_key::KeyRead;
use crate::state;
use crate::status::ServerRecord;
use crate::store::StateStore;
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

impl Engine {
    /// Runs the checks of a call, in order; nothing is recorded yet ([`Engine::settle_call`]).
    pub(crate) fn check_tools_call(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        call: &Call<'_>,
    ) -> CheckedCall {
        let (tool, arguments) = match crate::jsonrpc::tool_call(call.params) {
            Ok(tc) => (tc.name.to_string(), tc.arguments.cloned()),
            Err(e) => {
                let mut denial = self.denial(
                    ErrorCode::InvalidArguments,
                    exchange,
                    "tools/call",
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
            call.key,
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

    #[allow(clippy::too_many_arguments)]
    fn check_call(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        key: &KeyRead<'_>,
        record: &Result<Option<Rc<ServerRecord>>, state::StateError>,
        tool: &str,
        arguments: Option<&Value>,
    ) -> Result<bool, Box<Denial>> {
        let record = match record {
            Ok(Some(record)) => Rc::clone(record),
            Ok(None) => {
                return Err(self
                    .denial(
                        ErrorCode::SchemaUnverified,
                        exchange,
                        tool,
                        None,
                        "no tools/list seen yet",
                    )
                    .into());
            }
            Err(e) => {
                return Err(self
                    .denial(
                        ErrorCode::SchemaUnverified,
                        exchange,
                        tool,
                        None,
                        &e.to_string(),
                    )
                    .into());
            }
        };
        let r = Some(&*record);
        if let Some(code) = ErrorCode::for_closed(record.status) {
            let scope = self.config.drift_scope_of(&exchange.server);
            match crate::containment::serving(&record, scope) {
                Serving::Nothing => return Err(self.denial(code, exchange, tool, r, "").into()),
                Serving::AllBut => {
                    if let Some(change) = record.withheld(tool) {
                        let change = change.as_str();
                        let mut denial =
                            self.denial(ErrorCode::ToolChanged, exchange, tool, r, change);
                        denial.extra.insert("change".into(), json!(change));
                        return Err(denial.into());
                    }
                }
                // Drifted back to the baseline: every tool is the approved one.
                Serving::All => {}
            }
        }
        if self.held.contains(&exchange.server) {
            let why = "the last tools/list of this server could not be checked; list tools again";
            return Err(self
                .denial(ErrorCode::SchemaUnverified, exchange, tool, r, why)
                .into());
        }
        if record.awaiting_verification() {
            return Err(self
                .denial(
                    ErrorCode::SchemaUnverified,
                    exchange,
                    tool,
                    r,
                    "list tools to verify them",
                )
                .into());
        }
        let Some(baseline_fp) = record.baseline.clone() else {
            return Err(self
                .denial(
                    ErrorCode::SchemaUnverified,
                    exchange,
                    tool,
                    r,
                    "no approved baseline",
                )
                .into());
        };
        let unverified = |engine: &Self, why: &str| -> Box<Denial> {
            engine
                .denial(ErrorCode::SchemaUnverified, exchange, tool, r, why)
                .into()
        };
        let baseline = match self.approved(store, &exchange.server, &baseline_fp) {
            Ok(Some(baseline)) => baseline,
            Ok(None) => return Err(unverified(self, "approved definitions unavailable")),
            Err(e) => return Err(unverified(self, &e.to_string())),
        };
        let Some(approved) = baseline.tools.get(tool) else {
            let dropped = record
                .previous
                .clone()
                .and_then(|p| self.approved(store, &exchange.server, &p).ok().flatten())
                .is_some_and(|prev| prev.tools.contains_key(tool));
            let detail = if dropped {
                "the previous baseline had it; the current one dropped it"
            } else {
                ""
            };
            return Err(self
                .denial(ErrorCode::ToolNotApproved, exchange, tool, r, detail)
                .into());
        };
        // A snapshot that is gone (evicted, or its set replaced) leaves the baseline alone to
        // check against; one that cannot be read (nor its key) leaves the call undecided:
        // refused.
        let key = match key {
            Ok(key) => key.as_ref(),
            Err(e) => return Err(unverified(self, &format!("snapshot key unreadable: {e}"))),
        };
        let seen = match key {
            None => None,
            Some(key) => state::get_snapshot_cached(
                store,
                &mut self.snapshots,
                &exchange.server,
                key,
                self.config.limits.session_slots,
            )
            .and_then(|seen| match seen {
                Some(seen) if seen.fingerprint != baseline_fp => {
                    self.approved(store, &exchange.server, &seen.fingerprint)
                }
                _ => Ok(None),
            })
            .map_err(|e| {
                let why = format!("{} snapshot unreadable: {e}", key.source);
                unverified(self, &why)
            })?,
        };
        if let Some(seen) = seen
            && seen.digest(tool).is_some_and(|d| d != approved.digest)
        {
            return Err(self
                .denial(ErrorCode::StaleToolSchema, exchange, tool, r, "")
                .into());
        }
        let empty = json!({});
        let args = arguments.unwrap_or(&empty);
        match approved.input_schema() {
            Err(e) => {
                let mut denial = self.denial(
                    ErrorCode::InvalidArguments,
                    exchange,
                    tool,
                    r,
                    &format!("toolseal cannot check this tool's input schema: {e}"),
                );
                denial.required_action = "admin_review";
                return Err(denial.into());
            }
            Ok(schema) => {
                if let Err(violations) = schema.validate(args) {
                    let text: Vec<String> = violations
                        .iter()
                        .map(|v| format!("{}: {}", v.instance_path, v.message))
                        .collect();
                    let mut denial = self.denial(
                        ErrorCode::InvalidArguments,
                        exchange,
                        tool,
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
                    return Err(denial.into());
                }
            }
        }
        let facts = CallFacts {
            server: &exchange.server,
            tool,
            annotations: approved.annotations(),
            arguments,
            caller: info.caller,
        };
        if let Some(decision) = self.policy(&facts) {
            let mut denial =
                self.denial(ErrorCode::PolicyDenied, exchange, tool, r, &decision.reason);
            denial
                .extra
                .insert("rule".into(), json!(decision.rule_index));
            denial.extra.insert("reason".into(), json!(decision.reason));
            return Err(denial.into());
        }
        Ok(approved.output_schema().is_some())
    }

    /// Records, counts and audits a checked call; `batch_refused`: another element of its
    /// batch was denied, so it is not forwarded either (its record says `deny` /
    /// `BATCH_REFUSED`, and no `call.allowed` event is written for it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn settle_call(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::audit::Outputs,
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
        let status = record.map_or(crate::status::SchemaStatus::Unbaselined, |r| r.status);
        let mut decision = self.decision(exchange, "request", "tools/call", Some(call.id), status);
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
                Some(crate::audit::BATCH_REFUSED),
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
    let raw = crate::json_span::call_arguments(call.body, call.element);
    put(
        &mut detail,
        "args_sha256",
        Value::from(raw.map(crate::fingerprint::sha256_hex)),
    );
    let mut canonical = Vec::new();
    if let Some(args) = arguments {
        crate::canonical::write_canonical(args, &mut canonical);
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

impl Engine {
    /// Checks a tool result's `structuredContent` against the approved `outputSchema`;
    /// returns the result to forward instead (enforce mode), if any. Always records a decision.
    pub(crate) fn call_result(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        call: &crate::engine::PendingCall,
        result: &Value,
    ) -> Option<Value> {
        // Without a contract to check, the result is recorded under the status the call was
        // allowed with: nothing about it is decided here, and the record is not read again.
        let (read, status) = match call.allowed_at {
            Some(status) if !call.check_result => (Ok(None), status),
            _ => {
                let read = self.record(store, &exchange.server);
                let status = read
                    .as_ref()
                    .ok()
                    .and_then(Option::as_ref)
                    .map_or(crate::status::SchemaStatus::Unbaselined, |r| r.status);
                (read, status)
            }
        };
        let record = read.as_ref().ok().cloned().flatten();
        let mut decision =
            self.decision(exchange, "response", "tools/call", Some(&call.id), status);
        decision.tool = Some(call.tool.clone());
        if call.stateless
            && result.get("resultType").and_then(Value::as_str) == Some("input_required")
        {
            // An interim answer (MCP 2026-07-28 multi round-trip): the client answers its
            // questions and calls again; that call is authorized anew, and only its final
            // result is held to the contract.
            out.decision(&decision);
            return None;
        }
        let problem = match (&read, call.check_result) {
            (_, false) => None,
            (Err(e), true) => Some(format!(
                "toolseal cannot read the server's record to check this result: {e}"
            )),
            (Ok(_), true) => {
                self.result_problem(store, &exchange.server, record.as_deref(), call, result)
            }
        };
        let Some(problem) = problem else {
            out.decision(&decision);
            return None;
        };
        let record = record.as_deref();
        out.count(Counter::ResultMismatches, None);
        let mut detail = Map::new();
        put(&mut detail, "tool", Value::from(call.tool.as_str()));
        put(&mut detail, "problem", Value::from(problem.as_str()));
        let event = self.event(
            "result.mismatch",
            exchange,
            now_ms,
            record,
            &problem,
            detail,
        );
        self.emit(store, out, &event);
        if self.config.server(&exchange.server).results != crate::config::ResultsMode::Enforce {
            out.decision(&decision);
            return None;
        }
        decision.decision = "rewrite";
        decision.error_code = Some(ErrorCode::ResultContractChanged.as_str());
        out.decision(&decision);
        Some(
            self.denial(
                ErrorCode::ResultContractChanged,
                exchange,
                &call.tool,
                record,
                &problem,
            )
            .result(call.stateless),
        )
    }

    /// Why a result breaks the approved output contract, or `None` when it holds (or does not
    /// apply: a tool error, or no `outputSchema`).
    fn result_problem(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        record: Option<&crate::status::ServerRecord>,
        call: &crate::engine::PendingCall,
        result: &Value,
    ) -> Option<String> {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let baseline = match self.approved(store, server, record?.baseline.as_deref()?) {
            Ok(baseline) => baseline?,
            Err(e) => {
                return Some(format!(
                    "toolseal cannot read the approved definitions to check this result: {e}"
                ));
            }
        };
        let tool = baseline.tools.get(&call.tool)?;
        match (tool.output_schema()?, result.get("structuredContent")) {
            (Err(e), _) => Some(format!(
                "toolseal cannot check this tool's output schema: {e}"
            )),
            (Ok(_), None) => Some(
                "the result has no structuredContent although the tool declares an outputSchema"
                    .into(),
            ),
            (Ok(schema), Some(content)) => schema.validate(content).err().map(|v| {
                v.iter()
                    .map(|v| format!("{}: {}", v.instance_path, v.message))
                    .collect::<Vec<_>>()
                    .join("; ")
            }),
        }
    }
}
