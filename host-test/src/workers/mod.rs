//! The multi-worker replay (`toolseal replay --workers N`): N instances of the same
//! `.wasm`, each in its own wasmtime store on its own thread, as Envoy runs one plugin VM
//! per worker, over one shared data store with Envoy's compare-and-swap; a scheduler that
//! decides, at every shared-data access, which worker goes next; and invariants checked
//! after every schedule against single-worker replays of the same exchanges.
//!
//! Main design decision: the switch points are exactly the places where workers can see
//! each other: `proxy_get_shared_data`, `proxy_set_shared_data`, and the boundaries of
//! exchanges. Between two of them a worker's guest code runs alone and cannot observe
//! another worker, so exploring the orders of these points explores every interleaving
//! the plugin can tell apart. What lies outside (two streams interleaved inside one worker,
//! the start sequence racing traffic) is not explored; docs/host-test.md says so.

pub mod scenario;
pub mod schedule_run;
pub mod scheduler;
