//! The JSON Schema compiler and validator. Half the inputs are raw bytes read as a schema and
//! an instance: compiling and validating never panic, and validating twice gives the same
//! violations. The other half are schemas built from every supported keyword
//! (`toolseal_fuzz::schema_gen`) with instances near their boundaries: whatever toolseal
//! compiles, the `jsonschema` crate (draft 2020-12, an independent implementation) compiles
//! too and agrees on validity, unless toolseal ran out of its work budget (a violation, fail
//! closed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolseal_core::policy::schema::compile;
use toolseal_core::wire::json::parse_strict;
use toolseal_fuzz::bytes::Choices;
use toolseal_fuzz::schema_gen;

fn raw(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = (usize::from(split) * 4).min(rest.len());
    let (schema, instance) = rest.split_at(at);
    let Ok(schema) = parse_strict(schema, 64) else {
        return;
    };
    let Ok(compiled) = compile(&schema) else {
        return;
    };
    let instance = parse_strict(instance, 64).unwrap_or(Value::Null);
    assert_eq!(compiled.validate(&instance), compiled.validate(&instance));
    assert_eq!(
        compiled.is_valid(&instance),
        compiled.validate(&instance).is_ok()
    );
}

fn differential(data: &[u8]) {
    let mut c = Choices::new(data);
    let schema = schema_gen::root(&mut c);
    let Ok(ours) = compile(&schema) else { return };
    let reference = match jsonschema::draft202012::new(&schema) {
        Ok(v) => v,
        Err(e) => panic!("toolseal compiles a schema the reference refuses: {schema}: {e}"),
    };
    for _ in 0..4 {
        let instance = schema_gen::value(&mut c, 3);
        let verdict = ours.validate(&instance);
        if let Err(violations) = &verdict
            && violations
                .iter()
                .any(|v| v.message.contains("work budget") || v.message.contains("too deep"))
        {
            continue;
        }
        assert_eq!(
            verdict.is_ok(),
            reference.is_valid(&instance),
            "schema {schema}\ninstance {instance}\ntoolseal: {verdict:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((mode, rest)) if mode & 1 == 0 => raw(rest),
        Some((_, rest)) => differential(rest),
        None => {}
    }
});
