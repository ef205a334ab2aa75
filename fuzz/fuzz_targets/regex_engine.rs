//! The `pattern` regex engine (through the public schema API: `{"pattern": P}` accepts a
//! string exactly when P matches somewhere in it). Half the inputs are raw pattern bytes:
//! compiling and searching never panics, and a search answers the same twice. The other half
//! are pattern trees written both as ECMAScript and, with the same meaning spelled out, for
//! the `regex` crate (an independent engine): whenever toolseal compiles the pattern and the
//! search finishes within its budget, both engines agree on every text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolseal_core::policy::schema::{CompiledSchema, compile};
use toolseal_fuzz::bytes::Choices;
use toolseal_fuzz::regex_gen;

/// toolseal's verdict: `Some(matches)`, or `None` when the search ran out of budget.
fn search(schema: &CompiledSchema, text: &str) -> Option<bool> {
    match schema.validate(&Value::String(text.to_owned())) {
        Ok(()) => Some(true),
        Err(violations) if violations.iter().any(|v| v.message.contains("work budget")) => None,
        Err(_) => Some(false),
    }
}

fn raw(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = usize::from(split).min(rest.len());
    let (pattern, text) = rest.split_at(at);
    let pattern = String::from_utf8_lossy(pattern);
    let text = String::from_utf8_lossy(text);
    let Ok(schema) = compile(&json!({"pattern": pattern})) else {
        return;
    };
    assert_eq!(
        search(&schema, &text),
        search(&schema, &text),
        "{pattern:?} on {text:?}"
    );
}

fn differential(data: &[u8]) {
    let mut c = Choices::new(data);
    let tree = regex_gen::node(&mut c, 4);
    let ecma = regex_gen::ecma(&tree);
    let Ok(schema) = compile(&json!({"pattern": ecma})) else {
        return;
    };
    let rust = regex_gen::rust(&tree);
    let reference = match regex::RegexBuilder::new(&rust).size_limit(1 << 22).build() {
        Ok(r) => r,
        // Too large for the reference (counted repetition): nothing to compare.
        Err(regex::Error::CompiledTooBig(_)) => return,
        Err(e) => panic!("the translation of {ecma:?} does not compile: {rust:?}: {e}"),
    };
    for _ in 0..4 {
        let text = regex_gen::text(&mut c);
        if let Some(ours) = search(&schema, &text) {
            assert_eq!(
                ours,
                reference.is_match(&text),
                "pattern {ecma:?} (reference {rust:?}) on {text:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((mode, rest)) if mode & 1 == 0 => raw(rest),
        Some((_, rest)) => differential(rest),
        None => {}
    }
});
