//! Instruction cues: phrases in tool metadata that speak to the model rather than describe
//! the tool, and requests to reach secrets.
//!
//! Main design decision: a short curated list, each phrase with the reason it is there, and
//! matching on folded text (ASCII case folded, whitespace runs collapsed, hidden characters
//! dropped) so that line breaks or zero-width characters cannot split a phrase. Words that
//! honest descriptions use every day (`ignore`, `must`, `password`) are only cues in the
//! shapes listed here: a secret counts only with an imperative verb at the start of a clause.

/// A cue phrase (lowercase, single spaces) and why it is suspicious.
pub struct Cue {
    /// The phrase as matched in folded text.
    pub phrase: &'static str,
    /// Why it is on the list (shown in docs/screening.md).
    pub reason: &'static str,
}

const fn cue(phrase: &'static str, reason: &'static str) -> Cue {
    Cue { phrase, reason }
}

const OVERRIDE: &str = "tries to override the model's earlier instructions";
const TAG: &str = "pseudo-markup that real prompt injections use to look authoritative";
const CONCEAL: &str = "asks the model to hide something from the user";
const COMMAND: &str = "commands the model instead of describing the tool";
const PROMPT: &str = "talks about the model's own prompt or instructions";
const PRECONDITION: &str =
    "a precondition injected before the tool may be used (classic tool poisoning)";
const CONSENT: &str = "asks the model to skip the user's confirmation";
const SHADOW: &str = "reaches beyond this tool to other tools or servers";

/// The curated cue list.
pub const CUES: &[Cue] = &[
    cue("ignore previous instructions", OVERRIDE),
    cue("ignore all previous", OVERRIDE),
    cue("ignore all prior", OVERRIDE),
    cue("ignore prior instructions", OVERRIDE),
    cue("ignore the above", OVERRIDE),
    cue("ignore your instructions", OVERRIDE),
    cue("disregard previous", OVERRIDE),
    cue("disregard all prior", OVERRIDE),
    cue("disregard your instructions", OVERRIDE),
    cue("forget your instructions", OVERRIDE),
    cue("forget all previous", OVERRIDE),
    cue("<important>", TAG),
    cue("</important>", TAG),
    cue("<system>", TAG),
    cue("<instructions>", TAG),
    cue("[system]", TAG),
    cue("[instructions]", TAG),
    cue("do not tell the user", CONCEAL),
    cue("don't tell the user", CONCEAL),
    cue("do not mention", CONCEAL),
    cue("don't mention", CONCEAL),
    cue("do not inform the user", CONCEAL),
    cue("don't inform the user", CONCEAL),
    cue("without telling the user", CONCEAL),
    cue("without informing the user", CONCEAL),
    cue("hide this from the user", CONCEAL),
    cue("the user will not see", CONCEAL),
    cue("never reveal", CONCEAL),
    cue("you must", COMMAND),
    cue("you are now", COMMAND),
    cue("it is very important that you", COMMAND),
    cue("system prompt", PROMPT),
    cue("your instructions", PROMPT),
    cue("new instructions", PROMPT),
    cue("before using this tool", PRECONDITION),
    cue("before calling this tool", PRECONDITION),
    cue("before using any tool", PRECONDITION),
    cue("prior to using this tool", PRECONDITION),
    cue("without asking", CONSENT),
    cue("without confirmation", CONSENT),
    cue("without user confirmation", CONSENT),
    cue("do not ask the user", CONSENT),
    cue("don't ask the user", CONSENT),
    cue("when this tool is available", SHADOW),
    cue("all other tools", SHADOW),
    cue("any other tool", SHADOW),
    cue("other mcp server", SHADOW),
    cue("another mcp server", SHADOW),
];

/// Things a tool description has no business asking the model to read or send.
pub const SECRETS: &[&str] = &[
    "~/.ssh",
    ".ssh/",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    ".env",
    "/etc/passwd",
    "/etc/shadow",
    ".aws/credentials",
    ".netrc",
    ".npmrc",
    ".pgpass",
    "mcp.json",
    "private key",
    "api key",
    "api_key",
    "access token",
    "secret",
    "password",
    "passphrase",
    "credentials",
];

/// Verbs that, at the start of a clause, make a secret a request.
pub const ACCESS_VERBS: &[&str] = &[
    "read",
    "send",
    "include",
    "upload",
    "exfiltrate",
    "attach",
    "forward",
    "copy",
    "cat",
    "leak",
    "dump",
    "append",
    "embed",
    "pass",
    "post",
    "share",
    "extract",
    "collect",
    "print",
    "reveal",
    "open",
    "load",
    "fetch",
    "provide",
];

/// Words after which a verb still starts a clause (`first read`, `please send`).
const CLAUSE_LEADS: &[&str] = &[
    "please", "then", "first", "also", "and", "must", "should", "always", "now", "you",
];

/// Text prepared for phrase matching: whitespace runs become one space and hidden characters
/// are dropped (case is kept; lower-case it with `to_ascii_lowercase`, which keeps offsets).
pub fn fold(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut space = false;
    for c in text.chars().take(max_chars) {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if super::hidden::is_invisible(c) {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// The listed cues found in lower-cased folded text, in list order, with the byte offset of
/// the first occurrence (the same offset in the case-kept folded text shows it as written).
pub fn find_cues(folded: &str) -> impl Iterator<Item = (&'static Cue, usize)> + '_ {
    CUES.iter()
        .filter_map(move |c| folded.find(c.phrase).map(|at| (c, at)))
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `needle` occurs in `hay` with no word character on either side.
pub fn contains_word(hay: &str, needle: &str) -> bool {
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(pos) = hay.get(from..).and_then(|rest| rest.find(needle)) {
        let start = from.saturating_add(pos);
        let end = start.saturating_add(needle.len());
        let before = start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
        let after = bytes.get(end).copied();
        let first = needle.as_bytes().first().copied().unwrap_or(b' ');
        let last = needle.as_bytes().last().copied().unwrap_or(b' ');
        let open = !is_word_byte(first) || !before.is_some_and(is_word_byte);
        let close = !is_word_byte(last) || !after.is_some_and(is_word_byte);
        // `.env` is a file only when the dot is not part of a longer name (`process.env`).
        let dotted = first == b'.' && before.is_some_and(|b| is_word_byte(b) || b == b'.');
        if open && close && !dotted {
            return true;
        }
        from = start.saturating_add(1);
        while from < hay.len() && !hay.is_char_boundary(from) {
            from = from.saturating_add(1);
        }
    }
    false
}

/// Clauses of folded text: split at sentence ends (`. `, `! `, `? `), `;`, `:` and commas.
fn clauses(folded: &str) -> impl Iterator<Item = &str> {
    folded
        .split(['!', '?', ';', ',', ':', '\n'])
        .flat_map(|s| s.split(". "))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A secret named in a clause that starts with an access verb: `(verb, secret)`.
pub fn find_secret_request(folded: &str) -> Option<(&'static str, &'static str)> {
    for clause in clauses(folded) {
        // The verb test is cheap and rarely true: do it before looking for secrets.
        let Some(verb) = clause_verb(clause) else {
            continue;
        };
        if let Some(secret) = SECRETS.iter().find(|s| contains_word(clause, s)) {
            return Some((verb, secret));
        }
    }
    None
}

/// The access verb that starts `clause` (after leads such as `please`), or that follows
/// `and` / `then` inside it ("… and send it").
fn clause_verb(clause: &str) -> Option<&'static str> {
    let verb = |word: &str| ACCESS_VERBS.iter().find(|v| **v == word).copied();
    let first = clause
        .split(' ')
        .find(|w| !CLAUSE_LEADS.contains(w))
        .unwrap_or("");
    if let Some(v) = verb(first) {
        return Some(v);
    }
    let mut previous = "";
    for word in clause.split(' ') {
        if matches!(previous, "and" | "then")
            && let Some(v) = verb(word)
        {
            return Some(v);
        }
        previous = word;
    }
    None
}

/// URL schemes that are flagged in prose: a link to follow or data to decode.
pub fn find_url(folded: &str, allowed_prefixes: &[String]) -> Option<String> {
    let bytes = folded.as_bytes();
    for (start, b) in bytes.iter().enumerate() {
        // Every flagged scheme starts with `h`, `f` or `d`.
        if !matches!(b, b'h' | b'f' | b'd') {
            continue;
        }
        let rest = folded.get(start..).unwrap_or("");
        let is_url = rest.starts_with("http://")
            || rest.starts_with("https://")
            || rest.starts_with("file:/")
            || (rest.starts_with("data:") && is_data_url(rest.get(5..).unwrap_or("")));
        let at_word_start = start == 0
            || !bytes
                .get(start.saturating_sub(1))
                .copied()
                .is_some_and(is_word_byte);
        if !is_url || !at_word_start {
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{}`".contains(c))
            .unwrap_or(rest.len());
        let url = rest
            .get(..end)
            .unwrap_or(rest)
            .trim_end_matches(['.', ',', ';', ':']);
        if !allowed_prefixes.iter().any(|p| url.starts_with(p.as_str())) {
            return Some(url.to_string());
        }
    }
    None
}

/// `data:` followed by a media type (`text/plain`, `image/png;base64`) or `,` / `;base64`.
fn is_data_url(after: &str) -> bool {
    if after.starts_with(',') || after.starts_with(";base64") {
        return true;
    }
    let kind: String = after
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    !kind.is_empty() && after.get(kind.len()..).is_some_and(|r| r.starts_with('/'))
}
