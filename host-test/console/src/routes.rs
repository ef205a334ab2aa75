//! The console's routes: the page and its assets, the JSON API the page calls, and the review
//! page shown in a sandboxed frame.
//!
//! Main design decision: every route checks `Host` and `Sec-Fetch-Site` first; every `/api/` route checks the
//! per-run token; every change also checks its origin (see `guard`). The page is static
//! apart from the token in one `<meta>`; all server-controlled text reaches it as JSON and is
//! put on screen as text by the page's script. The review page is `toolseal report`'s page,
//! escaped by its renderer, sandboxed (no script, no same-origin script access), with a
//! policy that allows only its own inline style.

use super::Console;
use super::actions::Action;
use super::candidates::{is_fingerprint, review_page};
use super::web::{Answer, Request, percent_decode};
use crate::report_html;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolseal_core::wire::json::parse_strict;

const PAGE: &str = include_str!("assets/console.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// Standard base64 (with padding), for the CSP hash of the review page's style.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk.first(), chunk.get(1), chunk.get(2)].map(|b| b.copied().unwrap_or(0));
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let index = usize::try_from((n >> (18 - 6 * i)) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET.get(index).copied().unwrap_or(b'=')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The policy of the review page: nothing but its own inline style sheet (by hash).
pub fn review_csp() -> String {
    let hash = base64(&Sha256::digest(report_html::STYLE.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'self'; sandbox allow-same-origin"
    )
}

impl Console {
    /// Answers one request.
    pub fn handle(&self, request: &Request) -> Answer {
        let checked = self.guard.check_host(request).and_then(|()| {
            let navigation = request.method == "GET" && request.path == "/";
            self.guard.check_fetch_site(request, navigation)
        });
        if let Err(why) = checked {
            return Answer::error(403, &why);
        }
        let api = request.path.starts_with("/api/");
        if api && let Err(why) = self.guard.check_token(request) {
            return Answer::error(403, &why);
        }
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/") => {
                Answer::content("text/html", PAGE.replace("{{TOKEN}}", self.guard.token()))
            }
            ("GET", "/console.js") => Answer::content("text/javascript", SCRIPT),
            ("GET", "/console.css") => Answer::content("text/css", STYLE),
            ("GET", "/report") => self.report(request),
            ("GET", "/api/state") => Answer::json(200, &self.overview()),
            ("GET", "/api/audit") => match self.audit.recent(100) {
                Ok(events) => Answer::json(200, &json!({"events": events})),
                Err(e) => Answer::error(500, &e),
            },
            ("GET", path) if path.starts_with("/api/servers/") => self.server_detail(path),
            ("POST", path) if path.starts_with("/api/servers/") => self.change(request, path),
            (_, "/" | "/console.js" | "/console.css" | "/report" | "/api/state" | "/api/audit") => {
                Answer::error(405, "method not allowed")
            }
            _ => Answer::error(404, "no such page"),
        }
    }

    fn server_detail(&self, path: &str) -> Answer {
        let Some(server) = path.strip_prefix("/api/servers/").and_then(percent_decode) else {
            return Answer::error(400, "malformed server id");
        };
        let views: Vec<Value> = self
            .reader()
            .server_views(&server)
            .into_iter()
            .map(|(instance, result)| match result {
                Ok(view) => {
                    // The console's hint beside the instance's answer, not inside it.
                    let renames = view.as_ref().and_then(super::renames::of_view);
                    json!({"instance": instance, "view": view, "error": null, "renames": renames})
                }
                Err(e) => json!({"instance": instance, "view": null, "error": e, "renames": null}),
            })
            .collect();
        Answer::json(200, &json!({"server": server, "instances": views}))
    }

    fn change(&self, request: &Request, path: &str) -> Answer {
        if let Err(why) = self.guard.check_change(request) {
            return Answer::error(403, &why);
        }
        let rest = path.strip_prefix("/api/servers/").unwrap_or_default();
        let Some((server, action)) = rest.rsplit_once('/') else {
            return Answer::error(404, "expected /api/servers/{id}/approve|quarantine|release");
        };
        let Some(server) = percent_decode(server).filter(|s| !s.is_empty()) else {
            return Answer::error(400, "malformed server id");
        };
        let body = match parse_strict(&request.body, 8) {
            Ok(body @ Value::Object(_)) => body,
            _ => return Answer::error(400, "the body must be a JSON object"),
        };
        match Action::parse(action, &body) {
            Ok(action) => {
                let outcome = self.act(&server, &action);
                Answer::json(outcome.status, &outcome.body)
            }
            Err(why) => Answer::error(400, &why),
        }
    }

    fn report(&self, request: &Request) -> Answer {
        let server = request.param("server").unwrap_or_default();
        let candidate = request.param("candidate").unwrap_or_default();
        let baseline = request.param("baseline").filter(|b| !b.is_empty());
        let valid = !server.is_empty()
            && is_fingerprint(&candidate)
            && baseline.as_deref().is_none_or(is_fingerprint);
        let page = if valid {
            review_page(self, &server, baseline.as_deref(), &candidate)
        } else {
            Err("the review page needs server, candidate (and baseline) fingerprints".into())
        };
        let (status, body) = match page {
            Ok(page) => (200, page),
            Err(why) => (409, unavailable_page(&why)),
        };
        Answer {
            status,
            content_type: "text/html",
            csp: review_csp(),
            frameable: true,
            body: body.into_bytes(),
        }
    }
}

/// A review page that says why the side-by-side view is not available.
fn unavailable_page(why: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>review unavailable</title><style>{}</style></head>\n<body><main><p class=\"absent\">{}</p></main></body></html>\n",
        report_html::STYLE,
        report_html::escape(why)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_answers() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn the_page_loads_nothing_inline() {
        assert!(PAGE.contains("{{TOKEN}}"));
        assert!(
            !PAGE.contains("<script>") && !PAGE.contains("style="),
            "inline code would need 'unsafe-inline'"
        );
        assert!(
            !SCRIPT.contains("innerHTML")
                && !SCRIPT.contains("insertAdjacentHTML")
                && !SCRIPT.contains("eval("),
            "server text must reach the DOM as text only"
        );
        assert!(review_csp().starts_with("default-src 'none'; style-src 'sha256-"));
        let unavailable = unavailable_page("<script>alert(1)</script>");
        assert!(
            unavailable.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
                && !unavailable.contains("<script>")
        );
    }
}
