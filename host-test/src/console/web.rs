//! The console's HTTP/1.1 server over `std::net`: read one request, answer it, close.
//!
//! Main design decision: the smallest server that is sound for a loopback tool. One request
//! per connection, a thread per connection with a cap on how many run at once, and bounds on
//! everything read (header size, header count, body size, time). Every answer carries the
//! security headers (strict Content-Security-Policy, no sniffing, no referrer, no caching, no
//! framing by other origins).

use super::guard::Headers;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Largest request head (request line and headers).
const MAX_HEAD_BYTES: usize = 16 << 10;
/// Largest request body (the page sends small JSON objects).
const MAX_BODY_BYTES: usize = 64 << 10;
/// Connections served at once; more are answered 503.
const MAX_CONNECTIONS: usize = 32;
/// Time allowed to read a request or write an answer.
const IO_TIMEOUT: Duration = Duration::from_secs(20);

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

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Content Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Reads one request; `Err((status, why))` for one that must be refused.
fn read_request(stream: &mut TcpStream) -> Result<Request, (u16, String)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if raw.len() > MAX_HEAD_BYTES {
            return Err((413, "request header too large".into()));
        }
        let n = stream
            .read(&mut buf)
            .map_err(|e| (400, format!("reading the request: {e}")))?;
        if n == 0 {
            return Err((400, "the connection closed mid-request".into()));
        }
        raw.extend_from_slice(buf.get(..n).unwrap_or_default());
    };
    let head = std::str::from_utf8(raw.get(..head_end).unwrap_or_default())
        .map_err(|_| (400, "the request header is not UTF-8".to_owned()))?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next())
    else {
        return Err((400, "malformed request line".into()));
    };
    if !version.starts_with("HTTP/1.") {
        return Err((400, "only HTTP/1.x is spoken here".into()));
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or((400, "malformed header line".to_owned()))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        if headers.len() > 100 {
            return Err((400, "too many headers".into()));
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut request = Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        body: Vec::new(),
    };
    if request.header("transfer-encoding").is_some() {
        return Err((400, "send a Content-Length body".into()));
    }
    let length: usize = match request.header("content-length") {
        None => 0,
        Some(n) => n
            .parse()
            .map_err(|_| (400, "malformed Content-Length".to_owned()))?,
    };
    if length > MAX_BODY_BYTES {
        return Err((413, "request body too large".into()));
    }
    let mut body = raw.get(head_end + 4..).unwrap_or_default().to_vec();
    while body.len() < length {
        let n = stream
            .read(&mut buf)
            .map_err(|e| (400, format!("reading the body: {e}")))?;
        if n == 0 {
            return Err((400, "the connection closed mid-body".into()));
        }
        body.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    body.truncate(length);
    request.body = body;
    Ok(request)
}

fn write_answer(stream: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    let framing = if answer.frameable {
        "SAMEORIGIN"
    } else {
        "DENY"
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}; charset=utf-8\r\nContent-Length: {}\r\n\
         Content-Security-Policy: {}\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: {framing}\r\n\
         Referrer-Policy: no-referrer\r\nCache-Control: no-store\r\n\
         Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Resource-Policy: same-origin\r\n\
         Connection: close\r\n\r\n",
        answer.status,
        reason(answer.status),
        answer.content_type,
        answer.body.len(),
        answer.csp,
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&answer.body)?;
    stream.flush()
}

fn serve_connection(mut stream: TcpStream, handler: &(dyn Fn(&Request) -> Answer + Sync)) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let answer = match read_request(&mut stream) {
        Ok(request) => handler(&request),
        Err((status, why)) => Answer::error(status, &why),
    };
    // The peer may have gone away; nothing else is to be done with this connection.
    let _ = write_answer(&mut stream, &answer);
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Accepts connections on `listener` forever, answering each request with `handler`.
pub fn serve(listener: &TcpListener, handler: Arc<dyn Fn(&Request) -> Answer + Send + Sync>) {
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            continue;
        };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
            let _ = write_answer(
                &mut stream,
                &Answer::error(503, "the console is busy; retry"),
            );
            continue;
        }
        let (active, handler) = (Arc::clone(&active), Arc::clone(&handler));
        let spawned = std::thread::Builder::new()
            .name("console-conn".into())
            .spawn(move || {
                serve_connection(stream, handler.as_ref());
                active.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            eprintln!("toolseal console: cannot start a connection thread");
        }
    }
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
        let handler: Arc<dyn Fn(&Request) -> Answer + Send + Sync> = Arc::new(|r: &Request| {
            Answer::json(
                200,
                &serde_json::json!({"method": r.method, "path": r.path,
                "body": String::from_utf8_lossy(&r.body), "host": r.header("host")}),
            )
        });
        std::thread::spawn(move || serve(&listener, handler));
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
}
