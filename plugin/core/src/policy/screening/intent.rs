//! Cues by meaning: what a sentence asks the model to do, matched as a few words in order
//! (with up to [`GAP`] other words between them) rather than as one fixed phrase, in
//! English, French and Hindi.
//!
//! Main design decision: a cue is an *intent that an honest tool has no reason to state*,
//! never a tone. Honest servers command the model all the time (`You MUST call this function
//! before 'Query Documentation'`, `confirm the user's plan before using this tool`, `you
//! should always default to using this tool`: all real, all recorded in the corpus); what
//! poisoned ones add is one of the six families below: override the model's instructions,
//! hide something from the user, reach into the conversation or the prompt, redirect
//! another tool or server, run a shell payload, or run down the other tools. Each family is
//! a short table of word slots, so a new phrasing of the same intent needs no new entry
//! (`do not mention this to the user`, `never tell the user`, `without informing the
//! human`). Matching is bounded: one pass over the words of each sentence, a sorted index
//! of the words a pattern can start with, and patterns of at most five slots.

use std::cmp::Ordering;

/// Most words allowed between two slots of a pattern.
pub const GAP: usize = 4;

/// What a matched pattern says the text is trying to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Override, replace or bypass the model's earlier instructions or its limits.
    Override,
    /// Hide something from the user.
    Conceal,
    /// Pass the conversation, the prompt or the user's messages somewhere.
    Exfiltrate,
    /// Change how another tool or another server is used.
    Shadow,
    /// Steer the model away from other tools by running them down.
    Preference,
    /// A shell payload to run.
    Command,
    /// Act without the user's confirmation.
    SkipConsent,
}

impl Intent {
    /// Short name shown in a finding.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Override => "overrides instructions",
            Intent::Conceal => "hides from the user",
            Intent::Exfiltrate => "exfiltrates the conversation",
            Intent::Shadow => "redirects another tool",
            Intent::Preference => "runs down other tools",
            Intent::Command => "shell payload",
            Intent::SkipConsent => "skips the user's consent",
        }
    }
}

/// A pattern: slots of `|`-separated words, in order; a word ending in `*` is a prefix
/// (never in the first slot, which is looked up exactly in an index).
pub struct Pattern {
    /// What a match means.
    pub intent: Intent,
    /// The slots.
    pub slots: &'static [&'static str],
}

const fn pat(intent: Intent, slots: &'static [&'static str]) -> Pattern {
    Pattern { intent, slots }
}

use Intent::{Command, Conceal, Exfiltrate, Override, Preference, Shadow, SkipConsent};

const NEG: &str = "not|never|t|without|avoid|no";
const TELL: &str = "tell*|mention*|inform*|reveal*|disclos*|notify*|alert*|say|warn*";
const USER: &str = "user|users|human|humans|them|anyone|him|her|operator";
const INSTRUCTIONS: &str = "instruction*|rule*|guideline*|guidance|direction*|prompt*|directive*|polic*|constraint*|restriction*|safeguard*|consigne*|règle*";
const EARLIER: &str = "previous|prior|earlier|above|preceding|original|all|any|your|system|safety|existing|other|précédente*|antérieure*|tes|vos|les";
const OTHERS: &str = "other|others|alternative|alternatives|competing|rest|another|autres|autre";
const TOOLS: &str =
    "tool*|search*|option*|translator*|engine*|server*|service*|provider*|outil*|alternative*";
const BAD: &str = "inaccurate|outdated|unreliable|deprecated|wrong|fabricated|insecure|unsafe|broken|obsolete|error*|incorrect|inferior|buggy|untrustworthy|obsolète*|erreur*|inexact*|dangereu*|mauvais*|गलत|पुराने|अविश्वसनीय|खतरनाक";
const PASS: &str = "pass|include|send|forward|append|attach|paste|supply|provide|copy|fill|upload|joins|joignez|joindre|envoie|envoyez|envoyer|transmets|transmettez|transmettre|incluez|inclure";
const WHOLE: &str = "entire|full|complete|whole|all|every|previous|last|prior|toute|tout|complet";
const CONVERSATION: &str =
    "conversation*|chat|chats|history|transcript*|dialog*|historique|discussion*";
const USE: &str = "use|uses|used|using|call|calls|called|calling|invoke*|invoking|run|runs|utilis*|appel*|उपयोग|इस्तेमाल";

/// The patterns, family by family. `@tool` is a word shaped like a tool name (an inner
/// `_`) that is not a tool of the screened set: another server's tool.
pub const PATTERNS: &[Pattern] = &[
    // Override: "ignore all previous instructions", "disregard any earlier guidance".
    pat(
        Override,
        &[
            "ignore|disregard|forget|bypass|overrule|ignorez|ignorer|oublie|oubliez|oublier",
            EARLIER,
            INSTRUCTIONS,
        ],
    ),
    pat(
        Override,
        &[
            "ignore|disregard|forget|bypass|ignorez|oublie|oubliez",
            INSTRUCTIONS,
        ],
    ),
    pat(
        Override,
        &[
            "you",
            "granted|given",
            "full|unrestricted|admin*|root|elevated|all",
            "permission*|access|privilege*|right*",
        ],
    ),
    pat(
        Override,
        &[
            "you",
            "are",
            "now",
            "in|an|a|the",
            "mode|administrator|admin|developer|unrestricted|jailbroken",
        ],
    ),
    pat(Override, &["from", "now", "on"]),
    pat(Override, &["désormais|dorénavant"]),
    pat(
        Override,
        &["निर्देशों|निर्देश|नियमों|नियम", "अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल*"],
    ),
    // Conceal: "do not tell the user", "without informing the human", "the user does not need to know".
    pat(Conceal, &[NEG, TELL, USER]),
    pat(
        Conceal,
        &[
            "user|human",
            "not|t|never|no",
            "need*|know|see|notice|aware|told",
        ],
    ),
    pat(
        Conceal,
        &[
            "silently|quietly|secretly|covertly|discreetly|invisibly|stealthily",
            "append*|add*|include*|send*|read*|copy*|forward*|open*|upload*|attach*|pass*|run*|execut*|collect*|record*|sync*",
        ],
    ),
    pat(
        Conceal,
        &["keep", "this|it|that", "secret|hidden|confidential|between"],
    ),
    pat(
        Conceal,
        &[
            "ne|n|sans|jamais",
            "dit*|dis|dire|mention*|parl*|inform*|signal*|préven*|révél*",
            "utilisateur*|lui",
        ],
    ),
    pat(Conceal, &["en", "silence"]),
    pat(Conceal, &["discrètement|secrètement"]),
    pat(Conceal, &["न|मत|नहीं", "बता*"]),
    pat(Conceal, &["बताए|बताये", "बिना"]),
    pat(Conceal, &["चुपचाप|गुप्त"]),
    // Exfiltrate: the conversation or the prompt passed somewhere.
    pat(Exfiltrate, &[PASS, WHOLE, CONVERSATION]),
    pat(
        Exfiltrate,
        &[
            "entire|full|complete|whole",
            "conversation|chat",
            "history|log|logs|transcript",
        ],
    ),
    pat(Exfiltrate, &["system", "prompt|prompts"]),
    pat(
        Exfiltrate,
        &["historique", "conversation|discussion|messages"],
    ),
    pat(Exfiltrate, &["पूरी|सारी|पिछली", "बातचीत|चैट"]),
    // Shadow: another server's tools, recipients rewritten.
    pat(
        Shadow,
        &[
            "another|other|every|different|autre|autres",
            "server|servers|serveur|serveurs",
        ],
    ),
    pat(Shadow, &["दूसरे|अन्य", "सर्वर"]),
    pat(
        Shadow,
        &[
            "change|replace|redirect|swap|substitute|rewrite|remplace|remplacez|changez",
            "recipient*|destination*|destinataire*|receiver*",
        ],
    ),
    pat(
        Shadow,
        &[
            "recipient|recipients|receiver|destinataire",
            "must|should|replaced|changed|always|doit",
        ],
    ),
    pat(
        Shadow,
        &[
            "regardless|irrespective",
            "user",
            "specif*|say*|ask*|want*|request*|choos*|provid*|enter*|give*",
        ],
    ),
    pat(Shadow, &["side", "effect|effects", "tool*|on"]),
    pat(
        Shadow,
        &[
            "other|all|every|any",
            "tool|tools",
            "must|should|need|needs",
        ],
    ),
    pat(
        Shadow,
        &[
            "when|whenever|lorsque|quand|जब",
            USE,
            "tool|outil|टूल|function|fonction",
            "@tool",
        ],
    ),
    pat(
        Shadow,
        &[
            "when|whenever|lorsque|quand|जब",
            "@tool",
            "tool|outil|टूल|invoked|called|used|utilisé|appelé",
        ],
    ),
    // Preference: other tools run down or excluded.
    pat(Preference, &[OTHERS, TOOLS, BAD]),
    pat(
        Preference,
        &[
            "not|never|t|avoid|ne|n|jamais",
            "use|call|choose|select|pick|trust|rely|utilis*",
            OTHERS,
        ],
    ),
    pat(Preference, &["over|instead|rather|plutôt", OTHERS, TOOLS]),
    pat(Preference, &["forget|ignore|oubliez|ignorez", OTHERS]),
    pat(
        Preference,
        &[
            "only",
            "trustworthy|reliable|secure|correct|accurate|official|trusted|legitimate",
            "way|tool|source|option|method",
        ],
    ),
    pat(Preference, &["अन्य", "टूल*", BAD]),
    pat(Preference, &["हमेशा", "इसी|केवल|सिर्फ", "टूल"]),
    // Skip consent: "without asking the user", "without user confirmation". Not "without
    // asking" alone: "don't fall back to text without asking" is honest (blender-mcp).
    pat(
        SkipConsent,
        &[
            "without|skip|skipping|bypass|bypassing|sans",
            "ask*|confirm*|approval|permission|consent|demander",
            "user|users|human|utilisateur",
        ],
    ),
    pat(
        SkipConsent,
        &[
            "without|sans",
            "user|human|utilisateur",
            "confirm*|approval|permission|consent|accord",
        ],
    ),
    // Command: a payload for the shell.
    pat(Command, &["curl|wget", "sh|bash|zsh|python|python3"]),
    pat(Command, &["rm", "rf|fr", "~|home|root"]),
    pat(Command, &["chmod", "r|777|0777|0666|666"]),
];

/// A word of `text`: a run of characters that are not whitespace or punctuation, and the
/// byte range it spans. Apostrophes split words (`n't` gives `t`, `l'outil` gives `outil`).
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let part = !(c.is_whitespace() || is_punctuation(c));
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, text.get(s..i).unwrap_or("")));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.get(s..).unwrap_or("")));
    }
    out
}

fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '~' || c == '_');
    }
    matches!(
        c,
        '’' | '‘'
            | '“'
            | '”'
            | '«'
            | '»'
            | '—'
            | '–'
            | '…'
            | '।'
            | '॥'
            | '。'
            | '，'
            | '、'
            | '：'
            | '；'
            | '！'
            | '？'
            | '\u{a0}'
    )
}

/// Sentences of folded text with their byte offsets: split at `.`, `!`, `?`, `;` followed by
/// a space or the end (a dot inside a path, a URL or an address does not end a sentence), and
/// always at `>` (the end of pseudo-markup), `।`, the full-width stops and a line break, so a
/// pattern never spans two.
pub fn sentences(text: &str) -> Vec<(usize, &str)> {
    let mut start = 0;
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at_end = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let ends = match c {
            '.' | '!' | '?' | ';' => at_end,
            '>' | '।' | '。' | '！' | '？' | '\n' => true,
            _ => false,
        };
        if ends {
            out.push((start, text.get(start..i).unwrap_or("")));
            start = i.saturating_add(c.len_utf8());
        }
    }
    out.push((start, text.get(start..).unwrap_or("")));
    out
}

fn alternative_matches(alternative: &str, word: &str) -> bool {
    match alternative.strip_suffix('*') {
        Some(prefix) => word.starts_with(prefix),
        None => alternative == word,
    }
}

fn slot_matches(slot: &str, word: &str, known: Known<'_>) -> bool {
    if slot == "@tool" {
        let (names, params) = known;
        return word.trim_matches('_').contains('_')
            && names.binary_search(&word).is_err()
            && params.binary_search(&word).is_err();
    }
    slot.split('|').any(|a| alternative_matches(a, word))
}

/// The words patterns start with, sorted, with the pattern each starts.
pub struct Index {
    starts: Vec<(&'static str, usize)>,
}

impl Index {
    /// Builds the index of [`PATTERNS`] (once per screened set).
    pub fn new() -> Index {
        let mut starts: Vec<(&'static str, usize)> = PATTERNS
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                let first = p.slots.first().copied().unwrap_or("");
                first.split('|').map(move |w| (w, i))
            })
            .collect();
        crate::wire::order::sort(&mut starts);
        starts.dedup();
        Index { starts }
    }

    /// The patterns that can start at `word`.
    fn starting<'s>(&'s self, word: &'s str) -> impl Iterator<Item = usize> + 's {
        let from = self
            .starts
            .partition_point(|(w, _)| w.cmp(&word) == Ordering::Less);
        self.starts
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .take_while(move |(w, _)| *w == word)
            .map(|(_, i)| *i)
    }
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

/// Where the slots after the first match, starting after word `at`: the index of the last
/// matched word.
/// The set's tool names and the screened tool's parameter names, both sorted.
type Known<'a> = (&'a [&'a str], &'a [&'a str]);

fn rest_matches(
    slots: &[&str],
    words: &[(usize, &str)],
    at: usize,
    known: Known<'_>,
) -> Option<usize> {
    let Some((slot, rest)) = slots.split_first() else {
        return Some(at);
    };
    let from = at.saturating_add(1);
    let to = from.saturating_add(GAP).saturating_add(1).min(words.len());
    (from..to).find_map(|j| {
        let (_, word) = words.get(j)?;
        if slot_matches(slot, word, known) {
            rest_matches(rest, words, j, known)
        } else {
            None
        }
    })
}

/// The first match in `lower` (lower-cased folded text): its intent and the byte range of
/// the matched words. `names` are the screened set's tool names and `params` the tool's
/// parameter names, both sorted: neither is another server's tool.
pub fn find_intent(
    lower: &str,
    index: &Index,
    names: &[&str],
    params: &[&str],
) -> Option<(Intent, usize, usize)> {
    for (offset, sentence) in sentences(lower) {
        let list = words(sentence);
        for (i, (start, word)) in list.iter().enumerate() {
            for p in index.starting(word) {
                let Some(pattern) = PATTERNS.get(p) else {
                    continue;
                };
                let rest = pattern.slots.get(1..).unwrap_or(&[]);
                if let Some(last) = rest_matches(rest, &list, i, (names, params)) {
                    let (end_start, end_word) = list.get(last).copied().unwrap_or((*start, ""));
                    let from = offset.saturating_add(*start);
                    let to = offset
                        .saturating_add(end_start)
                        .saturating_add(end_word.len());
                    return Some((pattern.intent, from, to));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pattern_starts_with_a_prefix() {
        for p in PATTERNS {
            let first = p.slots.first().copied().unwrap_or("*");
            assert!(!first.split('|').any(|w| w.ends_with('*')), "{first}");
            assert!(p.slots.len() <= 5);
        }
    }
}
