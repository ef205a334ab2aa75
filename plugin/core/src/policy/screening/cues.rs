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
    cue("</system>", TAG),
    cue("<!--", TAG),
    cue("<|im_start|>", TAG),
    cue("[inst]", TAG),
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
    cue("you are now", COMMAND),
    cue("system prompt", PROMPT),
    cue("new instructions", PROMPT),
    cue("before using any tool", SHADOW),
    cue("when this tool is available", SHADOW),
    cue("all other tools", SHADOW),
    cue("any other tool", SHADOW),
    cue("other mcp server", SHADOW),
    cue("another mcp server", SHADOW),
];

/// Places on the user's machine that hold secrets: key files, credential stores, token
/// files, shell history, the MCP clients' own configurations (they hold other servers'
/// tokens). A request for their *contents* is a cue even without an access verb.
pub const SECRET_FILES: &[&str] = &[
    "~/.ssh",
    ".ssh/",
    "id_rsa",
    "id_dsa",
    "id_ed25519",
    "id_ecdsa",
    "authorized_keys",
    ".env",
    ".env.local",
    "/etc/passwd",
    "/etc/shadow",
    ".aws/credentials",
    ".aws/config",
    ".aws/",
    ".azure/",
    ".config/gcloud",
    "application_default_credentials.json",
    ".kube/config",
    ".kube/",
    "kubeconfig",
    ".docker/config.json",
    ".git-credentials",
    ".gitconfig",
    ".config/gh",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".gnupg",
    ".bash_history",
    ".zsh_history",
    "keychain",
    "wallet.dat",
    "mcp.json",
    "claude_desktop_config.json",
    "credentials.json",
    "secrets.json",
];

/// What a tool description has no business asking the model to read or send: the files
/// above, and secrets by name (English, French, Hindi). Variables such as `GITHUB_TOKEN` or
/// `AWS_SECRET_ACCESS_KEY` are recognised by their shape (see [`env_secret`]).
pub const SECRETS: &[&str] = &[
    "private key",
    "private keys",
    "api key",
    "api keys",
    "api_key",
    "apikey",
    "access token",
    "access tokens",
    "bearer token",
    "bearer tokens",
    "session token",
    "auth token",
    "session cookies",
    "cookies",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passphrase",
    "seed phrase",
    "mnemonic",
    "credentials",
    "environment variables",
    "mot de passe",
    "mots de passe",
    "clé privée",
    "clés privées",
    "clé api",
    "identifiants",
    "jeton",
    "पासवर्ड",
    "टोकन",
    "कुंजी",
];

/// Verbs that, at the start of a clause, make a secret a request (English imperatives).
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
    "grab",
    "gather",
    "harvest",
    "steal",
    "transmit",
    "email",
    "paste",
    "insert",
    "supply",
    "submit",
    "report",
    "output",
    "enclose",
    "transfer",
];

/// French and Hindi imperatives that ask to read or send: a request wherever they stand in
/// the clause (French puts a pronoun first, Hindi the verb last). Hindi is matched with its
/// nukta dropped (see [`fold`]). Sorted by bytes: every word of a clause is looked up here.
pub const FOREIGN_VERBS: &[&str] = &[
    "collez",
    "copiez",
    "envoie",
    "envoyer",
    "envoyez",
    "incluez",
    "joignez",
    "joins",
    "lire",
    "lis",
    "lisez",
    "ouvre",
    "ouvrez",
    "passez",
    "recopie",
    "recopiez",
    "transmets",
    "transmettez",
    "transmettre",
    "téléversez",
    "अपलोड",
    "कॉपी",
    "खोलें",
    "खोलो",
    "डालें",
    "पढ",
    "पढें",
    "पढो",
    "भेज",
    "भेजें",
    "भेजो",
];

/// Words that ask for what a file holds ("its content", "the contents of").
const CONTENT_WORDS: &[&str] = &["content", "contents", "contenu", "सामग्री", "output"];

/// Words after which a verb still starts a clause (`first read`, `please send`).
const CLAUSE_LEADS: &[&str] = &[
    "please",
    "then",
    "first",
    "also",
    "and",
    "must",
    "should",
    "always",
    "now",
    "you",
    "quietly",
    "silently",
    "simply",
    "just",
    "the",
    "assistant",
    "model",
    "agent",
    "ai",
    "llm",
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
        // Devanagari nukta: dropped, and the precomposed letters with one (U+0958–U+095F)
        // become their base letter, so both spellings of a Hindi word match one entry.
        if super::hidden::is_invisible(c) || c == '\u{93c}' {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(match c {
            '\u{2019}' | '\u{2018}' => '\'',
            '\u{958}'..='\u{95f}' => nukta_base(c),
            _ => c,
        });
    }
    out
}

/// `c` lower-cased if it is an ASCII or Latin-1 capital (`É` → `é`), else itself.
pub fn lower_latin(c: char) -> char {
    match c {
        'A'..='Z' | '\u{c0}'..='\u{d6}' | '\u{d8}'..='\u{de}' => {
            char::from_u32(u32::from(c).saturating_add(32)).unwrap_or(c)
        }
        _ => c,
    }
}

/// The base letter of a precomposed Devanagari letter with nukta (U+0958–U+095F).
fn nukta_base(c: char) -> char {
    match c {
        '\u{958}' => '\u{915}',
        '\u{959}' => '\u{916}',
        '\u{95a}' => '\u{917}',
        '\u{95b}' => '\u{91c}',
        '\u{95c}' => '\u{921}',
        '\u{95d}' => '\u{922}',
        '\u{95e}' => '\u{92b}',
        _ => '\u{92f}',
    }
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

/// A variable name shaped like a secret: `github_token`, `openai_api_key`,
/// `aws_secret_access_key` (lower-cased; an inner `_` and a secret word at its end).
pub fn env_secret(clause: &str) -> Option<&str> {
    clause
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|word| {
            let word = word.trim_matches('_');
            word.contains('_')
                && ["_token", "_key", "_secret", "_password", "_pat"]
                    .iter()
                    .any(|end| word.ends_with(end))
        })
}

/// The secret a clause names: a file, a name, or a variable.
fn named_secret(clause: &str) -> Option<&'static str> {
    if let Some(file) = SECRET_FILES.iter().find(|s| contains_word(clause, s)) {
        return Some(file);
    }
    if let Some(secret) = SECRETS.iter().find(|s| contains_word(clause, s)) {
        return Some(secret);
    }
    env_secret(clause).map(|_| "an environment secret")
}

/// A request to reach a secret in folded, lower-cased text: `(verb, secret)`. A clause
/// asks when it starts with an English access verb, holds a French or Hindi one anywhere,
/// or asks for the contents of a secret file.
pub fn find_secret_request(folded: &str) -> Option<(&'static str, &'static str)> {
    for clause in clauses(folded) {
        // The verb test is cheap and rarely true: do it before looking for secrets.
        if let Some(verb) = clause_verb(clause)
            && let Some(secret) = named_secret(clause)
        {
            return Some((verb, secret));
        }
        let contents = CONTENT_WORDS.iter().any(|w| contains_word(clause, w));
        if contents && let Some(file) = SECRET_FILES.iter().find(|s| contains_word(clause, s)) {
            return Some(("read the contents of", file));
        }
    }
    None
}

/// The access verb that starts `clause` (after leads such as `please`), that follows
/// `and` / `then` inside it ("… and send it"), or a French or Hindi one anywhere in it.
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
        if matches!(previous, "and" | "then" | "et" | "puis" | "और")
            && let Some(v) = verb(word)
        {
            return Some(v);
        }
        let bare = word.trim_matches(|c: char| c.is_ascii_punctuation());
        if let Ok(i) = FOREIGN_VERBS.binary_search(&bare)
            && let Some(v) = FOREIGN_VERBS.get(i)
        {
            return Some(v);
        }
        previous = word;
    }
    None
}

/// Verbs that send something somewhere (a destination in the same sentence is then a cue).
const SEND_VERBS: &[&str] = &[
    "send",
    "sends",
    "sent",
    "forward",
    "bcc",
    "cc",
    "email",
    "mail",
    "upload",
    "post",
    "posts",
    "transmit",
    "copy",
    "report",
    "sync",
    "synchronised",
    "synchronized",
    "redirect",
    "route",
    "deliver",
    "envoyez",
    "envoie",
    "envoyer",
    "envoyés",
    "transmettez",
    "भेजें",
    "भेज",
    "भेजो",
];

/// An address data is asked to go to: an e-mail address or a phone number in a sentence
/// that sends something (example and test domains excepted).
pub fn find_destination(folded: &str) -> Option<String> {
    // Most text has no address at all: look for one before splitting anything.
    if !folded.contains(['@', '+']) {
        return None;
    }
    for (_, sentence) in super::intent::sentences(folded) {
        if !sentence.contains(['@', '+']) {
            continue;
        }
        let words: Vec<&str> = sentence
            .split(|c: char| c.is_whitespace() || ",()[]{}<>\"'`:".contains(c))
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| !w.is_empty())
            .collect();
        let sends = words.iter().any(|w| SEND_VERBS.contains(w));
        if !sends {
            continue;
        }
        if let Some(address) = words.iter().find(|w| is_email(w) || is_phone(w)) {
            return Some((*address).to_string());
        }
    }
    None
}

fn is_email(word: &str) -> bool {
    let Some((user, domain)) = word.split_once('@') else {
        return false;
    };
    let reserved = [
        "example.com",
        "example.org",
        "example.net",
        "test.com",
        "localhost",
    ];
    !user.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !reserved.iter().any(|r| domain.ends_with(r))
        && !domain.ends_with(".example")
        && !domain.ends_with(".test")
}

/// A URL on a domain reserved for examples (RFC 2606): documentation, not a destination.
fn is_example_url(url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or("")
        .split(['/', ':', '?', '#'])
        .next()
        .unwrap_or("");
    ["example.com", "example.org", "example.net"]
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")))
        || host.ends_with(".example")
        || host.ends_with(".test")
        || host.is_empty()
}

fn is_phone(word: &str) -> bool {
    word.starts_with('+') && word.bytes().filter(u8::is_ascii_digit).count() >= 8
}

/// A send-verb sentence naming an http(s) URL that is not under an allowed prefix: data is
/// asked to go there. A link in prose is documentation and passes.
pub fn find_url_destination(folded: &str, allowed_prefixes: &[String]) -> Option<String> {
    if !folded.contains("http") {
        return None;
    }
    for (_, sentence) in super::intent::sentences(folded) {
        if !sentence.contains("http") {
            continue;
        }
        let sends = sentence
            .split(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
            .any(|w| UPLOAD_VERBS.contains(&w));
        if !sends {
            continue;
        }
        if let Some(url) = find_url_in(sentence, allowed_prefixes, true)
            && !is_example_url(&url)
        {
            return Some(url);
        }
    }
    None
}

/// Verbs that send data to a web address.
const UPLOAD_VERBS: &[&str] = &[
    "send",
    "sends",
    "upload",
    "uploads",
    "post",
    "forward",
    "transmit",
    "exfiltrate",
    "leak",
    "envoyez",
    "envoie",
    "envoyer",
    "transmettez",
    "भेजें",
    "भेज",
];

/// Inline data (`data:`) and local files (`file:`) in prose: a payload to decode or a
/// path to reach, flagged wherever they stand.
pub fn find_url(folded: &str, allowed_prefixes: &[String]) -> Option<String> {
    find_url_in(folded, allowed_prefixes, false)
}

/// The first URL of `folded` not under an allowed prefix: `data:` and `file:` URLs, and
/// with `web` also `http(s)`.
fn find_url_in(folded: &str, allowed_prefixes: &[String], web: bool) -> Option<String> {
    let bytes = folded.as_bytes();
    for (start, b) in bytes.iter().enumerate() {
        // Every flagged scheme starts with `h`, `f` or `d`.
        if !matches!(b, b'h' | b'f' | b'd') {
            continue;
        }
        let rest = folded.get(start..).unwrap_or("");
        let is_web = rest.starts_with("http://") || rest.starts_with("https://");
        let is_url = (web && is_web)
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

/// The words of a property name, lower-cased: split at anything but ASCII letters and digits
/// and at each lower-to-upper case step (`systemPrompt`, `content_from_reading_ssh_id_rsa`).
fn key_words(key: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        let split = !c.is_ascii_alphanumeric() || (previous_lower && c.is_ascii_uppercase());
        if split && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A property name that asks the model to fill it with what it must not hand out: its
/// prompt, the conversation, or the contents of a secret file (`system_prompt`,
/// `conversation_history`, `content_from_reading_ssh_id_rsa`). A parameter that merely
/// names a secret (`password`, `api_key`, `ssh_key_path`) is how honest tools take one.
pub fn find_key_request(key: &str) -> Option<&'static str> {
    let words = key_words(key);
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("system") && (has("prompt") || has("instructions")) {
        return Some("the system prompt");
    }
    if (has("conversation") || has("chat") || has("previous"))
        && (has("history") || has("transcript") || has("messages") || has("log"))
    {
        return Some("the conversation");
    }
    let reading = [
        "content", "contents", "reading", "read", "dump", "copy", "output",
    ];
    let secret_files = [
        "ssh",
        "rsa",
        "ed25519",
        "ecdsa",
        "kube",
        "kubeconfig",
        "aws",
        "netrc",
        "pgpass",
        "env",
        "credentials",
        "gnupg",
        "keychain",
        "npmrc",
        "passwd",
        "shadow",
    ];
    if reading.iter().any(|w| has(w))
        && let Some(file) = secret_files.iter().find(|w| has(w))
    {
        return Some(file);
    }
    None
}
