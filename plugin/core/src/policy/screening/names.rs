//! Tool names: the plain-name rule, mixed scripts, and confusable skeletons.
//!
//! Main design decision: a small hand-written skeleton map instead of the Unicode
//! confusables database (`unicode-security` would grow the `.wasm` by more than a quarter,
//! docs/performance.md). It
//! covers the homoglyphs that matter for names that otherwise pass as ASCII: Cyrillic and
//! Greek letters that look Latin, fullwidth forms, a few Latin lookalikes (dotless i, script
//! l), and the ASCII pairs I/l/1/|, O/0 and rn/m, vv/w. Case is folded, since a model
//! reads `Read_File` and `read_file` as the same tool.

/// The plain tool-name rule `^[A-Za-z0-9_.-]{1,128}$`.
pub fn is_plain(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Cyrillic and Greek letters (and a few Latin lookalikes) with the ASCII letter they pass
/// for.
const HOMOGLYPHS: &[(char, char)] = &[
    // Cyrillic lowercase
    ('а', 'a'),
    ('в', 'b'),
    ('е', 'e'),
    ('ё', 'e'),
    ('һ', 'h'),
    ('і', 'i'),
    ('ї', 'i'),
    ('ј', 'j'),
    ('к', 'k'),
    ('м', 'm'),
    ('н', 'h'),
    ('о', 'o'),
    ('р', 'p'),
    ('с', 'c'),
    ('т', 't'),
    ('у', 'y'),
    ('х', 'x'),
    ('ѕ', 's'),
    ('ԁ', 'd'),
    ('ԛ', 'q'),
    ('ԝ', 'w'),
    ('ӏ', 'l'),
    ('ь', 'b'),
    ('ѡ', 'w'),
    ('ү', 'y'),
    ('ɡ', 'g'),
    // Cyrillic uppercase
    ('А', 'a'),
    ('В', 'b'),
    ('Е', 'e'),
    ('Ё', 'e'),
    ('Н', 'h'),
    ('І', 'l'),
    ('Ї', 'l'),
    ('Ј', 'j'),
    ('К', 'k'),
    ('М', 'm'),
    ('О', 'o'),
    ('Р', 'p'),
    ('С', 'c'),
    ('Т', 't'),
    ('У', 'y'),
    ('Х', 'x'),
    ('Ѕ', 's'),
    ('Ԛ', 'q'),
    ('Ԝ', 'w'),
    ('Ӏ', 'l'),
    ('Ү', 'y'),
    ('З', '3'),
    // Greek lowercase
    ('α', 'a'),
    ('β', 'b'),
    ('γ', 'y'),
    ('ε', 'e'),
    ('ι', 'i'),
    ('κ', 'k'),
    ('ν', 'v'),
    ('ο', 'o'),
    ('ρ', 'p'),
    ('τ', 't'),
    ('υ', 'u'),
    ('χ', 'x'),
    ('ϲ', 'c'),
    ('ϳ', 'j'),
    ('ω', 'w'),
    // Greek uppercase
    ('Α', 'a'),
    ('Β', 'b'),
    ('Ε', 'e'),
    ('Ζ', 'z'),
    ('Η', 'h'),
    ('Ι', 'l'),
    ('Κ', 'k'),
    ('Μ', 'm'),
    ('Ν', 'n'),
    ('Ο', 'o'),
    ('Ρ', 'p'),
    ('Τ', 't'),
    ('Υ', 'y'),
    ('Χ', 'x'),
    ('Ϲ', 'c'),
    // Latin lookalikes
    ('ı', 'i'),
    ('ℓ', 'l'),
    ('ǀ', 'l'),
    ('ɑ', 'a'),
    ('ɩ', 'i'),
    ('ʏ', 'y'),
    ('ᴏ', 'o'),
    ('ꞵ', 'b'),
    ('ø', 'o'),
    ('‐', '-'),
    ('‑', '-'),
    ('‒', '-'),
    ('–', '-'),
    ('−', '-'),
    ('＿', '_'),
    ('․', '.'),
];

/// The single-character part of the skeleton: homoglyph, fullwidth and ASCII lookalikes.
fn prototype(c: char) -> Option<char> {
    match c {
        'I' | 'l' | '1' | '|' => return Some('l'),
        'O' | 'o' | '0' => return Some('o'),
        _ if c.is_ascii() => return Some(c.to_ascii_lowercase()),
        _ => {}
    }
    let u = u32::from(c);
    if (0xFF01..=0xFF5E).contains(&u) {
        return char::from_u32(u - 0xFEE0).and_then(prototype);
    }
    HOMOGLYPHS
        .iter()
        .find(|(from, _)| *from == c)
        .map(|(_, to)| *to)
        .and_then(prototype)
}

/// The skeleton of a name: two names with the same skeleton look alike. Hidden characters
/// are dropped; a character with no known prototype stays as itself.
pub fn skeleton(name: &str) -> String {
    let mut one: String = String::with_capacity(name.len());
    for c in name.chars() {
        if super::hidden::is_invisible(c) {
            continue;
        }
        one.push(prototype(c).unwrap_or(c));
    }
    one.replace("rn", "m").replace("vv", "w")
}

/// Scripts that a name can mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Script {
    /// Latin letters (ASCII and Latin extensions).
    Latin,
    /// Cyrillic letters.
    Cyrillic,
    /// Greek letters.
    Greek,
    /// Any other letter.
    Other,
}

impl Script {
    /// Name used in findings.
    pub fn as_str(self) -> &'static str {
        match self {
            Script::Latin => "Latin",
            Script::Cyrillic => "Cyrillic",
            Script::Greek => "Greek",
            Script::Other => "other",
        }
    }
}

fn script(c: char) -> Option<Script> {
    let u = u32::from(c);
    match u {
        _ if c.is_ascii_alphabetic() => Some(Script::Latin),
        _ if !c.is_alphabetic() => None,
        0x00C0..=0x024F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xFF21..=0xFF5A => {
            Some(Script::Latin)
        }
        0x0250..=0x02AF | 0x1D00..=0x1D7F => Some(Script::Latin),
        0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => {
            Some(Script::Cyrillic)
        }
        0x0370..=0x03FF | 0x1F00..=0x1FFF => Some(Script::Greek),
        _ => Some(Script::Other),
    }
}

/// The scripts of the letters in `name`, in [`Script`] order, when there are more than one.
pub fn mixed_scripts(name: &str) -> Option<Vec<Script>> {
    const ORDER: [Script; 4] = [
        Script::Latin,
        Script::Cyrillic,
        Script::Greek,
        Script::Other,
    ];
    let present: Vec<Script> = name.chars().filter_map(script).collect();
    let seen: Vec<Script> = ORDER.into_iter().filter(|s| present.contains(s)).collect();
    (seen.len() > 1).then_some(seen)
}
