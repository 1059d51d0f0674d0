//! # mnemo-tokens — o200k token counts, cheaply
//!
//! This crate owns token counting with the o200k BPE (the GPT-4o family's),
//! exact to the encoder: the text is split by o200k's pre-tokenisation
//! pattern and each piece is merged by rank, as tiktoken does.
//!
//! The vocabulary is compiled in as one deflated blob of about 1 MB (the
//! tokens' bytes in rank order, written by the build script from
//! `bpe-openai`), and is inflated and indexed on the first count only, so
//! that commands that never count tokens pay nothing for it.
//!
//! Must never: panic on any text, do I/O, or load the vocabulary before a
//! count is asked for.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

static PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.deflate"));

/// o200k's pre-tokenisation, but for its two whitespace alternatives
/// (`\s+(?!\S)` and `\s+`), which need a look-ahead and are handled by hand.
const PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
);

/// A small multiplicative hasher (the vocabulary's keys are short byte
/// strings, and nothing here is adversarial: a slow path is only slower).
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        self.0 = h;
    }
}

type Ranks = HashMap<&'static [u8], u32, BuildHasherDefault<Mix>>;

/// The loaded encoder.
struct Encoder {
    ranks: Ranks,
    pattern: Regex,
}

/// Why the encoder could not be loaded (a broken build; never expected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot load the o200k vocabulary: {}", self.0)
    }
}

impl std::error::Error for LoadError {}

fn load() -> Result<Encoder, LoadError> {
    let blob = miniz_oxide::inflate::decompress_to_vec(PACKED)
        .map_err(|e| LoadError(format!("inflate: {e:?}")))?;
    // The vocabulary lives as long as the process: one allocation, leaked
    // once, so that the index can borrow from it.
    let blob: &'static [u8] = Box::leak(blob.into_boxed_slice());
    let (count, mut rest) = blob
        .split_first_chunk::<4>()
        .ok_or_else(|| LoadError("truncated header".into()))?;
    let count = u32::from_le_bytes(*count);
    let mut ranks = Ranks::with_capacity_and_hasher(count as usize, Default::default());
    for rank in 0..count {
        let (&len, tail) = rest
            .split_first()
            .ok_or_else(|| LoadError(format!("truncated at token {rank}")))?;
        let len = usize::from(len);
        if tail.len() < len {
            return Err(LoadError(format!("truncated at token {rank}")));
        }
        let (token, tail) = tail.split_at(len);
        ranks.insert(token, rank);
        rest = tail;
    }
    let pattern = Regex::new(PATTERN).map_err(|e| LoadError(e.to_string()))?;
    Ok(Encoder { ranks, pattern })
}

static ENCODER: OnceLock<Result<Encoder, LoadError>> = OnceLock::new();

fn encoder() -> Result<&'static Encoder, LoadError> {
    ENCODER.get_or_init(load).as_ref().map_err(Clone::clone)
}

impl Encoder {
    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).copied().unwrap_or(u32::MAX)
    }

    /// Tokens of one piece: merge the adjacent pair of lowest rank until no
    /// pair is in the vocabulary.
    fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.ranks.contains_key(piece) {
            return usize::from(!piece.is_empty());
        }
        // Boundaries of the current parts; `pair[i]` is the rank of parts
        // i and i+1 joined.
        let mut bounds: Vec<usize> = (0..=piece.len()).collect();
        let joined = |b: &[usize], i: usize| -> u32 {
            match (b.get(i), b.get(i + 2)) {
                (Some(&s), Some(&e)) => self.rank(&piece[s..e]),
                _ => u32::MAX,
            }
        };
        let mut pair: Vec<u32> = (0..bounds.len() - 1).map(|i| joined(&bounds, i)).collect();
        while let Some((i, &best)) = pair.iter().enumerate().min_by_key(|&(i, &r)| (r, i))
            && best != u32::MAX
        {
            bounds.remove(i + 1);
            pair.remove(i + 1);
            pair[i] = joined(&bounds, i);
            if i > 0 {
                pair[i - 1] = joined(&bounds, i - 1);
            }
        }
        bounds.len() - 1
    }

    fn count(&self, text: &str) -> usize {
        let mut total = 0;
        let mut at = 0;
        while at < text.len() {
            let input = Input::new(text).range(at..).anchored(Anchored::Yes);
            let end = match self.pattern.search(&input) {
                Some(m) if m.end() > at => m.end(),
                _ => whitespace_piece_end(text, at),
            };
            total += self.count_piece(&text.as_bytes()[at..end]);
            at = end;
        }
        total
    }
}

/// End of the piece o200k's `\s+(?!\S)|\s+` takes at `at`: the whole run
/// of whitespace at the end of the text, else all of it but its last
/// character (which joins the next piece), else one character.
fn whitespace_piece_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    let mut ends = rest
        .char_indices()
        .take_while(|&(_, c)| c.is_whitespace())
        .map(|(i, c)| at + i + c.len_utf8());
    let Some(first) = ends.next() else {
        // Not whitespace (never expected): one character.
        return at + rest.chars().next().map_or(1, char::len_utf8);
    };
    let mut last_but_one = first;
    let mut last = first;
    for e in ends {
        last_but_one = last;
        last = e;
    }
    if last == text.len() || last == first {
        last
    } else {
        last_but_one
    }
}

/// Counts the o200k tokens of `text` (loading the vocabulary on first use).
pub fn count_o200k(text: &str) -> Result<usize, LoadError> {
    if text.is_empty() {
        return Ok(0);
    }
    Ok(encoder()?.count(text))
}

/// True once the vocabulary has been loaded in this process.
pub fn is_loaded() -> bool {
    ENCODER.get().is_some()
}

/// The cheap estimate: characters / 4, at least 1 for a non-empty text.
pub fn estimate(text: &str) -> usize {
    let chars = text.chars().count();
    if chars == 0 { 0 } else { (chars / 4).max(1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_lazily_and_counts() {
        assert_eq!(count_o200k(""), Ok(0));
        assert!(!is_loaded(), "an empty text needs no vocabulary");
        assert_eq!(count_o200k("Hello world"), Ok(2));
        assert!(is_loaded());
    }

    #[test]
    fn whitespace_pieces() {
        assert_eq!(whitespace_piece_end("   x", 0), 2);
        assert_eq!(whitespace_piece_end("   ", 0), 3);
        assert_eq!(whitespace_piece_end(" x", 0), 1);
    }

    #[test]
    fn estimate_is_chars_over_four() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("ab"), 1);
        assert_eq!(estimate("abcdefghi"), 2);
    }
}
