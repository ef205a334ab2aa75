//! `json::parse_strict` against serde_json: never panics; whatever it accepts serde_json reads
//! as the same value, with no repeated key and within the depth limit; whatever serde_json
//! reads without repeats, within the limit and without a BOM, it accepts. And
//! `first_value`, fed the body in two pieces, never calls a body trailing that the parser
//! accepts, wherever it is cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolseal_core::wire::first_value::{Extent, FirstValue};
use toolseal_core::wire::json::{JsonError, PARSER_DEPTH_CEILING, parse_strict};
use toolseal_fuzz::lossless;

fuzz_target!(|data: &[u8]| {
    let Some((depth_byte, body)) = data.split_first() else { return };
    let max_depth = usize::from(*depth_byte % 132);
    let strict = parse_strict(body, max_depth);
    let tree = lossless::parse(body);
    let limit = max_depth.min(PARSER_DEPTH_CEILING);
    let bom = body.starts_with(b"\xEF\xBB\xBF");
    match (&strict, &tree) {
        (Ok(value), Ok(tree)) => {
            assert!(!bom, "accepted a BOM");
            assert_eq!(tree.duplicate_key(), None, "accepted a repeated key");
            assert!(tree.depth() <= limit, "accepted depth {} over {limit}", tree.depth());
            assert_eq!(&tree.to_value(), value, "strict and serde_json read different values");
            let plain: serde_json::Value = serde_json::from_slice(body).expect("serde_json refuses what strict accepted");
            assert_eq!(&plain, value);
        }
        (Ok(_), Err(e)) => panic!("strict accepted what serde_json refuses: {e}"),
        (Err(JsonError::DuplicateKey(key)), Ok(tree)) => {
            assert!(tree.duplicate_key().is_some(), "refused a repeated key {key:?} that is not repeated");
        }
        (Err(JsonError::TooDeep(_)), Ok(tree)) => {
            assert!(tree.depth() > limit, "refused depth {} as too deep (limit {limit})", tree.depth());
        }
        (Err(JsonError::Syntax(msg)), Ok(_)) => {
            assert!(bom, "refused valid JSON as a syntax error: {msg}");
        }
        (Err(_), Err(_)) => {}
    }
    if let Err(e) = &strict {
        let _ = e.to_string();
    }
    let (head, tail) = body.split_at(usize::from(*depth_byte) % (body.len() + 1));
    let mut cut = FirstValue::default();
    cut.feed(head);
    let extent = cut.feed(tail);
    assert_eq!(extent, FirstValue::default().feed(body), "the cut changed the scan");
    if extent == Extent::Trailing {
        assert!(strict.is_err(), "a body the parser accepts was scanned as trailing");
    }
});
