//! A stream held for the fleet store: the call it waits for, the body it had (Envoy hands a
//! body over only during a body callback), and how it goes on when the answer comes. Envoy
//! sends every callout from, and answers it on, the root context: the answer is routed here by
//! its token and the stream is made the effective context again before it is resumed.

use super::{Http, Mode, Shared, read_body};
use crate::abi::{self, Buffer, Map, Stream};
use crate::dispatch::Action;
use crate::host::{self, EnvoyOutputs, SharedData};
use crate::telemetry::Published;
use std::cell::RefCell;
use std::rc::Rc;
use toolseal_core::gateway::fleet::{FleetCall, FleetReply};

/// A stream held for the fleet store.
pub(super) struct Waiting {
    pub(super) token: u32,
    call: FleetCall,
    /// The body callback to make again once the chain is answered.
    again: Again,
    /// What the host held at the last body callback.
    pub(super) size: usize,
    pub(super) end: bool,
}

/// The body bytes a held stream had when its callback was last made, read in that callback:
/// Envoy hands a body buffer over only during a body callback, not while an HTTP callout
/// answers, so the callback made again reads this copy.
#[derive(Default)]
pub(super) struct HeldBody {
    pub(super) bytes: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Again {
    Request,
    Admin,
    Response,
}

impl Again {
    fn stream(self) -> Stream {
        match self {
            Again::Request | Again::Admin => Stream::Request,
            Again::Response => Stream::Response,
        }
    }
}

impl Http {
    /// Holds the stream and sends `call` to the fleet store. A call the host will not send
    /// is answered as failed at once, and the callback is made again (it then fails closed).
    pub(super) fn hold_for(
        &mut self,
        call: FleetCall,
        again: Again,
        size: usize,
        end: bool,
    ) -> Action {
        if self.held.bytes.is_none() {
            // Still inside the body callback: the only time the host hands the body over.
            let buffer = match again {
                Again::Response => Buffer::ResponseBody,
                Again::Request | Again::Admin => Buffer::RequestBody,
            };
            self.held.bytes = Some(read_body(buffer, 0, size).unwrap_or_default());
        }
        match self.send(&call) {
            Ok(token) => {
                self.waiting = Some(Waiting {
                    token,
                    call,
                    again,
                    size,
                    end,
                });
                Action::Pause
            }
            Err(why) => {
                let next = self.fleet_reply(&call, FleetReply::Failed(why), true);
                match next {
                    Some(next) => self.hold_for(next, again, size, end),
                    None => self.again(again, size, end),
                }
            }
        }
    }

    fn send(&self, call: &FleetCall) -> Result<u32, String> {
        let cluster = self
            .shared
            .borrow()
            .engine
            .fleet_settings()
            .map(|s| s.cluster.clone())
            .ok_or("no fleet store is configured")?;
        send_call(&cluster, call)
    }

    fn fleet_reply(
        &mut self,
        call: &FleetCall,
        reply: FleetReply,
        mine: bool,
    ) -> Option<FleetCall> {
        let shared = Rc::clone(&self.shared);
        let mut shared = shared.borrow_mut();
        let Shared { engine, metrics } = &mut *shared;
        let mut out = EnvoyOutputs {
            metrics,
            published: &mut self.published,
        };
        let exchange = mine.then_some(&mut self.exchange);
        engine.fleet_reply(
            &mut SharedData,
            &mut out,
            host::now_ms(),
            exchange,
            call,
            reply,
        )
    }

    /// Makes the held callback again.
    fn again(&mut self, again: Again, size: usize, end: bool) -> Action {
        match again {
            Again::Request | Again::Admin => self.request_again(again, size, end),
            Again::Response => self.response_again(size, end),
        }
    }

    /// Whether `token` is the call this stream waits for or pushes with.
    pub fn awaits(&self, token: u32) -> bool {
        self.waiting.as_ref().is_some_and(|w| w.token == token)
            || self.pushing.as_ref().is_some_and(|(t, _)| *t == token)
    }

    /// `proxy_on_http_call_response`: the answer to this stream's fleet store call.
    pub fn on_http_call_response(&mut self, token: u32, body_size: usize) {
        if let Some((pushed, call)) = self.pushing.take() {
            if pushed == token {
                let next = self.fleet_reply(&call, call_reply(body_size), false);
                if let Some(next) = next
                    && let Ok(token) = self.send(&next)
                {
                    self.pushing = Some((token, next));
                }
                return;
            }
            self.pushing = Some((pushed, call));
        }
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        if waiting.token != token {
            self.waiting = Some(waiting);
            return;
        }
        let next = self.fleet_reply(&waiting.call, call_reply(body_size), true);
        let action = match next {
            Some(next) => self.hold_for(next, waiting.again, waiting.size, waiting.end),
            None => self.again(waiting.again, waiting.size, waiting.end),
        };
        if self.waiting.is_some() {
            return;
        }
        self.held.bytes = None;
        // The callback this stream was held in has returned long ago: going on is asked of
        // the host now (a local answer or a reset was made by the callback itself).
        if action == Action::Continue
            && self.mode != Mode::Stopped
            && abi::continue_stream(waiting.again.stream()).is_err()
        {
            let _stopped = self.stop(waiting.again.stream());
        }
        self.push_closures();
    }

    /// Sends a closure this worker made to the fleet store (one at a time per stream; the
    /// worker's timer sends what a stream that ends first leaves).
    pub(super) fn push_closures(&mut self) {
        if self.pushing.is_some() {
            return;
        }
        let call = self
            .shared
            .borrow_mut()
            .engine
            .fleet_outbox(&mut SharedData);
        if let Some(call) = call
            && let Ok(token) = self.send(&call)
        {
            self.pushing = Some((token, call));
        }
    }
}

/// Sends a fleet store call to `cluster`: a JSON `POST` to etcd's JSON API.
fn send_call(cluster: &str, call: &FleetCall) -> Result<u32, String> {
    let headers = [
        (":method", "POST"),
        (":path", call.path),
        (":authority", cluster),
        ("content-type", "application/json"),
    ];
    let timeout = u32::try_from(call.timeout_ms).unwrap_or(u32::MAX);
    abi::http_call(cluster, &headers, &call.body, timeout)
        .map_err(|abi::Status(code)| format!("the host did not send the call (status {code})"))
}

/// A background call from the root context (its answer goes to [`Root::on_http_call_response`]);
/// a call the host will not send is handed back as failed, so the chain ends.
pub(super) fn send_background(
    shared: &Option<Rc<RefCell<Shared>>>,
    cluster: &str,
    call: FleetCall,
) -> Option<(u32, FleetCall)> {
    match send_call(cluster, &call) {
        Ok(token) => Some((token, call)),
        Err(why) => {
            let shared = shared.as_ref()?;
            let mut guard = shared.borrow_mut();
            let Shared { engine, metrics } = &mut *guard;
            let mut out = EnvoyOutputs {
                metrics,
                published: &mut Published::default(),
            };
            let _next = engine.fleet_reply(
                &mut SharedData,
                &mut out,
                host::now_ms(),
                None,
                &call,
                FleetReply::Failed(why),
            );
            None
        }
    }
}

/// The answer of the call whose response callback is running: its status and body, or why
/// there is none (a reset, a timeout: Envoy then hands no headers).
pub(super) fn call_reply(body_size: usize) -> FleetReply {
    let status = match abi::header(Map::HttpCallResponseHeaders, ":status") {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).parse::<u16>().ok(),
        _ => None,
    };
    let Some(status) = status else {
        return FleetReply::Failed("no answer (unreachable or timed out)".into());
    };
    match abi::get_buffer(Buffer::HttpCallResponseBody, 0, body_size) {
        Ok(body) => FleetReply::Answered {
            status,
            body: body.unwrap_or_default(),
        },
        Err(abi::Status(code)) => FleetReply::Failed(format!(
            "the answer's body could not be read (status {code})"
        )),
    }
}
