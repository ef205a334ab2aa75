//! Per-call authorization of `tools/call` (SPEC section 4, checks 1 to 5).
//!
//! Main design decision: checks run in the SPEC's order and the first failure decides, so a
//! denial always names the most fundamental problem (a drifted server before a bad argument).
//! Every decision is audited with the SHA-256 of the raw request bytes and the normalized
//! arguments that were actually checked.

use crate::audit::Counter;
use crate::denial::{Denial, ErrorCode};
use crate::engine::{Engine, Exchange, RequestInfo};
use crate::json::put;
use crate::policy::CallFacts;
use crate::snapshot_key::ClientKey;
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
    /// The raw request body that carried it (hashed into the audit event).
    pub body: &'a [u8],
    /// The caller's snapshot key (`None`: the call is checked against the baseline alone).
    pub key: Option<ClientKey<'a>>,
}

impl Engine {
    /// Authorizes a call. `Ok(tool name)` when it may go to the server.
    pub(crate) fn authorize_call(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        call: &Call<'_>,
    ) -> Result<(String, bool), Box<Denial>> {
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
                return self
                    .finish_call(
                        store,
                        out,
                        now_ms,
                        exchange,
                        call,
                        "",
                        None,
                        None,
                        Err(denial.into()),
                    )
                    .map(|t| (t, false));
            }
        };
        let record = self.record(store, &exchange.server);
        let verdict = self.check_call(
            store,
            exchange,
            info,
            call.key.as_ref(),
            &record,
            &tool,
            arguments.as_ref(),
        );
        let record = record.ok().flatten();
        let check_result = verdict.as_ref().is_ok_and(|has_output| *has_output);
        let verdict = verdict.map(|_| ());
        self.finish_call(
            store,
            out,
            now_ms,
            exchange,
            call,
            &tool,
            arguments.as_ref(),
            record.as_deref(),
            verdict,
        )
        .map(|t| (t, check_result))
    }

    #[allow(clippy::too_many_arguments)]
    fn check_call(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        info: &RequestInfo<'_>,
        key: Option<&ClientKey<'_>>,
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
            return Err(self.denial(code, exchange, tool, r, "").into());
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
        let Some(baseline) = self.approved(store, &baseline_fp) else {
            return Err(self
                .denial(
                    ErrorCode::SchemaUnverified,
                    exchange,
                    tool,
                    r,
                    "approved definitions unavailable",
                )
                .into());
        };
        let Some(approved) = baseline.tools.get(tool) else {
            let dropped = record
                .previous
                .clone()
                .and_then(|p| self.approved(store, &p))
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
        if let Some(key) = key
            && let Some(seen) = state::get_snapshot_cached(
                store,
                &mut self.snapshots,
                &exchange.server,
                key,
                self.config.limits.session_slots,
            )
            && seen.fingerprint != baseline_fp
        {
            let stale = self
                .approved(store, &seen.fingerprint)
                .and_then(|s| s.digest(tool).map(str::to_string));
            if stale.is_some_and(|d| d != approved.digest) {
                return Err(self
                    .denial(ErrorCode::StaleToolSchema, exchange, tool, r, "")
                    .into());
            }
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

    /// Audits and counts a call decision, and passes it through.
    #[allow(clippy::too_many_arguments)]
    fn finish_call(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        call: &Call<'_>,
        tool: &str,
        arguments: Option<&Value>,
        record: Option<&crate::status::ServerRecord>,
        verdict: Result<(), Box<Denial>>,
    ) -> Result<String, Box<Denial>> {
        let status = record.map_or(crate::status::SchemaStatus::Unbaselined, |r| r.status);
        let mut decision = self.decision(exchange, "request", "tools/call", Some(call.id), status);
        decision.tool = Some(tool.to_string());
        // Only an audited decision pays for hashing the raw bytes and canonicalizing arguments.
        let audited = verdict.is_err() || self.config.audit.call_allowed;
        let mut detail = Map::new();
        if audited {
            put(&mut detail, "tool", Value::from(tool));
            put(
                &mut detail,
                "args_sha256",
                Value::from(crate::fingerprint::sha256_hex(call.body)),
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
            // Which caller snapshot the call was compared with (null: the baseline alone).
            put(
                &mut detail,
                "snapshot",
                Value::from(call.key.as_ref().map(|k| &*k.source)),
            );
        }
        let result = match verdict {
            Ok(()) => {
                out.count(Counter::CallsAllowed, None);
                decision.decision = "allow";
                if self.config.audit.call_allowed {
                    put(&mut detail, "decision", Value::from("allow"));
                    let event = self.event(
                        "call.allowed",
                        exchange,
                        now_ms,
                        record,
                        "all checks passed",
                        detail,
                    );
                    self.emit(store, out, &event);
                }
                Ok(tool.to_string())
            }
            Err(denial) => {
                out.count(Counter::CallsDenied, Some(denial.code.as_str()));
                decision.decision = "deny";
                decision.error_code = Some(denial.code.as_str());
                put(&mut detail, "decision", Value::from("deny"));
                put(&mut detail, "error_code", Value::from(denial.code.as_str()));
                let event = self.event(
                    "call.denied",
                    exchange,
                    now_ms,
                    record,
                    &denial.message,
                    detail,
                );
                self.emit(store, out, &event);
                Err(denial)
            }
        };
        out.decision(&decision);
        result
    }
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
        let record = self.record(store, &exchange.server).ok().flatten();
        let status = record
            .as_ref()
            .map_or(crate::status::SchemaStatus::Unbaselined, |r| r.status);
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
        let problem = if call.check_result {
            self.result_problem(store, record.as_deref(), call, result)
        } else {
            None
        };
        let (Some(problem), Some(record)) = (problem, record) else {
            out.decision(&decision);
            return None;
        };
        out.count(Counter::ResultMismatches, None);
        let mut detail = Map::new();
        put(&mut detail, "tool", Value::from(call.tool.as_str()));
        put(&mut detail, "problem", Value::from(problem.as_str()));
        let event = self.event(
            "result.mismatch",
            exchange,
            now_ms,
            Some(&*record),
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
                Some(&*record),
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
        record: Option<&crate::status::ServerRecord>,
        call: &crate::engine::PendingCall,
        result: &Value,
    ) -> Option<String> {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let baseline = self.approved(store, record?.baseline.as_deref()?)?;
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
