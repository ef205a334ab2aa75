//! What protects the console itself. A server on loopback is still reachable from every web
//! page the operator's browser opens: a hostile page can send it cross-site requests, and
//! through DNS rebinding (its own host name re-pointed at 127.0.0.1) can even read answers.
//!
//! Main design decision: independent checks. (1) `Host` must name the console's own
//! address, which defeats DNS rebinding (the rebound request carries the attacker's host
//! name). (2) A browser's `Sec-Fetch-Site` must say the request comes from the console's own
//! pages. (3) Every API request must carry the per-run token embedded in the page, in a
//! custom header: a cross-site page cannot read the page to learn it, and a custom header
//! cannot be sent cross-origin without a CORS preflight the console never grants. (4) A
//! change (POST) must also come with `Origin` equal to the console's origin, and a JSON body.

use std::net::SocketAddr;

/// The header carrying the per-run token.
pub const TOKEN_HEADER: &str = "x-toolseal-console";

/// The console's request checks.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<String>,
    token: String,
}

/// The parts of a request the guard looks at (header names lowercase).
pub trait Headers {
    /// The first value of header `name`.
    fn header(&self, name: &str) -> Option<&str>;
}

/// Compares without an early exit, so timing does not tell how much of a guess was right.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes as hex, from the operating system's generator.
pub fn random_token() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for the console's token: {e}"))?;
    Ok(toolseal_core::policy::fingerprint::to_hex(&bytes))
}

impl Guard {
    /// The checks for a console bound to `bound`, with the per-run `token`.
    pub fn new(bound: SocketAddr, token: String) -> Guard {
        let mut hosts = vec![bound.to_string()];
        if bound.ip().is_loopback() {
            hosts.push(format!("localhost:{}", bound.port()));
        }
        Guard { hosts, token }
    }

    /// The per-run token (embedded in the page).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `Host` names the console (DNS rebinding defense).
    pub fn check_host(&self, request: &dyn Headers) -> Result<(), String> {
        match request.header("host") {
            Some(host) if self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) => Ok(()),
            Some(_) => Err("the Host header does not name this console".into()),
            None => Err("the request has no Host header".into()),
        }
    }

    /// A browser's request comes from the console's own pages (`Sec-Fetch-Site`, which every
    /// current browser sends): a page of another site cannot even make the console list a
    /// server by framing its review page. `navigation` also admits a typed URL or a bookmark
    /// (`none`), for the page itself. A request without the header (not from a browser, or an
    /// old one) is left to the other checks.
    pub fn check_fetch_site(&self, request: &dyn Headers, navigation: bool) -> Result<(), String> {
        match request.header("sec-fetch-site") {
            None | Some("same-origin") => Ok(()),
            Some("none") if navigation => Ok(()),
            Some(site) => Err(format!(
                "refused a {site} request: open the console at its own address"
            )),
        }
    }

    /// An API read or change carries the page's token.
    pub fn check_token(&self, request: &dyn Headers) -> Result<(), String> {
        match request.header(TOKEN_HEADER) {
            Some(t) if constant_time_eq(t.as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err("missing or wrong console token: reload the console's page".into()),
        }
    }

    /// A change comes from the console's own page: same origin, not cross-site, JSON body.
    pub fn check_change(&self, request: &dyn Headers) -> Result<(), String> {
        let host = request.header("host").unwrap_or_default();
        match request.header("origin") {
            Some(origin) if origin.eq_ignore_ascii_case(&format!("http://{host}")) => {}
            _ => return Err("a change must come from the console's own page (Origin)".into()),
        }
        let json = request
            .header("content-type")
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/json"));
        if !json {
            return Err("a change must be sent as application/json".into());
        }
        self.check_token(request)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    struct Request(Vec<(&'static str, String)>);

    impl Headers for Request {
        fn header(&self, name: &str) -> Option<&str> {
            self.0
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    fn guard() -> Guard {
        Guard::new("127.0.0.1:8740".parse().unwrap(), "t0ken".into())
    }

    fn post(host: &str, origin: Option<&str>, token: Option<&str>) -> Request {
        let mut headers = vec![
            ("host", host.to_owned()),
            ("content-type", "application/json".to_owned()),
        ];
        if let Some(o) = origin {
            headers.push(("origin", o.to_owned()));
        }
        if let Some(t) = token {
            headers.push((TOKEN_HEADER, t.to_owned()));
        }
        Request(headers)
    }

    #[test]
    fn the_host_must_name_the_console() {
        let g = guard();
        assert!(g.check_host(&post("127.0.0.1:8740", None, None)).is_ok());
        assert!(g.check_host(&post("LOCALHOST:8740", None, None)).is_ok());
        // DNS rebinding: the attacker's name, now resolving to 127.0.0.1.
        assert!(
            g.check_host(&post("evil.example:8740", None, None))
                .is_err()
        );
        assert!(g.check_host(&post("127.0.0.1:9999", None, None)).is_err());
        assert!(g.check_host(&Request(vec![])).is_err());
        let public = Guard::new("192.0.2.10:8740".parse().unwrap(), "t".into());
        assert!(
            public
                .check_host(&post("localhost:8740", None, None))
                .is_err()
        );
        assert!(
            public
                .check_host(&post("192.0.2.10:8740", None, None))
                .is_ok()
        );
    }

    #[test]
    fn a_change_needs_the_same_origin_and_the_token() {
        let g = guard();
        let ok = post(
            "127.0.0.1:8740",
            Some("http://127.0.0.1:8740"),
            Some("t0ken"),
        );
        assert!(g.check_change(&ok).is_ok());
        let cross_site = post("127.0.0.1:8740", Some("http://evil.example"), Some("t0ken"));
        assert!(g.check_change(&cross_site).unwrap_err().contains("Origin"));
        let no_origin = post("127.0.0.1:8740", None, Some("t0ken"));
        assert!(g.check_change(&no_origin).is_err());
        let no_token = post("127.0.0.1:8740", Some("http://127.0.0.1:8740"), None);
        assert!(g.check_change(&no_token).unwrap_err().contains("token"));
        let wrong_token = post(
            "127.0.0.1:8740",
            Some("http://127.0.0.1:8740"),
            Some("t0kem"),
        );
        assert!(g.check_change(&wrong_token).is_err());
        let mut form = post(
            "127.0.0.1:8740",
            Some("http://127.0.0.1:8740"),
            Some("t0ken"),
        );
        form.0[1].1 = "text/plain".into();
        assert!(
            g.check_change(&form)
                .unwrap_err()
                .contains("application/json")
        );
    }

    #[test]
    fn only_the_consoles_own_pages_may_make_a_browser_ask() {
        let g = guard();
        let with_site = |site: &str| Request(vec![("sec-fetch-site", site.to_owned())]);
        assert!(g.check_fetch_site(&with_site("same-origin"), false).is_ok());
        assert!(g.check_fetch_site(&Request(vec![]), false).is_ok());
        assert!(g.check_fetch_site(&with_site("none"), true).is_ok());
        assert!(g.check_fetch_site(&with_site("none"), false).is_err());
        let framed = g
            .check_fetch_site(&with_site("cross-site"), false)
            .unwrap_err();
        assert!(framed.contains("refused a cross-site request"), "{framed}");
        assert!(g.check_fetch_site(&with_site("same-site"), true).is_err());
    }

    #[test]
    fn tokens_are_random_and_compared_in_full() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
