//! Where a value sits in the bytes of a JSON text: the raw `arguments` of a `tools/call`, so
//! the audit trail can hash exactly what the client sent for that call.
//!
//! Main design decision: a scan over the bytes, not a second parse: the text was accepted by
//! the strict parser already (valid UTF-8, no repeated key, bounded depth), so finding a
//! member only needs to step over values, and the first member with the name is the only
//! one. Names are compared as the parser reads them (escapes decoded), so `"\u0061rguments"`
//! is found too. The scan is iterative and bounded by the text; anything unexpected ends it
//! with `None`, never a panic.

use std::ops::Range;

/// The raw bytes of `params.arguments` of the message in `body` (`element`: its index when
/// the body is a batch array). `None` when the message has no `arguments`.
pub fn call_arguments(body: &[u8], element: Option<usize>) -> Option<&[u8]> {
    let mut scan = Scan { bytes: body, at: 0 };
    scan.skip_space();
    if let Some(index) = element {
        scan.enter_element(index)?;
    }
    scan.enter_member("params")?;
    scan.enter_member("arguments")?;
    let range = scan.value()?;
    body.get(range)
}

/// Where the value at `path` (member names, outermost first) sits in `object`, a JSON text
/// the strict parser accepted. `None` when a member of the path is missing.
pub fn member_value(object: &[u8], path: &[&str]) -> Option<Range<usize>> {
    let mut scan = Scan {
        bytes: object,
        at: 0,
    };
    for name in path {
        scan.enter_member(name)?;
    }
    scan.value()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// Moves to the start of element `index` of the array that starts here.
    fn enter_element(&mut self, index: usize) -> Option<()> {
        self.eat(b'[')?;
        for _ in 0..index {
            self.value()?;
            self.eat(b',')?;
        }
        self.skip_space();
        Some(())
    }

    /// Moves to the value of member `name` of the object that starts here.
    fn enter_member(&mut self, name: &str) -> Option<()> {
        self.eat(b'{')?;
        loop {
            self.skip_space();
            let key = self.string()?;
            self.eat(b':')?;
            self.skip_space();
            if name_is(self.bytes.get(key)?, name) {
                return Some(());
            }
            self.value()?;
            self.eat(b',')?;
        }
    }

    /// Steps over the value that starts here; returns its range.
    fn value(&mut self) -> Option<Range<usize>> {
        self.skip_space();
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => self.nested()?,
            _ => {
                while self.peek().is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.at += 1;
                }
            }
        }
        (self.at > start).then_some(start..self.at)
    }

    /// Steps over an object or array (strings inside may hold brackets).
    fn nested(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// Steps over the string that starts here; returns its range, quotes included.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        (self.peek()? == b'"').then_some(())?;
        self.at += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(start..self.at);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }
}

/// Whether the raw string `quoted` (quotes included) reads as `name`.
fn name_is(quoted: &[u8], name: &str) -> bool {
    let inner = quoted
        .strip_prefix(b"\"")
        .and_then(|q| q.strip_suffix(b"\""));
    match inner {
        Some(raw) if !raw.contains(&b'\\') => raw == name.as_bytes(),
        Some(_) => serde_json::from_slice::<String>(quoted).is_ok_and(|decoded| decoded == name),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{call_arguments, member_value};

    fn text(bytes: Option<&[u8]>) -> Option<&str> {
        bytes.and_then(|b| std::str::from_utf8(b).ok())
    }

    #[test]
    fn finds_the_arguments_of_a_single_message_as_sent() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{ "a" : [1, "]}"] }},"z":0}"#;
        assert_eq!(
            text(call_arguments(body, None)),
            Some(r#"{ "a" : [1, "]}"] }"#)
        );
    }

    #[test]
    fn finds_the_arguments_of_each_batch_element() {
        let body = br#" [ {"id":1,"params":{"arguments":{"m":"one"}}} , {"params":{"name":"b","arguments":{"m":"\"two\""}},"id":2}, {"id":3,"params":{"name":"c"}} ] "#;
        assert_eq!(text(call_arguments(body, Some(0))), Some(r#"{"m":"one"}"#));
        assert_eq!(
            text(call_arguments(body, Some(1))),
            Some(r#"{"m":"\"two\""}"#)
        );
        assert_eq!(call_arguments(body, Some(2)), None);
        assert_eq!(call_arguments(body, Some(3)), None);
    }

    #[test]
    fn escaped_member_names_are_read_as_the_parser_reads_them() {
        let body = br#"{"\u0070arams":{"name":"x","\u0061rguments":{"k":1}}}"#;
        assert_eq!(text(call_arguments(body, None)), Some(r#"{"k":1}"#));
    }

    #[test]
    fn scalar_arguments_and_broken_text_end_cleanly() {
        assert_eq!(
            text(call_arguments(br#"{"params":{"arguments":12.5e3}}"#, None)),
            Some("12.5e3")
        );
        for broken in [
            &b""[..],
            b"{",
            b"{\"params\":",
            b"[{\"params\":{\"arguments\"",
            b"\"x",
        ] {
            assert_eq!(call_arguments(broken, Some(0)), None);
            assert_eq!(call_arguments(broken, None), None);
        }
    }

    #[test]
    fn finds_a_nested_member_value_and_not_a_namesake() {
        let text = br#"{"id":"\"tools\":[1]","result":{"note":{"tools":[2]},"tools":[],"z":[3]}}"#;
        let span = member_value(text, &["result", "tools"]);
        assert_eq!(span.clone().and_then(|r| text.get(r)), Some(&b"[]"[..]));
        assert_eq!(member_value(text, &["result", "missing"]), None);
        assert_eq!(member_value(b"[1]", &["result"]), None);
    }
}
