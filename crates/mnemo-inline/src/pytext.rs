//! Python's `str` semantics that the script's output depends on, as pure
//! functions: whitespace (`str.isspace`, `\s`), line breaks
//! (`str.splitlines`), `str.strip`, word characters (`\w`, for `\b`),
//! `re.IGNORECASE` case folding of ASCII letters, `repr()` of a string and
//! `json.dumps` of a string.

use crate::pytables::{DECIMAL, NON_PRINTABLE, WORD};

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python's `str.isspace()` for one character, which is also `\s` in a `str`
/// pattern: Rust's `White_Space` plus the four separators `\x1c`–`\x1f`.
pub fn is_space(c: char) -> bool {
    matches!(c, '\u{1c}'..='\u{1f}') || c.is_whitespace()
}

/// A line boundary of Python's `str.splitlines()`.
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// A word character of Python's `\w` (`str.isalnum()` or `_`).
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        in_ranges(WORD, c)
    }
}

/// Python's `\d` in a `str` pattern (`str.isdecimal()`).
pub fn is_decimal(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_ranges(DECIMAL, c)
    }
}

/// Python's `str.isprintable()` for one character.
pub fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        (' '..='~').contains(&c)
    } else {
        !in_ranges(NON_PRINTABLE, c)
    }
}

/// The lines of Python's `str.splitlines()` (without their breaks).
pub fn splitlines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.char_indices().find(|&(_, c)| is_line_break(c)) {
            Some((i, c)) => {
                let line = &rest[..i];
                let mut next = i + c.len_utf8();
                if c == '\r' && rest[next..].starts_with('\n') {
                    next += 1;
                }
                rest = &rest[next..];
                Some(line)
            }
            None => {
                let line = rest;
                rest = "";
                Some(line)
            }
        }
    })
}

/// `len(text.splitlines())`.
pub fn line_count(text: &str) -> usize {
    splitlines(text).count()
}

/// Python's `str.strip()` (no argument).
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.rstrip()` (no argument).
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// How `re.IGNORECASE` sees a character when the pattern is ASCII letters:
/// the lowercase ASCII letter it matches, if any. Besides ASCII, CPython
/// matches `İ` (U+0130) and `ı` (U+0131) with `i`, `ſ` (U+017F) with `s` and
/// the Kelvin sign (U+212A) with `k`; no other character matches an ASCII
/// letter.
pub fn fold_ascii_letter(c: char) -> Option<u8> {
    match c {
        'a'..='z' => Some(c as u8),
        'A'..='Z' => Some(c.to_ascii_lowercase() as u8),
        '\u{130}' | '\u{131}' => Some(b'i'),
        '\u{17f}' => Some(b's'),
        '\u{212a}' => Some(b'k'),
        _ => None,
    }
}

/// Python's `repr()` of a string.
pub fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = c as u32;
                if cp <= 0xff {
                    out.push_str(&format!("\\x{cp:02x}"));
                } else if cp <= 0xffff {
                    out.push_str(&format!("\\u{cp:04x}"));
                } else {
                    out.push_str(&format!("\\U{cp:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `json.dumps()` of a string (`ensure_ascii=True`).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_like_python() {
        let v: Vec<&str> = splitlines("a\r\nb\rc\u{0b}d\u{1c}e\u{85}f\u{2028}g\n\n").collect();
        assert_eq!(v, ["a", "b", "c", "d", "e", "f", "g", ""]);
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("\n\n"), 2);
        assert_eq!(line_count("a\u{1f}b"), 1, "\\x1f is not a line break");
    }

    #[test]
    fn strip_like_python() {
        assert_eq!(strip("\u{1f} x \u{1c}\u{a0}\u{3000}"), "x");
        assert_eq!(strip("\u{200b}x"), "\u{200b}x", "ZWSP is not whitespace");
        assert_eq!(rstrip(" x \n"), " x");
    }

    #[test]
    fn words() {
        assert!(is_word('_') && is_word('é') && is_word('٣') && is_word('ǅ'));
        assert!(!is_word('-') && !is_word('\u{345}') && !is_word('Ⓐ'));
    }

    #[test]
    fn folding() {
        assert_eq!(fold_ascii_letter('ſ'), Some(b's'));
        assert_eq!(fold_ascii_letter('\u{212a}'), Some(b'k'));
        assert_eq!(fold_ascii_letter('İ'), Some(b'i'));
        assert_eq!(fold_ascii_letter('é'), None);
    }

    #[test]
    fn repr_like_python() {
        assert_eq!(repr("a/b.md"), "'a/b.md'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(
            repr("a\tb\n\u{1f}\u{7f}\u{a0}é\u{200b}\u{e000}"),
            "'a\\tb\\n\\x1f\\x7f\\xa0é\\u200b\\ue000'"
        );
        assert_eq!(repr("\u{1d400}\u{e0001}"), "'\u{1d400}\\U000e0001'");
    }

    #[test]
    fn json_like_python() {
        assert_eq!(json_string("JWT"), "\"JWT\"");
        assert_eq!(json_string("é\"\n"), "\"\\u00e9\\\"\\n\"");
        assert_eq!(json_string("😀"), "\"\\ud83d\\ude00\"");
    }
}
