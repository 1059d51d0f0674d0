//! # mnemo-tokens — o200k token counts, cheaply
//!
//! This crate owns token counting with the o200k BPE (the GPT-4o family's),
//! exact to the encoder: the text is split by o200k's pre-tokenisation
//! pattern and each piece is merged by rank, as tiktoken does.
//!
//! The vocabulary is compiled in with its hash index, both laid out by the
//! build script from `bpe-openai` (about 3.6 MB: the tokens' bytes in rank
//! order, their offsets, and an open-addressing table; see `table.rs`), and
//! read in place: a count costs page faults on the slots and tokens it
//! touches, not a 200,000-entry index build; commands that never count
//! tokens touch none of it. The pre-tokenisation is done by hand
//! (`pretok.rs`) for ASCII text and the common non-letter symbols
//! (arrows, dashes, quotes, emoji, …); the regex is compiled only when a
//! piece needs it (a letter, digit or mark outside ASCII), which spares
//! most processes its build (about 21 M instructions).
//!
//! Must never: panic on any text, do I/O, or load the vocabulary before a
//! count is asked for.

use std::sync::OnceLock;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

mod pretok;
mod table;

/// The vocabulary and its index, laid out by the build script (see
/// `table.rs`).
static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bin"));

/// o200k's pre-tokenisation, but for its two whitespace alternatives
/// (`\s+(?!\S)` and `\s+`), which need a look-ahead and are handled by hand.
const PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
);

/// The vocabulary read in place: token count, offsets, slots, bytes.
struct Vocab {
    count: usize,
    offsets: &'static [u8],
    slots: &'static [u8],
    bytes: &'static [u8],
}

fn u32_at(area: &[u8], i: usize) -> Option<u32> {
    let at = i.checked_mul(4)?;
    let w = area.get(at..at.checked_add(4)?)?;
    let mut b = [0u8; 4];
    b.copy_from_slice(w);
    Some(u32::from_le_bytes(b))
}

impl Vocab {
    fn new(blob: &'static [u8]) -> Result<Vocab, LoadError> {
        let count = u32_at(blob, 0).ok_or_else(|| LoadError("truncated header".into()))? as usize;
        let off_len = count
            .checked_add(1)
            .and_then(|c| c.checked_mul(4))
            .ok_or_else(|| LoadError("bad token count".into()))?;
        let rest = blob.get(4..).unwrap_or_default();
        if rest.len() < off_len + 4 * table::SLOTS {
            return Err(LoadError("truncated index".into()));
        }
        let (offsets, rest) = rest.split_at(off_len);
        let (slots, bytes) = rest.split_at(4 * table::SLOTS);
        if u32_at(offsets, count).map(|e| e as usize) != Some(bytes.len()) {
            return Err(LoadError("index and tokens disagree".into()));
        }
        Ok(Vocab {
            count,
            offsets,
            slots,
            bytes,
        })
    }

    fn token(&self, rank: usize) -> Option<&'static [u8]> {
        let s = u32_at(self.offsets, rank)? as usize;
        let e = u32_at(self.offsets, rank.checked_add(1)?)? as usize;
        self.bytes.get(s..e)
    }

    /// The rank of `piece`, if it is a token.
    fn get(&self, piece: &[u8]) -> Option<u32> {
        let mut i = table::slot_of(table::hash(piece));
        for _ in 0..table::SLOTS {
            let s = u32_at(self.slots, i)?;
            if s == 0 {
                return None;
            }
            let rank = s - 1;
            if (rank as usize) < self.count && self.token(rank as usize) == Some(piece) {
                return Some(rank);
            }
            i = (i + 1) & (table::SLOTS - 1);
        }
        None
    }
}

/// The loaded encoder.
struct Encoder {
    ranks: Vocab,
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
    let ranks = Vocab::new(TABLE)?;
    Ok(Encoder { ranks })
}

static ENCODER: OnceLock<Result<Encoder, LoadError>> = OnceLock::new();

fn encoder() -> Result<&'static Encoder, LoadError> {
    ENCODER.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The pre-tokenisation regex, compiled when a piece first needs it.
static PATTERN_RE: OnceLock<Result<Regex, LoadError>> = OnceLock::new();

fn pattern() -> Result<&'static Regex, LoadError> {
    PATTERN_RE
        .get_or_init(|| Regex::new(PATTERN).map_err(|e| LoadError(e.to_string())))
        .as_ref()
        .map_err(Clone::clone)
}

/// End of the piece that starts at `at` (`at < text.len()`), by the regex.
fn regex_piece_end(text: &str, at: usize) -> Result<usize, LoadError> {
    let input = Input::new(text).range(at..).anchored(Anchored::Yes);
    Ok(match pattern()?.search(&input) {
        Some(m) if m.end() > at => m.end(),
        _ => whitespace_piece_end(text, at),
    })
}

/// End of the piece that starts at `at`: by hand when [`pretok`] can say,
/// else by the regex.
fn piece_end(text: &str, at: usize) -> Result<usize, LoadError> {
    match pretok::piece_end(text, at) {
        Some(e) => Ok(e),
        None => regex_piece_end(text, at),
    }
}

impl Encoder {
    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).unwrap_or(u32::MAX)
    }

    /// Tokens of one piece: merge the adjacent pair of lowest rank until no
    /// pair is in the vocabulary.
    fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.ranks.get(piece).is_some() {
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

    fn count(&self, text: &str) -> Result<usize, LoadError> {
        let mut total = 0;
        let mut at = 0;
        while at < text.len() {
            let end = piece_end(text, at)?;
            total += self.count_piece(&text.as_bytes()[at..end]);
            at = end;
        }
        Ok(total)
    }
}

/// End of the piece o200k's `\s+(?!\S)|\s+` takes at `at`: the whole run
/// of whitespace at the end of the text, else all of it but its last
/// character (which joins the next piece), else one character.
pub(crate) fn whitespace_piece_end(text: &str, at: usize) -> usize {
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
    encoder()?.count(text)
}

/// True once the vocabulary has been loaded in this process.
pub fn is_loaded() -> bool {
    ENCODER.get().is_some()
}

/// True once the pre-tokenisation regex has been compiled in this process
/// (only a piece the hand pre-tokeniser cannot place compiles it).
pub fn is_regex_compiled() -> bool {
    PATTERN_RE.get().is_some()
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
