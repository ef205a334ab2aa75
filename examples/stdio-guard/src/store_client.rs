//! The way to the fleet store: a blocking HTTP/1.1 `POST` client for etcd's v3 JSON API,
//! over `std::net::TcpStream`.
//!
//! Main design decision: no HTTP crate. The component asks for one small JSON `POST` at a
//! time and waits for it, so a connection per call (`Connection: close`), a deadline over the
//! whole call, and a reader for `Content-Length`, chunked or read-to-close bodies are all it
//! takes. Plain `http://` only: TLS to etcd goes through a local proxy or etcd's own TLS
//! gateway. Every answer is bounded ([`MAX_HEAD_BYTES`], [`MAX_BODY_BYTES`]) and every
//! failure is a message for the operator, never a panic.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The largest status line and headers read.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest body read (a range over every record of a big fleet stays far below).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// etcd's client port, when the URL names none.
pub const DEFAULT_PORT: u16 = 2379;

/// Where the store answers: `http://HOST[:PORT][/BASE]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreClient {
    host: String,
    port: u16,
    /// A path every call's path is appended to (a proxy's mount point), without a trailing `/`.
    base: String,
}

impl StoreClient {
    /// Reads `http://HOST[:PORT][/BASE]` (the port defaults to etcd's 2379).
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            if url.starts_with("https://") {
                format!("{url}: only http:// is spoken here; reach a TLS etcd through a local proxy or etcd's gRPC gateway on loopback")
            } else {
                format!("{url}: give the store as http://HOST:PORT")
            }
        })?;
        let (authority, base) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{url}: give the store as http://HOST:PORT"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            // An IPv6 literal without a port: `[::1]`.
            Some((host, _)) if host.starts_with('[') && !host.ends_with(']') => {
                (authority, DEFAULT_PORT)
            }
            Some((host, port)) => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("{url}: the port {port:?} is not a number"))?,
            ),
            None => (authority, DEFAULT_PORT),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{url}: no host"));
        }
        Ok(StoreClient {
            host: host.to_string(),
            port,
            base: base.trim_end_matches('/').to_string(),
        })
    }

    /// `POST`s `body` as JSON to `path`, within `timeout` for the whole call: the status and
    /// the body, or why there is no answer.
    pub fn post(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        let deadline = Instant::now() + timeout;
        let mut stream = self.connect(deadline)?;
        let host = match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        };
        let head = format!(
            "POST {}{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.base,
            body.len()
        );
        stream
            .set_write_timeout(Some(remaining(deadline)?))
            .map_err(|e| format!("cannot set a write timeout: {e}"))?;
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body))
            .and_then(|()| stream.flush())
            .map_err(|e| format!("sending to {host}: {e}"))?;
        let mut reader = Deadlined { stream, deadline };
        read_response(&mut BufReader::new(&mut reader)).map_err(|e| format!("{host}: {e}"))
    }

    fn connect(&self, deadline: Instant) -> Result<TcpStream, String> {
        let addrs = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?;
        let mut last = format!("{} resolves to no address", self.host);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, remaining(deadline)?) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(last)
    }
}

/// The time left before `deadline`, or the timeout error.
fn remaining(deadline: Instant) -> Result<Duration, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err("timed out".into());
    }
    Ok(left)
}

/// A stream whose every read waits at most until the call's deadline.
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = remaining(self.deadline)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::TimedOut, e))?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Reads one HTTP/1.1 response: the status and the whole body.
pub fn read_response(reader: &mut impl BufRead) -> Result<(u16, Vec<u8>), String> {
    let mut head_bytes = 0usize;
    let mut status = None;
    let mut length = None;
    let mut chunked = false;
    loop {
        let line = read_line(reader, &mut head_bytes)?;
        if status.is_none() {
            status = Some(status_of(&line)?);
            continue;
        }
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("a header line without ':': {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse::<usize>()
                .map_err(|_| format!("Content-Length {value:?} is not a number"))?;
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    let status = status.ok_or("no status line")?;
    let body = match (chunked, length) {
        (true, _) => read_chunked(reader)?,
        (false, Some(n)) if n > MAX_BODY_BYTES => {
            return Err(format!("a {n}-byte body is over {MAX_BODY_BYTES} bytes"));
        }
        (false, Some(n)) => {
            let mut body = vec![0; n];
            reader
                .read_exact(&mut body)
                .map_err(|e| format!("reading a {n}-byte body: {e}"))?;
            body
        }
        (false, None) => {
            let mut body = Vec::new();
            reader
                .take(MAX_BODY_BYTES as u64 + 1)
                .read_to_end(&mut body)
                .map_err(|e| format!("reading the body: {e}"))?;
            if body.len() > MAX_BODY_BYTES {
                return Err(format!("the body is over {MAX_BODY_BYTES} bytes"));
            }
            body
        }
    };
    Ok((status, body))
}

/// One CRLF-terminated line of the head (without its end), counted against the head's bound.
fn read_line(reader: &mut impl BufRead, used: &mut usize) -> Result<String, String> {
    let mut line = Vec::new();
    let budget = MAX_HEAD_BYTES.saturating_sub(*used) as u64;
    let n = reader
        .take(budget)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading the answer: {e}"))?;
    *used = used.saturating_add(n);
    if line.last() != Some(&b'\n') {
        return Err(match n as u64 >= budget {
            true => format!("the answer's head is over {MAX_HEAD_BYTES} bytes"),
            false => "the connection closed before the answer's head ended".into(),
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| "a header line is not UTF-8".into())
}

/// The status of `HTTP/1.x NNN reason`.
fn status_of(line: &str) -> Result<u16, String> {
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return Err(format!("not an HTTP/1.x status line: {line:?}"));
    }
    code.parse::<u16>()
        .map_err(|_| format!("not an HTTP/1.x status line: {line:?}"))
}

/// A chunked body, trailers skipped.
fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut head_bytes = 0usize;
    loop {
        let line = read_line(reader, &mut head_bytes)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| format!("a chunk size {size:?} is not hex"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(reader, &mut head_bytes)?.is_empty() {}
            return Ok(body);
        }
        if body.len().saturating_add(size) > MAX_BODY_BYTES {
            return Err(format!("the body is over {MAX_BODY_BYTES} bytes"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        let chunk = body
            .get_mut(start..)
            .ok_or("a chunk out of the body's bounds")?;
        reader
            .read_exact(chunk)
            .map_err(|e| format!("reading a {size}-byte chunk: {e}"))?;
        let mut end = [0u8; 2];
        reader
            .read_exact(&mut end)
            .map_err(|e| format!("reading a chunk's end: {e}"))?;
        if &end != b"\r\n" {
            return Err("a chunk does not end with CRLF".into());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn reads_urls_and_refuses_what_it_cannot_speak() {
        let c = StoreClient::parse("http://127.0.0.1:2379").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.base.as_str()),
            ("127.0.0.1", 2379, "")
        );
        let c = StoreClient::parse("http://etcd.local/proxy/").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.base.as_str()),
            ("etcd.local", 2379, "/proxy")
        );
        let c = StoreClient::parse("http://[::1]:3000").unwrap();
        assert_eq!((c.host.as_str(), c.port), ("::1", 3000));
        assert!(
            StoreClient::parse("https://x:1")
                .unwrap_err()
                .contains("only http://")
        );
        assert!(StoreClient::parse("x:1").is_err());
        assert!(
            StoreClient::parse("http://x:port")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(StoreClient::parse("http://").is_err());
    }

    #[test]
    fn reads_bodies_by_length_chunks_or_close() {
        let by_length = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: y\r\n\r\n{}extra";
        assert_eq!(
            read_response(&mut &by_length[..]).unwrap(),
            (200, b"{}".to_vec())
        );
        let chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n";
        assert_eq!(
            read_response(&mut &chunked[..]).unwrap(),
            (404, b"abcde".to_vec())
        );
        let closed = b"HTTP/1.0 500 Oops\r\n\r\nbody";
        assert_eq!(
            read_response(&mut &closed[..]).unwrap(),
            (500, b"body".to_vec())
        );
        for bad in [
            &b""[..],
            b"SSH-2.0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        ] {
            assert!(read_response(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }
}
