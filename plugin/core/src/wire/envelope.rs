//! The envelope of one JSON-RPC response, read without parsing its `result`.
//!
//! Main design decision: the scanner accepts only the plainest response a server sends, an
//! object with exactly the members `jsonrpc`, `id` and `result`, each once, in any order, and
//! nothing after it but whitespace; anything else (another member, a repeated one, a batch, a
//! byte order mark, a syntax error) is `None`, and the caller then takes the strict parser
//! ([`crate::wire::jsonrpc::parse_payload`]), which decides on it as always. The scalars (`jsonrpc`,
//! `id`, the keys) go through [`crate::wire::json::parse_strict`], so they read exactly as the
//! strict parser reads them. The `result` value is not parsed: it is either compared with
//! bytes known to parse (a complete JSON object or array is self-delimiting, so equal bytes
//! at that position parse to the same value at the same depth), or, for bytes that already
//! passed the strict parser, skipped by matching brackets to find where it ends.

use crate::wire::json::parse_strict;
use serde_json::Value;
use std::ops::Range;

/// What the scanner found.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The response id (a string or a number), as the strict parser reads it.
    pub id: Value,
    /// Where the bytes of the `result` value are in the body.
    pub result: Range<usize>,
}

/// How the `result` value is read.
#[derive(Debug, Clone, Copy)]
pub enum ResultBytes<'a> {
    /// It must be exactly `known` (a value known to pass the strict parser). A body already
    /// seen to hold the first `compared` of those bytes from offset `at` (compared as it
    /// arrived, in bytes the host holds unchanged) has only the rest compared when the value
    /// starts there; anywhere else, all of them.
    Known {
        /// The bytes the value must be.
        known: &'a [u8],
        /// Where in the body the bytes already compared start.
        at: usize,
        /// How many of `known`'s first bytes were compared there.
        compared: usize,
    },
    /// Find its end by matching brackets: only for a body that passed the strict parser.
    Parsed,
}

/// Splits `body` into the id and the span of `result` when it is a plain JSON-RPC response
/// (see the module documentation); `None` sends the caller to the strict parser.
pub fn split_response(body: &[u8], result: ResultBytes<'_>) -> Option<Envelope> {
    let mut s = Scanner {
        bytes: body,
        pos: 0,
    };
    s.skip_ws();
    s.eat(b'{')?;
    let (mut jsonrpc, mut id, mut span) = (None, None, None);
    loop {
        s.skip_ws();
        let key = s.scalar()?;
        s.skip_ws();
        s.eat(b':')?;
        s.skip_ws();
        match key.as_str()? {
            "jsonrpc" if jsonrpc.is_none() => jsonrpc = Some(s.scalar()?),
            "id" if id.is_none() => id = Some(s.scalar()?),
            "result" if span.is_none() => span = Some(s.result(result)?),
            _ => return None,
        }
        s.skip_ws();
        if s.eat(b',').is_none() {
            s.eat(b'}')?;
            break;
        }
    }
    s.skip_ws();
    let id = id?;
    let plain = s.pos == body.len()
        && jsonrpc?.as_str() == Some("2.0")
        && (id.is_string() || id.is_number());
    plain.then_some(Envelope { id, result: span? })
}

/// A cursor over the body. Every step is bounded by the body's length.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ResultBytes<'a> {
    /// Exactly these bytes, none of them compared yet.
    pub fn known(known: &'a [u8]) -> Self {
        ResultBytes::Known {
            known,
            at: 0,
            compared: 0,
        }
    }
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// JSON's four whitespace bytes, as serde_json skips them.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    /// A string or a number, parsed strictly; anything else is `None`.
    fn scalar(&mut self) -> Option<Value> {
        let start = self.pos;
        match self.peek()? {
            b'"' => self.skip_string()?,
            b'-' | b'0'..=b'9' => {
                while matches!(
                    self.peek(),
                    Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                ) {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        parse_strict(self.bytes.get(start..self.pos)?, 1).ok()
    }

    /// Moves past a string (the cursor is on its opening quote). Escapes are only skipped
    /// here; [`parse_strict`] checks them when the string is read.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => self.pos = self.pos.saturating_add(2),
                _ => self.pos += 1,
            }
        }
    }

    /// The span of the `result` value.
    fn result(&mut self, result: ResultBytes<'_>) -> Option<Range<usize>> {
        let start = self.pos;
        let ResultBytes::Known {
            known,
            at,
            compared,
        } = result
        else {
            self.skip_container()?;
            return Some(start..self.pos);
        };
        let from = if at == start { compared } else { 0 };
        let end = start.checked_add(known.len())?;
        let rest = start.checked_add(from)?;
        if known.is_empty() || !same_bytes(self.bytes.get(rest..end)?, known.get(from..)?) {
            return None;
        }
        self.pos = end;
        Some(start..end)
    }

    /// Moves past an object or array by matching brackets outside strings.
    fn skip_container(&mut self) -> Option<()> {
        if !matches!(self.peek()?, b'{' | b'[') {
            return None;
        }
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.pos += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
    }
}

/// Whether two byte strings are equal: natively the C library's vectorized `memcmp`; in the
/// `.wasm` [`equal_by_words`], because wasi-libc's `memcmp` goes byte by byte, which would
/// be most of the cost of recognizing a large list again.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    #[cfg(target_arch = "wasm32")]
    let equal = equal_by_words(a, b);
    #[cfg(not(target_arch = "wasm32"))]
    let equal = a == b;
    equal
}

/// Byte-string equality, 64 bytes at a time as four 16-byte lanes (then the rest word by
/// word and the tail byte by byte): no bounds check and no early exit inside a block, so the
/// `.wasm` compares about two bytes per instruction (0.48 guest instructions per byte on
/// wasmtime, 0.9 with 64-bit words; `u128` lanes left to the compiler's own vectorizing cost
/// a 100-tool list 22K instructions more than these).
pub fn equal_by_words(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |w: &[u8; 8]| u64::from_ne_bytes(*w);
    let (blocks_a, rest_a) = a.as_chunks::<64>();
    let (blocks_b, rest_b) = b.as_chunks::<64>();
    if !blocks_equal(blocks_a, blocks_b) {
        return false;
    }
    let (words_a, tail_a) = rest_a.as_chunks::<8>();
    let (words_b, tail_b) = rest_b.as_chunks::<8>();
    words_a.iter().zip(words_b).all(|(u, v)| word(u) == word(v))
        && tail_a.iter().zip(tail_b).all(|(x, y)| x == y)
}

/// Whether two runs of 64-byte blocks are equal: each block's 16-byte lanes XORed pairwise and
/// ORed together, one test per block. In the plugin's `.wasm` (built with `simd128`) a lane is
/// a SIMD vector; elsewhere it is a `u128`, so the native tests run the same steps.
fn blocks_equal(a: &[[u8; 64]], b: &[[u8; 64]]) -> bool {
    a.iter().zip(b).all(|(p, q)| {
        let (p, _) = p.as_chunks::<16>();
        let (q, _) = q.as_chunks::<16>();
        let diff = p.iter().zip(q).fold(lanes::ZERO, |d, (u, v)| {
            lanes::or(d, lanes::xor(lanes::load(u), lanes::load(v)))
        });
        lanes::is_zero(diff)
    })
}

/// The 16-byte lanes of [`blocks_equal`], as SIMD vectors.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::{u8x16, v128, v128_any_true, v128_or, v128_xor};

    pub const ZERO: v128 = u8x16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    #[inline(always)]
    pub fn load(c: &[u8; 16]) -> v128 {
        let [
            x0,
            x1,
            x2,
            x3,
            x4,
            x5,
            x6,
            x7,
            x8,
            x9,
            x10,
            x11,
            x12,
            x13,
            x14,
            x15,
        ] = *c;
        u8x16(
            x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15,
        )
    }

    #[inline(always)]
    pub fn xor(a: v128, b: v128) -> v128 {
        v128_xor(a, b)
    }

    #[inline(always)]
    pub fn or(a: v128, b: v128) -> v128 {
        v128_or(a, b)
    }

    #[inline(always)]
    pub fn is_zero(a: v128) -> bool {
        !v128_any_true(a)
    }
}

/// The 16-byte lanes of [`blocks_equal`], as 128-bit integers.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod lanes {
    pub const ZERO: u128 = 0;

    pub fn load(c: &[u8; 16]) -> u128 {
        u128::from_ne_bytes(*c)
    }

    pub fn xor(a: u128, b: u128) -> u128 {
        a ^ b
    }

    pub fn or(a: u128, b: u128) -> u128 {
        a | b
    }

    pub fn is_zero(a: u128) -> bool {
        a == 0
    }
}
