//! The console's HTTP client, for its calls to each Envoy's admin API and each server's MCP
//! endpoint: `ureq`, plain HTTP/1.1.
//!
//! Main design decision: one request per connection, as before the library (no pooled
//! connection outlives a call), bounded in time (connect, each read and each write) and in
//! size (a response over [`MAX_RESPONSE_BYTES`] is an error, not a truncation). Nothing is
//! done behind the console's back: no proxy from the environment (a bearer token goes only to
//! the admin URL the fleet file names), no redirect followed, no compression. Plain `http://`
//! only: admin listeners are reached on loopback (or through a tunnel), and what the console
//! lists from a server is verified against the fingerprint the Envoys report, so a tampered
//! listing is refused, not trusted.

use std::net::IpAddr;
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

/// A response: status, headers (names lowercased), body (transfer encoding undone).
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

/// The client for one call: every limit above, nothing from the environment.
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .max_idle_connections(0)
        .timeout_connect(Some(timeout))
        .timeout_per_read(Some(timeout))
        .timeout_per_write(Some(timeout))
        .user_agent(concat!("toolseal-console/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// What went wrong, in the console's words (the page and the audit log show it).
fn explain(error: ureq::Error) -> String {
    use std::io::ErrorKind;
    match error {
        ureq::Error::HostNotFound => "cannot resolve the host".into(),
        ureq::Error::ConnectionFailed => "cannot connect".into(),
        ureq::Error::Io(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::AddrNotAvailable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::HostUnreachable
            ) =>
        {
            format!("cannot connect: {e}")
        }
        ureq::Error::Timeout(what) => format!("timed out ({what})"),
        ureq::Error::BodyExceedsLimit(_) => {
            format!("the response is over {MAX_RESPONSE_BYTES} bytes")
        }
        other => other.to_string(),
    }
}

/// Sends one request to `url`'s host with the request target `target` (`Host` is the URL's
/// authority unless `headers` names one) and waits for the whole response (at most `timeout`
/// for each of connect, each read and each write).
pub fn request(
    url: &HttpUrl,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<Response, String> {
    let where_ = || format!("{method} {}{target}", url.authority());
    if !target.starts_with('/') {
        return Err(format!(
            "{}: the request target must start with /",
            where_()
        ));
    }
    let mut builder = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://{}{target}", url.authority()));
    for (name, value) in headers {
        if value.contains(['\r', '\n']) {
            return Err(format!("{}: header {name} holds a line break", where_()));
        }
        builder = builder.header(*name, *value);
    }
    let agent = agent(timeout);
    let sent = if body.is_empty() {
        builder.body(()).map(|request| agent.run(request))
    } else {
        builder.body(body).map(|request| agent.run(request))
    };
    let mut response = sent
        .map_err(|e| format!("{}: {e}", where_()))?
        .map_err(|e| format!("{}: {}", where_(), explain(e)))?;
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES as u64)
        .read_to_vec()
        .map_err(|e| format!("{}: reading the response: {}", where_(), explain(e)))?;
    Ok(Response {
        status,
        headers,
        body,
    })
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

    /// A server on loopback that answers every connection with `answer`, `count` times.
    fn answering(answer: &'static [u8], count: usize) -> HttpUrl {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = HttpUrl::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(count) {
                let mut stream = stream.unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = stream.write_all(answer);
            }
        });
        url
    }

    #[test]
    fn responses_are_read_whole_and_redirects_are_not_followed() {
        let timeout = Duration::from_secs(10);
        let chunked = answering(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            1,
        );
        let response = request(&chunked, "GET", "/", &[], b"", timeout).unwrap();
        assert_eq!(
            (
                response.status,
                response.body.as_slice(),
                response.header("x-a")
            ),
            (200, &b"abcde"[..], Some("b"))
        );
        // A redirect is an answer, not an instruction: the token never follows it elsewhere.
        let moved = answering(
            b"HTTP/1.1 302 Found\r\nLocation: http://198.51.100.7/steal\r\nContent-Length: 0\r\n\r\n",
            1,
        );
        let response = request(
            &moved,
            "GET",
            "/",
            &[("Authorization", "Bearer t")],
            b"",
            timeout,
        )
        .unwrap();
        assert_eq!(response.status, 302);
        let cut = answering(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", 1);
        assert!(request(&cut, "GET", "/", &[], b"", timeout).is_err());
        let nobody = HttpUrl::parse("http://127.0.0.1:9/").unwrap();
        let refused = request(&nobody, "GET", "/", &[], b"", timeout).unwrap_err();
        assert!(refused.contains("cannot connect"), "{refused}");
        assert!(
            request(&nobody, "GET", "/x", &[("X", "a\r\nb")], b"", timeout)
                .unwrap_err()
                .contains("line break")
        );
    }
}
