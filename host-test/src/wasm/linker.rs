//! The import table: every `env::proxy_*` function the proxy-wasm Rust SDK references and
//! the WASI preview1 functions a `wasm32-wasip1` build imports, each a one-line adapter to
//! [`crate::abi`]. Guest `i32` arguments are taken as `u32` (pointers and sizes are
//! unsigned in wasm32).

use super::caller_guest::{CallerGuest, StoreData};
use crate::abi::faults::FAULT_STATUS;
use crate::abi::guest::Guest;
use crate::abi::{buffers, control, http_call, maps, metrics, properties, shared, wasi};
use anyhow::{Context, Result};
use wasmtime::{Caller, Linker, Module};

/// Defines a hostcall returning a status (or a WASI errno). Every call is counted, and a
/// planned fault ([`crate::abi::faults`]) answers its status instead of running the call.
macro_rules! hostcall {
    ($linker:expr, $module:literal, $name:literal, |$g:ident $(, $arg:ident : $ty:ty)*| $body:expr) => {
        $linker
            .func_wrap($module, $name, |mut caller: Caller<'_, StoreData>, $($arg: $ty),*| -> wasmtime::Result<u32> {
                let mut guest = CallerGuest::new(&mut caller);
                if guest.host().vm.hostcalls.call($name) {
                    return Ok(FAULT_STATUS.code());
                }
                let $g = &mut guest;
                ($body).map_err(wasmtime::Error::new)
            })
            .map_err(anyhow::Error::from)
            .context(concat!("defining ", $module, "::", $name))?;
    };
}

/// A linker with every import this host offers.
pub fn linker(engine: &wasmtime::Engine) -> Result<Linker<StoreData>> {
    let mut linker = Linker::new(engine);
    add_proxy_wasm(&mut linker)?;
    add_outgoing_calls(&mut linker)?;
    add_wasi(&mut linker)?;
    Ok(linker)
}

/// Names of `module`'s imports that `linker` does not define, as `module::name`.
pub fn missing_imports(
    linker: &Linker<StoreData>,
    store: &mut wasmtime::Store<StoreData>,
    module: &Module,
) -> Vec<String> {
    module
        .imports()
        .filter(|i| linker.get(&mut *store, i.module(), i.name()).is_err())
        .map(|i| format!("{}::{}", i.module(), i.name()))
        .collect()
}

fn add_proxy_wasm(l: &mut Linker<StoreData>) -> Result<()> {
    hostcall!(
        l,
        "env",
        "proxy_log",
        |g, level: u32, ptr: u32, len: u32| control::log(g, level, ptr, len)
    );
    hostcall!(l, "env", "proxy_get_log_level", |g, out: u32| {
        control::get_log_level(g, out)
    });
    hostcall!(
        l,
        "env",
        "proxy_get_current_time_nanoseconds",
        |g, out: u32| control::get_current_time_nanoseconds(g, out)
    );
    hostcall!(
        l,
        "env",
        "proxy_set_tick_period_milliseconds",
        |g, period: u32| control::set_tick_period_milliseconds(g, period)
    );
    hostcall!(
        l,
        "env",
        "proxy_get_buffer_bytes",
        |g, t: u32, start: u32, max: u32, pp: u32, sp: u32| buffers::get_buffer_bytes(
            g, t, start, max, pp, sp
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_set_buffer_bytes",
        |g, t: u32, start: u32, size: u32, p: u32, n: u32| buffers::set_buffer_bytes(
            g, t, start, size, p, n
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_get_header_map_pairs",
        |g, t: u32, pp: u32, sp: u32| maps::get_header_map_pairs(g, t, pp, sp)
    );
    hostcall!(
        l,
        "env",
        "proxy_set_header_map_pairs",
        |g, t: u32, p: u32, n: u32| maps::set_header_map_pairs(g, t, p, n)
    );
    hostcall!(
        l,
        "env",
        "proxy_get_header_map_value",
        |g, t: u32, kp: u32, kn: u32, pp: u32, sp: u32| maps::get_header_map_value(
            g, t, kp, kn, pp, sp
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_replace_header_map_value",
        |g, t: u32, kp: u32, kn: u32, vp: u32, vn: u32| maps::replace_header_map_value(
            g, t, kp, kn, vp, vn
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_add_header_map_value",
        |g, t: u32, kp: u32, kn: u32, vp: u32, vn: u32| maps::add_header_map_value(
            g, t, kp, kn, vp, vn
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_remove_header_map_value",
        |g, t: u32, kp: u32, kn: u32| maps::remove_header_map_value(g, t, kp, kn)
    );
    hostcall!(
        l,
        "env",
        "proxy_get_property",
        |g, p: u32, n: u32, pp: u32, sp: u32| properties::get_property(g, p, n, pp, sp)
    );
    hostcall!(
        l,
        "env",
        "proxy_set_property",
        |g, p: u32, n: u32, vp: u32, vn: u32| properties::set_property(g, p, n, vp, vn)
    );
    hostcall!(
        l,
        "env",
        "proxy_get_shared_data",
        |g, kp: u32, kn: u32, pp: u32, sp: u32, cp: u32| shared::get_shared_data(
            g, kp, kn, pp, sp, cp
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_set_shared_data",
        |g, kp: u32, kn: u32, vp: u32, vn: u32, cas: u32| shared::set_shared_data(
            g, kp, kn, vp, vn, cas
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_register_shared_queue",
        |g, p: u32, n: u32, out: u32| shared::register_shared_queue(g, p, n, out)
    );
    hostcall!(
        l,
        "env",
        "proxy_resolve_shared_queue",
        |g, vp: u32, vn: u32, p: u32, n: u32, out: u32| shared::resolve_shared_queue(
            g, vp, vn, p, n, out
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_enqueue_shared_queue",
        |g, id: u32, p: u32, n: u32| shared::enqueue_shared_queue(g, id, p, n)
    );
    hostcall!(
        l,
        "env",
        "proxy_dequeue_shared_queue",
        |g, id: u32, pp: u32, sp: u32| shared::dequeue_shared_queue(g, id, pp, sp)
    );
    hostcall!(l, "env", "proxy_continue_stream", |g, t: u32| {
        control::continue_stream(g, t)
    });
    hostcall!(l, "env", "proxy_close_stream", |g, t: u32| {
        control::close_stream(g, t)
    });
    hostcall!(
        l,
        "env",
        "proxy_send_local_response",
        |g, status: u32, dp: u32, dn: u32, bp: u32, bn: u32, hp: u32, hn: u32, grpc: i32| {
            control::send_local_response(g, status, (dp, dn), (bp, bn), (hp, hn), grpc)
        }
    );
    hostcall!(l, "env", "proxy_done", |g| control::done(g));
    hostcall!(l, "env", "proxy_set_effective_context", |g, id: u32| {
        control::set_effective_context(g, id)
    });
    hostcall!(
        l,
        "env",
        "proxy_get_status",
        |g, cp: u32, pp: u32, sp: u32| control::get_status(g, cp, pp, sp)
    );
    hostcall!(
        l,
        "env",
        "proxy_define_metric",
        |g, t: u32, p: u32, n: u32, out: u32| metrics::define_metric(g, t, p, n, out)
    );
    hostcall!(
        l,
        "env",
        "proxy_increment_metric",
        |g, id: u32, offset: i64| metrics::increment_metric(g, id, offset)
    );
    hostcall!(l, "env", "proxy_record_metric", |g, id: u32, value: u64| {
        metrics::record_metric(g, id, value)
    });
    hostcall!(l, "env", "proxy_get_metric", |g, id: u32, out: u32| {
        metrics::get_metric(g, id, out)
    });
    Ok(())
}

/// Calls that leave the VM: HTTP callouts to the one cluster the runner serves (the fleet
/// store); gRPC and foreign functions refused.
fn add_outgoing_calls(l: &mut Linker<StoreData>) -> Result<()> {
    hostcall!(
        l,
        "env",
        "proxy_http_call",
        |g,
         up: u32,
         un: u32,
         hp: u32,
         hn: u32,
         bp: u32,
         bn: u32,
         tp: u32,
         tn: u32,
         timeout: u32,
         token: u32| http_call::http_call(
            g,
            (up, un),
            (hp, hn),
            (bp, bn),
            (tp, tn),
            timeout,
            token
        )
    );
    hostcall!(
        l,
        "env",
        "proxy_grpc_call",
        |g,
         _a: u32,
         _b: u32,
         _c: u32,
         _d: u32,
         _e: u32,
         _f: u32,
         _h: u32,
         _i: u32,
         _j: u32,
         _k: u32,
         _timeout: u32,
         _token: u32| control::unsupported(g, "proxy_grpc_call")
    );
    hostcall!(
        l,
        "env",
        "proxy_grpc_stream",
        |g, _a: u32, _b: u32, _c: u32, _d: u32, _e: u32, _f: u32, _h: u32, _i: u32, _token: u32| {
            control::unsupported(g, "proxy_grpc_stream")
        }
    );
    hostcall!(
        l,
        "env",
        "proxy_grpc_send",
        |g, _token: u32, _p: u32, _n: u32, _eos: u32| control::unsupported(g, "proxy_grpc_send")
    );
    hostcall!(l, "env", "proxy_grpc_cancel", |g, _token: u32| {
        control::unsupported(g, "proxy_grpc_cancel")
    });
    hostcall!(l, "env", "proxy_grpc_close", |g, _token: u32| {
        control::unsupported(g, "proxy_grpc_close")
    });
    hostcall!(
        l,
        "env",
        "proxy_call_foreign_function",
        |g, _a: u32, _b: u32, _c: u32, _d: u32, _e: u32, _f: u32| control::unsupported(
            g,
            "proxy_call_foreign_function"
        )
    );
    Ok(())
}

fn add_wasi(l: &mut Linker<StoreData>) -> Result<()> {
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "environ_sizes_get",
        |g, c: u32, s: u32| wasi::sizes_get_empty(g, c, s)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "environ_get",
        |g, a: u32, b: u32| wasi::get_empty(g, a, b)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "args_sizes_get",
        |g, c: u32, s: u32| wasi::sizes_get_empty(g, c, s)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "args_get",
        |g, a: u32, b: u32| wasi::get_empty(g, a, b)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_write",
        |g, fd: u32, iovs: u32, n: u32, out: u32| wasi::fd_write(g, fd, iovs, n, out)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "random_get",
        |g, p: u32, n: u32| wasi::random_get(g, p, n)
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "clock_time_get",
        |g, id: u32, precision: u64, out: u32| wasi::clock_time_get(g, id, precision, out)
    );
    hostcall!(l, "wasi_snapshot_preview1", "sched_yield", |_g| {
        wasi::sched_yield()
    });
    hostcall!(l, "wasi_snapshot_preview1", "fd_close", |_g, _fd: u32| {
        wasi::no_files()
    });
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_seek",
        |_g, _fd: u32, _off: i64, _whence: u32, _out: u32| wasi::no_files()
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_read",
        |_g, _fd: u32, _iovs: u32, _n: u32, _out: u32| wasi::no_files()
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_fdstat_get",
        |_g, _fd: u32, _out: u32| wasi::no_files()
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_prestat_get",
        |_g, _fd: u32, _out: u32| wasi::no_files()
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "fd_prestat_dir_name",
        |_g, _fd: u32, _p: u32, _n: u32| wasi::no_files()
    );
    hostcall!(
        l,
        "wasi_snapshot_preview1",
        "poll_oneoff",
        |_g, _a: u32, _b: u32, _n: u32, _out: u32| wasi::not_supported()
    );
    l.func_wrap(
        "wasi_snapshot_preview1",
        "proc_exit",
        |mut caller: Caller<'_, StoreData>, code: u32| -> wasmtime::Result<()> {
            wasi::proc_exit(&mut CallerGuest::new(&mut caller), code).map_err(wasmtime::Error::new)
        },
    )
    .map_err(anyhow::Error::from)
    .context("defining wasi_snapshot_preview1::proc_exit")?;
    Ok(())
}
