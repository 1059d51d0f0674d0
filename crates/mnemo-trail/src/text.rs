//! Prose → sentences, their class (constraint, decision, blocker, fact) and
//! their anchors (paths, endpoints, env vars, tables, ports, numbers): the
//! tokens that must survive for a sentence to count as kept.

use regex::Regex;
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

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).unwrap_or_else(|_| never());
        Patterns {
            constraint: re(
                r"(?i)\b(never|always|don'?t|do not|must not|mustn'?t|must always|only use|only ever|make sure|avoid|not allowed|no matter what|under no circumstances|keep .{0,40} working)\b",
            ),
            decision: re(
                r"(?i)\b(we chose|we choose|i chose|chose to|choosing|decided|decision|instead of|rather than|going with|we'?ll use|we will use|opted|settled on|switch(ed)? to)\b",
            ),
            blocker: re(
                r"(?i)\b(blocked|blocker|blocking|still fail\w*|fails|failing|failed|open problem|still open|could not|couldn'?t|cannot|can'?t|unresolved|not yet|todo|crash\w*|oom\w*|killed|error)\b",
            ),
            anchors: vec![
                // endpoints with a method
                re(r"\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /[^\s,;)`'\x22]*"),
                // URLs
                re(r"\bhttps?://[^\s,;)`'\x22]+"),
                // host:port
                re(r"\b[a-z][a-z0-9.-]*:\d{2,5}\b"),
                // paths with a directory or an extension
                re(r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:rs|py|ts|tsx|js|go|sql|toml|ya?ml|json|md|sh|env|lock|css|html)\b"),
                // env vars and constants
                re(r"\$?\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),
                // flags
                re(r"(?:^|\s)--[a-z][a-z0-9-]+"),
                // tables
                re(r"(?i)\btable\s+`?([a-z_][a-z0-9_.]*)"),
                // code spans
                re(r"`[^`\n]{1,80}`"),
                // versions and numbers with their unit
                re(r"\b\d[\d,_]*(?:\.\d+)?\s*(?:ms|s|seconds?|minutes?|hours?|days?|KB|MB|GB|TB|Mi|Gi|rows|items|tests|runs|bytes|tokens)\b|\b\d[\d,_]*(?:\.\d+)?%|\bv?\d+(?:\.\d+)+\b|\b\d[\d,_]*(?:\.\d+)?\b"),
            ],
        }
    })
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
    let p = patterns();
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
    patterns().anchors.iter().any(|re| {
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
    for re in &patterns().anchors {
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
}
