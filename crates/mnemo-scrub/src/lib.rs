//! # mnemo-scrub — Layer 2 secret scrubbing for mnemo
//!
//! This crate owns the detection and redaction of secrets (API keys, tokens,
//! private keys, passwords, connection strings, …) in any text that mnemo is
//! about to persist or print. Every write path of mnemo goes through it.
//!
//! * **Rules are data.** The built-in rule set lives in `rules/default.toml`;
//!   `build.rs` parses it at build time into Rust statics, from which the
//!   rules are set up once per process, lazily (no TOML parse at run time).
//!   Each rule has an id, a description, a regex, prefilter keywords and
//!   optional secret group, entropy floor, placeholder allow-list and
//!   specificity (see `docs/scrubbing.md`).
//! * **Fast.** One Aho-Corasick automaton over all keywords finds candidate
//!   positions; a rule's regex only runs there: as one anchored search at the
//!   hit when every match of the rule starts with a keyword, else on the line
//!   (or, for multi-line rules such as PEM blocks, the bounded window) around
//!   the hit. Regexes are compiled on first use.
//! * **Deterministic.** Redactions are sorted and non-overlapping; overlapping
//!   candidates are merged into one redaction named after the most specific
//!   rule. Scrubbing is idempotent and never splits a UTF-8 character.
//!
//! What this crate must never do: it performs no I/O of its own (the only I/O
//! is the streaming API over a caller-provided [`std::io::Read`] /
//! [`std::io::Write`]), it never panics on any input, it uses no `unsafe`,
//! and it never returns a text in which a byte range it decided to redact
//! survives.

mod engine;
mod file_format;
mod kwtable;
// used by build.rs (through `#[path]`) and checked by the tests
#[cfg(test)]
mod required;
mod rules;
mod stream;

pub use rules::{Rule, RuleError};
pub use stream::{MAX_STREAM_BUFFER, ScrubError, StreamOptions, StreamStats};

use std::sync::{Mutex, OnceLock};

/// The built-in rule file (TOML), compiled into the binary.
pub const DEFAULT_RULES_TOML: &str = include_str!("../rules/default.toml");

/// The prefilter keywords of the built-in rules (`rules/default.toml` as
/// `build.rs` compiled it in: lowercase, none empty), rule by rule, so a
/// keyword two rules share comes twice. The scan starts a rule only where
/// one of its keywords occurs, ASCII-case-insensitively: a text in which
/// none occurs has no finding under [`Scrubber::default_rules`].
pub fn default_rule_keywords() -> impl Iterator<Item = &'static str> + Clone {
    rules::builtin_keywords()
}

/// Whether any keyword of the built-in rules ([`default_rule_keywords`])
/// occurs in `text`, ASCII-case-insensitively. The scrubber starts a rule
/// only at one of its keywords, so `false` means the built-in rules find
/// nothing in `text`. Walks the keyword table compiled into the binary:
/// no automaton is built at run time (a one-shot hook process pays for no
/// construction).
pub fn default_rule_keyword_occurs(text: &[u8]) -> bool {
    engine::builtin_keyword_occurs(text)
}

/// One redaction: which rule fired, the byte range in the *original* text,
/// and the text that replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Redaction {
    /// Id of the rule that decided the redaction (e.g. `github-pat`).
    pub rule: String,
    /// Start byte offset in the original text (inclusive, on a char boundary).
    pub start: usize,
    /// End byte offset in the original text (exclusive, on a char boundary).
    pub end: usize,
    /// The replacement text written in place of `start..end`.
    pub replacement: String,
}

/// The result of scrubbing a text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scrubbed {
    /// The scrubbed text.
    pub text: String,
    /// The redactions applied, sorted by `start`, non-overlapping.
    pub redactions: Vec<Redaction>,
}

/// A finding of the audit mode: a rule and a byte range, without rewriting.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    /// Id of the rule.
    pub rule: String,
    /// Start byte offset (inclusive).
    pub start: usize,
    /// End byte offset (exclusive).
    pub end: usize,
}

/// How a redacted span is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplacementStyle {
    /// `[REDACTED:<rule-id>]` (mnemo's default, SPEC §2).
    #[default]
    Named,
    /// What Pantheon's `scrub-secrets.py` prints for the same kind of secret
    /// (`[REDACTED]`, `[GITHUB TOKEN REDACTED]`, …), for `mnemo inline`.
    Pantheon,
}

/// A compiled rule set.
#[derive(Debug)]
pub struct Scrubber {
    pub(crate) rules: Vec<Rule>,
    pub(crate) engine: engine::Engine,
}

static DEFAULT: OnceLock<Result<Scrubber, RuleError>> = OnceLock::new();

/// Subsets of the built-in rules built by [`Scrubber::default_rules_for`]:
/// (rule indices, scrubber), at most [`MAX_SUBSETS`], kept for the process.
static SUBSETS: Mutex<Vec<(Vec<usize>, &'static Scrubber)>> = Mutex::new(Vec::new());

/// Distinct rule subsets [`Scrubber::default_rules_for`] builds before it
/// builds the whole set instead (bounds what a long-running process keeps).
const MAX_SUBSETS: usize = 8;

impl Scrubber {
    /// The built-in rule set, compiled once per process.
    pub fn default_rules() -> Result<&'static Scrubber, RuleError> {
        DEFAULT
            .get_or_init(Scrubber::build_builtin)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A scrubber that finds in `text` what [`Scrubber::default_rules`]
    /// finds, and scrubs it the same, built for as little as that needs: a
    /// rule starts only at one of its keywords, so only the built-in rules
    /// with a keyword in `text` can find anything there. The whole set
    /// when it is built already; otherwise the rules with a keyword in
    /// `text`, compiled once per distinct set of them (up to 8 sets per
    /// process, then the whole set). For short texts (ids, source ids): the
    /// keywords are looked for one by one. A URL holds only `://` of the
    /// keywords: two rules instead of every rule's keyword automaton.
    pub fn default_rules_for(text: &str) -> Result<&'static Scrubber, RuleError> {
        if let Some(full) = DEFAULT.get() {
            return full.as_ref().map_err(Clone::clone);
        }
        let set = rules::builtin_rules_in(text.as_bytes());
        let mut cache = SUBSETS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, s)) = cache.iter().find(|(k, _)| *k == set) {
            return Ok(s);
        }
        if cache.len() >= MAX_SUBSETS {
            drop(cache);
            return Scrubber::default_rules();
        }
        let s: &'static Scrubber = Box::leak(Box::new(Scrubber::default_rules_subset(&set)?));
        cache.push((set, s));
        Ok(s)
    }

    /// The built-in rules with a keyword in `text`, compiled (not kept):
    /// what [`Scrubber::default_rules_for`] builds and keeps.
    pub fn default_rules_subset_for(text: &str) -> Result<Scrubber, RuleError> {
        Scrubber::default_rules_subset(&rules::builtin_rules_in(text.as_bytes()))
    }

    /// The built-in rules of ascending indices `set`.
    fn default_rules_subset(set: &[usize]) -> Result<Scrubber, RuleError> {
        Scrubber::assemble(rules::compile_builtin_where(|i| {
            set.binary_search(&i).is_ok()
        })?)
    }

    /// Compiles a rule file (same format as `rules/default.toml`); every
    /// pattern is compiled now, so that any error is reported here.
    pub fn from_toml(toml_text: &str) -> Result<Self, RuleError> {
        Scrubber::build(toml_text, true)
    }

    fn build(toml_text: &str, eager: bool) -> Result<Self, RuleError> {
        Scrubber::assemble(rules::compile(toml_text, eager)?)
    }

    /// The built-in rules from the statics `build.rs` made of
    /// [`DEFAULT_RULES_TOML`] (no TOML parse at run time).
    fn build_builtin() -> Result<Self, RuleError> {
        Scrubber::assemble(rules::compile_builtin()?)
    }

    fn assemble(compiled: rules::Compiled) -> Result<Self, RuleError> {
        let (engine, rules) = engine::Engine::new(compiled)?;
        Ok(Scrubber { rules, engine })
    }

    /// Compiles every regex of this rule set now (the built-in set compiles
    /// them lazily, on first use) and reports the first error.
    pub fn precompile(&self) -> Result<(), RuleError> {
        self.rules.iter().try_for_each(Rule::compile)?;
        self.engine.precompile()
    }

    /// The rules of this scrubber, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Scrubs `input` with `[REDACTED:<rule-id>]` replacements.
    pub fn scrub(&self, input: &str) -> Scrubbed {
        self.scrub_with(input, ReplacementStyle::Named)
    }

    /// Scrubs `input` with the given replacement style.
    pub fn scrub_with(&self, input: &str, style: ReplacementStyle) -> Scrubbed {
        let spans = self.engine.resolved(&self.rules, input.as_bytes());
        let mut text = String::with_capacity(input.len());
        let mut redactions = Vec::with_capacity(spans.len());
        let mut last = 0usize;
        for s in spans {
            push_str_range(&mut text, input, last, s.start);
            let replacement = self.replacement(s.rule, style);
            text.push_str(&replacement);
            redactions.push(Redaction {
                rule: self.rule_id(s.rule).to_string(),
                start: s.start,
                end: s.end,
                replacement,
            });
            last = s.end;
        }
        push_str_range(&mut text, input, last, input.len());
        Scrubbed { text, redactions }
    }

    /// Audit mode: the spans that [`Scrubber::scrub`] would redact, without
    /// rewriting.
    pub fn find(&self, input: &str) -> Vec<Finding> {
        self.find_bytes(input.as_bytes())
    }

    /// Audit mode over raw bytes (the text need not be UTF-8).
    pub fn find_bytes(&self, input: &[u8]) -> Vec<Finding> {
        self.engine
            .resolved(&self.rules, input)
            .into_iter()
            .map(|s| Finding {
                rule: self.rule_id(s.rule).to_string(),
                start: s.start,
                end: s.end,
            })
            .collect()
    }

    /// Every candidate of every rule before overlap resolution (for rule
    /// debugging and tests): may overlap, sorted by start, then rule order.
    pub fn find_all(&self, input: &str) -> Vec<Finding> {
        let mut raw = self.engine.candidates(&self.rules, input.as_bytes());
        raw.sort_by_key(|c| (c.start, c.rule, c.end));
        raw.into_iter()
            .map(|s| Finding {
                rule: self.rule_id(s.rule).to_string(),
                start: s.start,
                end: s.end,
            })
            .collect()
    }

    /// Scrubs a stream in bounded memory (see [`StreamOptions`]); returns
    /// the redactions with absolute byte offsets into the input stream.
    pub fn scrub_stream<R: std::io::Read, W: std::io::Write>(
        &self,
        reader: R,
        writer: W,
    ) -> Result<Vec<Redaction>, ScrubError> {
        let mut out = Vec::new();
        self.scrub_stream_with(reader, writer, &StreamOptions::default(), |r| out.push(r))?;
        Ok(out)
    }

    /// Scrubs a stream with explicit options, handing every redaction to
    /// `on_redaction` as soon as its chunk is written (so that the caller
    /// decides whether to keep them; memory stays bounded either way).
    pub fn scrub_stream_with<R, W, F>(
        &self,
        reader: R,
        writer: W,
        options: &StreamOptions,
        on_redaction: F,
    ) -> Result<StreamStats, ScrubError>
    where
        R: std::io::Read,
        W: std::io::Write,
        F: FnMut(Redaction),
    {
        stream::scrub_stream(self, reader, writer, options, on_redaction)
    }

    pub(crate) fn rule_id(&self, idx: usize) -> &str {
        self.rules.get(idx).map(|r| r.id()).unwrap_or("unknown")
    }

    pub(crate) fn replacement(&self, idx: usize, style: ReplacementStyle) -> String {
        match style {
            ReplacementStyle::Named => format!("[REDACTED:{}]", self.rule_id(idx)),
            ReplacementStyle::Pantheon => self
                .rules
                .get(idx)
                .and_then(|r| r.pantheon_replacement())
                .unwrap_or("[REDACTED]")
                .to_string(),
        }
    }
}

/// Appends `input[a..b]` to `out`; offsets are always char boundaries by
/// construction, the lossy path only exists so that this can never panic.
fn push_str_range(out: &mut String, input: &str, a: usize, b: usize) {
    if a >= b {
        return;
    }
    match input.get(a..b) {
        Some(s) => out.push_str(s),
        None => {
            let bytes = input.as_bytes();
            let lo = a.min(bytes.len());
            let hi = b.min(bytes.len());
            out.push_str(&String::from_utf8_lossy(&bytes[lo..hi]));
        }
    }
}

/// Scrubs `input` with the built-in rules and `[REDACTED:<rule-id>]`
/// replacements.
///
/// Fails closed: should the built-in rules ever fail to load, the whole text
/// is replaced by `[REDACTED:scrubber-unavailable]`.
pub fn scrub(input: &str) -> Scrubbed {
    scrub_with(input, ReplacementStyle::Named)
}

/// [`scrub`] with a replacement style.
pub fn scrub_with(input: &str, style: ReplacementStyle) -> Scrubbed {
    match Scrubber::default_rules() {
        Ok(s) => s.scrub_with(input, style),
        Err(_) => fail_closed(input),
    }
}

fn fail_closed(input: &str) -> Scrubbed {
    if input.is_empty() {
        return Scrubbed::default();
    }
    let replacement = "[REDACTED:scrubber-unavailable]".to_string();
    Scrubbed {
        text: replacement.clone(),
        redactions: vec![Redaction {
            rule: "scrubber-unavailable".to_string(),
            start: 0,
            end: input.len(),
            replacement,
        }],
    }
}

/// Shannon entropy of `bytes` in bits per byte.
pub fn shannon_entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}
