//! The data path: what the engine does with each HTTP exchange a host adapter hands it.
//!
//! Main design decision: one [`engine::Engine`] per worker, driven by one call per host
//! callback with the host's facts (headers, body bytes, time, the store); every decision
//! about what passes, what is answered locally and what is recorded is made here, and the
//! adapter only maps the answer back to its host.
//!
//! Dependencies run one way. [`exchange`] holds the types every part and every adapter share
//! (a request's facts, the verdicts, the exchange and its pending requests); the state the
//! engine keeps between exchanges has modules of its own ([`known_list`], `live`,
//! `view_memo`, `fleet_worker`, [`held_json`]); [`engine`] holds the `Engine` and uses only
//! those; each part of the data path (the stream callbacks, requests, calls, listing,
//! responses and bodies, the fleet store) adds the engine's methods for its concern and is
//! used by no part the engine depends on.
//!
//! Sections are rows of one table ([`crate::policy::section`]), and the data path reads
//! them from it: the methods it compares a request with, the member a list's items are in.
//! Every request whose answer shows a section (a `tools/list`, a `prompts/list` of a server
//! that seals prompts, a handshake for its instructions) is one kind of pending request,
//! [`exchange::PendingList`], remembered, resumed and failed closed alike; only the decision
//! on its answer goes by section: a tool list to [`listing`] (its views of tools, the lists
//! it remembers, the tools policy hides), any other section to [`sealed`].

pub mod admin;
pub mod admin_views;
pub mod body;
pub mod call;
pub mod closed;
pub mod denial;
pub mod engine;
pub mod exchange;
pub mod fleet;
pub(crate) mod fleet_worker;
pub mod held_json;
pub mod host_admin;
pub mod known_list;
pub mod listing;
pub(crate) mod live;
pub mod request;
pub mod resources;
pub mod response;
pub mod resume;
pub mod sealed;
pub(crate) mod sealed_memo;
pub mod stream;
pub mod surface;
pub mod unread;
pub(crate) mod verified_again;
pub(crate) mod view_memo;
