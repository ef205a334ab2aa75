//! The console's HTTP/1.1 server: hyper's HTTP/1 connection handling on a one-thread tokio
//! runtime, the console's handler on blocking threads.
//!
//! Main design decision: the library speaks HTTP, the console bounds it. One request per
//! connection (no keep-alive), at most [`MAX_CONNECTIONS`] connections served at once (more
//! are answered 503), and bounds on everything read: the request head (hyper's read buffer,
//! [`MAX_HEAD_BYTES`], and at most 100 headers), the body ([`MAX_BODY_BYTES`], a
//! `Content-Length` body only), the time to read the head, to read the body, and to write the
//! answer ([`IO_TIMEOUT`] each). Every answer carries the security headers (strict
//! Content-Security-Policy, no sniffing, no referrer, no caching, no framing by other
//! origins).

use super::guard::Headers;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, HeaderValue, TRANSFER_ENCODING};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// Largest request head (request line and headers): hyper's read buffer.
const MAX_HEAD_BYTES: usize = 16 << 10;
/// Largest request body (the page sends small JSON objects).
const MAX_BODY_BYTES: usize = 64 << 10;
/// Connections served at once; more are answered 503.
const MAX_CONNECTIONS: usize = 32;
/// Time allowed to read a request's head, to read its body, and to write an answer.
const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// How the console answers one request (called on a blocking thread).
pub type Handler = Arc<dyn Fn(&Request) -> Answer + Send + Sync>;

/// The Content-Security-Policy of the console's own page: its script and style only, no
/// inline code, no other origin, frames only from itself.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string (after `?`), undecoded.
    pub query: String,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Headers for Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Request {
    /// The percent-decoded value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<String> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| percent_decode(&v.replace('+', " ")))
    }
}

/// Decodes `%XX` escapes; `None` when malformed or not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Content-Type.
    pub content_type: &'static str,
    /// Content-Security-Policy.
    pub csp: String,
    /// Whether a page of the console's own origin may frame it.
    pub frameable: bool,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// A JSON answer.
    pub fn json(status: u16, body: &serde_json::Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            csp: "default-src 'none'; frame-ancestors 'none'".into(),
            frameable: false,
            body: body.to_string().into_bytes(),
        }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Answer {
        Answer::json(status, &serde_json::json!({"error": message}))
    }

    /// A static asset or the page.
    pub fn content(content_type: &'static str, body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status: 200,
            content_type,
            csp: PAGE_CSP.into(),
            frameable: false,
            body: body.into(),
        }
    }
}

/// The request as the handler sees it, read within the bounds; `Err(answer)` for one that
/// must be refused.
async fn read_request(request: hyper::Request<Incoming>) -> Result<Request, Answer> {
    let (parts, body) = request.into_parts();
    // Origin-form targets only: an absolute URL would name another authority than `Host`.
    if parts.uri.authority().is_some() {
        return Err(Answer::error(400, "send the request target as a path"));
    }
    let mut headers = Vec::with_capacity(parts.headers.len());
    for (name, value) in &parts.headers {
        let value = value
            .to_str()
            .map_err(|_| Answer::error(400, "a request header is not text"))?;
        headers.push((name.as_str().to_owned(), value.trim().to_owned()));
    }
    if parts.headers.contains_key(TRANSFER_ENCODING) {
        return Err(Answer::error(400, "send a Content-Length body"));
    }
    let length: usize = match parts.headers.get(CONTENT_LENGTH).map(HeaderValue::to_str) {
        None => 0,
        Some(Ok(n)) => n
            .parse()
            .map_err(|_| Answer::error(400, "malformed Content-Length"))?,
        Some(Err(_)) => return Err(Answer::error(400, "malformed Content-Length")),
    };
    if length > MAX_BODY_BYTES {
        return Err(Answer::error(413, "request body too large"));
    }
    let collected = tokio::time::timeout(IO_TIMEOUT, Limited::new(body, MAX_BODY_BYTES).collect())
        .await
        .map_err(|_| Answer::error(408, "the request body took too long"))?
        .map_err(|e| Answer::error(400, &format!("reading the body: {e}")))?;
    Ok(Request {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or_default().to_owned(),
        headers,
        body: collected.to_bytes().to_vec(),
    })
}

/// The answer as hyper sends it, with the security headers.
fn to_response(answer: Answer) -> hyper::Response<Full<Bytes>> {
    let framing = if answer.frameable {
        "SAMEORIGIN"
    } else {
        "DENY"
    };
    let content_type = format!("{}; charset=utf-8", answer.content_type);
    let built = hyper::Response::builder()
        .status(answer.status)
        .header("Content-Type", content_type)
        .header("Content-Security-Policy", answer.csp)
        .header("X-Content-Type-Options", "nosniff")
        .header("X-Frame-Options", framing)
        .header("Referrer-Policy", "no-referrer")
        .header("Cache-Control", "no-store")
        .header("Cross-Origin-Opener-Policy", "same-origin")
        .header("Cross-Origin-Resource-Policy", "same-origin")
        .header("Connection", "close")
        .body(Full::new(Bytes::from(answer.body)));
    built.unwrap_or_else(|_| {
        let mut fallback = hyper::Response::new(Full::new(Bytes::from_static(b"")));
        *fallback.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        fallback
    })
}

/// Reads one request, has `handler` answer it on a blocking thread (its calls to the admin
/// APIs block), and signals `answered` so the connection's write deadline starts.
async fn respond(
    request: hyper::Request<Incoming>,
    handler: Option<Handler>,
    answered: Arc<Notify>,
) -> hyper::Response<Full<Bytes>> {
    let answer = match (handler, read_request(request).await) {
        (None, _) => Answer::error(503, "the console is busy; retry"),
        (Some(_), Err(refused)) => refused,
        (Some(handler), Ok(request)) => tokio::task::spawn_blocking(move || handler(&request))
            .await
            .unwrap_or_else(|_| Answer::error(500, "the console failed to answer; retry")),
    };
    answered.notify_one();
    to_response(answer)
}

/// Serves one connection: one request, every bound in the module docs. `handler` is `None`
/// when the console is busy (the request is answered 503).
async fn serve_connection(stream: tokio::net::TcpStream, handler: Option<Handler>) {
    let answered = Arc::new(Notify::new());
    let signal = Arc::clone(&answered);
    let service = service_fn(move |request| {
        let (handler, answered) = (handler.clone(), Arc::clone(&signal));
        async move { Ok::<_, Infallible>(respond(request, handler, answered).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(IO_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(false);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    // The handler takes what it takes (its own calls are bounded); writing the answer does not.
    let write_deadline = async {
        answered.notified().await;
        tokio::time::sleep(IO_TIMEOUT).await;
    };
    tokio::select! {
        // The peer may have gone away or broken the protocol: nothing else is to be done.
        _ = connection => {}
        () = write_deadline => {}
    }
}

async fn accept_loop(listener: TcpListener, handler: Handler) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // console goes on serving.
                eprintln!("toolseal console: accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = Arc::clone(&slots).try_acquire_owned().ok();
        let handler = slot.as_ref().map(|_| Arc::clone(&handler));
        tokio::spawn(async move {
            serve_connection(stream, handler).await;
            drop(slot);
        });
    }
}

/// Serves `listener` until the process ends, answering each request with `handler`; an
/// error only when the server cannot start.
pub fn serve(listener: TcpListener, handler: Handler) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(MAX_CONNECTIONS)
        .thread_name("console-conn")
        .build()?;
    runtime.block_on(accept_loop(listener, handler))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_decoded() {
        let request = Request {
            method: "GET".into(),
            path: "/report".into(),
            query: "server=httproute%2Fns%2Fa&candidate=sha256%3Aab&empty=&x=a+b".into(),
            headers: vec![],
            body: vec![],
        };
        assert_eq!(request.param("server").unwrap(), "httproute/ns/a");
        assert_eq!(request.param("candidate").unwrap(), "sha256:ab");
        assert_eq!(request.param("empty").unwrap(), "");
        assert_eq!(request.param("x").unwrap(), "a b");
        assert_eq!(request.param("missing"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    #[test]
    fn a_request_is_read_and_answered_over_a_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let handler: Handler = Arc::new(|r: &Request| {
            Answer::json(
                200,
                &serde_json::json!({"method": r.method, "path": r.path,
                "body": String::from_utf8_lossy(&r.body), "host": r.header("host")}),
            )
        });
        std::thread::spawn(move || serve(listener, handler));
        let url =
            super::super::http_client::HttpUrl::parse(&format!("http://{address}/api/x")).unwrap();
        let response = super::super::http_client::request(
            &url,
            "POST",
            "/api/x?y=1",
            &[("Content-Type", "application/json")],
            b"{\"a\":1}",
            IO_TIMEOUT,
        )
        .unwrap();
        assert_eq!(response.status, 200);
        let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"method": "POST", "path": "/api/x", "body": "{\"a\":1}", "host": address.to_string()})
        );
        assert_eq!(response.header("x-frame-options"), Some("DENY"));
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        let too_big = vec![b'x'; MAX_BODY_BYTES + 1];
        let refused =
            super::super::http_client::request(&url, "POST", "/", &[], &too_big, IO_TIMEOUT);
        // The server answers 413 before reading the body (the client may see a reset instead).
        if let Ok(r) = refused {
            assert_eq!(r.status, 413);
        }
    }

    /// Sends `raw` bytes to a server on `address` and reads the answer's status line.
    fn raw_status(address: std::net::SocketAddr, raw: &[u8]) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        // The server may answer and close before it has read everything.
        let _ = stream.write_all(raw);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        String::from_utf8_lossy(&answer)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn what_the_console_does_not_read_is_refused_before_its_handler_runs() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let handler: Handler = Arc::new(|_: &Request| Answer::json(200, &serde_json::json!({})));
        std::thread::spawn(move || serve(listener, handler));
        let ok = raw_status(address, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(ok, "HTTP/1.1 200 OK");
        let chunked = raw_status(
            address,
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        );
        assert_eq!(chunked, "HTTP/1.1 400 Bad Request");
        let absolute = raw_status(
            address,
            b"GET http://evil.example/ HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert_eq!(absolute, "HTTP/1.1 400 Bad Request");
        let mut huge = b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 1));
        huge.extend_from_slice(b"\r\n\r\n");
        assert_eq!(
            raw_status(address, &huge),
            "HTTP/1.1 431 Request Header Fields Too Large"
        );
        let too_long = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY_BYTES + 1
        );
        assert_eq!(
            raw_status(address, too_long.as_bytes()),
            "HTTP/1.1 413 Payload Too Large"
        );
    }
}
