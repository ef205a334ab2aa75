//! Whether a URI is one a resource template (RFC 6570) can expand to.
//!
//! Main design decision: the question is asked of a URI a client wants to read, to let it
//! through when an approved template names it, so a match may be lenient but never crosses
//! what an expression can produce: a simple `{id}` expands to unreserved characters and
//! percent-encodings (and `,` / `=` for lists and exploded maps), never to `/`, `?` or `#`,
//! so `file:///notes/{name}` names one note and never a path below another directory;
//! `{+path}` and `{#frag}` may produce reserved characters, as their templates say. The
//! variables' values are not needed: each expression matches any run of the characters its
//! operator can produce, including none (an undefined variable expands to nothing). The walk
//! keeps the set of URI positions reachable after each part of the template, one pass per
//! part, so its cost is the template's parts times the URI's length, whatever the input.

/// One part of a parsed template.
enum Part<'t> {
    /// Copied as it is.
    Literal(&'t [u8]),
    /// An expression: the character its expansion starts with (`None` for `{var}` and
    /// `{+var}`), and what its values may be made of.
    Expression {
        prefix: Option<u8>,
        allowed: fn(u8) -> bool,
    },
}

/// RFC 3986 unreserved characters, `%` of a percent-encoding, and `,` and `=` (the separators
/// of a list or an exploded map).
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'%' | b',' | b'=')
}

/// What `{+var}` and `{#var}` produce: reserved characters too, and characters beyond ASCII
/// (an IRI's).
fn reserved(b: u8) -> bool {
    plain(b) || !b.is_ascii() || b"!$&'()*+/:;?@[]#".contains(&b)
}

/// `{.var}`: labels separated by `.`.
fn labels(b: u8) -> bool {
    plain(b)
}

/// `{/var}`: path segments, separated by `/`.
fn segments(b: u8) -> bool {
    plain(b) || b == b'/'
}

/// `{;var}`: path parameters.
fn parameters(b: u8) -> bool {
    plain(b) || b == b';'
}

/// `{?var}` and `{&var}`: query pairs.
fn query(b: u8) -> bool {
    plain(b) || b == b'&'
}

/// The parts of `template`; `None` when it is not one (a brace left open or closed alone, an
/// operator RFC 6570 reserves for later).
fn parse(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template.as_bytes();
    while !rest.is_empty() {
        let open = rest.iter().position(|&b| b == b'{').unwrap_or(rest.len());
        let (literal, tail) = rest.split_at(open);
        if literal.contains(&b'}') {
            return None;
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let Some((_, tail)) = tail.split_first() else {
            break;
        };
        let close = tail.iter().position(|&b| b == b'}')?;
        let (body, tail) = tail.split_at(close);
        rest = tail.get(1..).unwrap_or_default();
        let (operator, names) = match body.split_first() {
            Some((&op, names)) if b"+#./;?&".contains(&op) => (Some(op), names),
            Some((&op, _)) if b"=,!@|".contains(&op) => return None,
            _ => (None, body),
        };
        let name_byte = |b: &u8| b.is_ascii_alphanumeric() || b"_%.,:*".contains(b);
        if names.is_empty() || names.contains(&b'{') || !names.iter().all(name_byte) {
            return None;
        }
        let (prefix, allowed): (Option<u8>, fn(u8) -> bool) = match operator {
            None => (None, plain),
            Some(b'+') => (None, reserved),
            Some(b'#') => (Some(b'#'), reserved),
            Some(b'.') => (Some(b'.'), labels),
            Some(b'/') => (Some(b'/'), segments),
            Some(b';') => (Some(b';'), parameters),
            Some(op) => (Some(op), query),
        };
        parts.push(Part::Expression { prefix, allowed });
    }
    Some(parts)
}

/// Whether `uri` is an expansion of `template` (RFC 6570, levels 1 to 4) for some values of
/// its variables. A template that does not parse matches nothing.
pub fn matches(template: &str, uri: &str) -> bool {
    let Some(parts) = parse(template) else {
        return false;
    };
    let bytes = uri.as_bytes();
    let n = bytes.len();
    // reach[i]: the first i bytes of the URI are an expansion of the parts walked so far.
    let mut reach = vec![false; n + 1];
    if let Some(start) = reach.first_mut() {
        *start = true;
    }
    for part in &parts {
        let mut next = vec![false; n + 1];
        match part {
            Part::Literal(literal) => {
                for (i, _) in reach.iter().enumerate().filter(|(_, r)| **r) {
                    let end = i + literal.len();
                    if bytes.get(i..end) == Some(literal)
                        && let Some(slot) = next.get_mut(end)
                    {
                        *slot = true;
                    }
                }
            }
            Part::Expression { prefix, allowed } => {
                // `run`: reachable through this expression's prefix and allowed bytes.
                let mut run = false;
                for i in 0..=n {
                    let before = i.checked_sub(1).and_then(|j| bytes.get(j).copied());
                    let was = i.checked_sub(1).and_then(|j| reach.get(j).copied());
                    let extended = before.is_some_and(|b| run && allowed(b));
                    let opened = match (prefix, before, was) {
                        (Some(p), Some(b), Some(true)) => b == *p,
                        _ => false,
                    };
                    let here = reach.get(i).copied().unwrap_or(false);
                    run = extended || opened || (prefix.is_none() && here);
                    if let Some(slot) = next.get_mut(i) {
                        *slot = here || run;
                    }
                }
            }
        }
        reach = next;
    }
    reach.last().copied().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_simple_expression_names_one_segment_and_never_crosses_a_slash() {
        let t = "file:///notes/{name}";
        assert!(matches(t, "file:///notes/today.md"));
        assert!(matches(t, "file:///notes/a%20b"));
        assert!(!matches(t, "file:///notes/sub/today.md"));
        assert!(!matches(t, "file:///notes/../etc/passwd"));
        assert!(!matches(t, "file:///etc/passwd"));
        assert!(!matches(t, "file:///notes/x?y"));
        assert!(matches(
            "test://static/resource/{id}",
            "test://static/resource/42"
        ));
        assert!(matches("weather://{city}/today", "weather://Paris/today"));
        assert!(!matches(
            "weather://{city}/today",
            "weather://Paris/tomorrow"
        ));
        assert!(!matches("weather://{city}/today", "weather://a/b/today"));
    }

    #[test]
    fn operators_produce_what_rfc_6570_expands_them_to() {
        assert!(matches("repo://{+path}", "repo://src/main.rs"));
        assert!(matches("doc{#section}", "doc#intro/part"));
        assert!(matches("doc{#section}", "doc"));
        assert!(matches("x{.ext}", "x.tar.gz"));
        assert!(matches("api{/version,resource}", "api/v1/users"));
        assert!(!matches("api{/version}", "api?v=1"));
        assert!(matches("map{;x,y}", "map;x=1;y=2"));
        assert!(matches("search{?q,lang}", "search?q=mcp&lang=en"));
        assert!(matches("search{?q}{&page}", "search?q=mcp&page=2"));
        assert!(!matches("search{?q}", "search#q"));
        assert!(matches("list/{items*}", "list/a,b,c"));
        assert!(matches("pre{var:3}post", "preabcpost"));
    }

    #[test]
    fn templates_that_do_not_parse_match_nothing() {
        for broken in ["a/{id", "a/id}", "a/{}", "a/{=x}", "a/{x{y}}", "a/{x y}"] {
            assert!(!matches(broken, "a/1"), "{broken}");
        }
        assert!(matches("plain://no-expression", "plain://no-expression"));
        assert!(!matches(
            "plain://no-expression",
            "plain://no-expression/more"
        ));
    }

    #[test]
    fn a_long_uri_is_walked_in_one_pass_per_part() {
        let long = format!("file:///notes/{}", "a".repeat(100_000));
        assert!(matches("file:///notes/{name}", &long));
        assert!(!matches("file:///notes/{name}/x", &long));
    }
}
