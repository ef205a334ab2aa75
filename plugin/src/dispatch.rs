//! The proxy-wasm ABI 0.2.1 exports of the filter: the version marker, the allocator the host
//! writes into, and the callbacks, each routed to the root context or to an HTTP context by
//! the context id the host passes.
//!
//! Main design decision: written for this filter instead of taking the SDK's dispatcher. The
//! SDK's panics on an unknown context id and its trait objects link every hostcall wrapper
//! (each one able to panic on a status it does not expect); this filter has root contexts
//! (one per plugin configuration sharing the VM, e.g. a data listener's and an admin
//! listener's) and HTTP contexts only, and a callback for a context it does not know holds
//! the stream (nothing unchecked passes) instead of killing the VM. The contexts live in a
//! thread-local: a wasm VM runs one thread, and the exports have no other way to reach them.

use crate::filter::{Http, Root};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;

/// What a stream callback tells the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Action {
    /// Let the data go on.
    Continue = 0,
    /// Hold it (a body is buffered; headers stop everything until resumed).
    Pause = 1,
}

#[derive(Default)]
struct Contexts {
    /// Root contexts and their ids: one per plugin configuration the VM serves (a few).
    roots: Vec<(u32, Root)>,
    /// Live HTTP contexts by id.
    http: BTreeMap<u32, Http>,
}

thread_local! {
    static CONTEXTS: RefCell<Contexts> = RefCell::new(Contexts::default());
}

/// Runs `f` on HTTP context `id`; a context the filter does not know holds the stream, and
/// so does a callback that would re-enter one already running (the host calls back into the
/// guest only to allocate, so this never happens with Envoy).
fn with_http(id: u32, f: impl FnOnce(&mut Http) -> Action) -> u32 {
    CONTEXTS.with(|contexts| {
        let Ok(mut contexts) = contexts.try_borrow_mut() else {
            return Action::Pause as u32;
        };
        match contexts.http.get_mut(&id) {
            Some(http) => f(http) as u32,
            None => Action::Pause as u32,
        }
    })
}

/// Marks the module as proxy-wasm ABI 0.2.1.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_abi_version_0_2_1() {}

/// Allocates `size` bytes for the host to write a returned value into. The block has exactly
/// `size` bytes of capacity, as the getters in [`crate::abi`] take it back.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    let mut block = Vec::<MaybeUninit<u8>>::with_capacity(size);
    // SAFETY: `MaybeUninit` needs no initialization; the capacity is at least `size`.
    unsafe { block.set_len(size) };
    Box::into_raw(block.into_boxed_slice()).cast::<u8>()
}

/// A context is created: the root (`root_context_id` 0) or an HTTP stream of it.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_context_create(context_id: u32, root_context_id: u32) {
    CONTEXTS.with_borrow_mut(|c| {
        if root_context_id == 0 {
            c.roots.retain(|(id, _)| *id != context_id);
            c.roots.push((context_id, Root::default()));
        } else if let Some(http) = c
            .roots
            .iter()
            .find(|(id, _)| *id == root_context_id)
            .and_then(|(_, root)| root.create_http_context())
        {
            c.http.insert(context_id, http);
        }
    });
}

/// The VM started (nothing to do before the configuration).
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_vm_start(_context_id: u32, _vm_configuration_size: usize) -> bool {
    true
}

/// The plugin configuration is ready; `false` refuses it.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_configure(context_id: u32, _plugin_configuration_size: usize) -> bool {
    let taken = CONTEXTS.with_borrow_mut(|c| {
        let index = c.roots.iter().position(|(id, _)| *id == context_id)?;
        Some(c.roots.swap_remove(index))
    });
    let Some((id, mut root)) = taken else {
        return false;
    };
    let configured = root.on_configure();
    CONTEXTS.with_borrow_mut(|c| c.roots.push((id, root)));
    configured
}

/// Request headers.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_request_headers(id: u32, _headers: usize, end_of_stream: u32) -> u32 {
    with_http(id, |h| h.on_http_request_headers(end_of_stream != 0))
}

/// A request body chunk (`body_size`: everything buffered so far).
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_request_body(id: u32, body_size: usize, end_of_stream: u32) -> u32 {
    with_http(id, |h| {
        h.on_http_request_body(body_size, end_of_stream != 0)
    })
}

/// Request trailers: nothing to check in them.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_request_trailers(id: u32, _trailers: usize) -> u32 {
    with_http(id, |_| Action::Continue)
}

/// Response headers.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_response_headers(id: u32, _headers: usize, end_of_stream: u32) -> u32 {
    with_http(id, |h| h.on_http_response_headers(end_of_stream != 0))
}

/// A response body chunk.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_response_body(id: u32, body_size: usize, end_of_stream: u32) -> u32 {
    with_http(id, |h| {
        h.on_http_response_body(body_size, end_of_stream != 0)
    })
}

/// Response trailers: nothing to check in them.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_response_trailers(id: u32, _trailers: usize) -> u32 {
    with_http(id, |_| Action::Continue)
}

/// The stream is over (answered, reset or cut).
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_log(id: u32) {
    with_http(id, |h| {
        h.on_log();
        Action::Continue
    });
}

/// The answer to an HTTP callout (a fleet store call): routed by its token to the context
/// that asked for it (an HTTP stream, else a root context's background chain). The host sends
/// every callout from, and answers it on, the root context (`context_id`); a stream that
/// cannot be made the effective context again stays held until Envoy's own timeouts end it.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_http_call_response(
    context_id: u32,
    token: u32,
    _num_headers: usize,
    body_size: usize,
    _num_trailers: usize,
) {
    let stream = CONTEXTS.with(|c| {
        let c = c.try_borrow().ok()?;
        c.http
            .iter()
            .find(|(_, http)| http.awaits(token))
            .map(|(id, _)| *id)
    });
    if let Some(id) = stream {
        // The host delivers the answer on the root context that sent the call: the stream's
        // own context must be the one its hostcalls (body, continue, local reply) act on.
        if crate::abi::set_effective_context(id).is_err() {
            return;
        }
        with_http(id, |h| {
            h.on_http_call_response(token, body_size);
            Action::Continue
        });
        return;
    }
    let roots: Vec<u32> = CONTEXTS.with(|c| {
        c.try_borrow()
            .map(|c| c.roots.iter().map(|(id, _)| *id).collect())
            .unwrap_or_default()
    });
    let _host_named = context_id;
    for id in roots {
        with_root(id, |root| root.on_http_call_response(token, body_size));
    }
}

/// The timer of a root context.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_tick(context_id: u32) {
    with_root(context_id, Root::on_tick);
}

/// Runs `f` on root context `id` (taken out while it runs, as `proxy_on_configure` does, so a
/// callback into the guest cannot find it borrowed).
fn with_root(id: u32, f: impl FnOnce(&mut Root)) {
    let taken = CONTEXTS.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let index = c.roots.iter().position(|(root, _)| *root == id)?;
        Some(c.roots.swap_remove(index))
    });
    let Some((id, mut root)) = taken else {
        return;
    };
    f(&mut root);
    CONTEXTS.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.roots.push((id, root));
        }
    });
}

/// The host asks whether the context is done: always.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_done(_context_id: u32) -> bool {
    true
}

/// The context is gone.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_delete(context_id: u32) {
    CONTEXTS.with_borrow_mut(|c| {
        if c.http.remove(&context_id).is_none() {
            c.roots.retain(|(id, _)| *id != context_id);
        }
    });
}
