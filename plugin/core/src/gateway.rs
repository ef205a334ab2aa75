//! The data path: what the engine does with each HTTP exchange a host adapter hands it.
//!
//! Main design decision: one [`engine::Engine`] per worker, driven by one call per host
//! callback with the host's facts (headers, body bytes, time, the store); every decision
//! about what passes, what is answered locally and what is recorded is made here, and the
//! adapter only maps the answer back to its host.

pub mod admin;
pub mod admin_views;
pub mod body;
pub mod call;
pub mod closed;
pub mod denial;
pub mod engine;
pub mod fleet;
pub mod host_admin;
pub mod known_list;
pub mod listing;
pub mod request;
pub mod resources;
pub mod response;
pub mod resume;
pub mod stream;
pub mod surface;
pub mod unread;
