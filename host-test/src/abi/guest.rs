//! Access to the guest: its linear memory, its allocator and the host state, behind one
//! trait so that every hostcall can be exercised without a wasm engine.
//!
//! Main design decision: guest data is copied out ([`Guest::read`]) before the state is
//! touched, and host data is copied in through the guest's own allocator
//! ([`return_bytes`]). Every pointer/length pair is checked against the memory size with
//! checked arithmetic; a bad one yields [`Status::InvalidMemoryAccess`], never a panic.
//! Only a trap inside the guest (its allocator failing hard, `proc_exit`) becomes a
//! [`Trap`] that unwinds the call.

use super::state::HostState;
use super::types::Status;

/// A reason to abort the current guest call (a wasm trap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap(pub String);

impl std::fmt::Display for Trap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Trap {}

/// Why a hostcall stopped early: a status for the guest, or a trap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// Return this status to the guest.
    Status(Status),
    /// Abort the guest call.
    Trap(Trap),
}

impl From<Status> for Fail {
    fn from(status: Status) -> Self {
        Fail::Status(status)
    }
}

/// What a hostcall hands back to the engine: a status code, or a trap.
pub type HostcallResult = Result<u32, Trap>;

/// Turns the internal result of a hostcall into its ABI return value.
pub fn finish(result: Result<(), Fail>) -> HostcallResult {
    match result {
        Ok(()) => Ok(Status::Ok.code()),
        Err(Fail::Status(status)) => Ok(status.code()),
        Err(Fail::Trap(trap)) => Err(trap),
    }
}

/// The guest as hostcalls see it.
pub trait Guest {
    /// The host state.
    fn host(&mut self) -> &mut HostState;
    /// Copies `len` bytes at `ptr` out of guest memory.
    fn read(&mut self, ptr: u32, len: u32) -> Result<Vec<u8>, Fail>;
    /// Copies `bytes` into guest memory at `ptr`.
    fn write(&mut self, ptr: u32, bytes: &[u8]) -> Result<(), Fail>;
    /// Asks the guest allocator for `size` bytes; the result is checked to lie in memory.
    fn allocate(&mut self, size: u32) -> Result<u32, Fail>;
}

/// Checks that `[ptr, ptr + len)` lies within a memory of `memory_len` bytes and returns it
/// as a `usize` range.
pub fn checked_range(
    ptr: u32,
    len: u32,
    memory_len: usize,
) -> Result<std::ops::Range<usize>, Fail> {
    let start = usize::try_from(ptr).map_err(|_| Status::InvalidMemoryAccess)?;
    let len = usize::try_from(len).map_err(|_| Status::InvalidMemoryAccess)?;
    let end = start.checked_add(len).ok_or(Status::InvalidMemoryAccess)?;
    if end > memory_len {
        return Err(Status::InvalidMemoryAccess.into());
    }
    Ok(start..end)
}

/// Writes a little-endian `u32` at `ptr`.
pub fn write_u32(guest: &mut impl Guest, ptr: u32, value: u32) -> Result<(), Fail> {
    guest.write(ptr, &value.to_le_bytes())
}

/// Writes a little-endian `u64` at `ptr`.
pub fn write_u64(guest: &mut impl Guest, ptr: u32, value: u64) -> Result<(), Fail> {
    guest.write(ptr, &value.to_le_bytes())
}

/// Reads a little-endian `u32` at `ptr`.
pub fn read_u32(guest: &mut impl Guest, ptr: u32) -> Result<u32, Fail> {
    let bytes = guest.read(ptr, 4)?;
    let raw = <[u8; 4]>::try_from(bytes.as_slice()).map_err(|_| Status::InvalidMemoryAccess)?;
    Ok(u32::from_le_bytes(raw))
}

/// Hands `data` to the guest: allocates a copy with the guest allocator and stores its
/// address at `ptr_ptr` and its length at `size_ptr` (the guest owns the copy afterwards).
/// Both out-pointers are checked before allocating, so a bad one leaks nothing.
pub fn return_bytes(
    guest: &mut impl Guest,
    data: &[u8],
    ptr_ptr: u32,
    size_ptr: u32,
) -> Result<(), Fail> {
    write_u32(guest, ptr_ptr, 0)?;
    write_u32(guest, size_ptr, 0)?;
    let size = u32::try_from(data.len()).map_err(|_| Status::InvalidMemoryAccess)?;
    let at = guest.allocate(size)?;
    guest.write(at, data)?;
    write_u32(guest, ptr_ptr, at)?;
    write_u32(guest, size_ptr, size)
}

/// Reads guest bytes as a string, replacing invalid UTF-8 (for names and log text).
pub fn read_lossy(guest: &mut impl Guest, ptr: u32, len: u32) -> Result<String, Fail> {
    let bytes = guest.read(ptr, len)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
