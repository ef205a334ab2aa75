//! [`Guest`] over a wasmtime `Caller`: the exported `memory` and the guest allocator
//! (`proxy_on_memory_allocate`, or `malloc` for older SDKs), looked up once per VM (as Envoy
//! does) and kept in the store data, so that a hostcall costs what it costs in Envoy, not a
//! lookup by name besides.

use crate::abi::guest::{Fail, Guest, Trap, checked_range};
use crate::abi::state::HostState;
use crate::abi::types::Status;
use wasmtime::{Caller, Extern, Memory, StoreLimits, TypedFunc};

/// The store data: the engine-independent host state plus the store's resource limits.
#[derive(Debug)]
pub struct StoreData {
    /// Everything the hostcalls read and write.
    pub host: HostState,
    /// Memory/table limits enforced by wasmtime.
    pub limits: StoreLimits,
    /// The guest's memory and allocator, once the instance exists.
    pub exports: GuestExports,
}

/// The exports hostcalls use, resolved once after instantiation.
#[derive(Default, Clone)]
pub struct GuestExports {
    /// The exported `memory`.
    pub memory: Option<Memory>,
    /// `proxy_on_memory_allocate` (or `malloc`), typed `u32 -> u32`.
    pub allocate: Option<TypedFunc<u32, u32>>,
}

impl std::fmt::Debug for GuestExports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestExports")
            .field("memory", &self.memory)
            .field("allocate", &self.allocate.is_some())
            .finish()
    }
}

/// A guest seen from inside a hostcall.
pub struct CallerGuest<'a, 'c> {
    caller: &'a mut Caller<'c, StoreData>,
}

impl<'a, 'c> CallerGuest<'a, 'c> {
    /// Wraps the caller of a hostcall.
    pub fn new(caller: &'a mut Caller<'c, StoreData>) -> Self {
        CallerGuest { caller }
    }

    fn memory(&mut self) -> Result<Memory, Fail> {
        if let Some(memory) = self.caller.data().exports.memory {
            return Ok(memory);
        }
        self.caller
            .get_export("memory")
            .and_then(Extern::into_memory)
            .ok_or(Fail::Status(Status::InvalidMemoryAccess))
    }
}

impl Guest for CallerGuest<'_, '_> {
    fn host(&mut self) -> &mut HostState {
        &mut self.caller.data_mut().host
    }

    fn read(&mut self, ptr: u32, len: u32) -> Result<Vec<u8>, Fail> {
        let memory = self.memory()?;
        let data = memory.data(&*self.caller);
        let range = checked_range(ptr, len, data.len())?;
        data.get(range)
            .map(<[u8]>::to_vec)
            .ok_or(Fail::Status(Status::InvalidMemoryAccess))
    }

    fn write(&mut self, ptr: u32, bytes: &[u8]) -> Result<(), Fail> {
        let memory = self.memory()?;
        let data = memory.data_mut(&mut *self.caller);
        let len = u32::try_from(bytes.len()).map_err(|_| Status::InvalidMemoryAccess)?;
        let range = checked_range(ptr, len, data.len())?;
        data.get_mut(range)
            .ok_or(Fail::Status(Status::InvalidMemoryAccess))?
            .copy_from_slice(bytes);
        Ok(())
    }

    fn allocate(&mut self, size: u32) -> Result<u32, Fail> {
        let typed = match self.caller.data().exports.allocate.clone() {
            Some(typed) => typed,
            None => self
                .caller
                .get_export("proxy_on_memory_allocate")
                .or_else(|| self.caller.get_export("malloc"))
                .and_then(Extern::into_func)
                .ok_or(Fail::Status(Status::InvalidMemoryAccess))?
                .typed::<u32, u32>(&*self.caller)
                .map_err(|_| Status::InvalidMemoryAccess)?,
        };
        let ptr = typed.call(&mut *self.caller, size).map_err(|e| {
            Fail::Trap(Trap(format!(
                "the guest allocator trapped while allocating {size} bytes: {e:#}"
            )))
        })?;
        if ptr == 0 && size > 0 {
            return Err(Status::InvalidMemoryAccess.into());
        }
        let memory_len = self.memory()?.data_size(&*self.caller);
        checked_range(ptr, size, memory_len)?;
        Ok(ptr)
    }
}
