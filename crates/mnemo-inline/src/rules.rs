//! The scoring rules of Pantheon's `compress-inline.py`, as the script
//! applies them (the seed's §3 tables), with Python's text semantics:
//!
//! * a keyword matches case-insensitively as `re.IGNORECASE` does (so `ſchema`
//!   contains `schema`), as a plain substring; a multi-word keyword matches
//!   its words with any run of whitespace between them (`new\s+table`); `API`
//!   and `CSS` match only as whole words (`\bAPI\b`: not in `API_KEY`);
//! * the blockers dimension is 0.5 when the text contains `blocked`,
//!   `blocker` or `depend` (so also `unblocked`, `dependency`,
//!   `independent`), raised to 0.8 when it also contains `unblock`; `unblock`
//!   alone gives 0; the `--blocker` hint gives at least 0.8;
//! * the total is the weighted sum in binary floating point, in the script's
//!   order; its band is decided on that float (so a sum of 0.7499999999999999
//!   is HIGH, printed as 0.75), and it is printed rounded as Python's
//!   `round(x, 2)` does.

use crate::pytext::{fold_ascii_letter, is_space, is_word, strip};

/// How a keyword matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// A plain case-insensitive substring; a space in the keyword stands for
    /// one or more whitespace characters.
    Substring,
    /// A whole word (`\b…\b`).
    WholeWord,
}

/// One row of the keyword map: name, impact, risk, novelty (hundredths).
#[derive(Debug, Clone, Copy)]
pub struct Keyword {
    /// The keyword as printed in `keywords_found`.
    pub name: &'static str,
    /// Impact, in hundredths.
    pub impact: u8,
    /// Risk, in hundredths.
    pub risk: u8,
    /// Novelty, in hundredths.
    pub novelty: u8,
    /// How it matches.
    pub matching: Match,
}

const fn kw(name: &'static str, impact: u8, risk: u8, novelty: u8) -> Keyword {
    Keyword {
        name,
        impact,
        risk,
        novelty,
        matching: Match::Substring,
    }
}

const fn word(name: &'static str, impact: u8, risk: u8, novelty: u8) -> Keyword {
    Keyword {
        name,
        impact,
        risk,
        novelty,
        matching: Match::WholeWord,
    }
}

/// The keyword map, in the script's order (the order of `keywords_found`).
pub const KEYWORDS: [Keyword; 35] = [
    kw("schema", 100, 100, 60),
    kw("migration", 100, 100, 40),
    kw("new table", 100, 80, 90),
    kw("new column", 70, 80, 60),
    kw("auth", 100, 100, 50),
    kw("login", 100, 100, 40),
    kw("permission", 80, 100, 50),
    kw("role", 80, 80, 40),
    kw("JWT", 80, 100, 40),
    kw("OAuth", 80, 100, 50),
    kw("password", 70, 100, 30),
    kw("encrypt", 70, 100, 50),
    kw("token", 70, 80, 30),
    kw("security", 80, 100, 40),
    kw("index", 50, 60, 30),
    kw("foreign key", 80, 90, 50),
    kw("constraint", 60, 70, 30),
    kw("endpoint", 90, 60, 50),
    kw("route", 80, 50, 40),
    word("API", 80, 50, 40),
    kw("service", 70, 40, 40),
    kw("new file", 60, 30, 80),
    kw("refactor", 50, 70, 60),
    kw("rename", 40, 60, 30),
    kw("delete", 50, 70, 20),
    kw("deprecat", 40, 40, 30),
    kw("config", 50, 60, 30),
    kw("Docker", 70, 60, 30),
    kw("deploy", 80, 80, 20),
    word("CSS", 20, 10, 20),
    kw("style", 20, 10, 20),
    kw("typo", 0, 0, 0),
    kw("comment", 10, 0, 0),
    kw("README", 20, 0, 10),
    kw("docstring", 20, 0, 10),
];

/// Weights of impact, risk, novelty, blockers, downstream.
pub const WEIGHTS: [f64; 5] = [0.30, 0.25, 0.20, 0.15, 0.10];

/// The agents of the downstream relevance table, in its row order.
pub const AGENTS: [&str; 7] = [
    "hermes",
    "aphrodite",
    "demeter",
    "themis",
    "mnemosyne",
    "hephaestus",
    "prometheus",
];

/// Downstream relevance (hundredths): `RELEVANCE[from][to]`, indexed as
/// [`AGENTS`].
pub const RELEVANCE: [[u8; 7]; 7] = [
    [100, 90, 80, 70, 30, 60, 50],
    [90, 100, 30, 70, 30, 50, 30],
    [90, 30, 100, 70, 30, 60, 60],
    [80, 80, 80, 100, 50, 80, 80],
    [30, 30, 30, 50, 100, 30, 30],
    [60, 50, 60, 70, 30, 100, 40],
    [60, 40, 60, 70, 30, 40, 100],
];

/// Relevance when either agent is missing or the pair is unknown.
pub const DEFAULT_RELEVANCE: u8 = 50;

/// The text, one byte per character, as the matcher sees it: an ASCII letter
/// that the character folds to, `' '` for whitespace, `'0'` for any other
/// word character, `'.'` for anything else.
fn fold(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match fold_ascii_letter(c) {
            Some(b) => b,
            None if is_space(c) => b' ',
            None if is_word(c) => b'0',
            None => b'.',
        })
        .collect()
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b == b'0'
}

/// A folded text, ready for keyword queries.
#[derive(Debug, Clone)]
pub struct Folded(Vec<u8>);

impl Folded {
    /// Folds `text`.
    pub fn new(text: &str) -> Folded {
        Folded(fold(text))
    }

    fn find_from(&self, needle: &[u8], from: usize) -> Option<usize> {
        let hay = self.0.get(from..)?;
        if needle.is_empty() || needle.len() > hay.len() {
            return None;
        }
        hay.windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    }

    /// True when the lowercase ASCII `needle` occurs (substring).
    pub fn contains(&self, needle: &str) -> bool {
        self.find_from(needle.as_bytes(), 0).is_some()
    }

    /// True when `words` occur in order with one or more whitespace
    /// characters between consecutive words.
    fn contains_words(&self, words: &[&[u8]]) -> bool {
        let Some((first, rest)) = words.split_first() else {
            return false;
        };
        let mut from = 0;
        while let Some(start) = self.find_from(first, from) {
            if self.words_at(start + first.len(), rest) {
                return true;
            }
            from = start + 1;
        }
        false
    }

    fn words_at(&self, mut at: usize, words: &[&[u8]]) -> bool {
        for w in words {
            let spaces = self.0[at.min(self.0.len())..]
                .iter()
                .take_while(|&&b| b == b' ')
                .count();
            if spaces == 0 {
                return false;
            }
            at += spaces;
            if !self.0[at..].starts_with(w) {
                return false;
            }
            at += w.len();
        }
        true
    }

    /// True when `needle` occurs as a whole word.
    fn contains_word(&self, needle: &[u8]) -> bool {
        let mut from = 0;
        while let Some(start) = self.find_from(needle, from) {
            let end = start + needle.len();
            let before = start == 0 || !is_word_byte(self.0[start - 1]);
            let after = end == self.0.len() || !is_word_byte(self.0[end]);
            if before && after {
                return true;
            }
            from = start + 1;
        }
        false
    }

    /// True when the keyword matches the text.
    pub fn matches(&self, k: &Keyword) -> bool {
        let lower = k.name.to_ascii_lowercase();
        match k.matching {
            Match::WholeWord => self.contains_word(lower.as_bytes()),
            Match::Substring if lower.contains(' ') => {
                let words: Vec<&[u8]> = lower.split(' ').map(str::as_bytes).collect();
                self.contains_words(&words)
            }
            Match::Substring => self.contains(&lower),
        }
    }
}

/// The five dimensions and the keywords found.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// Impact (hundredths).
    pub impact: u8,
    /// Risk (hundredths).
    pub risk: u8,
    /// Novelty (hundredths).
    pub novelty: u8,
    /// Blockers (hundredths).
    pub blockers: u8,
    /// Downstream relevance (hundredths).
    pub downstream: u8,
    /// Indices into [`KEYWORDS`], in table order.
    pub keywords: Vec<usize>,
}

/// The priority bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    /// ≥ 0.75.
    Critical,
    /// ≥ 0.50.
    High,
    /// ≥ 0.25.
    Medium,
    /// The rest.
    Low,
}

impl Band {
    /// The band's name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Band::Critical => "CRITICAL",
            Band::High => "HIGH",
            Band::Medium => "MEDIUM",
            Band::Low => "LOW",
        }
    }
}

fn f(h: u8) -> f64 {
    f64::from(h) / 100.0
}

impl Score {
    /// The weighted sum as the script computes it (binary floating point,
    /// left to right).
    pub fn total(&self) -> f64 {
        f(self.impact) * WEIGHTS[0]
            + f(self.risk) * WEIGHTS[1]
            + f(self.novelty) * WEIGHTS[2]
            + f(self.blockers) * WEIGHTS[3]
            + f(self.downstream) * WEIGHTS[4]
    }

    /// The band, decided on [`Score::total`] as the script does.
    pub fn band(&self) -> Band {
        let x = self.total();
        if x >= 0.75 {
            Band::Critical
        } else if x >= 0.50 {
            Band::High
        } else if x >= 0.25 {
            Band::Medium
        } else {
            Band::Low
        }
    }

    /// `round(total, 2)` in hundredths (correctly rounded on the binary
    /// value, as Python's `round` is).
    pub fn rounded_hundredths(&self) -> u32 {
        let text = format!("{:.2}", self.total());
        let (int, frac) = text.split_once('.').unwrap_or((text.as_str(), "0"));
        int.parse::<u32>().unwrap_or(0) * 100 + frac.parse::<u32>().unwrap_or(0)
    }
}

/// The downstream relevance of a pair: names are lowercased and stripped as
/// Python's `str.lower().strip()` does; a missing or empty name, or an
/// unknown pair, gives 0.5.
pub fn downstream(from: Option<&str>, to: Option<&str>) -> u8 {
    let (Some(from), Some(to)) = (from, to) else {
        return DEFAULT_RELEVANCE;
    };
    if from.is_empty() || to.is_empty() {
        return DEFAULT_RELEVANCE;
    }
    // The table's names are ASCII: only a name whose Python lowercase is
    // ASCII can match, and of the non-ASCII characters only the Kelvin sign
    // lowercases to ASCII (`k`, which no agent name has).
    let key = |s: &str| strip(&s.to_ascii_lowercase()).to_string();
    let (from, to) = (key(from), key(to));
    let index = |s: &str| AGENTS.iter().position(|a| *a == s);
    match (index(&from), index(&to)) {
        (Some(a), Some(b)) => RELEVANCE[a][b],
        _ => DEFAULT_RELEVANCE,
    }
}

/// Blockers dimension of a folded text.
fn blockers(text: &Folded, hint: bool) -> u8 {
    let mut b = 0;
    if ["blocked", "blocker", "depend"]
        .iter()
        .any(|k| text.contains(k))
    {
        b = if text.contains("unblock") { 80 } else { 50 };
    }
    if hint { b.max(80) } else { b }
}

/// Scores a text as the script's `compute_score` does.
pub fn score(text: &str, from: Option<&str>, to: Option<&str>, files: usize, hint: bool) -> Score {
    let folded = Folded::new(text);
    let mut s = Score {
        impact: 0,
        risk: 0,
        novelty: 0,
        blockers: blockers(&folded, hint),
        downstream: downstream(from, to),
        keywords: Vec::new(),
    };
    for (i, k) in KEYWORDS.iter().enumerate() {
        if folded.matches(k) {
            s.impact = s.impact.max(k.impact);
            s.risk = s.risk.max(k.risk);
            s.novelty = s.novelty.max(k.novelty);
            s.keywords.push(i);
        }
    }
    if files >= 10 {
        s.novelty = s.novelty.max(100);
    } else if files >= 5 {
        s.novelty = s.novelty.max(80);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &Score) -> Vec<&'static str> {
        s.keywords.iter().map(|&i| KEYWORDS[i].name).collect()
    }

    #[test]
    fn doc_example() {
        let s = score(
            "Added JWT auth endpoint with refresh token rotation",
            Some("hermes"),
            Some("aphrodite"),
            0,
            false,
        );
        assert_eq!(names(&s), ["auth", "JWT", "token", "endpoint"]);
        assert_eq!(s.rounded_hundredths(), 74);
        assert_eq!(s.band(), Band::High);
    }

    #[test]
    fn multi_word_keywords_take_any_whitespace() {
        for t in [
            "new  table",
            "new\ttable",
            "NEW\u{3000}TABLE",
            "new\u{1f}table",
        ] {
            assert_eq!(
                names(&score(t, None, None, 0, false)),
                ["new table"],
                "{t:?}"
            );
        }
        assert!(names(&score("foreign\nkey", None, None, 0, false)).contains(&"foreign key"));
        assert!(names(&score("newtable", None, None, 0, false)).is_empty());
    }

    #[test]
    fn api_and_css_are_whole_words() {
        for t in ["API_KEY", "OPENAI_API_KEY", "CSS3", "apis", "éAPI"] {
            let n = names(&score(t, None, None, 0, false));
            assert!(!n.contains(&"API") && !n.contains(&"CSS"), "{t:?}: {n:?}");
        }
        for t in ["the API.", "(css)", "api-key", "x API"] {
            assert_eq!(names(&score(t, None, None, 0, false)).len(), 1, "{t:?}");
        }
    }

    #[test]
    fn blockers_like_the_script() {
        let b = |t: &str| score(t, None, None, 0, false).blockers;
        assert_eq!(b("depend on x"), 50);
        assert_eq!(b("dependencies"), 50);
        assert_eq!(b("independent"), 50);
        assert_eq!(b("unblock the queue"), 0);
        assert_eq!(b("unblocked"), 80);
        assert_eq!(b("blocker; unblock"), 80);
        assert_eq!(b("blocking"), 0);
        assert_eq!(score("x", None, None, 0, true).blockers, 80);
    }

    #[test]
    fn python_case_folding() {
        assert_eq!(names(&score("ſchema", None, None, 0, false)), ["schema"]);
        assert_eq!(
            names(&score("DOC\u{212a}ER", None, None, 0, false)),
            ["Docker"]
        );
        assert_eq!(names(&score("LOGİN", None, None, 0, false)), ["login"]);
    }

    #[test]
    fn band_is_decided_on_the_float() {
        // password (0.7, 1.0), ten files (novelty 1.0), hermes → aphrodite
        // (0.9): exactly 0.75, but 0.7499999999999999 in floating point.
        let s = score("password", Some("hermes"), Some("aphrodite"), 10, false);
        assert_eq!(s.band(), Band::High);
        assert_eq!(s.rounded_hundredths(), 75);
    }

    #[test]
    fn agents_like_python() {
        assert_eq!(downstream(Some(" Hermes\u{1f}"), Some("THEMIS")), 70);
        assert_eq!(downstream(Some("hermes"), Some("")), 50);
        assert_eq!(downstream(None, Some("themis")), 50);
    }
}
