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

struct Patterns {
    constraint: Regex,
    decision: Regex,
    blocker: Regex,
    anchors: Vec<Regex>,
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

impl Patterns {
    fn new(unicode: bool) -> Patterns {
        Patterns {
            constraint: compile(CONSTRAINT, unicode),
            decision: compile(DECISION, unicode),
            blocker: compile(BLOCKER, unicode),
            anchors: ANCHORS.iter().map(|p| compile(p, unicode)).collect(),
        }
    }
}

/// The patterns for `haystack`: compiled without Unicode for ASCII text,
/// with it otherwise; each set on its first use.
fn patterns(haystack: &str) -> &'static Patterns {
    static ASCII: OnceLock<Patterns> = OnceLock::new();
    static UNICODE: OnceLock<Patterns> = OnceLock::new();
    if haystack.is_ascii() {
        ASCII.get_or_init(|| Patterns::new(false))
    } else {
        UNICODE.get_or_init(|| Patterns::new(true))
    }
}

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
        let mut i = 0;
        while i < b.len() {
            if matches!(b[i], b'.' | b'!' | b'?') && i + 2 < b.len() && b[i + 1] == b' ' {
                let next = b[i + 2];
                if next.is_ascii_uppercase() || next == b'"' || next == b'`' {
                    let s = line[start..=i].trim();
                    if !s.is_empty() {
                        out.push(s);
                    }
                    start = i + 2;
                }
            }
            i += 1;
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
    let p = patterns(sentence);
    if user && p.constraint.is_match(sentence) {
        return Some(Class::Constraint);
    }
    if p.decision.is_match(sentence) {
        return Some(Class::Decision);
    }
    if !user && p.blocker.is_match(sentence) {
        return Some(Class::Blocker);
    }
    if has_anchor(sentence) {
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
fn has_anchor(sentence: &str) -> bool {
    patterns(sentence).anchors.iter().any(|re| {
        re.find_iter(sentence)
            .any(|m| anchor_text(sentence, m.start(), m.end()).is_some())
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
    for re in &patterns(sentence).anchors {
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

    /// Each pattern of a set, in one order: constraint, decision, blocker,
    /// the anchors.
    fn all(p: &Patterns) -> Vec<&Regex> {
        [&p.constraint, &p.decision, &p.blocker]
            .into_iter()
            .chain(p.anchors.iter())
            .collect()
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
    fn ascii_text_takes_the_ascii_set() {
        assert!(std::ptr::eq(patterns("a b"), patterns("")));
        assert!(!std::ptr::eq(patterns("a b"), patterns("é")));
    }

    proptest::proptest! {
        #[test]
        fn the_blocker_pattern_matches_where_it_did(s in words()) {
            proptest::prop_assert_eq!(patterns(&s).blocker.is_match(&s), reference().0.is_match(&s), "{:?}", s);
        }

        #[test]
        fn patterns_without_a_prefilter_find_what_regex_finds(s in "\\PC{0,60}|[a-zA-Z0-9 ./_:`$-]{0,60}|(never|we chose|GET /a|https://x.y|db:5432|src/a.rs|API_KEY|--flag|table t|`x`|4.2 MB|v1.2|. |é){0,6}") {
            // Only the prefilter is gone (and Unicode for ASCII text), which
            // changes no match.
            let ours = all(patterns(&s));
            let ours = ours.iter().enumerate().filter(|&(i, _)| i != 2).map(|(_, r)| *r);
            for (theirs, ours) in reference().1.iter().zip(ours) {
                let b: Vec<(usize, usize)> = theirs.find_iter(&s).map(|m| (m.start(), m.end())).collect();
                proptest::prop_assert_eq!(spans(ours, &s), b, "{} on {:?}", theirs.as_str(), s);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn ascii_set_finds_what_the_unicode_set_finds(s in "[ -~\t\n\r\x0b\x0c\x00-\x1f\x7f]{0,60}|(never|ALWAYS|Don't|do not|keep it working|keep  x working|we'll use|switched to|still failing|OOM|crashes|can't|error|GET /a|POST /x,y|http://h/p;|https://x\\.y/z|db:5432|a:80|src/a\\.rs|~/x/y|\\.\\./a/|b-c\\.toml|API_KEY|\\$MY_VAR|--flag| --no-x|table t|TABLE `a\\.b`|`x`|`|4\\.2 MB|3,000 rows|12ms|45%|v1\\.2|1\\.2\\.3|0|_|-|\\.|,|:| |\n|\t|x|Y|9){0,10}") {
            let a = all(patterns(&s));
            let u = all(patterns("\u{e9}"));
            for (i, (a, u)) in a.iter().zip(u.iter()).enumerate() {
                proptest::prop_assert_eq!(spans(a, &s), spans(u, &s), "pattern {} on {:?}", i, s);
            }
        }
    }
}
