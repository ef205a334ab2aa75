//! References from one tool's text to other tools: the shapes that shadow or redirect
//! another tool's use ("instead of X", "when calling X", "X must also").
//!
//! Main design decision: only redirecting shapes count. A description that merely names a
//! sibling (`DEPRECATED: Use read_text_file instead`, real in the reference filesystem
//! server) is documentation; one that changes how *another* tool is used is how a server
//! shadows tools, its own or another server's. Outside the set, a word counts as a tool name
//! when it is shaped like one (`send_email`, `sendEmail`, `github.create_issue` with `_`).

/// Phrases after which the next word is the tool being redirected.
const BEFORE: &[&str] = &[
    "instead of calling",
    "instead of using",
    "instead of invoking",
    "instead of",
    "rather than calling",
    "rather than using",
    "rather than",
    "when calling",
    "whenever calling",
    "when using",
    "whenever using",
    "when invoking",
    "before calling",
    "before using",
    "before invoking",
    "after calling",
    "after using",
    "also call",
    "also use",
    "also invoke",
    "never call",
    "never use",
    "do not call",
    "do not use",
    "don't call",
    "don't use",
];

/// The first letters of the [`BEFORE`] phrases (`instead`, `rather`, `when`, `before`,
/// `after`, `also`, `never`, `do`, `don't`): where a phrase can begin.
const BEFORE_FIRST_WORDS: &[char] = &['i', 'r', 'w', 'b', 'a', 'n', 'd'];

/// Phrases after a tool name that instruct about that tool.
const AFTER: &[&str] = &[" must", " should", " tool must", " tool should"];

/// Words skipped between a phrase and the tool name.
const FILLERS: &[&str] = &["the", "a", "an", "tool", "function"];

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-".contains(c)
}

/// A word shaped like a tool name: an underscore, or a lower-to-upper case step.
fn looks_like_tool(word: &str) -> bool {
    let has_underscore = word.trim_matches('_').contains('_');
    let camel = word
        .as_bytes()
        .windows(2)
        .any(|w| matches!(w, [a, b] if a.is_ascii_lowercase() && b.is_ascii_uppercase()));
    has_underscore || camel
}

/// The first word of `text` after skipping fillers, with the dots that end a sentence cut.
fn next_word(text: &str) -> &str {
    let mut rest = text.trim_start();
    for _ in 0..3 {
        let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        let word = rest.get(..end).unwrap_or("").trim_end_matches(['.', '-']);
        if !FILLERS.contains(&word.to_ascii_lowercase().as_str()) {
            return word;
        }
        rest = rest.get(end..).unwrap_or("").trim_start();
    }
    ""
}

/// The first redirecting reference in `text` (folded with case kept; `folded` is the same
/// text lower-cased, so byte offsets agree): the phrase and the tool it names. `names` are
/// the set's tools, `params` the tool's own property names (both sorted): a parameter
/// shaped like a tool name (`projectSlug`) is not another tool.
pub fn find_reference(
    text: &str,
    folded: &str,
    names: &[&str],
    params: &[&str],
    own: &str,
) -> Option<String> {
    // One pass over word starts; a phrase is only tried where its first word begins.
    let bytes = folded.as_bytes();
    for (start, _) in folded.match_indices(BEFORE_FIRST_WORDS) {
        let word_start = start == 0
            || !bytes
                .get(start.saturating_sub(1))
                .is_some_and(|b| b.is_ascii_alphanumeric());
        if !word_start {
            continue;
        }
        let rest = folded.get(start..).unwrap_or("");
        for phrase in BEFORE.iter().filter(|p| rest.starts_with(*p)) {
            let end = start.saturating_add(phrase.len());
            let word = next_word(text.get(end..).unwrap_or(""));
            let named = names.binary_search(&word).is_ok() && word != own;
            let other =
                looks_like_tool(word) && word != own && params.binary_search(&word).is_err();
            if !word.is_empty() && (named || other) {
                return Some(format!("{phrase} {word}"));
            }
        }
    }
    for after in AFTER {
        let mut from = 0;
        while let Some(pos) = folded.get(from..).and_then(|r| r.find(after)) {
            let start = from.saturating_add(pos);
            let end = start.saturating_add(after.len());
            let head = text.get(..start).unwrap_or("");
            let word_begin = head
                .rfind(|c: char| !is_name_char(c))
                .map_or(0, |i| i.saturating_add(1));
            let word = head.get(word_begin..).unwrap_or("");
            let ends_word = !folded
                .as_bytes()
                .get(end)
                .is_some_and(|b| b.is_ascii_alphanumeric());
            if ends_word && word != own && names.binary_search(&word).is_ok() {
                return Some(format!("{word}{after}"));
            }
            from = end;
        }
    }
    None
}
