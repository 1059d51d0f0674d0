//! The per-session audit hash chain of ACS §8 (pure).
//!
//! `entry_hash = SHA-256(JCS(entry) || previous_hash_bytes)`, where the first
//! entry of a session has no previous hash. `request_hash = SHA-256(JCS(params))`.

use crate::jcs::{canonicalize, canonicalize_omitting};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A 32-byte SHA-256 digest.
pub type Hash = [u8; 32];

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

/// Lowercase hex of a digest.
pub fn to_hex(h: &Hash) -> String {
    let mut s = String::with_capacity(64);
    push_hex(&mut s, h);
    s
}

/// Appends the lowercase hex of a digest to `out` (64 bytes written at
/// once, not a character at a time).
pub fn push_hex(out: &mut String, h: &Hash) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 64];
    for (pair, b) in buf.chunks_exact_mut(2).zip(h) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 15)];
    }
    // Every byte is an ASCII hex digit.
    out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
}

/// Parses 64 lowercase hex digits.
pub fn from_hex(s: &str) -> Option<Hash> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        let hi = hex_val(pair[0])?;
        let lo = hex_val(pair[1])?;
        out[i] = (hi << 4) | lo;
    }
    Some(out)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Hash of a request's `params` (the canonical JSON of the object as given).
pub fn request_hash(params: &Value) -> Hash {
    sha256(canonicalize(params).as_bytes())
}

/// [`request_hash`] of `params` without the members at the paths in `omit`
/// (see [`canonicalize_omitting`]), without copying `params`.
pub fn request_hash_omitting(params: &Value, omit: &[&[&str]]) -> Hash {
    sha256(canonicalize_omitting(params, omit).as_bytes())
}

/// Hash of one chain entry given its canonical text and the previous head.
pub fn entry_hash_canonical(canonical: &str, previous: Option<&Hash>) -> Hash {
    let mut h = Sha256::new();
    h.update(canonical.as_bytes());
    if let Some(p) = previous {
        h.update(p);
    }
    h.finalize().into()
}

/// Hash of one chain entry (a ContextEntry object) given the previous head.
pub fn entry_hash(entry: &Value, previous: Option<&Hash>) -> Hash {
    entry_hash_canonical(&canonicalize(entry), previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_roundtrip() {
        let h = sha256(b"abc");
        let s = to_hex(&h);
        assert_eq!(
            s,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(from_hex(&s), Some(h));
        assert_eq!(from_hex(&s.to_uppercase()), None);
        assert_eq!(from_hex("00"), None);
    }
}
