//! toolseal's proxy-wasm filter for Envoy: the `.wasm` that Envoy (and `toolseal replay`)
//! loads.
//!
//! Main design decision: this crate only moves bytes between the proxy-wasm ABI and
//! `toolseal-core`'s [`Engine`](toolseal_core::engine::Engine). Each callback gathers host
//! data, makes one engine call, and maps the verdict back. Host data is read through the
//! byte-level hostcalls (never the SDK's `String` helpers, which panic on invalid UTF-8), so
//! no input can panic the VM.

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(target_arch = "wasm32")]
mod filter;
#[cfg(target_arch = "wasm32")]
mod host;
pub mod pairs;
#[cfg(target_arch = "wasm32")]
mod telemetry;

/// The module's entry point (`_initialize`): registers the root context.
#[cfg(target_arch = "wasm32")]
#[allow(missing_docs)]
mod entry {
    proxy_wasm::main! {{
        proxy_wasm::set_log_level(proxy_wasm::types::LogLevel::Trace);
        proxy_wasm::set_root_context(|_| -> Box<dyn proxy_wasm::traits::RootContext> {
            Box::new(super::filter::Root::default())
        });
    }}
}
