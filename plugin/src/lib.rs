//! toolseal's proxy-wasm filter for Envoy: the `.wasm` that Envoy (and `toolseal replay`)
//! loads.
//!
//! Main design decision: this crate only moves bytes between the proxy-wasm ABI and
//! `toolseal-core`'s [`Engine`](toolseal_core::gateway::engine::Engine). Each callback gathers host
//! data, makes one engine call, and maps the verdict back. It speaks the ABI itself (`abi`:
//! every hostcall returns the host's status; `dispatch`: the exported callbacks) rather than
//! through the SDK, whose wrappers panic on statuses they do not expect: whatever the host
//! answers, the filter fails closed and the VM lives on.

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(target_arch = "wasm32")]
mod dispatch;
#[cfg(target_arch = "wasm32")]
mod filter;
#[cfg(target_arch = "wasm32")]
mod host;
pub mod pairs;
#[cfg(target_arch = "wasm32")]
mod telemetry;

/// The module's entry point (`_initialize`, which the host calls first): runs the static
/// constructors and sends a panic's message to the host log (a panic aborts the VM; the
/// operator should read why).
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    #[cfg(target_os = "wasi")]
    {
        unsafe extern "C" {
            fn __wasm_call_ctors();
        }
        // SAFETY: the linker-provided constructor list, run once before anything else.
        unsafe { __wasm_call_ctors() };
    }
    std::panic::set_hook(Box::new(|info| {
        let _logged = abi::log(abi::Level::Critical, &format!("toolseal: {info}"));
    }));
}
