//! The wasmtime wiring, driven by a small hand-written proxy-wasm module (WAT): Envoy's
//! start order, callback order, cumulative body sizes while paused, buffer replacement,
//! local replies, traps, refused configuration, unknown imports and the module cache.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use toolseal::abi::shared_store::SharedStore;
use toolseal::abi::state::{DEFAULT_EPOCH_NS, Identity};
use toolseal::abi::types::{LogLevel, MetricType};
use toolseal::replay::exchange::{self, ExchangeSetup, Stop};
use toolseal::wasm::module_cache::{self, CacheOutcome};
use toolseal::wasm::plugin_vm::{ConfigRefused, PluginVm, VmFault, VmSettings};
use toolseal_core::transcript::HttpExchange;
use wasmtime::{Engine, Module};

/// A proxy-wasm plugin in miniature: logs each callback's name, pauses bodies until end of
/// stream, records each request-body size in a histogram, answers 403 to a body starting
/// with `D`, traps (after writing `boom` to stderr) on one starting with `T`, replaces the
/// response body with `REPLACED`, and refuses a 6-byte configuration.
const PLUGIN_WAT: &str = r#"
(module
  (import "env" "proxy_log" (func $log (param i32 i32 i32) (result i32)))
  (import "env" "proxy_get_buffer_bytes" (func $get_buffer (param i32 i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_set_buffer_bytes" (func $set_buffer (param i32 i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_send_local_response" (func $reply (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_define_metric" (func $define (param i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_record_metric" (func $record (param i32 i64) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (global $heap (mut i32) (i32.const 65536))
  (data (i32.const 0) "start")
  (data (i32.const 16) "configure")
  (data (i32.const 32) "req_headers")
  (data (i32.const 48) "req_body")
  (data (i32.const 64) "resp_headers")
  (data (i32.const 80) "resp_body")
  (data (i32.const 96) "log")
  (data (i32.const 112) "done")
  (data (i32.const 128) "delete")
  (data (i32.const 144) "REPLACED")
  (data (i32.const 160) "denied")
  (data (i32.const 176) "boom\n")
  (data (i32.const 192) "\b0\00\00\00\05\00\00\00")
  (data (i32.const 208) "context")
  (data (i32.const 224) "sizes")
  (func (export "proxy_on_memory_allocate") (param $size i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (global.get $heap) (local.get $size)) (i32.const 7)) (i32.const -8)))
    (local.get $at))
  (func $say (param $ptr i32) (param $len i32)
    (drop (call $log (i32.const 2) (local.get $ptr) (local.get $len))))
  (func $first_body_byte (result i32)
    (i32.load8_u (i32.load (i32.const 240))))
  (func (export "_initialize") (call $say (i32.const 0) (i32.const 5)))
  (func (export "proxy_abi_version_0_2_1"))
  (func (export "proxy_on_context_create") (param i32 i32) (call $say (i32.const 208) (i32.const 7)))
  (func (export "proxy_on_vm_start") (param i32 i32) (result i32)
    (drop (call $define (i32.const 2) (i32.const 224) (i32.const 5) (i32.const 252)))
    (i32.const 1))
  (func (export "proxy_on_configure") (param $root i32) (param $size i32) (result i32)
    (call $say (i32.const 16) (i32.const 9))
    (i32.ne (local.get $size) (i32.const 6)))
  (func (export "proxy_on_request_headers") (param i32 i32 i32) (result i32)
    (call $say (i32.const 32) (i32.const 11))
    (i32.const 0))
  (func (export "proxy_on_request_body") (param $ctx i32) (param $size i32) (param $eos i32) (result i32)
    (call $say (i32.const 48) (i32.const 8))
    (drop (call $record (i32.load (i32.const 252)) (i64.extend_i32_u (local.get $size))))
    (if (i32.eqz (local.get $eos)) (then (return (i32.const 1))))
    (drop (call $get_buffer (i32.const 0) (i32.const 0) (local.get $size) (i32.const 240) (i32.const 244)))
    (if (i32.eq (call $first_body_byte) (i32.const 68))
      (then
        (drop (call $reply (i32.const 403) (i32.const 0) (i32.const 0) (i32.const 160) (i32.const 6) (i32.const 0) (i32.const 0) (i32.const -1)))
        (return (i32.const 1))))
    (if (i32.eq (call $first_body_byte) (i32.const 84))
      (then
        (drop (call $fd_write (i32.const 2) (i32.const 192) (i32.const 1) (i32.const 248)))
        unreachable))
    (i32.const 0))
  (func (export "proxy_on_response_headers") (param i32 i32 i32) (result i32)
    (call $say (i32.const 64) (i32.const 12))
    (i32.const 0))
  (func (export "proxy_on_response_body") (param $ctx i32) (param $size i32) (param $eos i32) (result i32)
    (call $say (i32.const 80) (i32.const 9))
    (if (i32.eqz (local.get $eos)) (then (return (i32.const 1))))
    (drop (call $set_buffer (i32.const 1) (i32.const 0) (local.get $size) (i32.const 144) (i32.const 8)))
    (i32.const 0))
  (func (export "proxy_on_log") (param i32) (call $say (i32.const 96) (i32.const 3)))
  (func (export "proxy_on_done") (param i32) (result i32) (call $say (i32.const 112) (i32.const 4)) (i32.const 1))
  (func (export "proxy_on_delete") (param i32) (call $say (i32.const 128) (i32.const 6)))
)
"#;

fn engine() -> Engine {
    toolseal::wasm::engine().unwrap()
}

fn module(engine: &Engine, wat: &str) -> Module {
    Module::new(engine, wat::parse_str(wat).unwrap()).unwrap()
}

fn settings(config: &[u8]) -> VmSettings {
    VmSettings {
        identity: Identity {
            route_name: "srv".into(),
            cluster_name: "srv".into(),
            ..Identity::default()
        },
        log_level: LogLevel::Info,
        plugin_configuration: config.to_vec(),
        vm_configuration: Vec::new(),
        start_ns: DEFAULT_EPOCH_NS,
        faults: Vec::new(),
        shared_data: SharedStore::default(),
    }
}

fn exchange(request_body: &str, response_body: &str) -> HttpExchange {
    HttpExchange {
        seq: "0".into(),
        http_method: "POST".into(),
        path: "/mcp".into(),
        request_headers: vec![
            ("Host".into(), "127.0.0.1".into()),
            ("Content-Type".into(), "application/json".into()),
        ],
        request_body: request_body.as_bytes().to_vec(),
        status: 200,
        response_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("Transfer-Encoding".into(), "chunked".into()),
        ],
        response_body: response_body.as_bytes().to_vec(),
    }
}

fn messages(logs: &[toolseal::abi::state::LogEntry]) -> Vec<&str> {
    logs.iter().map(|e| e.message.as_str()).collect()
}

#[test]
fn start_order_callback_order_and_envoy_buffering() {
    let engine = engine();
    let mut vm = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"{}")).unwrap();
    assert_eq!(
        messages(&vm.host().vm.logs),
        ["start", "context", "configure"]
    );
    vm.host_mut().vm.logs.clear();
    let setup = ExchangeSetup {
        chunk: 4,
        ..ExchangeSetup::default()
    };
    let outcome = exchange::run(&mut vm, &exchange("0123456789", "{\"a\":1}"), &setup).unwrap();
    assert_eq!(
        messages(&outcome.logs),
        [
            "context",
            "req_headers",
            "req_body",
            "req_body",
            "req_body",
            "resp_headers",
            "resp_body",
            "resp_body",
            "log",
            "done",
            "delete"
        ]
    );
    assert!(outcome.upstream_contacted);
    assert_eq!(outcome.stop, None);
    assert_eq!(outcome.forwarded_request_body, b"0123456789");
    assert_eq!(
        outcome.response_body, b"REPLACED",
        "the replaced buffer is what leaves"
    );
    let headers = outcome.response_headers.unwrap();
    assert_eq!(headers.get(b":status"), Some(&b"200"[..]));
    assert_eq!(
        headers.get(b"transfer-encoding"),
        None,
        "hop-by-hop headers are not forwarded"
    );
    // Sizes are cumulative while the plugin pauses: 4, 8, 10.
    let sizes = vm.host().vm.metrics.by_name("sizes").unwrap();
    assert_eq!(
        (sizes.kind, sizes.value, sizes.samples),
        (MetricType::Histogram, 22, 3)
    );
    assert!(
        vm.host().stream.is_none(),
        "stream state ends with the exchange"
    );
}

#[test]
fn a_local_reply_stops_the_exchange_before_the_upstream() {
    let engine = engine();
    let mut vm = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"")).unwrap();
    vm.host_mut().vm.logs.clear();
    let setup = ExchangeSetup {
        chunk: 0,
        ..ExchangeSetup::default()
    };
    let outcome = exchange::run(&mut vm, &exchange("Deny me", "never seen"), &setup).unwrap();
    assert_eq!(outcome.stop, Some(Stop::LocalResponse));
    assert!(!outcome.upstream_contacted);
    let reply = outcome.local_response.unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (403, &b"denied"[..]));
    assert_eq!(
        messages(&outcome.logs),
        [
            "context",
            "req_headers",
            "req_body",
            "log",
            "done",
            "delete"
        ]
    );
    assert!(outcome.response_body.is_empty());
}

#[test]
fn a_paused_headers_callback_stalls_the_exchange() {
    let engine = engine();
    let pausing = PLUGIN_WAT.replace(
        "(call $say (i32.const 32) (i32.const 11))\n    (i32.const 0))",
        "(call $say (i32.const 32) (i32.const 11))\n    (i32.const 1))",
    );
    assert_ne!(pausing, PLUGIN_WAT);
    let mut vm = PluginVm::start(&engine, &module(&engine, &pausing), settings(b"")).unwrap();
    vm.host_mut().vm.logs.clear();
    let outcome = exchange::run(
        &mut vm,
        &exchange("body", "never seen"),
        &ExchangeSetup::default(),
    )
    .unwrap();
    assert!(
        matches!(outcome.stop, Some(Stop::Stalled(_))),
        "{:?}",
        outcome.stop
    );
    assert!(!outcome.upstream_contacted);
    assert_eq!(
        messages(&outcome.logs),
        ["context", "req_headers", "log", "done", "delete"]
    );
}

#[test]
fn a_trap_reports_the_callback_and_the_plugin_stderr() {
    let engine = engine();
    let mut vm = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"")).unwrap();
    let err = exchange::run(&mut vm, &exchange("Trap", ""), &ExchangeSetup::default()).unwrap_err();
    let fault = err
        .chain()
        .find_map(|e| e.downcast_ref::<VmFault>())
        .expect("a VmFault");
    assert_eq!(fault.during, "proxy_on_request_body");
    assert_eq!(fault.stderr, "boom\n");
    assert!(fault.trap.contains("unreachable"), "{}", fault.trap);
    assert_eq!(toolseal::cli::exit_code_for(&err), 1);
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let engine = engine();
    let looping = PLUGIN_WAT.replace(
        "(call $say (i32.const 32) (i32.const 11))\n    (i32.const 0))",
        "(call $say (i32.const 32) (i32.const 11))\n    (loop (br 0))\n    (i32.const 0))",
    );
    assert_ne!(looping, PLUGIN_WAT);
    let mut vm = PluginVm::start(&engine, &module(&engine, &looping), settings(b"")).unwrap();
    vm.set_fuel_per_call(1_000_000);
    let err = exchange::run(&mut vm, &exchange("", ""), &ExchangeSetup::default()).unwrap_err();
    let fault = err
        .chain()
        .find_map(|e| e.downcast_ref::<VmFault>())
        .expect("a VmFault");
    assert_eq!(fault.during, "proxy_on_request_headers");
    assert!(fault.trap.contains("fuel"), "{}", fault.trap);
    // The budget is per call and is the one set: a single unit stops the first callback.
    let mut vm = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"")).unwrap();
    vm.set_fuel_per_call(1);
    let err = exchange::run(&mut vm, &exchange("", ""), &ExchangeSetup::default()).unwrap_err();
    let fault = err
        .chain()
        .find_map(|e| e.downcast_ref::<VmFault>())
        .unwrap();
    assert_eq!(fault.during, "proxy_on_context_create");
}

#[test]
fn an_unmetered_engine_runs_without_fuel() {
    // The benchmark runs the plugin as Envoy does, without metering: a budget that would stop
    // the first callback of a metered VM changes nothing there.
    let engine = toolseal::wasm::engine_with(toolseal::wasm::Metering::Off).unwrap();
    let mut vm = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"")).unwrap();
    vm.set_fuel_per_call(1);
    let outcome = exchange::run(&mut vm, &exchange("", ""), &ExchangeSetup::default());
    assert!(outcome.is_ok(), "{outcome:?}");
}

#[test]
fn a_refused_configuration_is_exit_status_2() {
    let engine = engine();
    let err = PluginVm::start(&engine, &module(&engine, PLUGIN_WAT), settings(b"refuse"))
        .err()
        .unwrap();
    let refused = err.downcast_ref::<ConfigRefused>().expect("ConfigRefused");
    assert_eq!(messages(&refused.logs), ["start", "context", "configure"]);
    assert_eq!(toolseal::cli::exit_code_for(&err), 2);
}

#[test]
fn unknown_imports_are_named() {
    let engine = engine();
    let wat = r#"(module (import "env" "proxy_teleport" (func (param i32))) (memory (export "memory") 1))"#;
    let err = PluginVm::start(&engine, &module(&engine, wat), settings(b""))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("does not offer: env::proxy_teleport."),
        "{err}"
    );
}

#[test]
fn modules_without_the_abi_marker_are_refused() {
    let engine = engine();
    let wat = r#"(module (memory (export "memory") 1) (func (export "proxy_abi_version_0_1_0")))"#;
    let err = PluginVm::start(&engine, &module(&engine, wat), settings(b""))
        .err()
        .unwrap();
    assert!(err.to_string().contains("ABI 0.1.0"), "{err}");
}

#[test]
fn the_module_cache_stores_then_hits() {
    let engine = engine();
    let wasm = wat::parse_str(PLUGIN_WAT).unwrap();
    let dir = std::env::temp_dir().join(format!("toolseal-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_, first) = module_cache::load(&engine, &wasm, Some(&dir)).unwrap();
    let (module, second) = module_cache::load(&engine, &wasm, Some(&dir)).unwrap();
    assert_eq!((first, second), (CacheOutcome::Stored, CacheOutcome::Hit));
    let key = module_cache::cache_key(&engine, &wasm);
    assert!(dir.join(&key).is_file());
    assert!(PluginVm::start(&engine, &module, settings(b"")).is_ok());
    // A corrupt artifact is replaced, not trusted.
    std::fs::write(dir.join(&key), b"garbage").unwrap();
    let (_, third) = module_cache::load(&engine, &wasm, Some(&dir)).unwrap();
    assert_eq!(third, CacheOutcome::Stored);
    let _ = std::fs::remove_dir_all(&dir);
}
