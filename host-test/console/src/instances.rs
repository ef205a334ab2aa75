//! Reading every Envoy's toolseal admin API: `GET servers` for the overview, `GET
//! servers/{id}` for one server's full view with its classified diff, `GET
//! servers/{id}/tools/{fingerprint}` for the definitions of one of its sets.
//!
//! Main design decision: instances are asked in parallel (one thread each, bounded by the
//! request timeout), and an instance that cannot be read is reported as such, never skipped:
//! the page shows it, and an approval refuses to go on without it. The bearer token is read
//! from its source for each request and appears in no error and no answer.

use super::fleet::{Fleet, Instance};
use super::http_client;
use serde_json::Value;
use std::time::Duration;
use toolseal_core::wire::json::parse_strict;

/// What one instance answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The instance's name.
    pub instance: String,
    /// The JSON answer, or why there is none.
    pub result: Result<Value, String>,
}

/// Percent-encodes a path segment (a server id may hold `/`).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// How the console calls the instances' admin APIs.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    /// The instances.
    pub fleet: &'a Fleet,
    /// Timeout of each request.
    pub timeout: Duration,
    /// `(header, operator)`: when the admin listener's `admin.identity` is a request header,
    /// the console's operator is sent in it (without it every admin request is refused 403).
    pub identity: Option<(String, &'a str)>,
}

impl Reader<'_> {
    /// `GET {admin_url}{path}`: `Ok(None)` for a 404, the JSON body for a 200, an error
    /// otherwise.
    pub fn get(&self, instance: &Instance, path: &str) -> Result<Option<Value>, String> {
        let token = instance.token.read()?;
        let authorization = format!("Bearer {token}");
        let target = format!("{}{path}", instance.admin_url.path);
        let mut headers = vec![
            ("Authorization", authorization.as_str()),
            ("Accept", "application/json"),
        ];
        if let Some((header, operator)) = &self.identity {
            headers.push((header, operator));
        }
        let response = http_client::request(
            &instance.admin_url,
            "GET",
            &target,
            &headers,
            b"",
            self.timeout,
        )?;
        let body = || {
            parse_strict(&response.body, 128)
                .map_err(|e| format!("GET {path}: unreadable answer: {e}"))
        };
        match response.status {
            200 => body().map(Some),
            404 => Ok(None),
            401 => Err(format!(
                "GET {path}: 401: the admin API refused the token from {}",
                instance.token.describe()
            )),
            status => {
                let why = body()
                    .ok()
                    .and_then(|b| b.get("error").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                Err(format!("GET {path}: HTTP {status} {why}"))
            }
        }
    }

    /// Asks every instance for `path` at once, in fleet order.
    fn each(&self, path: &str) -> Vec<(String, Result<Option<Value>, String>)> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .fleet
                .instances
                .iter()
                .map(|instance| scope.spawn(move || self.get(instance, path)))
                .collect();
            self.fleet
                .instances
                .iter()
                .zip(handles)
                .map(|(instance, handle)| {
                    let result = handle
                        .join()
                        .unwrap_or_else(|_| Err("the request thread failed".into()));
                    (instance.name.clone(), result)
                })
                .collect()
        })
    }

    /// Asks every instance for `path` at once; a 404 is an error here.
    pub fn ask_all(&self, path: &str) -> Vec<Answer> {
        self.each(path)
            .into_iter()
            .map(|(instance, result)| Answer {
                instance,
                result: result.and_then(|answer| {
                    answer.ok_or_else(|| {
                        format!("GET {path}: 404 (is the admin API on at this URL?)")
                    })
                }),
            })
            .collect()
    }

    /// Every instance's full view of `server`: `Ok(None)` where the instance does not know it.
    pub fn server_views(&self, server: &str) -> Vec<(String, Result<Option<Value>, String>)> {
        self.each(&format!("servers/{}", encode_segment(server)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn server_ids_are_percent_encoded_as_one_segment() {
        assert_eq!(encode_segment("demo"), "demo");
        assert_eq!(encode_segment("httproute/ns/name"), "httproute%2Fns%2Fname");
        assert_eq!(encode_segment("a b?#%"), "a%20b%3F%23%25");
        assert_eq!(encode_segment("é"), "%C3%A9");
    }
}
