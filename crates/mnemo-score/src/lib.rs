//! The priority scoring engine of the seed's §3, in exact integer arithmetic.
//!
//! A summary is scored on five dimensions — impact, risk, novelty, blockers
//! and downstream relevance — each a value in hundredths. The total is their
//! weighted sum in ten-thousandths, so that band boundaries are exact (0.75 is
//! CRITICAL, 0.7499 is not). Every score is explainable: [`Explain`] says which
//! keyword, file count, flag or agent pair set each dimension.
//!
//! Keywords are found with one Aho-Corasick automaton, whatever their number.
//! Two matching modes exist ([`Matching`]): `word-start` (mnemo's default: a
//! keyword matches where a word starts and may run on inside it; multi-word
//! keywords allow any whitespace between their words) and `substring`
//! (Pantheon's script: plain case-insensitive substring).
//!
//! This crate owns scoring only. It never does I/O, never allocates per
//! keyword at score time, never uses floating point for a decision, and never
//! panics on any text.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use mnemo_model::config::{Bands, FileNovelty, Weights};
use mnemo_model::{Config, Hundredths, Matching, agent_key};
use serde::Serialize;

/// The priority bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Band {
    /// Below `medium`: files only.
    Low,
    /// One line.
    Medium,
    /// Two lines when the budget allows, else one.
    High,
    /// Always three lines.
    Critical,
}

impl Band {
    /// `CRITICAL`, `HIGH`, `MEDIUM`, `LOW`.
    pub fn as_str(self) -> &'static str {
        match self {
            Band::Critical => "CRITICAL",
            Band::High => "HIGH",
            Band::Medium => "MEDIUM",
            Band::Low => "LOW",
        }
    }
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A total score in ten-thousandths (`0..=10_000`): exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Total(u32);

impl Total {
    /// The exact value in ten-thousandths.
    pub fn ten_thousandths(self) -> u32 {
        self.0
    }

    /// Rounded half-up to hundredths (what is printed).
    pub fn rounded_hundredths(self) -> u32 {
        (self.0 + 50) / 100
    }

    /// The rounded value as `f64`, for JSON (`0.74`).
    pub fn as_f64_rounded(self) -> f64 {
        f64::from(self.rounded_hundredths()) / 100.0
    }
}

impl fmt::Display for Total {
    /// Two decimals, rounded half-up: `0.74`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.rounded_hundredths();
        write!(f, "{}.{:02}", r / 100, r % 100)
    }
}

/// What set the novelty dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoveltySource {
    /// Nothing: 0.
    None,
    /// A keyword (index into [`Engine::keywords`]).
    Keyword(usize),
    /// The number of files changed reached a threshold.
    Files {
        /// Files changed.
        count: usize,
        /// The threshold reached.
        min_files: u32,
    },
}

/// What set the blockers dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockerSource {
    /// Nothing: 0.
    None,
    /// The explicit "unblocks others" flag.
    UnblocksFlag,
    /// A phrase of the text that says it unblocks others.
    UnblocksPhrase(String),
    /// The record's `blockers` field or `blocked` status.
    BlockersField,
    /// A phrase of the text that says it was blocked or depends on something.
    BlockedPhrase(String),
}

/// What set the downstream dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownstreamSource {
    /// The relevance table's entry for this pair.
    Pair {
        /// Sending agent (normalised).
        from: String,
        /// Receiving agent (normalised).
        to: String,
    },
    /// The default: the pair or the next agent is unknown.
    Default {
        /// Why the default applied.
        reason: &'static str,
    },
}

/// Which keyword, count, flag or pair set each dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    /// Keyword that set impact (index into [`Engine::keywords`]).
    pub impact: Option<usize>,
    /// Keyword that set risk.
    pub risk: Option<usize>,
    /// What set novelty.
    pub novelty: NoveltySource,
    /// What set blockers.
    pub blockers: BlockerSource,
    /// What set downstream relevance.
    pub downstream: DownstreamSource,
    /// True when the text was empty, which forces the total to 0.
    pub empty_text: bool,
}

/// The result of scoring one summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// Weighted total, exact.
    pub total: Total,
    /// Band, decided on the exact total.
    pub band: Band,
    /// Impact dimension.
    pub impact: Hundredths,
    /// Risk dimension.
    pub risk: Hundredths,
    /// Novelty dimension.
    pub novelty: Hundredths,
    /// Blockers dimension.
    pub blockers: Hundredths,
    /// Downstream relevance dimension.
    pub downstream: Hundredths,
    /// Keywords found, as indexes into [`Engine::keywords`], in table order.
    pub keywords: Vec<usize>,
    /// Why each dimension has its value.
    pub explain: Explain,
}

/// What the engine needs to know about one summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScoreInput<'a> {
    /// The text to search for keywords.
    pub text: &'a str,
    /// Number of files changed.
    pub files: usize,
    /// Sending agent.
    pub from: Option<&'a str>,
    /// Receiving (next) agent.
    pub to: Option<&'a str>,
    /// The entry says explicitly that it unblocks others.
    pub unblocks: bool,
    /// The entry has blockers or a `blocked` status.
    pub has_blockers: bool,
}

/// What one pass over a text found.
struct Scan {
    keywords: Vec<usize>,
    unblocks: Option<usize>,
    blocked: Option<usize>,
}

/// A keyword row, as the engine holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordRow {
    /// Display spelling (`JWT`).
    pub keyword: String,
    /// Impact.
    pub impact: Hundredths,
    /// Risk.
    pub risk: Hundredths,
    /// Novelty.
    pub novelty: Hundredths,
    /// Category.
    pub category: String,
}

/// The goto graph of an Aho-Corasick automaton without its failure links: a
/// byte trie over the (lower-cased) patterns, walked from each word start.
///
/// Word-start matching only ever needs the matches that begin at a word
/// start, so no failure transitions are needed: the walk stops as soon as no
/// pattern can continue, usually after one or two bytes. Bytes are mapped to
/// classes (upper and lower case share one), so the table stays small with
/// hundreds of keywords.
#[derive(Debug, Clone)]
struct WordTrie {
    /// Byte → class (0: no pattern contains this byte).
    class_of: [u8; 256],
    /// Number of classes, including class 0.
    classes: usize,
    /// `next[node * classes + class]`: the child node, 0 for none (the root,
    /// node 0, is never a child).
    next: Vec<u32>,
    /// Patterns that end at each node.
    ends: Vec<Vec<u32>>,
}

impl WordTrie {
    fn new(patterns: &[String]) -> Result<WordTrie, BuildError> {
        let mut class_of = [0u8; 256];
        let mut classes = 1usize;
        for p in patterns {
            for &b in p.as_bytes() {
                let lower = b.to_ascii_lowercase();
                if class_of[usize::from(lower)] == 0 {
                    if classes > usize::from(u8::MAX) {
                        return Err(BuildError("too many distinct bytes in keywords".into()));
                    }
                    class_of[usize::from(lower)] = classes as u8;
                    class_of[usize::from(lower.to_ascii_uppercase())] = classes as u8;
                    classes += 1;
                }
            }
        }
        let mut next = vec![0u32; classes];
        let mut ends: Vec<Vec<u32>> = vec![Vec::new()];
        for (id, p) in patterns.iter().enumerate() {
            let mut node = 0usize;
            for &b in p.as_bytes() {
                let c = usize::from(class_of[usize::from(b)]);
                let child = next[node * classes + c];
                node = if child == 0 {
                    let new = ends.len();
                    let new_id = u32::try_from(new)
                        .map_err(|_| BuildError("too many keyword states".into()))?;
                    next[node * classes + c] = new_id;
                    next.extend(std::iter::repeat_n(0, classes));
                    ends.push(Vec::new());
                    new
                } else {
                    child as usize
                };
            }
            if let Some(e) = ends.get_mut(node) {
                e.push(id as u32);
            }
        }
        Ok(WordTrie {
            class_of,
            classes,
            next,
            ends,
        })
    }

    /// Calls `hit` for every pattern that matches `bytes` at exactly `start`.
    #[inline]
    fn walk(&self, bytes: &[u8], start: usize, hit: &mut impl FnMut(usize)) {
        let mut node = 0usize;
        for &b in bytes.get(start..).unwrap_or_default() {
            let c = usize::from(self.class_of[usize::from(b)]);
            if c == 0 {
                return;
            }
            let child = self.next.get(node * self.classes + c).copied().unwrap_or(0);
            if child == 0 {
                return;
            }
            node = child as usize;
            if let Some(ends) = self.ends.get(node) {
                for &p in ends {
                    hit(p as usize);
                }
            }
        }
    }
}

/// Building the engine failed (the automaton could not be built).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the keyword matcher: {0}")]
pub struct BuildError(String);

/// The scoring engine: the configuration's tables, compiled.
#[derive(Debug, Clone)]
pub struct Engine {
    keywords: Vec<KeywordRow>,
    /// One automaton over the keywords, then the unblocks phrases, then the
    /// blocked phrases: one pass over the text finds all three (substring
    /// mode only; word-start mode walks `trie`).
    matcher: Option<AhoCorasick>,
    /// The same patterns as a trie, for word-start matching.
    trie: WordTrie,
    /// Byte classes (ALNUM, FIRST: a pattern can start with it, NON_ASCII)
    /// for the word-start scan.
    classes: [u8; 256],
    /// Phrases: first the unblocks phrases, then the blocked phrases.
    phrases: Vec<String>,
    unblocks_phrase_count: usize,
    matching: Matching,
    weights: Weights,
    bands: Bands,
    file_novelty: Vec<FileNovelty>,
    unblocks_value: Hundredths,
    blocked_value: Hundredths,
    default_relevance: Hundredths,
    relevance: BTreeMap<String, BTreeMap<String, Hundredths>>,
}

/// Lower-cases and collapses every whitespace run of a pattern to one space.
fn normalise_pattern(p: &str) -> String {
    p.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

/// Collapses whitespace runs to a single space, borrowing when nothing changes.
///
/// The common case — ASCII prose with single spaces — is recognised with
/// vectorised scans (`is_ascii`, `memchr`) and costs no copy.
fn collapse_whitespace(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let odd_space = memchr::memchr2(0x0b, 0x0c, bytes).is_some();
    let needs = !text.is_ascii()
        || odd_space
        || memchr::memchr3(b'\n', b'\t', b'\r', bytes).is_some()
        || memchr::memmem::find(bytes, b"  ").is_some();
    if !needs {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    Cow::Owned(out)
}

/// Byte classes for the word-start scan.
const ALNUM: u8 = 1;
const FIRST: u8 = 2;
const NON_ASCII: u8 = 4;

/// True when the byte offset `start` begins a word of `text`.
fn at_word_start(text: &str, start: usize) -> bool {
    match text.get(..start).and_then(|s| s.chars().next_back()) {
        None => true,
        Some(c) => !c.is_alphanumeric(),
    }
}

fn build_matcher(patterns: &[String]) -> Result<AhoCorasick, BuildError> {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        // A contiguous NFA builds in a fraction of a DFA's time, which is
        // what a one-shot `mnemo inline` call pays for.
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(patterns)
        .map_err(|e| BuildError(e.to_string()))
}

impl Engine {
    /// Compiles the configuration's scoring tables, with its matching mode.
    pub fn new(config: &Config) -> Result<Engine, BuildError> {
        Engine::with_matching(config, config.scoring.matching)
    }

    /// Compiles the tables with an explicit matching mode (`mnemo inline`
    /// uses [`Matching::Substring`], as Pantheon's script does).
    pub fn with_matching(config: &Config, matching: Matching) -> Result<Engine, BuildError> {
        let s = &config.scoring;
        let keywords: Vec<KeywordRow> = s
            .keywords
            .iter()
            .map(|k| KeywordRow {
                keyword: k.keyword.trim().to_string(),
                impact: k.impact,
                risk: k.risk,
                novelty: k.novelty,
                category: k.category.clone(),
            })
            .collect();
        let patterns: Vec<String> = keywords
            .iter()
            .map(|k| normalise_pattern(&k.keyword))
            .collect();
        let mut phrases: Vec<String> = s
            .blockers
            .unblocks_phrases
            .iter()
            .map(|p| normalise_pattern(p))
            .collect();
        let unblocks_phrase_count = phrases.len();
        phrases.extend(
            s.blockers
                .blocked_phrases
                .iter()
                .map(|p| normalise_pattern(p)),
        );
        let mut file_novelty = s.file_novelty.clone();
        file_novelty.sort_by_key(|f| f.min_files);
        let mut all = patterns;
        all.extend(phrases.iter().cloned());
        let mut classes = [0u8; 256];
        for (b, class) in classes.iter_mut().enumerate() {
            let b = b as u8;
            if b.is_ascii_alphanumeric() {
                *class |= ALNUM;
            }
            if b >= 0x80 {
                *class |= NON_ASCII;
            }
        }
        for p in &all {
            if let Some(&b) = p.as_bytes().first() {
                classes[usize::from(b.to_ascii_lowercase())] |= FIRST;
                classes[usize::from(b.to_ascii_uppercase())] |= FIRST;
            }
        }
        Ok(Engine {
            matcher: match matching {
                Matching::Substring => Some(build_matcher(&all)?),
                Matching::WordStart => None,
            },
            trie: WordTrie::new(&all)?,
            classes,
            keywords,
            phrases,
            unblocks_phrase_count,
            matching,
            weights: s.weights,
            bands: s.bands,
            file_novelty,
            unblocks_value: s.blockers.unblocks,
            blocked_value: s.blockers.blocked,
            default_relevance: s.default_relevance,
            relevance: config.agents.relevance.clone(),
        })
    }

    /// The keyword rows, in table order.
    pub fn keywords(&self) -> &[KeywordRow] {
        &self.keywords
    }

    /// The matching mode.
    pub fn matching(&self) -> Matching {
        self.matching
    }

    /// Calls `hit(pattern_index)` for every match in `text` under the
    /// engine's matching mode (pattern indexes: keywords, then phrases).
    ///
    /// In word-start mode the automaton runs anchored at each word start whose
    /// first byte can begin a pattern, so that it walks only as far as a
    /// keyword could still match: far fewer steps than an unanchored
    /// overlapping scan of every byte.
    fn each_match(&self, text: &str, mut hit: impl FnMut(usize)) {
        match self.matching {
            Matching::Substring => {
                if let Some(matcher) = &self.matcher {
                    for m in matcher.find_overlapping_iter(text) {
                        hit(m.pattern().as_usize());
                    }
                }
            }
            Matching::WordStart => {
                let text = collapse_whitespace(text);
                let bytes = text.as_bytes();
                let mut prev_alnum = false;
                for (i, &b) in bytes.iter().enumerate() {
                    let class = self.classes[usize::from(b)];
                    if class & NON_ASCII != 0 {
                        // Only a char boundary starts a character; its class
                        // decides whether the next byte starts a word.
                        if text.is_char_boundary(i) {
                            prev_alnum =
                                text[i..].chars().next().is_some_and(char::is_alphanumeric);
                            if class & FIRST != 0 && at_word_start(&text, i) {
                                self.anchored_matches(bytes, i, &mut hit);
                            }
                        }
                        continue;
                    }
                    if class & FIRST != 0 && !prev_alnum {
                        self.anchored_matches(bytes, i, &mut hit);
                    }
                    prev_alnum = class & ALNUM != 0;
                }
            }
        }
    }

    /// One pass over `text`: keyword indexes found (in table order), and the
    /// first unblocks and blocked phrases found (indexes into `phrases`).
    fn scan(&self, text: &str) -> Scan {
        let nk = self.keywords.len();
        let mut found = vec![false; nk];
        let mut unblocks: Option<usize> = None;
        let mut blocked: Option<usize> = None;
        self.each_match(text, |i| {
            if i < nk {
                found[i] = true;
            } else {
                let p = i - nk;
                if p < self.unblocks_phrase_count {
                    unblocks = Some(unblocks.map_or(p, |u| u.min(p)));
                } else {
                    blocked = Some(blocked.map_or(p, |b| b.min(p)));
                }
            }
        });
        Scan {
            keywords: found
                .iter()
                .enumerate()
                .filter_map(|(i, &f)| f.then_some(i))
                .collect(),
            unblocks,
            blocked,
        }
    }

    /// Every pattern that matches at exactly byte `i`.
    #[inline]
    fn anchored_matches(&self, bytes: &[u8], i: usize, hit: &mut impl FnMut(usize)) {
        self.trie.walk(bytes, i, hit);
    }

    /// Keyword indexes found in `text`, in table order.
    pub fn keywords_in(&self, text: &str) -> Vec<usize> {
        self.scan(text).keywords
    }

    /// Downstream relevance of a pair and why.
    pub fn downstream(
        &self,
        from: Option<&str>,
        to: Option<&str>,
    ) -> (Hundredths, DownstreamSource) {
        let default = |reason| (self.default_relevance, DownstreamSource::Default { reason });
        let Some(to) = to.map(agent_key).filter(|t| !t.is_empty()) else {
            return default("next agent unknown");
        };
        let Some(from) = from.map(agent_key).filter(|f| !f.is_empty()) else {
            return default("sending agent unknown");
        };
        match self.relevance.get(&from).and_then(|row| row.get(&to)) {
            Some(&v) => (v, DownstreamSource::Pair { from, to }),
            None => default("pair not in the relevance table"),
        }
    }

    /// The band of an exact total.
    pub fn band(&self, total: Total) -> Band {
        let t = total.0;
        let at = |h: Hundredths| u32::from(h.get()) * 100;
        if t >= at(self.bands.critical) {
            Band::Critical
        } else if t >= at(self.bands.high) {
            Band::High
        } else if t >= at(self.bands.medium) {
            Band::Medium
        } else {
            Band::Low
        }
    }

    /// The weighted total of five dimensions, exact.
    pub fn weighted(&self, dims: [Hundredths; 5]) -> Total {
        let w = self.weights;
        let ws = [w.impact, w.risk, w.novelty, w.blockers, w.downstream];
        Total(
            dims.iter()
                .zip(ws)
                .map(|(d, w)| u32::from(d.get()) * u32::from(w.get()))
                .sum(),
        )
    }

    /// Scores one summary.
    pub fn score(&self, input: &ScoreInput<'_>) -> Score {
        let Scan {
            keywords,
            unblocks,
            blocked,
        } = self.scan(input.text);
        let mut impact = (Hundredths::ZERO, None);
        let mut risk = (Hundredths::ZERO, None);
        let mut novelty = (Hundredths::ZERO, NoveltySource::None);
        // For each dimension the maximum over the keywords found; on a tie the
        // keyword listed first explains it.
        for &i in &keywords {
            let Some(k) = self.keywords.get(i) else {
                continue;
            };
            if impact.1.is_none() || k.impact > impact.0 {
                impact = (k.impact, Some(i));
            }
            if risk.1.is_none() || k.risk > risk.0 {
                risk = (k.risk, Some(i));
            }
            if novelty.1 == NoveltySource::None || k.novelty > novelty.0 {
                novelty = (k.novelty, NoveltySource::Keyword(i));
            }
        }
        // File count raises novelty, never lowers it.
        for f in &self.file_novelty {
            if input.files >= f.min_files as usize && f.novelty >= novelty.0 {
                novelty = (
                    f.novelty,
                    NoveltySource::Files {
                        count: input.files,
                        min_files: f.min_files,
                    },
                );
            }
        }
        let blockers = self.blockers(input, unblocks, blocked);
        let (downstream, downstream_source) = self.downstream(input.from, input.to);
        let dims = [impact.0, risk.0, novelty.0, blockers.0, downstream];
        let empty_text = input.text.trim().is_empty();
        let total = if empty_text {
            Total(0)
        } else {
            self.weighted(dims)
        };
        Score {
            total,
            band: self.band(total),
            impact: impact.0,
            risk: risk.0,
            novelty: novelty.0,
            blockers: blockers.0,
            downstream,
            keywords,
            explain: Explain {
                impact: impact.1,
                risk: risk.1,
                novelty: novelty.1,
                blockers: blockers.1,
                downstream: downstream_source,
                empty_text,
            },
        }
    }

    fn blockers(
        &self,
        input: &ScoreInput<'_>,
        unblocks: Option<usize>,
        blocked: Option<usize>,
    ) -> (Hundredths, BlockerSource) {
        if input.unblocks {
            return (self.unblocks_value, BlockerSource::UnblocksFlag);
        }
        let phrase = |i: usize| self.phrases.get(i).cloned().unwrap_or_default();
        let mut best = (Hundredths::ZERO, BlockerSource::None);
        if let Some(i) = unblocks {
            best = (
                self.unblocks_value,
                BlockerSource::UnblocksPhrase(phrase(i)),
            );
        }
        if input.has_blockers && self.blocked_value > best.0 {
            best = (self.blocked_value, BlockerSource::BlockersField);
        }
        if let Some(i) = blocked
            && self.blocked_value > best.0
        {
            best = (self.blocked_value, BlockerSource::BlockedPhrase(phrase(i)));
        }
        best
    }

    /// A human explanation of each dimension, in dimension order (impact,
    /// risk, novelty, blockers, downstream, then `total` when it was forced).
    pub fn explain(&self, score: &Score) -> Vec<(&'static str, String)> {
        let kw = |i: Option<usize>| match i.and_then(|i| self.keywords.get(i)) {
            Some(k) => format!("keyword {:?} ({})", k.keyword, k.category),
            None => "no keyword".to_string(),
        };
        let mut out = Vec::with_capacity(6);
        out.push(("impact", kw(score.explain.impact)));
        out.push(("risk", kw(score.explain.risk)));
        out.push((
            "novelty",
            match &score.explain.novelty {
                NoveltySource::None => "no keyword".to_string(),
                NoveltySource::Keyword(i) => kw(Some(*i)),
                NoveltySource::Files { count, min_files } => {
                    format!("{count} files changed (at least {min_files})")
                }
            },
        ));
        out.push((
            "blockers",
            match &score.explain.blockers {
                BlockerSource::None => "no blocker mentioned".to_string(),
                BlockerSource::UnblocksFlag => "flagged as unblocking others".to_string(),
                BlockerSource::UnblocksPhrase(p) => format!("text says {p:?}"),
                BlockerSource::BlockersField => "record has blockers".to_string(),
                BlockerSource::BlockedPhrase(p) => format!("text says {p:?}"),
            },
        ));
        out.push((
            "downstream",
            match &score.explain.downstream {
                DownstreamSource::Pair { from, to } => format!("relevance table {from} -> {to}"),
                DownstreamSource::Default { reason } => format!("default ({reason})"),
            },
        ));
        if score.explain.empty_text {
            out.push((
                "total",
                "empty summary: nothing to keep, score 0".to_string(),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        Engine::new(&Config::default()).unwrap()
    }

    fn names(e: &Engine, s: &Score) -> Vec<String> {
        s.keywords
            .iter()
            .map(|&i| e.keywords()[i].keyword.clone())
            .collect()
    }

    #[test]
    fn seed_example_is_0_74_high() {
        let e = engine();
        let s = e.score(&ScoreInput {
            text: "Added JWT auth endpoint with refresh token rotation",
            files: 2,
            from: Some("hermes"),
            to: Some("aphrodite"),
            ..Default::default()
        });
        assert_eq!(s.total.to_string(), "0.74");
        assert_eq!(s.total.ten_thousandths(), 7400);
        assert_eq!(s.band, Band::High);
        assert_eq!(names(&e, &s), ["auth", "JWT", "token", "endpoint"]);
        assert_eq!(
            s.explain.impact.map(|i| e.keywords()[i].keyword.as_str()),
            Some("auth")
        );
    }

    #[test]
    fn word_start_matching() {
        let e = engine();
        let found = |t: &str| -> Vec<String> {
            e.keywords_in(t)
                .into_iter()
                .map(|i| e.keywords()[i].keyword.clone())
                .collect()
        };
        assert_eq!(found("authentication and author"), ["auth"]);
        assert_eq!(found("tokens for routers"), ["token", "route"]);
        assert!(found("subroute task-management").is_empty());
        assert_eq!(found("a NEW\n\t TABLE"), ["new table"]);
        assert_eq!(found("refresh_tokens"), ["token"]);
    }

    #[test]
    fn substring_matching_is_pantheons() {
        let e = Engine::with_matching(&Config::default(), Matching::Substring).unwrap();
        let found: Vec<_> = e
            .keywords_in("Updated author list and subrouter docs")
            .into_iter()
            .map(|i| e.keywords()[i].keyword.clone())
            .collect();
        assert_eq!(found, ["auth", "route"]);
        assert!(
            e.keywords_in("new  table").is_empty(),
            "substring mode is literal"
        );
    }

    #[test]
    fn blockers_rule() {
        let e = engine();
        let b = |text: &str, unblocks: bool, has: bool| {
            e.score(&ScoreInput {
                text,
                unblocks,
                has_blockers: has,
                ..Default::default()
            })
            .blockers
            .get()
        };
        assert_eq!(b("did things", false, false), 0);
        assert_eq!(b("did things", true, false), 80);
        assert_eq!(b("this unblocked Aphrodite", false, false), 80);
        assert_eq!(b("blocked on upstream", false, false), 50);
        assert_eq!(b("depends on the auth service", false, false), 50);
        assert_eq!(b("did things", false, true), 50);
        assert_eq!(b("unblocked Themis but blocked on CI", false, false), 80);
    }

    #[test]
    fn files_raise_novelty_never_lower() {
        let e = engine();
        let n = |text: &str, files| {
            e.score(&ScoreInput {
                text,
                files,
                ..Default::default()
            })
            .novelty
            .get()
        };
        assert_eq!(n("Updated config", 4), 30);
        assert_eq!(n("Updated config", 5), 80);
        assert_eq!(n("Updated config", 10), 100);
        assert_eq!(
            n("Created a new table", 5),
            90,
            "keyword 0.9 beats the 5-file 0.8"
        );
    }

    #[test]
    fn empty_text_scores_zero() {
        let s = engine().score(&ScoreInput::default());
        assert_eq!(s.total.ten_thousandths(), 0);
        assert_eq!(s.band, Band::Low);
        assert_eq!(s.downstream.get(), 50);
    }

    #[test]
    fn rounding_is_half_up() {
        assert_eq!(Total(6750).to_string(), "0.68");
        assert_eq!(Total(5550).to_string(), "0.56");
        assert_eq!(Total(7449).to_string(), "0.74");
        assert_eq!(Total(10000).to_string(), "1.00");
    }
}
