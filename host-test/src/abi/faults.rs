//! Injected hostcall faults (`toolseal replay --fail-hostcall NAME[:N]`): the host answers
//! the Nth call of a proxy-wasm hostcall (or every call) with an error status instead of
//! serving it, as a faulting host would, so that tests can show what the plugin does when
//! the host lets it down.
//!
//! Main design decision: faults are counted per hostcall over the whole life of the VM
//! (start sequence included), and every call is counted whether or not a fault is planned,
//! so a working replay tells how many calls there are to fail ([`HostcallLog::counts`]); a
//! sweep then fails each of them in turn. A faulted call does nothing else: no guest memory
//! is written, no state changes.

use super::types::Status;
use std::collections::BTreeMap;

/// The status an injected fault answers: the host could not complete the call.
pub const FAULT_STATUS: Status = Status::InternalFailure;

/// Every proxy-wasm hostcall this host defines, by import name (the names a fault may
/// target).
pub const PROXY_HOSTCALLS: [&str; 37] = [
    "proxy_log",
    "proxy_get_log_level",
    "proxy_get_current_time_nanoseconds",
    "proxy_set_tick_period_milliseconds",
    "proxy_get_buffer_bytes",
    "proxy_set_buffer_bytes",
    "proxy_get_header_map_pairs",
    "proxy_set_header_map_pairs",
    "proxy_get_header_map_value",
    "proxy_replace_header_map_value",
    "proxy_add_header_map_value",
    "proxy_remove_header_map_value",
    "proxy_get_property",
    "proxy_set_property",
    "proxy_get_shared_data",
    "proxy_set_shared_data",
    "proxy_register_shared_queue",
    "proxy_resolve_shared_queue",
    "proxy_enqueue_shared_queue",
    "proxy_dequeue_shared_queue",
    "proxy_continue_stream",
    "proxy_close_stream",
    "proxy_send_local_response",
    "proxy_done",
    "proxy_set_effective_context",
    "proxy_get_status",
    "proxy_define_metric",
    "proxy_increment_metric",
    "proxy_record_metric",
    "proxy_get_metric",
    "proxy_http_call",
    "proxy_grpc_call",
    "proxy_grpc_stream",
    "proxy_grpc_send",
    "proxy_grpc_cancel",
    "proxy_grpc_close",
    "proxy_call_foreign_function",
];

/// One planned fault: which hostcall, and which call of it (1-based; `None`: every call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The hostcall's import name, e.g. `proxy_get_buffer_bytes`.
    pub hostcall: &'static str,
    /// The call to fail, counting from 1 over the VM's life; `None` fails every call.
    pub call: Option<u64>,
}

impl Fault {
    /// Parses `NAME` or `NAME:N` (N ≥ 1). The error says what is wrong and what is accepted.
    pub fn parse(spec: &str) -> Result<Fault, String> {
        let (name, call) = match spec.split_once(':') {
            Some((name, n)) => {
                let call = n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    format!(
                        "--fail-hostcall {spec:?}: the call number after ':' must be a whole number from 1 (1 = the first call)"
                    )
                })?;
                (name, Some(call))
            }
            None => (spec, None),
        };
        let hostcall = PROXY_HOSTCALLS
            .into_iter()
            .find(|known| *known == name)
            .ok_or_else(|| {
                format!(
                    "--fail-hostcall {spec:?}: {name:?} is not a proxy-wasm hostcall this host offers; use one of {}",
                    PROXY_HOSTCALLS.join(", ")
                )
            })?;
        Ok(Fault { hostcall, call })
    }
}

/// The hostcalls the guest made, counted by name, and the faults planned and injected.
#[derive(Debug, Clone, Default)]
pub struct HostcallLog {
    /// Faults to inject.
    pub planned: Vec<Fault>,
    /// Calls made so far, by hostcall name (faulted calls included).
    pub counts: BTreeMap<&'static str, u64>,
    /// Faults injected so far: hostcall and call number, in order.
    pub injected: Vec<(&'static str, u64)>,
}

impl HostcallLog {
    /// Counts one call of `hostcall`; `true` when a planned fault makes it fail.
    pub fn call(&mut self, hostcall: &'static str) -> bool {
        let count = self.counts.entry(hostcall).or_insert(0);
        *count = count.saturating_add(1);
        let n = *count;
        let fails = self
            .planned
            .iter()
            .any(|f| f.hostcall == hostcall && f.call.is_none_or(|call| call == n));
        if fails {
            self.injected.push((hostcall, n));
        }
        fails
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{Fault, HostcallLog};

    #[test]
    fn specs_name_a_hostcall_and_optionally_a_call_from_1() {
        assert_eq!(
            Fault::parse("proxy_get_buffer_bytes:3"),
            Ok(Fault {
                hostcall: "proxy_get_buffer_bytes",
                call: Some(3)
            })
        );
        assert_eq!(
            Fault::parse("proxy_log"),
            Ok(Fault {
                hostcall: "proxy_log",
                call: None
            })
        );
        for (spec, why) in [
            ("proxy_log:0", "whole number from 1"),
            ("proxy_log:", "whole number from 1"),
            ("proxy_log:-1", "whole number from 1"),
            ("proxy_log:two", "whole number from 1"),
            ("proxy_logs", "is not a proxy-wasm hostcall"),
            ("fd_write", "is not a proxy-wasm hostcall"),
            ("", "is not a proxy-wasm hostcall"),
        ] {
            let err = Fault::parse(spec).unwrap_err();
            assert!(err.contains(why), "{spec:?}: {err}");
            assert!(
                err.starts_with(&format!("--fail-hostcall {spec:?}")),
                "{err}"
            );
        }
    }

    #[test]
    fn calls_are_counted_per_hostcall_and_only_planned_ones_fail() {
        let mut log = HostcallLog {
            planned: vec![
                Fault::parse("proxy_log:2").unwrap(),
                Fault::parse("proxy_get_property").unwrap(),
            ],
            ..HostcallLog::default()
        };
        let outcomes: Vec<bool> = [
            "proxy_log",
            "proxy_get_property",
            "proxy_log",
            "proxy_get_property",
            "proxy_log",
            "proxy_set_property",
        ]
        .into_iter()
        .map(|h| log.call(h))
        .collect();
        assert_eq!(outcomes, [false, true, true, true, false, false]);
        assert_eq!(
            log.injected,
            [
                ("proxy_get_property", 1),
                ("proxy_log", 2),
                ("proxy_get_property", 2)
            ]
        );
        assert_eq!(log.counts.get("proxy_log"), Some(&3));
        assert_eq!(log.counts.get("proxy_set_property"), Some(&1));
    }
}
