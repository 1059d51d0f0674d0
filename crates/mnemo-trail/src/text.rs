//! Prose → sentences, their class (constraint, decision, blocker, fact) and
//! their anchors (paths, endpoints, env vars, tables, ports, numbers): the
//! tokens that must survive for a sentence to count as kept.

use regex_automata::meta::{self, Regex};
use regex_automata::util::syntax;
use std::sync::OnceLock;

/// What a sentence of prose says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A standing rule of the user's ("never …", "always …", "don't …").
    Constraint,
    /// A choice ("we chose", "decided", "instead of").
    Decision,
    /// Something still failing or blocked.
    Blocker,
    /// A statement with concrete anchors (numbers, paths, names).
    Fact,
    /// A request of the user's without a rule in it.
    Request,
}

/// One pattern, compiled on first use: without Unicode for ASCII
/// sentences (see [`compile`]), with it for the others. For an ASCII
/// sentence, `may_match` is a necessary condition of a match (a byte or a
/// literal every match contains, ASCII case-insensitively where the pattern
/// is `(?i)`): when it fails the pattern is neither compiled nor run.
/// `literal`: the condition holds for any sentence (it only asks for bytes
/// the pattern has as case-sensitive literals, never for a class or a
/// case-folded letter, which can match outside ASCII).
struct Pattern {
    src: &'static str,
    /// The pre-check as written; [`checks`] computes it (the unit tests
    /// compare both).
    #[cfg_attr(not(test), allow(dead_code))]
    may_match: fn(&[u8]) -> bool,
    /// The bit of [`checks`] that computes `may_match` (with the others,
    /// in one pass over the sentence).
    bit: u16,
    literal: bool,
    ascii: OnceLock<Regex>,
    unicode: OnceLock<Regex>,
}

impl Pattern {
    const fn new(src: &'static str, may_match: fn(&[u8]) -> bool, bit: u16) -> Pattern {
        Pattern {
            src,
            may_match,
            bit,
            literal: false,
            ascii: OnceLock::new(),
            unicode: OnceLock::new(),
        }
    }

    /// A pattern whose pre-check holds for any sentence.
    const fn literal(src: &'static str, may_match: fn(&[u8]) -> bool, bit: u16) -> Pattern {
        Pattern {
            src,
            may_match,
            bit,
            literal: true,
            ascii: OnceLock::new(),
            unicode: OnceLock::new(),
        }
    }

    /// The compiled pattern for `haystack` (`unicode`: with Unicode).
    fn regex(&self, unicode: bool) -> &Regex {
        if unicode {
            self.unicode.get_or_init(|| compile(self.src, true))
        } else {
            self.ascii.get_or_init(|| compile(self.src, false))
        }
    }

    /// The regex to run on `haystack`; `None` when it cannot match.
    #[cfg(test)]
    fn for_haystack(&self, haystack: &str) -> Option<&Regex> {
        self.for_checked(&Checked::new(haystack))
    }

    /// [`Pattern::for_haystack`] of a sentence whose pre-checks ran.
    fn for_checked(&self, c: &Checked<'_>) -> Option<&Regex> {
        if (c.ascii || self.literal) && c.flags & self.bit == 0 {
            return None;
        }
        Some(self.regex(!c.ascii))
    }

    fn is_match(&self, c: &Checked<'_>) -> bool {
        self.for_checked(c).is_some_and(|re| re.is_match(c.text))
    }
}

/// A sentence and what one pass over its bytes found ([`checks`]).
struct Checked<'a> {
    text: &'a str,
    ascii: bool,
    flags: u16,
}

impl<'a> Checked<'a> {
    fn new(text: &'a str) -> Checked<'a> {
        let (ascii, flags) = checks(text.as_bytes());
        Checked { text, ascii, flags }
    }
}

/// Bits of [`checks`]: one a pattern.
const C_CONSTRAINT: u16 = 1;
const C_DECISION: u16 = 1 << 1;
const C_BLOCKER: u16 = 1 << 2;
const C_METHOD: u16 = 1 << 3;
const C_URL: u16 = 1 << 4;
const C_HOST_PORT: u16 = 1 << 5;
const C_PATH: u16 = 1 << 6;
const C_ENV: u16 = 1 << 7;
const C_FLAG: u16 = 1 << 8;
const C_TABLE: u16 = 1 << 9;
const C_CODE: u16 = 1 << 10;
const C_NUMBER: u16 = 1 << 11;

/// The word lists of the patterns whose pre-check is a [`Words`] test
/// (or `has_ci`, for `table`), with their bits.
static WORD_SETS: [(&Words, u16); 4] = [
    (&CONSTRAINT_WORDS, C_CONSTRAINT),
    (&DECISION_WORDS, C_DECISION),
    (&BLOCKER_WORDS, C_BLOCKER),
    (&TABLE_WORDS, C_TABLE),
];
static TABLE_WORDS: Words = Words::new(&[b"table"]);

/// Every needle of the [`WORD_SETS`] (at most 64), with its set's bit.
const WORD_COUNT: usize = {
    let mut n = 0;
    let mut s = 0;
    while s < WORD_SETS.len() {
        n += WORD_SETS[s].0.needles.len();
        s += 1;
    }
    n
};
static WORD_LIST: [(&[u8], u16); WORD_COUNT] = {
    let mut t: [(&[u8], u16); WORD_COUNT] = [(b"", 0); WORD_COUNT];
    let mut j = 0;
    let mut s = 0;
    while s < WORD_SETS.len() {
        let (w, bit) = WORD_SETS[s];
        let mut i = 0;
        while i < w.needles.len() {
            t[j] = (w.needles[i], bit);
            j += 1;
            i += 1;
        }
        s += 1;
    }
    t
};
/// For each byte (lower-cased), the needles of [`WORD_LIST`] that start
/// with it (bit `j`: needle `j`).
static WORD_STARTS: [u64; 256] = {
    assert!(WORD_COUNT <= 64);
    let mut t = [0u64; 256];
    let mut j = 0;
    while j < WORD_COUNT {
        t[WORD_LIST[j].0[0] as usize] |= 1 << j;
        j += 1;
    }
    t
};
/// For each bit of [`checks`], the needles of [`WORD_LIST`] in its set.
static SET_NEEDLES: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut b = 0;
    while b < 16 {
        t[b] = needles_of(1 << b);
        b += 1;
    }
    t
};
const fn needles_of(bit: u16) -> u64 {
    let mut m = 0u64;
    let mut j = 0;
    while j < WORD_COUNT {
        if WORD_LIST[j].1 == bit {
            m |= 1 << j;
        }
        j += 1;
    }
    m
}

/// Every pattern's pre-check (`may_match`) in one pass over `h`, and
/// whether `h` is ASCII: the bit of a pattern is set exactly when its
/// `may_match` holds (the unit tests compare both).
fn checks(h: &[u8]) -> (bool, u16) {
    let mut f = 0u16;
    let mut ascii = true;
    let mut live = u64::MAX;
    let at = |i: usize| h.get(i).copied().unwrap_or(0);
    for (i, &b) in h.iter().enumerate() {
        match b {
            b'0'..=b'9' => f |= C_NUMBER,
            b'/' => {
                f |= C_PATH;
                if i > 0 && h[i - 1] == b' ' {
                    f |= C_METHOD;
                }
            }
            b':' => {
                let n = at(i + 1);
                if n.is_ascii_digit() {
                    f |= C_HOST_PORT;
                } else if n == b'/' && at(i + 2) == b'/' {
                    f |= C_URL;
                }
            }
            b'.' if EXTENSION_STARTS.contains(&at(i + 1)) => f |= C_PATH,
            b'_' => f |= C_ENV,
            b'-' if at(i + 1) == b'-' => f |= C_FLAG,
            b'`' => f |= C_CODE,
            128.. => ascii = false,
            _ => {}
        }
        let mut m = WORD_STARTS[usize::from(b.to_ascii_lowercase())] & live;
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            let (n, bit) = WORD_LIST[j];
            if h.get(i + 1..i + n.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(&n[1..]))
            {
                // One needle of a set is enough: the set's others go.
                f |= bit;
                live &= !SET_NEEDLES[usize::from(bit.trailing_zeros() as u8)];
                m &= live;
            }
        }
    }
    (ascii, f)
}

/// A list of needles (lower-case ASCII, not empty) and the table of their
/// first bytes.
struct Words {
    needles: &'static [&'static [u8]],
    first: [bool; 256],
}

impl Words {
    const fn new(needles: &'static [&'static [u8]]) -> Words {
        let mut first = [false; 256];
        let mut i = 0;
        while i < needles.len() {
            if let Some(&b) = needles[i].first() {
                first[b as usize] = true;
            }
            i += 1;
        }
        Words { needles, first }
    }

    /// Whether `hay` holds one of the needles, ASCII case-insensitively:
    /// one pass, a needle compared only where its first byte is.
    fn found_in(&self, hay: &[u8]) -> bool {
        hay.iter().enumerate().any(|(i, b)| {
            self.first[usize::from(b.to_ascii_lowercase())]
                && self.needles.iter().any(|n| {
                    hay.get(i..i + n.len())
                        .is_some_and(|w| w.eq_ignore_ascii_case(n))
                })
        })
    }
}

/// Whether `hay` holds `needle` (lower-case ASCII), ASCII
/// case-insensitively.
fn has_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fn has(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A regex as `regex::Regex::new` builds it (same syntax and match
/// semantics, same limits), but without a literal prefilter: for sentences
/// of a few dozen bytes a prefilter saves nothing, and building the
/// case-folded word lists' prefilters was most of the cost of compiling
/// these patterns (about 30 M of 44 M instructions, paid by every hook
/// process that builds a trail).
///
/// `unicode: false` compiles the same pattern without Unicode (as with a
/// leading `(?-u)`), for ASCII sentences only: on an ASCII haystack every
/// construct of these patterns means the same either way (`\w`, `\d`,
/// `\s` and `\b` restricted to ASCII are the ASCII classes; `(?i)` of an
/// ASCII letter adds only non-ASCII folds such as `ſ` and the Kelvin sign;
/// `.` and the negated classes differ only on non-ASCII input), and it
/// compiles in a small part of the time (no Unicode tables). The unit
/// tests compare both on random ASCII text.
fn compile(p: &str, unicode: bool) -> Regex {
    let config = meta::Config::new()
        .nfa_size_limit(Some(10 << 20))
        .hybrid_cache_capacity(2 << 20)
        .match_kind(regex_automata::MatchKind::LeftmostFirst)
        .utf8_empty(true)
        .auto_prefilter(false);
    meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().unicode(unicode).utf8(unicode))
        .build(p)
        .unwrap_or_else(|_| never())
}

/// A standing rule of the user's.
const CONSTRAINT: &str = r"(?i)\b(never|always|don'?t|do not|must not|mustn'?t|must always|only use|only ever|make sure|avoid|not allowed|no matter what|under no circumstances|keep .{0,40} working)\b";
/// A choice.
const DECISION: &str = r"(?i)\b(we chose|we choose|i chose|chose to|choosing|decided|decision|instead of|rather than|going with|we'?ll use|we will use|opted|settled on|switch(ed)? to)\b";
/// Something still failing. Only ever asked whether it matches:
/// `crash\w*\b` matches exactly where `crash` starts a word (the `\w*` runs
/// to the end of the word, where `\b` holds), so the three stems carry no
/// `\w*` (a Unicode class is costly to compile).
const BLOCKER: &str = r"(?i)\b(?:(?:blocked|blocker|blocking|fails|failing|failed|open problem|still open|could not|couldn'?t|cannot|can'?t|unresolved|not yet|todo|killed|error)\b|still fail|crash|oom)";
/// The anchors, in the order [`anchors`] tries them.
const ANCHORS: [&str; 9] = [
    // endpoints with a method
    r"\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /[^\s,;)`'\x22]*",
    // URLs
    r"\bhttps?://[^\s,;)`'\x22]+",
    // host:port
    r"\b[a-z][a-z0-9.-]*:\d{2,5}\b",
    // paths with a directory or an extension
    r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:rs|py|ts|tsx|js|go|sql|toml|ya?ml|json|md|sh|env|lock|css|html)\b",
    // env vars and constants
    r"\$?\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b",
    // flags
    r"(?:^|\s)--[a-z][a-z0-9-]+",
    // tables
    r"(?i)\btable\s+`?([a-z_][a-z0-9_.]*)",
    // code spans
    r"`[^`\n]{1,80}`",
    // versions and numbers with their unit
    r"\b\d[\d,_]*(?:\.\d+)?\s*(?:ms|s|seconds?|minutes?|hours?|days?|KB|MB|GB|TB|Mi|Gi|rows|items|tests|runs|bytes|tokens)\b|\b\d[\d,_]*(?:\.\d+)?%|\bv?\d+(?:\.\d+)+\b|\b\d[\d,_]*(?:\.\d+)?\b",
];

/// Every alternative of [`CONSTRAINT`] holds one of these.
static CONSTRAINT_WORDS: Words = Words::new(&[
    b"never",
    b"always",
    b"don",
    b"do not",
    b"must",
    b"only ",
    b"make sure",
    b"avoid",
    b"not allowed",
    b"no matter what",
    b"under no circumstances",
    b"keep",
]);
/// Every alternative of [`DECISION`] holds one of these.
static DECISION_WORDS: Words = Words::new(&[
    b"chose",
    b"choos",
    b"decid",
    b"decis",
    b"instead of",
    b"rather than",
    b"going with",
    b"ll use",
    b"will use",
    b"opted",
    b"settled on",
    b"switch",
]);
/// Every alternative of [`BLOCKER`] holds one of these.
static BLOCKER_WORDS: Words = Words::new(&[
    b"block",
    b"fail",
    b"open problem",
    b"still open",
    b"could",
    b"can",
    b"unresolved",
    b"not yet",
    b"todo",
    b"killed",
    b"error",
    b"crash",
    b"oom",
]);

static CONSTRAINT_RE: Pattern =
    Pattern::new(CONSTRAINT, |h| CONSTRAINT_WORDS.found_in(h), C_CONSTRAINT);
static DECISION_RE: Pattern = Pattern::new(DECISION, |h| DECISION_WORDS.found_in(h), C_DECISION);
static BLOCKER_RE: Pattern = Pattern::new(BLOCKER, |h| BLOCKER_WORDS.found_in(h), C_BLOCKER);
/// The first letters of the extensions of [`ANCHORS`]' path pattern.
const EXTENSION_STARTS: &[u8] = b"rptjgsymelch";
/// [`ANCHORS`], each with what every match of it holds.
static ANCHOR_RES: [Pattern; 9] = [
    // `METHOD /`
    Pattern::literal(ANCHORS[0], |h| has(h, b" /"), C_METHOD),
    Pattern::literal(ANCHORS[1], |h| has(h, b"://"), C_URL),
    // `:` and a digit
    Pattern::new(
        ANCHORS[2],
        |h| h.windows(2).any(|w| w[0] == b':' && w[1].is_ascii_digit()),
        C_HOST_PORT,
    ),
    // a directory's `/`, or an extension's `.` and its first letter (a
    // sentence's closing `.` alone compiles nothing)
    Pattern::literal(
        ANCHORS[3],
        |h| {
            h.contains(&b'/')
                || h.windows(2)
                    .any(|w| w[0] == b'.' && EXTENSION_STARTS.contains(&w[1]))
        },
        C_PATH,
    ),
    Pattern::literal(ANCHORS[4], |h| h.contains(&b'_'), C_ENV),
    Pattern::literal(ANCHORS[5], |h| has(h, b"--"), C_FLAG),
    Pattern::new(ANCHORS[6], |h| has_ci(h, b"table"), C_TABLE),
    Pattern::literal(ANCHORS[7], |h| h.contains(&b'`'), C_CODE),
    // every alternative starts with a digit (after an optional `v`)
    Pattern::new(ANCHORS[8], |h| h.iter().any(u8::is_ascii_digit), C_NUMBER),
];

#[cold]
fn never() -> Regex {
    // The patterns above are literals covered by the unit tests.
    #[allow(clippy::unwrap_used)]
    Regex::new("$^").unwrap()
}

/// Splits prose into sentences: at `.`, `!`, `?` or `:` followed by white
/// space and a capital, a quote or a digit, and at line breaks; bullet
/// marks are dropped.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['-', '*', '•', '>'])
            .trim_start();
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        let b = line.as_bytes();
        let mut start = 0;
        for i in memchr::memchr3_iter(b'.', b'!', b'?', b) {
            if i + 2 < b.len() && b[i + 1] == b' ' {
                let next = b[i + 2];
                if next.is_ascii_uppercase() || next == b'"' || next == b'`' {
                    let s = line[start..=i].trim();
                    if !s.is_empty() {
                        out.push(s);
                    }
                    start = i + 2;
                }
            }
        }
        let s = line[start..].trim();
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

/// The class of a sentence; `user` says whether the user wrote it.
/// `None`: chatter, not part of the trail.
pub fn classify(sentence: &str, user: bool) -> Option<Class> {
    let c = Checked::new(sentence);
    if user && CONSTRAINT_RE.is_match(&c) {
        return Some(Class::Constraint);
    }
    if DECISION_RE.is_match(&c) {
        return Some(Class::Decision);
    }
    if !user && BLOCKER_RE.is_match(&c) {
        return Some(Class::Blocker);
    }
    if has_anchor(&c) {
        return Some(Class::Fact);
    }
    if user && sentence.split_whitespace().count() >= 3 {
        return Some(Class::Request);
    }
    None
}

/// The anchor test of a [`Class::Fact`]: whether [`anchors`] would find
/// one, stopping at the first (a span [`anchors`] drops as contained in
/// another or as a duplicate only goes when another is kept).
fn has_anchor(c: &Checked<'_>) -> bool {
    let sentence = c.text;
    ANCHOR_RES.iter().any(|p| {
        p.for_checked(c).is_some_and(|re| {
            re.find_iter(sentence)
                .any(|m| anchor_text(sentence, m.start(), m.end()).is_some())
        })
    })
}

/// A match's anchor: white space before it and `.`, `,`, `:` after it
/// trimmed; `None` when too short (one character, not a digit). Returns
/// the trimmed span.
fn anchor_text(sentence: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let mut s = start;
    while s < end && sentence.as_bytes()[s].is_ascii_whitespace() {
        s += 1;
    }
    let t = sentence[s..end].trim_end_matches(['.', ',', ':']);
    if t.is_empty() || t.len() < 2 && !t.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((s, s + t.len()))
}

/// The anchors of a sentence: paths, endpoints, URLs, env vars, tables,
/// flags, code spans, versions and numbers, in order of appearance, without
/// duplicates.
pub fn anchors(sentence: &str) -> Vec<String> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let c = Checked::new(sentence);
    for re in ANCHOR_RES.iter().filter_map(|p| p.for_checked(&c)) {
        for m in re.find_iter(sentence) {
            let Some((s, e)) = anchor_text(sentence, m.start(), m.end()) else {
                continue;
            };
            if spans.iter().any(|&(a, b)| a <= s && e <= b) {
                continue;
            }
            spans.retain(|&(a, b)| !(s <= a && b <= e));
            spans.push((s, e));
        }
    }
    spans.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    for (s, e) in spans {
        let t = sentence[s..e].trim_matches('`').to_string();
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Words that carry meaning (for the survival check of anchorless
/// sentences): four letters or more, not a common function word.
pub fn content_words(sentence: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "this", "that", "with", "from", "have", "will", "they", "them", "then", "than", "there",
        "their", "what", "when", "which", "while", "would", "should", "could", "into", "onto",
        "been", "being", "were", "also", "only", "just", "some", "such", "very", "more", "most",
        "each", "every", "about", "after", "before", "because", "does", "done", "make", "sure",
        "your", "ours", "here",
    ];
    sentence
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_at_capitals_only() {
        let s = sentences("Set it to 4.2. Then run it. See src/a.rs for more.\n- never push");
        assert_eq!(
            s,
            vec![
                "Set it to 4.2.",
                "Then run it.",
                "See src/a.rs for more.",
                "never push"
            ]
        );
    }

    #[test]
    fn classifies() {
        assert_eq!(
            classify("Never commit the .env file.", true),
            Some(Class::Constraint)
        );
        assert_eq!(
            classify("We chose RS256 over HS256.", false),
            Some(Class::Decision)
        );
        assert_eq!(
            classify("Clippy still fails on it.", false),
            Some(Class::Blocker)
        );
        assert_eq!(
            classify("The TTL is 900 seconds.", false),
            Some(Class::Fact)
        );
        assert_eq!(classify("Let me look around.", false), None);
        assert_eq!(
            classify("Fix the flaky login test", true),
            Some(Class::Request)
        );
    }

    #[test]
    fn finds_anchors() {
        let a = anchors(
            "The handler is POST /api/v2/hooks and reads STRIPE_SECRET from src/x.rs on port 6380.",
        );
        assert_eq!(
            a,
            vec!["POST /api/v2/hooks", "STRIPE_SECRET", "src/x.rs", "6380"]
        );
        let a = anchors("It creates table webhook_events in 4.1 MB.");
        assert_eq!(a, vec!["table webhook_events", "4.1 MB"]);
        assert!(anchors("Nothing here at all").is_empty());
    }

    /// The blocker pattern as written before its stems lost their `\w*`.
    const BLOCKER_BEFORE: &str = r"(?i)\b(blocked|blocker|blocking|still fail\w*|fails|failing|failed|open problem|still open|could not|couldn'?t|cannot|can'?t|unresolved|not yet|todo|crash\w*|oom\w*|killed|error)\b";

    fn words() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("crash"),
            Just("Crashed"),
            Just("crashé"),
            Just("OOM"),
            Just("oomkilled"),
            Just("still failing"),
            Just("still fail"),
            Just("STILL FAILS"),
            Just("error"),
            Just("errors"),
            Just("can't"),
            Just("cant"),
            Just("not yet"),
            Just("x"),
            Just("_"),
            Just("é"),
            Just("ſtill fail"),
            Just("todo"),
            Just("1"),
            Just("-"),
            Just("."),
            Just(" "),
            Just("  "),
            Just("\u{212a}illed"),
            Just("killed"),
            Just("décrash"),
        ];
        proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
    }

    /// Every pattern, in one order: constraint, decision, blocker, the
    /// anchors.
    fn all() -> Vec<&'static Pattern> {
        [&CONSTRAINT_RE, &DECISION_RE, &BLOCKER_RE]
            .into_iter()
            .chain(ANCHOR_RES.iter())
            .collect()
    }

    /// The regexes run on `s`, all of them (a pattern whose pre-check
    /// fails is compiled anyway, for the comparison).
    fn regexes(s: &str) -> Vec<&'static Regex> {
        all().into_iter().map(|p| p.regex(!s.is_ascii())).collect()
    }

    /// The `regex` crate's build of each pattern but the blocker (and the
    /// blocker as it was), compiled once for all cases.
    fn reference() -> &'static (regex::Regex, Vec<regex::Regex>) {
        static R: OnceLock<(regex::Regex, Vec<regex::Regex>)> = OnceLock::new();
        R.get_or_init(|| {
            let re = |t: &str| regex::Regex::new(t).unwrap();
            let pairs = [CONSTRAINT, DECISION]
                .into_iter()
                .chain(ANCHORS.iter().copied())
                .map(re)
                .collect();
            (re(BLOCKER_BEFORE), pairs)
        })
    }

    fn spans(re: &Regex, s: &str) -> Vec<(usize, usize)> {
        re.find_iter(s).map(|m| (m.start(), m.end())).collect()
    }

    #[test]
    fn the_path_pre_check_holds_for_every_extension_and_skips_a_full_stop() {
        let p = &ANCHOR_RES[3];
        for ext in [
            "rs", "py", "ts", "tsx", "js", "go", "sql", "toml", "yaml", "yml", "json", "md", "sh",
            "env", "lock", "css", "html",
        ] {
            let s = format!("Open main.{ext} now");
            assert!((p.may_match)(s.as_bytes()), "{s}");
            assert_eq!(anchors(&s), vec![format!("main.{ext}")], "{s}");
        }
        for s in [
            "Running the tests.",
            "All green. Next one.",
            "Done! 3.5 of them",
        ] {
            assert!(p.for_haystack(s).is_none(), "{s}");
        }
        assert!(p.for_haystack("see a/b").is_some());
    }

    #[test]
    fn ascii_text_takes_the_ascii_set_and_the_pre_checks() {
        let p = &ANCHOR_RES[8];
        assert!(p.for_haystack("no digits").is_none());
        assert!(std::ptr::eq(
            p.for_haystack("4 digits").unwrap(),
            p.regex(false)
        ));
        assert!(std::ptr::eq(p.for_haystack("é").unwrap(), p.regex(true)));
        assert!(!CONSTRAINT_RE.is_match(&Checked::new("Nothing to see")));
        assert!(CONSTRAINT_RE.is_match(&Checked::new("Nothing to see, NEVER")));
    }

    proptest::proptest! {
        #[test]
        fn the_blocker_pattern_matches_where_it_did(s in words()) {
            proptest::prop_assert_eq!(BLOCKER_RE.is_match(&Checked::new(&s)), reference().0.is_match(&s), "{:?}", s);
        }

        #[test]
        fn patterns_without_a_prefilter_find_what_regex_finds(s in "\\PC{0,60}|[a-zA-Z0-9 ./_:`$-]{0,60}|(never|we chose|GET /a|https://x.y|db:5432|src/a.rs|API_KEY|--flag|table t|`x`|4.2 MB|v1.2|. |é){0,6}") {
            // Only the prefilter is gone (and Unicode for ASCII text), which
            // changes no match.
            let ours = all();
            let ours = ours.iter().enumerate().filter(|&(i, _)| i != 2).map(|(_, p)| *p);
            for (theirs, ours) in reference().1.iter().zip(ours) {
                let b: Vec<(usize, usize)> = theirs.find_iter(&s).map(|m| (m.start(), m.end())).collect();
                let a = ours.for_haystack(&s).map(|re| spans(re, &s)).unwrap_or_default();
                proptest::prop_assert_eq!(a, b, "{} on {:?}", theirs.as_str(), s);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn ascii_set_finds_what_the_unicode_set_finds(s in "[ -~\t\n\r\x0b\x0c\x00-\x1f\x7f]{0,60}|(never|ALWAYS|Don't|do not|keep it working|keep  x working|we'll use|switched to|still failing|OOM|crashes|can't|error|GET /a|POST /x,y|http://h/p;|https://x\\.y/z|db:5432|a:80|src/a\\.rs|~/x/y|\\.\\./a/|b-c\\.toml|API_KEY|\\$MY_VAR|--flag| --no-x|table t|TABLE `a\\.b`|`x`|`|4\\.2 MB|3,000 rows|12ms|45%|v1\\.2|1\\.2\\.3|0|_|-|\\.|,|:| |\n|\t|x|Y|9|é|—|٣|𝟘|ſ|\u{212a}|→|ǅ|\u{a0}){0,10}") {
            // the ASCII set against the Unicode set, and the pre-checks:
            // none fails where the pattern matches
            let a = regexes(&s);
            for (i, (a, p)) in a.iter().zip(all()).enumerate() {
                let u = spans(p.regex(true), &s);
                proptest::prop_assert_eq!(spans(a, &s), u.clone(), "pattern {} on {:?}", i, s);
                // the one pass computes each pre-check exactly
                let (ascii, flags) = checks(s.as_bytes());
                proptest::prop_assert_eq!(ascii, s.is_ascii());
                proptest::prop_assert_eq!(flags & p.bit != 0, (p.may_match)(s.as_bytes()), "pre-check {} on {:?}", i, s);
                if (s.is_ascii() || p.literal) && !(p.may_match)(s.as_bytes()) {
                    proptest::prop_assert!(u.is_empty(), "pre-check of pattern {} on {:?}", i, s);
                }
            }
        }
    }
}
