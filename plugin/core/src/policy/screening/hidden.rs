//! Characters a human reviewer does not see but a model reads.
//!
//! Main design decision: a hand-kept table of code point ranges (no Unicode database in the
//! `.wasm`): tag characters, zero-width and bidirectional controls, every other control and
//! format character (general categories Cc and Cf) except newline and tab, invisible fillers,
//! variation selectors outside an emoji, and private-use characters. Each range says why it
//! is listed, and the finding names the first such character.

/// A class of hidden character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenClass {
    /// U+E0000–U+E007F: invisible tags that spell ASCII (used to smuggle text).
    Tag,
    /// Zero-width spaces, joiners, word joiner, byte order mark.
    ZeroWidth,
    /// Bidirectional embeddings, overrides and isolates (reorder what is displayed).
    Bidi,
    /// C0/C1 control characters other than newline and tab.
    Control,
    /// Other format characters (Cf) and invisible fillers.
    Format,
    /// Variation selectors not attached to an emoji-like character.
    VariationSelector,
    /// Private-use characters (no agreed glyph).
    PrivateUse,
}

impl HiddenClass {
    /// Short name used in findings.
    pub fn as_str(self) -> &'static str {
        match self {
            HiddenClass::Tag => "tag character",
            HiddenClass::ZeroWidth => "zero-width character",
            HiddenClass::Bidi => "bidi control",
            HiddenClass::Control => "control character",
            HiddenClass::Format => "invisible format character",
            HiddenClass::VariationSelector => "variation selector",
            HiddenClass::PrivateUse => "private-use character",
        }
    }
}

/// Format (Cf) characters and invisible fillers not covered by a more specific class.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),   // soft hyphen
    (0x034F, 0x034F),   // combining grapheme joiner
    (0x0600, 0x0605),   // Arabic number signs
    (0x061C, 0x061C),   // Arabic letter mark
    (0x06DD, 0x06DD),   // Arabic end of ayah
    (0x070F, 0x070F),   // Syriac abbreviation mark
    (0x0890, 0x0891),   // Arabic pound/piastre marks
    (0x08E2, 0x08E2),   // Arabic disputed end of ayah
    (0x115F, 0x1160),   // Hangul fillers
    (0x17B4, 0x17B5),   // Khmer inherent vowels (invisible)
    (0x180B, 0x180F),   // Mongolian variation selectors and vowel separator
    (0x2061, 0x2064),   // invisible math operators
    (0x206A, 0x206F),   // deprecated format characters
    (0x3164, 0x3164),   // Hangul filler
    (0xFFA0, 0xFFA0),   // halfwidth Hangul filler
    (0xFFF9, 0xFFFB),   // interlinear annotation
    (0x110BD, 0x110BD), // Kaithi number sign
    (0x110CD, 0x110CD), // Kaithi number sign above
    (0x13430, 0x1343F), // Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3), // shorthand format controls
    (0x1D173, 0x1D17A), // musical symbol format controls
];

fn in_ranges(c: u32, ranges: &[(u32, u32)]) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// The class of `c` if it is hidden; `previous` is the character before it (a variation
/// selector right after a non-ASCII character selects an emoji or glyph form and is shown).
pub fn classify(c: char, previous: Option<char>) -> Option<HiddenClass> {
    let u = u32::from(c);
    let class = match u {
        0x0A | 0x09 | 0x20..=0x7E => return None,
        0x00..=0x1F | 0x7F..=0x9F => HiddenClass::Control,
        0xE0000..=0xE007F => HiddenClass::Tag,
        0x200B..=0x200D | 0x2060 | 0xFEFF => HiddenClass::ZeroWidth,
        0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069 => HiddenClass::Bidi,
        0xFE00..=0xFE0F => {
            let shown = previous.is_some_and(|p| !p.is_ascii() && !is_variation_selector(p));
            if shown {
                return None;
            }
            HiddenClass::VariationSelector
        }
        0xE0100..=0xE01EF => HiddenClass::VariationSelector,
        0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD => HiddenClass::PrivateUse,
        _ if in_ranges(u, FORMAT) => HiddenClass::Format,
        _ => return None,
    };
    Some(class)
}

fn is_variation_selector(c: char) -> bool {
    matches!(u32::from(c), 0xFE00..=0xFE0F | 0xE0100..=0xE01EF)
}

/// The hidden characters of one string: how many, and the first with its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenScan {
    /// How many hidden characters the string holds.
    pub count: usize,
    /// The first one and its class.
    pub first: (char, HiddenClass),
}

/// Scans `text` for hidden characters.
pub fn scan(text: &str) -> Option<HiddenScan> {
    let mut found: Option<HiddenScan> = None;
    let mut previous = None;
    for c in text.chars() {
        if let Some(class) = classify(c, previous) {
            match found.as_mut() {
                Some(scan) => scan.count = scan.count.saturating_add(1),
                None => {
                    found = Some(HiddenScan {
                        count: 1,
                        first: (c, class),
                    })
                }
            }
        }
        previous = Some(c);
    }
    found
}

/// Whether `c` is dropped when folding text for phrase matching (hidden characters would
/// otherwise split a phrase: `ig\u{200B}nore previous instructions`).
pub fn is_invisible(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control() && c != '\n' && c != '\t';
    }
    classify(c, None).is_some()
}
