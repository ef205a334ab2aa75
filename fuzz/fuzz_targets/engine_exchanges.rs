//! The whole engine, driven like a host through `NativeReplay`: a sequence of arbitrary
//! exchanges (format in `toolseal_fuzz::scenario`) never panics, never lets a `tools/call`
//! through to a server that is not verified, and never lets a client read an unapproved
//! tool in an answer to its `tools/list`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolseal_fuzz::scenario::run(data);
});
