//! A response body as a proxy-wasm host delivers it: one callback per chunk, with the size
//! buffered so far, and bytes that are only read when asked for.
//!
//! Main design decision: the host adapter decides nothing about a body. It reports each
//! callback (how much is buffered, whether the stream ends) and hands over the bytes when
//! asked, or the fact that it could not; [`Engine::response_body`] answers what to do with
//! them. Buffering up to `limits.max_response_bytes`, passing an oversized body on, replacing
//! a body that failed closed and dropping what follows it are decided here, so a fault of the
//! host (a chunk it could not hand over) meets the same fail-closed rule as a body that
//! cannot be parsed. So is a JSON body that goes on after its first value: it is decided
//! when the byte that follows arrives, not when a stream that may keep sending ends.

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, ResponseState, Unread};
use crate::state::audit::Outputs;
use crate::state::store::StateStore;
use crate::wire::first_value::Extent;

/// What the host does with the response bytes it holds after one body callback.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyVerdict {
    /// Keep buffering: nothing leaves yet (proxy-wasm: pause).
    Wait,
    /// Hold what is held (and what arrives meanwhile) and send this call to the fleet store;
    /// hand its reply (and those of the calls that follow) to [`Engine::fleet_reply`], then
    /// make this callback again with everything held.
    Fleet(crate::gateway::fleet_worker::FleetCall),
    /// Forward what is held, unchanged.
    Forward,
    /// Forward these bytes in place of what is held.
    Replace(Vec<u8>),
    /// Forward what is held and every later chunk without asking (the body needs no
    /// reading, or is too large to read and may pass).
    PassRest,
    /// End the stream now (proxy-wasm: close it): the body failed closed before its end and
    /// its headers have left, so no answer can follow them, and a client must not wait for
    /// the end of a body that may never come.
    Reset,
}

impl Engine {
    /// One response body callback: `size` bytes are held (all of the body so far while the
    /// host buffers), `end` says the stream ends with them, and `read(from)` hands over the
    /// held bytes from offset `from` on (`None` when the host could not). A body the engine
    /// must read whole is buffered up to `limits.max_response_bytes`; past it before the end,
    /// it is decided on what is held, before the host's own buffer limit would reset the
    /// stream and leave the client waiting. While a JSON body is held, the bytes that arrived
    /// since the last callback are read and scanned once each, so a body holding more than
    /// one value is decided as soon as it shows it.
    #[allow(clippy::too_many_arguments)]
    pub fn response_body(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        size: usize,
        end: bool,
        read: &mut dyn FnMut(usize) -> Option<Vec<u8>>,
    ) -> BodyVerdict {
        let decided = self.with_fleet(
            store,
            out,
            now_ms,
            exchange,
            |engine, store, out, exchange| {
                engine.response_body_read(store, out, now_ms, exchange, size, end, &mut *read)
            },
        );
        decided.unwrap_or_else(BodyVerdict::Fleet)
    }

    #[allow(clippy::too_many_arguments)]
    fn response_body_read(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        size: usize,
        end: bool,
        read: &mut dyn FnMut(usize) -> Option<Vec<u8>>,
    ) -> BodyVerdict {
        let whole = match exchange.response {
            ResponseState::Unknown | ResponseState::Pass => return BodyVerdict::PassRest,
            // A body that failed closed: nothing more of it reaches the client.
            ResponseState::Dropped => return BodyVerdict::Replace(Vec::new()),
            ResponseState::Json(_) | ResponseState::Message | ResponseState::Unreadable(_) => true,
            ResponseState::Sse(_) => false,
        };
        let limit = self.config.limits.max_response_bytes;
        if whole && !end && size <= limit {
            return self.held_json(store, out, now_ms, exchange, size, read);
        }
        let Some(bytes) = read(0) else {
            if self.may_pass_unread(exchange, Unread::Chunk, None) {
                return BodyVerdict::PassRest;
            }
            return BodyVerdict::Replace(self.unread_chunk(store, out, now_ms, exchange, whole));
        };
        if !whole {
            return match self.response_sse(store, out, now_ms, exchange, &bytes, end) {
                Some(replacement) => BodyVerdict::Replace(replacement),
                None => BodyVerdict::Forward,
            };
        }
        let oversized = !end;
        match self.response_json(store, out, now_ms, exchange, &bytes) {
            Some(replacement) => {
                if oversized {
                    exchange.response = ResponseState::Dropped;
                }
                BodyVerdict::Replace(replacement)
            }
            None if oversized => {
                exchange.response = ResponseState::Pass;
                BodyVerdict::PassRest
            }
            None => BodyVerdict::Forward,
        }
    }

    /// A JSON body held before its end: the bytes that arrived since the last callback are
    /// scanned, and a body that goes on after its first value is decided now, on what is held,
    /// as the parser would decide it at the end. When it may not pass, it fails closed and the
    /// stream is reset: the headers have left, and the stream may never end.
    fn held_json(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        size: usize,
        read: &mut dyn FnMut(usize) -> Option<Vec<u8>>,
    ) -> BodyVerdict {
        let known = match &exchange.response {
            // A body within its declared length ends there: it is decided then.
            ResponseState::Json(held) if held.within_declared(size) => return BodyVerdict::Wait,
            ResponseState::Json(held) if !held.looked() => self.known_list_for(exchange),
            _ => None,
        };
        let ResponseState::Json(held) = &mut exchange.response else {
            return BodyVerdict::Wait;
        };
        if !held.watching() || held.seen() >= size {
            return BodyVerdict::Wait;
        }
        let Some(arrived) = read(held.seen()) else {
            // Decided at the end, on the whole body, as without the scan.
            held.abandon();
            return BodyVerdict::Wait;
        };
        if held.feed(&arrived, known) != Extent::Trailing {
            return BodyVerdict::Wait;
        }
        let held = read(0);
        if let Some(held) = &held
            && self.may_pass_unread(exchange, Unread::SeveralValues, Some(held))
        {
            exchange.response = ResponseState::Pass;
            return BodyVerdict::PassRest;
        }
        let why = match held {
            Some(_) => Unread::SeveralValues.why(),
            None => Unread::Chunk.why(),
        };
        self.fail_closed(store, out, now_ms, exchange, why);
        exchange.response = ResponseState::Dropped;
        BodyVerdict::Reset
    }

    /// The host could not deliver what the engine decided for a response (a replacement it
    /// could not write): the stream is reset. A tool list the stream still owed was never
    /// checked, so this worker holds calls to the server until a list verifies.
    pub fn response_stopped(&mut self, exchange: &Exchange) {
        if exchange.awaits_tool_list() {
            self.hold(&exchange.server);
        }
    }

    /// The host could not hand over a chunk of a body that must be read: what it holds can
    /// never be checked, so the body fails closed (the error answers every request it was to
    /// answer) and the rest of it is dropped.
    fn unread_chunk(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &mut Exchange,
        whole: bool,
    ) -> Vec<u8> {
        let why = Unread::Chunk.why();
        let error = if whole {
            self.fail_closed_bytes(store, out, now_ms, exchange, why)
        } else {
            self.drop_stream(store, out, now_ms, exchange, why)
        };
        exchange.response = ResponseState::Dropped;
        error
    }
}
