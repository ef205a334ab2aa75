//! The toolseal component, compiled once and instantiated per use, with typed calls.
//!
//! Main design decision: the component is embedded in the binary (built and encoded by
//! `build.rs`), so the host and the policy it runs cannot drift apart and nothing is loaded
//! from a path at run time. Every call returns wasmtime's error when the component traps; the
//! callers treat that as a refusal (fail closed), never as a pass.

use crate::bindings::Guard;
use crate::host_state::HostState;
use crate::{AdminError, MessageContext, Verdict};
use anyhow::{Context, Result};

/// wasmtime's error as anyhow's, with what was being done.
fn done<T>(result: wasmtime::Result<T>, what: &'static str) -> Result<T> {
    result.map_err(anyhow::Error::from).context(what)
}
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, Store};

/// The component as built into this binary (`toolseal_guard.wasm`).
pub static COMPONENT_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/toolseal_guard.wasm"));

/// The compiled component and a linker that provides its imports.
pub struct Runtime {
    engine: Engine,
    component: Component,
    linker: Linker<HostState>,
}

impl Runtime {
    /// Compiles the embedded component.
    pub fn new() -> Result<Self> {
        Self::from_bytes(COMPONENT_WASM)
    }

    /// Compiles a component given as bytes (another build of the same world).
    pub fn from_bytes(wasm: &[u8]) -> Result<Self> {
        let engine = done(Engine::new(&Config::new()), "creating the wasmtime engine")?;
        let cache = crate::compile_cache::cache_dir();
        let component = crate::compile_cache::load(&engine, wasm, cache.as_deref())?;
        let mut linker = Linker::new(&engine);
        done(
            Guard::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state),
            "linking the component's imports (state, audit, clock)",
        )?;
        Ok(Runtime {
            engine,
            component,
            linker,
        })
    }

    /// A fresh instance over `host`.
    pub fn instantiate(&self, host: HostState) -> Result<Policy> {
        let mut store = Store::new(&self.engine, host);
        let guard = done(
            Guard::instantiate(&mut store, &self.component, &self.linker),
            "instantiating the toolseal component",
        )?;
        Ok(Policy { store, guard })
    }
}

/// One instance of the policy and the host state it reaches.
pub struct Policy {
    store: Store<HostState>,
    guard: Guard,
}

impl Policy {
    /// The host state (store, audit sink, clock).
    pub fn host(&mut self) -> &mut HostState {
        self.store.data_mut()
    }

    /// Loads a configuration; `Ok(Err(message))` names the bad field.
    pub fn configure(&mut self, config_json: &str) -> Result<Result<(), String>> {
        done(
            self.guard.call_configure(&mut self.store, config_json),
            "calling configure",
        )
    }

    /// A client → server message.
    pub fn client_message(&mut self, ctx: &MessageContext, body: &[u8]) -> Result<Verdict> {
        done(
            self.guard.call_client_message(&mut self.store, ctx, body),
            "calling client-message",
        )
    }

    /// A server → client message.
    pub fn server_message(&mut self, ctx: &MessageContext, body: &[u8]) -> Result<Verdict> {
        done(
            self.guard.call_server_message(&mut self.store, ctx, body),
            "calling server-message",
        )
    }

    /// The admin view of every server, or of one.
    pub fn admin_status(&mut self, server: Option<&str>) -> Result<Result<String, AdminError>> {
        done(
            self.guard.call_admin_status(&mut self.store, server),
            "calling admin-status",
        )
    }

    /// Approves the reviewed fingerprint of `server`.
    pub fn approve(
        &mut self,
        server: &str,
        fingerprint: &str,
    ) -> Result<Result<String, AdminError>> {
        done(
            self.guard
                .call_approve(&mut self.store, server, fingerprint),
            "calling approve",
        )
    }

    /// Quarantines `server`.
    pub fn quarantine(&mut self, server: &str, reason: &str) -> Result<Result<String, AdminError>> {
        done(
            self.guard.call_quarantine(&mut self.store, server, reason),
            "calling quarantine",
        )
    }

    /// Releases `server`.
    pub fn release(&mut self, server: &str) -> Result<Result<String, AdminError>> {
        done(
            self.guard.call_release(&mut self.store, server),
            "calling release",
        )
    }

    /// The fleet store's background work; the milliseconds until the next tick (`None`: no
    /// fleet store, never again).
    pub fn tick(&mut self) -> Result<Option<u32>> {
        done(self.guard.call_tick(&mut self.store), "calling tick")
    }
}
