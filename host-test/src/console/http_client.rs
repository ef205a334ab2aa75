//! A small HTTP/1.1 client over `std::net` for the console's calls: each Envoy's admin API
//! and each server's MCP endpoint.
//!
//! Main design decision: one request per connection (`Connection: close`), bounded in time
//! (connect, read and write timeouts) and in size (a response over [`MAX_RESPONSE_BYTES`] is
//! an error, not a truncation). Plain `http://` only: admin listeners are reached on loopback
//! (or through a tunnel), and what the console lists from a server is verified against the
//! fingerprint the Envoys report, so a tampered listing is refused, not trusted.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Largest response read (a tools/list of a big server, the admin view with its diff).
pub const MAX_RESPONSE_BYTES: usize = 32 << 20;

/// An `http://host[:port]/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// Port (80 when the URL has none).
    pub port: u16,
    /// Path, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// Parses an absolute `http://` URL without credentials, query or fragment.
    pub fn parse(text: &str) -> Result<HttpUrl, String> {
        let rest = text
            .strip_prefix("http://")
            .ok_or_else(|| format!("{text:?}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(format!("{text:?}: credentials in the URL are not accepted"));
        }
        if path.contains(['?', '#']) || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{text:?}: the path must have no query, fragment or spaces"
            ));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{text:?}: unclosed `[` in the host"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("{text:?}: missing or malformed host"));
        }
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{text:?}: malformed port"))?,
        };
        Ok(HttpUrl {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// `host:port` as sent in `Host` (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Whether the host is a loopback address (`localhost`, 127.0.0.0/8, `::1`).
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL, for messages and the page (it holds no credentials).
    pub fn display(&self) -> String {
        format!("http://{}{}", self.authority(), self.path)
    }
}

/// A response: status, headers (names lowercased), body (chunked encoding undone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request to `url`'s host with the request target `target` (`Host` is the URL's
/// authority unless `headers` names one) and waits for the whole response (at most `timeout` for each of connect, each read and each write).
pub fn request(
    url: &HttpUrl,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<Response, String> {
    let where_ = || format!("{method} {}{target}", url.authority());
    let address = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("{}: cannot resolve the host: {e}", where_()))?
        .next()
        .ok_or_else(|| format!("{}: the host has no address", where_()))?;
    let mut stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|e| format!("{}: cannot connect: {e}", where_()))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("{}: {e}", where_()))?;
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {}\r\n", url.authority()));
    }
    for (name, value) in headers {
        if value.contains(['\r', '\n']) {
            return Err(format!("{}: header {name} holds a line break", where_()));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("{}: cannot send the request: {e}", where_()))?;
    let mut raw = Vec::new();
    stream
        .take(MAX_RESPONSE_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("{}: reading the response: {e}", where_()))?;
    if raw.len() > MAX_RESPONSE_BYTES {
        return Err(format!(
            "{}: the response is over {MAX_RESPONSE_BYTES} bytes",
            where_()
        ));
    }
    parse_response(&raw).map_err(|e| format!("{}: {e}", where_()))
}

/// Parses a complete HTTP/1.1 response read until the connection closed.
pub fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the response has no complete header")?;
    let head = std::str::from_utf8(raw.get(..split).unwrap_or_default())
        .map_err(|_| "the response header is not UTF-8")?;
    let rest = raw.get(split + 4..).unwrap_or_default();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|s| s.get(2..5))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("malformed status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length.parse().map_err(|_| "malformed Content-Length")?;
        rest.get(..length)
            .ok_or("the connection closed before the whole body arrived")?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { body, ..response })
}

/// Undoes chunked transfer encoding; a body cut before its last chunk is an error.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("the chunked body was cut short")?;
        let size_text = std::str::from_utf8(rest.get(..line_end).unwrap_or_default())
            .map_err(|_| "malformed chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "malformed chunk size")?;
        let start = line_end + 2;
        if size == 0 {
            return Ok(body);
        }
        let end = start.checked_add(size).ok_or("malformed chunk size")?;
        let chunk = rest
            .get(start..end)
            .ok_or("the chunked body was cut short")?;
        body.extend_from_slice(chunk);
        rest = rest
            .get(end + 2..)
            .ok_or("the chunked body was cut short")?;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_host_port_and_path() {
        let url = HttpUrl::parse("http://127.0.0.1:9902/toolseal/").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.path.as_str()),
            ("127.0.0.1", 9902, "/toolseal/")
        );
        assert!(url.is_loopback());
        let v6 = HttpUrl::parse("http://[::1]:80").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.path.as_str(), v6.authority()),
            ("::1", "/", "[::1]:80".into())
        );
        assert!(v6.is_loopback());
        assert!(
            HttpUrl::parse("http://localhost/mcp")
                .unwrap()
                .is_loopback()
        );
        assert!(
            !HttpUrl::parse("http://envoy-0.internal:9902/")
                .unwrap()
                .is_loopback()
        );
        for bad in [
            "https://127.0.0.1/",
            "http://:80/",
            "http://a:0/",
            "http://a:x/",
            "http://a/p?q=1",
            "http://u:p@a/",
            "http://[::1/",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn responses_are_read_with_length_chunked_or_until_close() {
        let plain =
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\nhi").unwrap();
        assert_eq!(
            (plain.status, plain.body.as_slice(), plain.header("x-a")),
            (200, &b"hi"[..], Some("b"))
        );
        let chunked = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap();
        assert_eq!(chunked.body, b"abcde");
        let close = parse_response(b"HTTP/1.0 404 Not Found\r\n\r\nnope").unwrap();
        assert_eq!((close.status, close.body.as_slice()), (404, &b"nope"[..]));
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
                .is_err()
        );
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab").is_err());
        assert!(parse_response(b"garbage").is_err());
    }
}
