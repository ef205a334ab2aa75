//! A tool list met again: known sets and remembered lists, pages of two listings at once, the
//! per-worker caches, and the surface views of one server.

#[path = "../support/mod.rs"]
mod support;

mod caches;
mod known_list;
mod known_sets;
mod pages_interleaved;
mod views;
