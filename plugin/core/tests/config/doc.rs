//! `docs/config.md` held to the parser it documents: every ```json example is a
//! configuration that loads, every ```config-error example (a one-line document, then the
//! error) gets exactly the error shown, and every key the parser accepts has a row in the
//! key table. `BLESS=1` rewrites the error lines from the parser (with `-- --test-threads=1`,
//! so no other test reads the file while it is written); review them with git diff.

use std::path::PathBuf;
use toolseal_core::config::Config;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md")
}

/// `(info string, index of the body's first line, body lines)` of every fenced block.
fn fenced_blocks(doc: &str) -> Vec<(String, usize, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, Vec<String>)> = None;
    for (number, line) in doc.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), number + 1, Vec::new())),
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some((_, _, body)), _) => body.push(line.to_owned()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    blocks
}

fn error_of(document: &str) -> String {
    match Config::parse(document.as_bytes()) {
        Ok(_) => "(accepted)".to_owned(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_example_configuration_loads() {
    let doc = std::fs::read_to_string(doc_path()).unwrap();
    let examples: Vec<_> = fenced_blocks(&doc)
        .into_iter()
        .filter(|(info, _, _)| info == "json")
        .collect();
    assert!(examples.len() >= 10, "{} examples", examples.len());
    for (_, start, body) in examples {
        let document = body.join("\n");
        if let Err(e) = Config::parse(document.as_bytes()) {
            let line = start + 1;
            panic!("docs/config.md line {line}: the example is refused: {e}\n{document}");
        }
    }
}

#[test]
fn every_error_shown_is_the_parsers() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).unwrap();
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let mut lines: Vec<String> = doc.lines().map(str::to_owned).collect();
    let mut wrong = Vec::new();
    let mut count = 0;
    for (info, start, body) in fenced_blocks(&doc) {
        if info != "config-error" {
            continue;
        }
        count += 1;
        let line = start + 1;
        let [document, shown] = body.as_slice() else {
            panic!(
                "docs/config.md line {line}: a config-error block is one document line, then its error"
            );
        };
        let actual = error_of(document);
        assert_ne!(
            actual, "(accepted)",
            "docs/config.md line {line}: {document} is accepted"
        );
        if *shown != actual {
            wrong.push(format!(
                "line {}: {document}\n  shown:  {shown}\n  parser: {actual}",
                line + 1
            ));
            lines[start + 1] = actual;
        }
    }
    assert!(count >= 40, "{count} error examples");
    if bless && !wrong.is_empty() {
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        return;
    }
    assert!(
        wrong.is_empty(),
        "docs/config.md shows errors the parser does not give (BLESS=1 rewrites them):\n{}",
        wrong.join("\n")
    );
}

/// The keys an object accepts, read from the parser's own "unknown key" error for `probe`.
fn accepted_keys(probe: &str) -> Vec<String> {
    let error = error_of(probe);
    let (_, list) = error
        .split_once("expected one of: ")
        .unwrap_or_else(|| panic!("{probe}: {error}"));
    list.split(", ").map(str::to_owned).collect()
}

#[test]
fn every_key_the_parser_accepts_has_a_row() {
    let doc = std::fs::read_to_string(doc_path()).unwrap();
    let probes = [
        ("", r#"{"zz": 1}"#),
        ("server_id.", r#"{"server_id": {"zz": 1}}"#),
        ("servers.ID.", r#"{"servers": {"a": {"zz": 1}}}"#),
        ("limits.", r#"{"limits": {"zz": 1}}"#),
        ("fingerprint.", r#"{"fingerprint": {"zz": 1}}"#),
        ("snapshots.", r#"{"snapshots": {"zz": 1}}"#),
        ("screening.", r#"{"screening": {"zz": 1}}"#),
        ("audit.", r#"{"audit": {"zz": 1}}"#),
        ("telemetry.", r#"{"telemetry": {"zz": 1}}"#),
        ("admin.", r#"{"admin": {"zz": 1}}"#),
        ("store.", r#"{"store": {"zz": 1}}"#),
        (
            "store.etcd.",
            r#"{"store": {"etcd": {"cluster": "c", "zz": 1}}}"#,
        ),
    ];
    let mut missing = Vec::new();
    for (prefix, probe) in probes {
        for key in accepted_keys(probe) {
            let documented = |path: &str| doc.contains(&format!("| [`{path}`]("));
            let path = format!("{prefix}{key}");
            // A section (an object of keys) is documented by its keys' rows.
            let section = path == "policy"
                || probes
                    .iter()
                    .any(|(p, _)| p.starts_with(&format!("{path}.")));
            if !section && !documented(&path) {
                missing.push(path);
            }
        }
    }
    for path in ["policy.default", "policy.rules"] {
        if !doc.contains(&format!("| [`{path}`](")) {
            missing.push(path.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "keys without a row in docs/config.md: {missing:?}"
    );
}
