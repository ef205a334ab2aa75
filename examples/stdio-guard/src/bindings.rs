//! The bindings wasmtime generates for the `guard` world (`wit/toolseal.wit`), kept apart
//! from the code that uses them.
#![allow(missing_docs, clippy::all)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "guard",
});
