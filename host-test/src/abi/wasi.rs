//! The WASI preview1 functions a `wasm32-wasip1` proxy-wasm module imports, stubbed the
//! way a proxy host does: no environment, no arguments, no files; stdout and stderr are
//! captured (a Rust panic message arrives on stderr); randomness and clocks come from the
//! runner so replays are reproducible; `proc_exit` traps.

use super::guest::{Fail, Guest, Trap, read_u32, write_u32, write_u64};

/// WASI errno: success.
pub const ERRNO_SUCCESS: u32 = 0;
/// WASI errno: bad file descriptor.
pub const ERRNO_BADF: u32 = 8;
/// WASI errno: bad address.
pub const ERRNO_FAULT: u32 = 21;
/// WASI errno: invalid argument.
pub const ERRNO_INVAL: u32 = 28;
/// WASI errno: function not supported.
pub const ERRNO_NOSYS: u32 = 52;

/// Largest `iovs_len` accepted by `fd_write` (more is refused, not looped over).
const MAX_IOVECS: u32 = 1024;

/// Maps a hostcall failure to an errno; traps pass through.
fn errno(result: Result<(), Fail>) -> Result<u32, Trap> {
    match result {
        Ok(()) => Ok(ERRNO_SUCCESS),
        Err(Fail::Status(_)) => Ok(ERRNO_FAULT),
        Err(Fail::Trap(trap)) => Err(trap),
    }
}

/// `environ_sizes_get` / `args_sizes_get`: zero entries, zero bytes.
pub fn sizes_get_empty(g: &mut impl Guest, count_ptr: u32, size_ptr: u32) -> Result<u32, Trap> {
    errno(write_u32(g, count_ptr, 0).and_then(|()| write_u32(g, size_ptr, 0)))
}

/// `environ_get` / `args_get`: nothing to write.
pub fn get_empty(_g: &mut impl Guest, _list_ptr: u32, _buf_ptr: u32) -> Result<u32, Trap> {
    Ok(ERRNO_SUCCESS)
}

/// `fd_write(fd, iovs, iovs_len, *nwritten)`: fd 1 and 2 are captured, others refused.
pub fn fd_write(
    g: &mut impl Guest,
    fd: u32,
    iovs_ptr: u32,
    iovs_len: u32,
    nwritten_ptr: u32,
) -> Result<u32, Trap> {
    if fd != 1 && fd != 2 {
        return Ok(ERRNO_BADF);
    }
    if iovs_len > MAX_IOVECS {
        return Ok(ERRNO_INVAL);
    }
    let gathered = (|| {
        let mut bytes = Vec::new();
        for i in 0..iovs_len {
            let entry = iovs_ptr
                .checked_add(i * 8)
                .ok_or(Fail::Status(super::types::Status::InvalidMemoryAccess))?;
            let ptr = read_u32(g, entry)?;
            let len = read_u32(g, entry.wrapping_add(4))?;
            bytes.extend(g.read(ptr, len)?);
        }
        Ok(bytes)
    })();
    let bytes = match gathered {
        Ok(bytes) => bytes,
        Err(fail) => return errno(Err(fail)),
    };
    let count = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let vm = &mut g.host().vm;
    if fd == 1 {
        vm.stdout.extend(bytes)
    } else {
        vm.stderr.extend(bytes)
    }
    errno(write_u32(g, nwritten_ptr, count))
}

/// `proc_exit(code)`: the guest asked to stop; that ends the VM.
pub fn proc_exit(_g: &mut impl Guest, code: u32) -> Result<(), Trap> {
    Err(Trap(format!("the plugin called WASI proc_exit({code})")))
}

/// `random_get(buf, len)`: deterministic bytes, written a page at a time so that a huge
/// `len` costs no host memory before the range check fails.
pub fn random_get(g: &mut impl Guest, buf_ptr: u32, len: u32) -> Result<u32, Trap> {
    const PAGE: u32 = 4096;
    let mut done = 0u32;
    while done < len {
        let n = (len - done).min(PAGE);
        let mut bytes = vec![0; n as usize];
        g.host().vm.fill_random(&mut bytes);
        let Some(at) = buf_ptr.checked_add(done) else {
            return Ok(ERRNO_FAULT);
        };
        if let Err(fail) = g.write(at, &bytes) {
            return errno(Err(fail));
        }
        done += n;
    }
    Ok(ERRNO_SUCCESS)
}

/// `clock_time_get(clock_id, precision, *time)`: every clock reads the runner's clock.
pub fn clock_time_get(
    g: &mut impl Guest,
    clock_id: u32,
    _precision: u64,
    time_ptr: u32,
) -> Result<u32, Trap> {
    if clock_id > 3 {
        return Ok(ERRNO_INVAL);
    }
    let now = g.host().vm.now_ns;
    errno(write_u64(g, time_ptr, now))
}

/// `fd_close`, `fd_seek`, `fd_fdstat_get`, `fd_prestat_get`, ...: no files here.
pub fn no_files() -> Result<u32, Trap> {
    Ok(ERRNO_BADF)
}

/// `sched_yield`: nothing to yield to.
pub fn sched_yield() -> Result<u32, Trap> {
    Ok(ERRNO_SUCCESS)
}

/// Any other WASI function.
pub fn not_supported() -> Result<u32, Trap> {
    Ok(ERRNO_NOSYS)
}
