//! What may reach the client without being read: the one place that decides.
//!
//! Main design decision: every path that meets bytes it cannot check (the host could not hand
//! over the headers or a chunk, a compressed or foreign body, a body too large, JSON the
//! strict parser refuses) states the fact as an [`Unread`] and asks
//! [`Engine::may_pass_unread`]; no caller decides on its own. The answer is `false` whenever
//! the bytes may hold a tool list or a result whose contract is enforced, or answer a request
//! whose client would otherwise read them unchecked; the caller then replaces them with a
//! JSON-RPC error for every request they were to answer (fail closed).

use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, ResponseState, Unread};

impl Engine {
    /// Whether `what` may reach the client as it is. `bytes`: what it holds, when the gateway
    /// has them (unknown bytes may hold anything).
    ///
    /// - What the host did not hand over, and compressed JSON or event streams, never pass:
    ///   their bytes cannot be looked at.
    /// - A body found unreadable at its headers passes only empty, with no tool list awaited
    ///   (an HTTP 202 hides nothing; a list request still gets an error, not a wait).
    /// - Nothing passes unread while the exchange awaits a tool list or a result whose
    ///   contract is enforced.
    /// - A foreign body passes when it answers no request (MCP answers with JSON or SSE only).
    /// - A JSON body the parser refused does not pass when it answers a request of an HTTP
    ///   exchange (a lenient client would read it); over the size limit it may (a large tool
    ///   result is legitimate); neither passes when it may hold a tool list (the word
    ///   `tools`, or a `\u` escape that can spell it). A JSON body found to hold more than one
    ///   value before it ends is such a refused body, decided early.
    pub fn may_pass_unread(&self, exchange: &Exchange, what: Unread, bytes: Option<&[u8]>) -> bool {
        let may_hold_tools = bytes.is_none_or(may_hold_tools);
        match what {
            Unread::Headers | Unread::Chunk | Unread::Compressed => false,
            Unread::Withheld => bytes.is_some_and(<[u8]>::is_empty) && !exchange.awaits_tool_list(),
            _ if self.must_read(exchange) => false,
            Unread::Foreign => !exchange.awaits_answer(),
            Unread::Oversized | Unread::MalformedEvent => !may_hold_tools,
            Unread::MalformedBody | Unread::SeveralValues => {
                let http_answer =
                    matches!(exchange.response, ResponseState::Json(_)) && exchange.awaits_answer();
                !http_answer && !may_hold_tools
            }
        }
    }

    /// Whether the exchange awaits an answer that must be checked: a tool list, or a result
    /// whose contract is enforced.
    pub(crate) fn must_read(&self, exchange: &Exchange) -> bool {
        exchange.awaits_list()
            || (self.config.server(&exchange.server).results == crate::config::ResultsMode::Enforce
                && exchange.calls().any(|c| c.check_result))
    }
}

/// Whether bytes the gateway could not read might hold a tool list (or `list_changed`) that a
/// lenient client would read: the word `tools`, or a `\u` escape that can spell it.
pub(crate) fn may_hold_tools(bytes: &[u8]) -> bool {
    let tools = crate::policy::section::Section::Tools
        .items_member()
        .as_bytes();
    bytes.windows(tools.len()).any(|w| w == tools) || bytes.windows(2).any(|w| w == b"\\u")
}
