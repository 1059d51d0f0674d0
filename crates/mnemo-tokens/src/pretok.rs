//! o200k's pre-tokenisation by hand, for the characters whose class is
//! known without Unicode tables: ASCII, white space (`char::is_whitespace`
//! is Unicode's `White_Space`, as the regex's `\s`), and [`SYMBOLS`], ranges
//! of characters that are neither letters, numbers, marks nor white space
//! (arrows, dashes, quotes, box drawing, emoji, …). Whenever the piece at a
//! position depends on any other character, [`piece_end`] says `None` and
//! the caller asks the regex: the pieces are the regex's, character for
//! character (the unit tests compare both on random text).
//!
//! The pattern, alternative by alternative (leftmost-first, anchored):
//!
//! 1. `[^\r\n\p{L}\p{N}]?[Lu Lt Lm Lo M]*[Ll Lm Lo M]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
//! 2. `[^\r\n\p{L}\p{N}]?[Lu Lt Lm Lo M]+[Ll Lm Lo M]*(?i:'s|…)?`
//! 3. `\p{N}{1,3}`
//! 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
//! 5. `\s*[\r\n]+`
//! 6. `\s+(?!\S)`, 7. `\s+`
//!
//! With letters only in ASCII, 1 and 2 together are: an optional prefix
//! (a symbol or white space other than CR and LF), the run of capitals,
//! the run of small letters after it (one of the two runs not empty), and a
//! contraction suffix.

/// A character's class as far as the pattern cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `A`–`Z` (`Lu`).
    Upper,
    /// `a`–`z` (`Ll`).
    Lower,
    /// `0`–`9`.
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Other white space.
    Space,
    /// Not a letter, number, mark or white space.
    Symbol,
    /// Anything else: only the regex knows.
    Unknown,
}

/// Ranges (inclusive) of characters that are neither letters (`L`),
/// numbers (`N`), marks (`M`) nor white space; the unit tests check every
/// character of every range against the regex's own classes.
const SYMBOLS: &[(char, char)] = &[
    ('\u{a1}', '\u{a9}'),
    ('\u{ab}', '\u{b1}'),
    ('\u{b4}', '\u{b4}'),
    ('\u{b6}', '\u{b8}'),
    ('\u{bb}', '\u{bb}'),
    ('\u{bf}', '\u{bf}'),
    ('\u{d7}', '\u{d7}'),
    ('\u{f7}', '\u{f7}'),
    ('\u{200b}', '\u{2027}'),
    ('\u{2030}', '\u{205e}'),
    ('\u{20a0}', '\u{20c0}'),
    ('\u{2190}', '\u{23ff}'),
    ('\u{2500}', '\u{2775}'),
    ('\u{2794}', '\u{27bf}'),
    ('\u{2b00}', '\u{2b73}'),
    ('\u{3001}', '\u{3003}'),
    ('\u{3008}', '\u{3011}'),
    ('\u{ff01}', '\u{ff0f}'),
    ('\u{ff1a}', '\u{ff20}'),
    ('\u{1f300}', '\u{1f64f}'),
    ('\u{1f680}', '\u{1f6ff}'),
    ('\u{1f900}', '\u{1f9ff}'),
];

fn class_of(c: char) -> Class {
    match c {
        'A'..='Z' => Class::Upper,
        'a'..='z' => Class::Lower,
        '0'..='9' => Class::Digit,
        '\r' | '\n' => Class::Newline,
        c if c.is_whitespace() => Class::Space,
        c if c.is_ascii() => Class::Symbol,
        c => {
            let i = SYMBOLS.partition_point(|&(_, hi)| hi < c);
            match SYMBOLS.get(i) {
                Some(&(lo, _)) if lo <= c => Class::Symbol,
                _ => Class::Unknown,
            }
        }
    }
}

/// The class of the character at byte `i` and the byte after it (`None`
/// at the end).
fn at(text: &str, i: usize) -> Option<(Class, usize)> {
    let b = *text.as_bytes().get(i)?;
    if b.is_ascii() {
        return Some((class_of(char::from(b)), i + 1));
    }
    let c = text.get(i..)?.chars().next()?;
    Some((class_of(c), i + c.len_utf8()))
}

/// A piece only the regex can place.
struct Unknown;

/// End of the longest run of `want` from `i`; `Unknown` when the run ends
/// at a character of unknown class (which might continue it).
fn run(text: &str, mut i: usize, want: Class) -> Result<usize, Unknown> {
    while let Some((c, next)) = at(text, i) {
        if c == Class::Unknown {
            return Err(Unknown);
        }
        if c != want {
            break;
        }
        i = next;
    }
    Ok(i)
}

/// Alternatives 1 and 2 from `i` (after the prefix, if any): capitals,
/// small letters, the suffix. `None`: no letter at `i`.
fn letters(text: &str, i: usize) -> Result<Option<usize>, Unknown> {
    let upper = run(text, i, Class::Upper)?;
    let end = run(text, upper, Class::Lower)?;
    if end == i {
        return Ok(None);
    }
    Ok(Some(suffix(text, end)?))
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`. A letter after the apostrophe
/// outside ASCII could fold to one of these (`ſ` is an `s`): unknown.
fn suffix(text: &str, i: usize) -> Result<usize, Unknown> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'\'') {
        return Ok(i);
    }
    let lower = |k: usize| -> Result<Option<u8>, Unknown> {
        match b.get(i + k) {
            None => Ok(None),
            Some(c) if c.is_ascii() => Ok(Some(c.to_ascii_lowercase())),
            Some(_) => Err(Unknown),
        }
    };
    Ok(match lower(1)? {
        Some(b's' | b't' | b'm' | b'd') => i + 2,
        Some(first @ (b'r' | b'v' | b'l')) => {
            let second = if first == b'l' { b'l' } else { b'e' };
            if lower(2)? == Some(second) { i + 3 } else { i }
        }
        _ => i,
    })
}

/// Alternative 4 from `i`, where a symbol is: the symbol run, then CRs,
/// LFs and slashes (a slash after a line break too).
fn symbols(text: &str, i: usize) -> Result<usize, Unknown> {
    let end = run(text, i, Class::Symbol)?;
    let b = text.as_bytes();
    let mut e = end;
    while matches!(b.get(e), Some(b'\r' | b'\n' | b'/')) {
        e += 1;
    }
    Ok(e)
}

/// Alternatives 5–7 at `i`, which starts a run of white space: to the last
/// CR or LF of the run, else [`crate::whitespace_piece_end`].
fn whitespace(text: &str, i: usize) -> usize {
    let mut last_newline = None;
    let mut j = i;
    while let Some((c, next)) = at(text, j) {
        match c {
            Class::Newline => last_newline = Some(next),
            Class::Space => {}
            _ => break,
        }
        j = next;
    }
    last_newline.unwrap_or_else(|| crate::whitespace_piece_end(text, i))
}

/// End of the piece that starts at byte `i` (`i < text.len()`, on a
/// character boundary), or `None` when the regex must say.
pub(crate) fn piece_end(text: &str, i: usize) -> Option<usize> {
    piece(text, i).ok()
}

fn piece(text: &str, i: usize) -> Result<usize, Unknown> {
    let (c0, i1) = at(text, i).ok_or(Unknown)?;
    match c0 {
        Class::Unknown => Err(Unknown),
        Class::Upper | Class::Lower => Ok(letters(text, i)?.unwrap_or(i1)),
        Class::Digit => {
            // \p{N}{1,3}: a character of unknown class may be a number
            let mut e = i1;
            for _ in 0..2 {
                match at(text, e) {
                    Some((Class::Digit, next)) => e = next,
                    Some((Class::Unknown, _)) => return Err(Unknown),
                    _ => break,
                }
            }
            Ok(e)
        }
        Class::Symbol | Class::Space => {
            if let Some(e) = letters(text, i1)? {
                return Ok(e);
            }
            if c0 == Class::Symbol {
                return symbols(text, i);
            }
            if text.as_bytes().get(i) == Some(&b' ') {
                match at(text, i1) {
                    Some((Class::Symbol, _)) => return symbols(text, i1),
                    Some((Class::Unknown, _)) => return Err(Unknown),
                    _ => {}
                }
            }
            Ok(whitespace(text, i))
        }
        Class::Newline => Ok(whitespace(text, i)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;
    use regex_automata::meta::Regex;

    #[test]
    fn every_symbol_is_no_letter_number_mark_or_space() {
        let re = Regex::new(r"^[^\s\p{L}\p{N}\p{M}]$").unwrap();
        let mut n = 0;
        let mut prev = '\0';
        for &(lo, hi) in SYMBOLS {
            assert!(prev < lo && lo <= hi, "ranges sorted and apart: {lo:?}");
            prev = hi;
            for c in lo..=hi {
                let s = c.to_string();
                assert!(re.is_match(&s), "{c:?} U+{:04X}", c as u32);
                assert_eq!(class_of(c), Class::Symbol, "{c:?}");
                n += 1;
            }
        }
        assert!(n > 2800, "{n}");
        // and around them: not every neighbour is a symbol
        assert_eq!(class_of('\u{2776}'), Class::Unknown, "a dingbat digit");
        assert_eq!(
            class_of('\u{fe0f}'),
            Class::Unknown,
            "a variation selector is a mark"
        );
        assert_eq!(class_of('é'), Class::Unknown);
        assert_eq!(class_of('\u{a0}'), Class::Space);
        assert_eq!(class_of('\u{85}'), Class::Space);
    }

    /// Every piece, by the hand pre-tokeniser with the regex as fallback,
    /// and by the regex alone.
    fn pieces(text: &str, by_hand: bool) -> Vec<usize> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let e = if by_hand {
                crate::piece_end(text, i).unwrap()
            } else {
                crate::regex_piece_end(text, i).unwrap()
            };
            assert!(e > i);
            out.push(e);
            i = e;
        }
        out
    }

    #[test]
    fn known_pieces() {
        let cases: &[(&str, &[&str])] = &[
            ("Hello world", &["Hello", " world"]),
            (
                "don't DON'T we're I'LL it's",
                &["don't", " DON'T", " we're", " I'LL", " it's"],
            ),
            ("HTTPServer fooBar", &["HTTPServer", " foo", "Bar"]),
            ("1234567", &["123", "456", "7"]),
            ("a  b\t\tc", &["a", " ", " b", "\t", "\tc"]),
            ("x\r\n\r\n  y", &["x", "\r\n\r\n", " ", " y"]),
            ("x   ", &["x", "   "]),
            (" == //\n", &[" ==", " //\n"]),
            (
                "(foo) `cargo test` → exit 0",
                &[
                    "(foo", ")", " `", "cargo", " test", "`", " →", " exit", " ", "0",
                ],
            ),
            ("'s'x 'Re", &["'s", "'x", " '", "Re"]),
        ];
        for (text, want) in cases {
            let ends = pieces(text, true);
            let mut got = Vec::new();
            let mut s = 0;
            for e in &ends {
                got.push(&text[s..*e]);
                s = *e;
            }
            assert_eq!(&got, want, "{text:?}");
            assert_eq!(ends, pieces(text, false), "{text:?}");
        }
    }

    #[test]
    fn ascii_needs_no_regex() {
        for t in [
            "Plain ASCII, with 12345 digits!\r\n\tand don't stop",
            "`a` → b … “c” — 😀",
        ] {
            let mut i = 0;
            while i < t.len() {
                i = piece_end(t, i).unwrap_or_else(|| panic!("{t:?} at {i}"));
            }
        }
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z]{1,6}",
            "[0-9]{1,5}",
            "[ \t\n\r\u{b}\u{c}\u{a0}\u{3000}\u{2028}\u{85}]{1,4}",
            "[!-/:-@\\[-`{-~]{1,4}",
            "'[sStTmMdDrRvVlLeEx]{0,2}",
            "[→—…’“”•×😀👍🏽\u{200d}\u{2776}\u{fe0f}]{1,3}",
            "[é漢ſKǅʰ²٣\u{301}ﬁ]{1,2}",
            "\\PC{1,3}",
            Just("\r\n".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn same_pieces_as_the_regex(parts in proptest::collection::vec(piece(), 0..30)) {
            let text: String = parts.concat();
            prop_assert_eq!(pieces(&text, true), pieces(&text, false), "{:?}", text);
        }
    }
}
