//! The bindings `wit-bindgen` generates for the `guard` world, kept apart from the code that
//! implements it.
#![allow(
    missing_docs,
    clippy::all,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
#![allow(clippy::indexing_slicing)]

wit_bindgen::generate!({
    path: "../../wit",
    world: "guard",
    pub_export_macro: true,
});
