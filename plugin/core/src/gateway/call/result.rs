//! The result of a forwarded `tools/call`, held to the approved tool's output contract.
//!
//! Main design decision: a result is checked only when the approved tool declares an
//! `outputSchema`; one that breaks it is audited (`result.mismatch`) and, under
//! `results: "enforce"`, replaced by a denial, so a server cannot change what its tools
//! return without review. An interim answer of a multi round-trip call is not a result yet.

use crate::gateway::denial::ErrorCode;
use crate::gateway::engine::Engine;
use crate::gateway::exchange::Exchange;
use crate::policy::section::TOOLS_CALL;
use crate::state::audit::Counter;
use crate::state::store::StateStore;
use crate::wire::json::put;
use serde_json::{Map, Value};

impl Engine {
    /// Checks a tool result's `structuredContent` against the approved `outputSchema`;
    /// returns the result to forward instead (enforce mode), if any. Always records a decision.
    pub(crate) fn call_result(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn crate::state::audit::Outputs,
        now_ms: u64,
        exchange: &Exchange,
        call: &crate::gateway::exchange::PendingCall,
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
                    .map_or(crate::policy::status::SchemaStatus::Unbaselined, |r| {
                        r.status
                    });
                (read, status)
            }
        };
        let record = read.as_ref().ok().cloned().flatten();
        let mut decision = self.decision(exchange, "response", TOOLS_CALL, Some(&call.id), status);
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
        record: Option<&crate::policy::status::ServerRecord>,
        call: &crate::gateway::exchange::PendingCall,
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
