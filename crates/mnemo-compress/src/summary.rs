//! Summaries per band (seed §4), behind the [`Summarizer`] trait.
//!
//! * CRITICAL, expanded: 3 lines — *What changed*, *To next agent*, *Gotcha*.
//! * HIGH, expanded: 2 lines — *What changed*, *To next agent* (a gotcha, when
//!   one exists and fits, closes the second line).
//! * Standard (MEDIUM, and HIGH when the budget is short): one line
//!   `[Agent] — <first sentence, ≤80 chars> — <files>`.
//! * Aggressive (LOW): `[Agent] — <files>`.
//!
//! [`DeterministicSummarizer`] uses the agent's own what / why / gotcha when
//! given, and otherwise builds the lines from [`crate::facts`]: the lead
//! sentence, then the facts in the order the (from, to) variant asks for
//! (`Config::variant_for(..).include`), packed into lines of at most
//! [`LINE_CAP`] characters. A fact never is cut in half: it fits on a line
//! or moves to the next one.

use mnemo_model::{Config, SummaryRecord};
use mnemo_score::Band;
use serde::Serialize;

use crate::budget::Mode;
use crate::extractive as ex;
use crate::facts::{FactKind, Facts, extract};
use crate::mask::{first_chars, trim_dangling};

/// The longest line a summary writes, in characters (labels excluded).
pub const LINE_CAP: usize = 480;
/// The longest lead sentence on a *What changed* line.
pub const LEAD_CAP: usize = 140;
/// The longest first sentence of a one-line entry (seed §4).
pub const STANDARD_SENTENCE_CAP: usize = 80;
/// Files listed on a one-line entry before `+N more`.
pub const MAX_FILES: usize = 4;

/// The text of a compressed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum Body {
    /// CRITICAL: three lines.
    Critical {
        /// What changed.
        what: String,
        /// Why it matters to the next agent.
        to_next: String,
        /// Gotcha, decision or trade-off.
        gotcha: String,
    },
    /// HIGH expanded: two lines.
    High {
        /// What changed.
        what: String,
        /// Why it matters to the next agent.
        to_next: String,
    },
    /// One line: first sentence and files.
    Standard {
        /// First sentence, ≤ 80 characters.
        sentence: String,
        /// Files, comma-separated (may be empty).
        files: String,
    },
    /// Half a line: files only.
    Aggressive {
        /// Files, comma-separated (may be empty).
        files: String,
    },
}

/// A compressed entry's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// A short title (the head of the entry in the ZZ artifact).
    pub title: String,
    /// The lines.
    pub body: Body,
    /// For an expanded (CRITICAL/HIGH) body: the changed files that its
    /// lines do not name, in input order (paths are facts; the renderer
    /// shows them when the pair's field mask keeps `files`). Empty for the
    /// one-line shapes, whose body carries its files.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub files: Vec<String>,
}

/// Collapses every whitespace run (line breaks included) to one space, so
/// that each summary field stays one markdown line whatever the input holds.
fn one_line(s: &mut String) {
    if s.contains(|c: char| c.is_whitespace() && c != ' ') || s.contains("  ") {
        *s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    }
}

impl Summary {
    /// Makes every field a single line (see [`one_line`]).
    fn single_lines(&mut self) {
        one_line(&mut self.title);
        match &mut self.body {
            Body::Critical {
                what,
                to_next,
                gotcha,
            } => {
                one_line(what);
                one_line(to_next);
                one_line(gotcha);
            }
            Body::High { what, to_next } => {
                one_line(what);
                one_line(to_next);
            }
            Body::Standard { sentence, files } => {
                one_line(sentence);
                one_line(files);
            }
            Body::Aggressive { files } => one_line(files),
        }
    }

    /// The body's lines, without labels (1 to 3).
    pub fn lines(&self) -> Vec<&str> {
        match &self.body {
            Body::Critical {
                what,
                to_next,
                gotcha,
            } => vec![what, to_next, gotcha],
            Body::High { what, to_next } => vec![what, to_next],
            Body::Standard { sentence, .. } => vec![sentence],
            Body::Aggressive { files } => vec![files],
        }
    }

    /// The one-line form `[Agent] — sentence — files` / `[Agent] — files`.
    pub fn one_line(&self, agent: &str) -> String {
        match &self.body {
            Body::Standard { sentence, files } => {
                let mut s = format!("[{agent}] — {sentence}");
                if !files.is_empty() {
                    s.push_str(" — ");
                    s.push_str(files);
                }
                s
            }
            Body::Aggressive { files } => format!("[{agent}] — {}", or_no_files(files)),
            Body::Critical { what, .. } | Body::High { what, .. } => format!("[{agent}] — {what}"),
        }
    }

    /// The summary cell of the STANDARD table (no agent prefix).
    pub fn cell(&self) -> String {
        match &self.body {
            Body::Standard { sentence, files } if !files.is_empty() => {
                format!("{sentence} — {files}")
            }
            Body::Standard { sentence, .. } => sentence.clone(),
            Body::Aggressive { files } => or_no_files(files).to_string(),
            Body::Critical { what, .. } | Body::High { what, .. } => what.clone(),
        }
    }

    /// The `summary_semantic` field: the labelled lines joined by newlines
    /// (only for expanded bodies).
    pub fn semantic(&self) -> Option<String> {
        match &self.body {
            Body::Critical {
                what,
                to_next,
                gotcha,
            } => Some(format!(
                "What changed: {what}\nTo next agent: {to_next}\nGotcha: {gotcha}"
            )),
            Body::High { what, to_next } => {
                Some(format!("What changed: {what}\nTo next agent: {to_next}"))
            }
            _ => None,
        }
    }
}

fn or_no_files(files: &str) -> &str {
    if files.is_empty() {
        "(no files)"
    } else {
        files
    }
}

/// What a summarizer is asked to write.
#[derive(Debug, Clone, Copy)]
pub struct SummaryRequest<'a> {
    /// The record (after Layer 1).
    pub record: &'a SummaryRecord,
    /// The band used by the allocator.
    pub band: Band,
    /// How many lines the allocator gave.
    pub mode: Mode,
    /// The sending agent.
    pub from: &'a str,
    /// The next agent, when known.
    pub to: Option<&'a str>,
}

/// A summarizer failed (a plugged-in model, for example).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("summarizer failed: {0}")]
pub struct SummarizeError(pub String);

/// Writes the summary of one entry. The deterministic implementation never
/// fails; an LLM-backed one may, and callers then fall back to it.
pub trait Summarizer {
    /// Summarizes one entry for the shape that `request.band` and
    /// `request.mode` call for.
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError>;
}

/// The deterministic summarizer: the agent's own lines or extracted facts.
#[derive(Debug, Clone, Copy)]
pub struct DeterministicSummarizer<'c> {
    config: &'c Config,
}

impl<'c> DeterministicSummarizer<'c> {
    /// A summarizer that reads variants and display names from `config`.
    pub fn new(config: &'c Config) -> Self {
        DeterministicSummarizer { config }
    }

    /// The configuration it reads.
    pub fn config(&self) -> &Config {
        self.config
    }

    /// Infallible form of [`Summarizer::summarize`].
    pub fn build(&self, req: &SummaryRequest<'_>) -> Summary {
        let r = req.record;
        let facts = extract(&r.scoring_text(), &r.files_changed);
        let title = title(r, &facts);
        let body = match (req.band, req.mode) {
            (Band::Critical, _) => {
                let (what, to_next, gotcha) = self.expanded(req, &facts, true);
                Body::Critical {
                    what,
                    to_next,
                    gotcha,
                }
            }
            (Band::High, Mode::Expanded) => {
                let (what, to_next, _) = self.expanded(req, &facts, false);
                Body::High { what, to_next }
            }
            (_, Mode::Aggressive) | (Band::Low, _) => Body::Aggressive {
                files: short_file_list(&r.files_changed),
            },
            _ => {
                let sentence = standard_sentence(r, &facts);
                // The files the sentence does not name already.
                let files = one_line_files(&unnamed_files(&r.files_changed, &sentence));
                Body::Standard { sentence, files }
            }
        };
        let mut summary = Summary {
            title,
            body,
            files: Vec::new(),
        };
        summary.single_lines();
        if matches!(summary.body, Body::Critical { .. } | Body::High { .. }) {
            let said = summary.lines().join(" ");
            summary.files = unnamed_files(&r.files_changed, &said);
        }
        summary
    }

    /// The fact kinds the (from, to) variant of §4 puts first (empty when
    /// the pair has no variant, or it asks for `all`).
    fn lead_kinds(&self, req: &SummaryRequest<'_>) -> Vec<FactKind> {
        let Some(to) = req.to else {
            return Vec::new();
        };
        let Some(v) = self.config.variant_for(req.from, to) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in &v.include {
            if name == "all" {
                return Vec::new();
            }
            for &k in FactKind::for_variant(name) {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        out
    }

    fn expanded(
        &self,
        req: &SummaryRequest<'_>,
        facts: &Facts,
        critical: bool,
    ) -> (String, String, String) {
        let r = req.record;
        let own = |f: &Option<String>| -> Option<String> {
            f.as_deref().map(|t| {
                let parts: Vec<String> = ex::sentences(t)
                    .iter()
                    .map(|s| ex::condense(s).unwrap_or_else(|| ex::strip_label(s).to_string()))
                    .collect();
                parts.join(" ")
            })
        };
        let own_what = own(&r.what);
        let own_why = own(&r.why);
        let own_gotcha = own(&r.gotcha);
        let given: String = [&own_what, &own_why, &own_gotcha]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        // The summary's sentences, condensed, minus what the agent's own
        // lines already say; the lead is kept even without a fact when it
        // is the only thing said.
        let raw = ex::sentences(&r.summary);
        let title_lead = lead_is_title(r) || lead_restates_task(r);
        let to = req.to.unwrap_or("*");
        let tests_shown = crate::mask::FieldMask::for_pair(self.config, req.from, to)
            .with_variant(self.config, req.from, to)
            .tests;
        let mut pool: Vec<(String, bool)> = Vec::new();
        for (i, sentence) in raw.iter().enumerate() {
            if i == 0 && title_lead {
                continue;
            }
            // The lead says what changed: kept even when it names nothing.
            let condensed = if i == 0 && !ex::is_warning(sentence) {
                Some(ex::condense(sentence).unwrap_or_else(|| sentence.clone()))
            } else {
                ex::condense(sentence)
            };
            let Some(c) = condensed else {
                continue;
            };
            if given.contains(&c.to_lowercase().trim_end_matches('.').to_string()) {
                continue;
            }
            // The tests field is a field of the entry (its head line shows
            // it where the pair's mask keeps it): a sentence that only
            // says it again goes.
            if i > 0 && tests_shown && restates_tests(r, &c) {
                continue;
            }
            pool.push((c, ex::is_warning(sentence)));
        }
        // §4 per-pair variants: the sentences that carry the kinds of fact
        // the receiver asks for lead (after the lead sentence, in their
        // order; the others keep theirs after them).
        lead_by_variant(
            &mut pool,
            usize::from(!title_lead),
            facts,
            &self.lead_kinds(req),
        );
        let gotcha = match own_gotcha {
            Some(g) => Some(g),
            None => {
                let at = pool
                    .iter()
                    .position(|(_, w)| *w)
                    .or_else(|| (pool.len() >= 3).then(|| pool.len() - 1));
                at.map(|i| pool.remove(i).0)
            }
        };
        let pool: Vec<String> = pool.into_iter().map(|(s, _)| s).collect();
        // A clause that only says again what an earlier one said goes.
        let pool = ex::drop_repeated(&pool);
        let (mut what, mut to_next) = match (own_what, own_why) {
            (Some(w), Some(y)) => (join(&[w], &pool), y),
            (Some(w), None) => (w, pool.join(" ")),
            (None, Some(y)) => (pool.join(" "), y),
            (None, None) => split_lines(&pool),
        };
        if what.is_empty() {
            what = raw
                .first()
                .cloned()
                .unwrap_or_else(|| "No summary given.".to_string());
        }
        if !critical && let Some(g) = &gotcha {
            to_next = join(&[to_next], std::slice::from_ref(g));
        }
        if to_next.is_empty() {
            // Share the first line out rather than leave the second empty.
            let parts = ex::sentences(&what);
            let (a, b) = split_lines(&parts);
            if !b.is_empty() {
                what = a;
                to_next = b;
            }
        }
        // No placeholder (`None stated.`) when the agent gave no gotcha: an
        // empty line is not rendered.
        let gotcha = if critical {
            gotcha.unwrap_or_default()
        } else {
            String::new()
        };
        (
            cap_line(&telegraph_line(&what)),
            cap_line(&telegraph_line(&to_next)),
            cap_line(&telegraph_line(&gotcha)),
        )
    }
}

/// True when `sentence` only restates the record's `tests` value (`All 18
/// tests passed.` beside `tests: 18 passed`): it speaks of tests, states no
/// constraint, and every word of it that names something (a number, an
/// identifier) is a word of the value.
fn restates_tests(r: &SummaryRecord, sentence: &str) -> bool {
    let Some(tests) = r.tests.as_deref().filter(|t| !t.trim().is_empty()) else {
        return false;
    };
    let trim = |w: &str| -> String {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let value: Vec<String> = tests.split_whitespace().map(trim).collect();
    let facts: Vec<String> = sentence
        .split_whitespace()
        .filter(|w| ex::is_fact_token(w))
        .map(trim)
        .collect();
    sentence.to_lowercase().contains("test")
        && !ex::has_constraint(sentence)
        && !facts.is_empty()
        && facts.iter().all(|f| value.contains(f))
}

/// A line's sentences in telegraphic form ([`ex::telegraph`]).
fn telegraph_line(line: &str) -> String {
    ex::sentences(line)
        .iter()
        .map(|s| ex::telegraph(s))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Stable-sorts `pool[from..]` by the first of `kinds` whose fact each
/// sentence states (a sentence with none of them goes after, in order);
/// warnings stay where they are (they become the gotcha).
fn lead_by_variant(pool: &mut [(String, bool)], from: usize, facts: &Facts, kinds: &[FactKind]) {
    if kinds.is_empty() || pool.len() <= from + 1 {
        return;
    }
    let rank = |s: &str| -> usize {
        kinds
            .iter()
            .position(|k| {
                facts
                    .of(*k)
                    .any(|f| !f.text.is_empty() && s.contains(f.text.as_str()))
            })
            .unwrap_or(kinds.len())
    };
    let tail = &mut pool[from..];
    let fixed: Vec<usize> = tail
        .iter()
        .enumerate()
        .filter(|(_, (_, w))| *w)
        .map(|(i, _)| i)
        .collect();
    let mut movable: Vec<(String, bool)> = tail.iter().filter(|(_, w)| !*w).cloned().collect();
    movable.sort_by_key(|(s, _)| rank(s));
    let mut m = movable.into_iter();
    for (i, slot) in tail.iter_mut().enumerate() {
        if !fixed.contains(&i)
            && let Some(x) = m.next()
        {
            *slot = x;
        }
    }
}

/// True when `text` names `path`: the whole path, or its file name as a
/// word of its own (`routes.rb` in "see routes.rb"). A bare directory name
/// or a name shorter than four characters does not count.
pub fn names_path(text: &str, path: &str) -> bool {
    let p = path.trim();
    if p.is_empty() || text.contains(p) {
        return true;
    }
    let name = p.trim_end_matches('/').rsplit('/').next().unwrap_or(p);
    if name.chars().count() < 4 || !name.contains('.') || name == p.trim_end_matches('/') {
        return false;
    }
    let is_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    // A distinctive stem (`V12__reservations` of `V12__reservations.sql`,
    // `ReserveButton` of `ReserveButton.vue`): an identifier of at least
    // five characters, written as a word of its own.
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    if stem.chars().count() >= 5
        && ex::is_identifier(stem)
        && text.match_indices(stem).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + stem.len()..].chars().next();
            before.is_none_or(|c| !is_word(c)) && after.is_none_or(|c| !is_word(c) || c == '.')
        })
    {
        return true;
    }
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        before.is_none_or(|c| !is_word(c))
            && after.is_none_or(|c| {
                !is_word(c)
                    || (c == '.'
                        && text[i + name.len() + 1..]
                            .chars()
                            .next()
                            .is_none_or(char::is_whitespace))
            })
    })
}

/// The files of `files` that `text` does not name (see [`names_path`]),
/// duplicates removed.
pub fn unnamed_files(files: &[String], text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let f = f.trim();
        if !f.is_empty() && !names_path(text, f) && !out.iter().any(|o| o == f) {
            out.push(f.to_string());
        }
    }
    out
}

/// Paths written densely: files that share a directory are grouped under
/// it (`app/notes/{routes.rb, controller.rb}`), directories in order of
/// first appearance; at most `max` files, then `+N more`. Every path can be
/// read back whole from the text.
pub fn compact_paths(files: &[String], max: usize) -> String {
    let shown = files.iter().take(max.max(1));
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for f in shown {
        let t = f.trim();
        let body = t.trim_end_matches('/');
        let (dir, name) = match body.rfind('/') {
            Some(i) => (&t[..=i], &t[i + 1..]),
            None => ("", t),
        };
        match groups.iter_mut().find(|(d, _)| d == dir) {
            Some((_, names)) => names.push(name.to_string()),
            None => groups.push((dir.to_string(), vec![name.to_string()])),
        }
    }
    let mut out = groups
        .iter()
        .map(|(dir, names)| match names.as_slice() {
            [one] => format!("{dir}{one}"),
            _ if dir.is_empty() => names.join(", "),
            _ => format!("{dir}{{{}}}", names.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > max.max(1) {
        out.push_str(&format!(" +{} more", files.len() - max.max(1)));
    }
    out
}

/// Sentences joined by spaces after `first` (empty parts skipped).
fn join(first: &[String], rest: &[String]) -> String {
    first
        .iter()
        .chain(rest)
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits condensed sentences into the *What changed* and *To next agent*
/// lines: the lead first, then about half of the characters each.
fn split_lines(pool: &[String]) -> (String, String) {
    match pool {
        [] => (String::new(), String::new()),
        [one] => {
            // One sentence: its clauses are shared out when there are several.
            let cl = ex::clauses(one);
            if cl.len() < 2 {
                return (one.clone(), String::new());
            }
            let total: usize = cl.iter().map(|c| c.text.len()).sum();
            let mut used = 0;
            let mut a = String::new();
            let mut b = String::new();
            for c in &cl {
                let target = if a.is_empty() || used < total / 2 {
                    &mut a
                } else {
                    &mut b
                };
                if !target.is_empty() {
                    target.push_str(&c.sep);
                }
                target.push_str(&c.text);
                used += c.text.len();
            }
            let a = format!("{}.", a.trim_end_matches(['.', ',', ';', ' ']));
            let mut b = b.trim().to_string();
            if let Some(f) = b.chars().next()
                && f.is_lowercase()
                && b.split(' ')
                    .next()
                    .is_some_and(|w| w.chars().all(char::is_alphabetic))
            {
                b = f.to_uppercase().collect::<String>() + &b[f.len_utf8()..];
            }
            (a, b)
        }
        _ => {
            let total: usize = pool.iter().map(String::len).sum();
            let mut a = vec![pool[0].clone()];
            let mut used = pool[0].len();
            let mut i = 1;
            while i < pool.len() - 1 && used + pool[i].len() / 2 < total / 2 {
                used += pool[i].len();
                a.push(pool[i].clone());
                i += 1;
            }
            (a.join(" "), pool[i..].join(" "))
        }
    }
}

/// Keeps a line within [`LINE_CAP`] by dropping whole sentences from its
/// end (never cutting one); a single sentence over the cap is kept up to
/// its last clause that fits; a first clause over the cap is cut between
/// two words neither of which is part of a fact
/// ([`ex::cut_between_facts`]). No cut ever falls inside a fact (a path, a
/// status code and its reason, a `key=value`), and none adds `…`.
pub fn cap_line(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= LINE_CAP {
        return line;
    }
    let mut out = String::new();
    for s in ex::sentences(&line) {
        if out.chars().count() + 1 + s.chars().count() > LINE_CAP {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&s);
    }
    if out.is_empty() {
        for c in ex::clauses(&line) {
            if out.chars().count() + c.sep.chars().count() + c.text.chars().count() > LINE_CAP {
                break;
            }
            out.push_str(&c.sep);
            out.push_str(&c.text);
        }
    }
    if out.is_empty() {
        out = ex::cut_between_facts(&line, LINE_CAP);
    }
    out
}

/// True when the summary opens with a short sentence that names nothing
/// concrete (`Wired up the payment intent flow.`): it becomes the title.
fn lead_is_title(r: &SummaryRecord) -> bool {
    let raw = ex::sentences(&r.summary);
    match raw.first() {
        Some(first) => {
            first.split_whitespace().count() <= 10
                && !ex::carries_fact(first)
                && raw.iter().skip(1).filter_map(|s| ex::condense(s)).count() >= 2
        }
        None => false,
    }
}

/// True when the summary opens with a short sentence that only restates
/// the record's task (`Notification preferences API.` under the task
/// `notifications API`): every fact word of it (an identifier, an
/// upper-case name, see [`ex::is_fact_token`]) is a word of the task, at
/// most half of its other words are not (`preferences`), it states no
/// constraint, and at least two sentences with facts follow. The task is
/// the head line's title, so the lead says nothing the entry does not.
fn lead_restates_task(r: &SummaryRecord) -> bool {
    let Some(task) = r.task.as_deref() else {
        return false;
    };
    let raw = ex::sentences(&r.summary);
    let Some(first) = raw.first() else {
        return false;
    };
    let trim = |w: &str| -> String { w.trim_matches(|c: char| !c.is_alphanumeric()).to_string() };
    let task_words: Vec<String> = task.split_whitespace().map(trim).collect();
    let words: Vec<&str> = first.split_whitespace().collect();
    if words.is_empty() || words.len() > 6 || ex::has_constraint(first) {
        return false;
    }
    let same_word = |a: &str, b: &str| {
        let (a, b) = (a.to_lowercase(), b.to_lowercase());
        a == b || (a.len().min(b.len()) >= 4 && (a.starts_with(&b) || b.starts_with(&a)))
    };
    let (mut facts, mut other) = (0, 0);
    for w in &words {
        let t = trim(w);
        if ex::is_fact_token(w) {
            // A fact word must be the task's, as written.
            if !task_words.contains(&t) {
                return false;
            }
            facts += 1;
        } else if !task_words.iter().any(|x| same_word(x, &t)) {
            other += 1;
        }
    }
    facts >= 1
        && other * 2 <= words.len()
        && raw.iter().skip(1).filter_map(|s| ex::condense(s)).count() >= 2
}

impl Summarizer for DeterministicSummarizer<'_> {
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Ok(self.build(request))
    }
}

/// Cuts `s` to at most `cap` characters at a word boundary, adding `…`.
pub fn cut_words(s: &str, cap: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= cap {
        return s;
    }
    let head = first_chars(&s, cap.saturating_sub(1));
    let cut = match head.rfind(' ') {
        Some(i) if i > cap / 2 => &head[..i],
        _ => head,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ', '—', '-']))
}

fn title(r: &SummaryRecord, facts: &Facts) -> String {
    if let Some(t) = r.task.as_deref().filter(|t| !t.trim().is_empty()) {
        return t.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let raw = ex::sentences(&r.summary);
    if lead_is_title(r)
        && let Some(first) = raw.first()
    {
        return first
            .trim_end_matches(['.', '!', '?', ';', ':'])
            .to_string();
    }
    let src = r
        .what
        .as_deref()
        .or(facts.sentences.first().map(String::as_str))
        .unwrap_or("Untitled entry");
    // The words of the first line (telegraphic, as the line is written),
    // so that the renderer can see the title only repeats them.
    let src = ex::telegraph(ex::strip_filler(ex::strip_label(src)));
    // The first words (at most five), never cut inside a word.
    let words: Vec<&str> = src.split_whitespace().take(5).collect();
    let mut words = words;
    while words.len() > 1
        && words
            .last()
            .is_some_and(|w| !w.chars().any(char::is_alphanumeric))
    {
        words.pop();
    }
    words
        .join(" ")
        .trim_end_matches(['.', '!', '?', ';', ':', ',', ' '])
        .to_string()
}

/// At most `cap` characters of `s`, cut after the last clause that fits
/// (else the last whole word): a shortened sentence, never an `…`.
pub fn cut_clauses(s: &str, cap: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= cap {
        return s;
    }
    let mut out = String::new();
    for c in ex::clauses(&s) {
        if out.chars().count() + c.sep.chars().count() + c.text.chars().count() > cap {
            break;
        }
        out.push_str(&c.sep);
        out.push_str(&c.text);
    }
    if out.is_empty() {
        // No clause fits: whole words, cut after a word that is not part of
        // a fact (never inside `[{date, channel}]` or `202 Accepted`), and
        // never a method without its path or a dangling `the`.
        out = ex::cut_between_facts(&s, cap);
        // A clause cut in its middle does not end on a verb whose object
        // the cut left out (`… granularity=day returning`).
        out = without_dangling_verb(trim_dangling(&out));
    }
    trim_dangling(&out).to_string()
}

/// `cut` without what a cut in the middle of a clause leaves hanging: a
/// last lower-case `-ing` verb (`returning`, `using`) or a relative word
/// (`that`, `which`), and a conjunction before them, when words are left.
fn without_dangling_verb(cut: &str) -> String {
    const RELATIVE: &[&str] = &["that", "which", "who", "whose", "where", "when", "while"];
    let mut words: Vec<&str> = cut.split(' ').collect();
    let dangling = |w: &str| {
        RELATIVE.contains(&w)
            || (w.len() > 5 && w.chars().all(|c| c.is_ascii_lowercase()) && w.ends_with("ing"))
    };
    let mut cut_any = false;
    while words.len() > 2 && words.last().is_some_and(|w| dangling(w)) {
        words.pop();
        cut_any = true;
    }
    if cut_any {
        while words.len() > 2 && words.last().is_some_and(|w| ["and", "or"].contains(w)) {
            words.pop();
        }
        return trim_dangling(&words.join(" ")).to_string();
    }
    // A second verb whose complement the cut left out (`… POST
    // /hooks/sms/status and are checked`): up to three words after the
    // last `and` / `or` that name nothing go with it.
    if let Some(at) = words.iter().rposition(|w| ["and", "or"].contains(w))
        && at >= 2
        && words.len() - at - 1 <= 3
        && !words[at + 1..].iter().any(|w| ex::is_fact_token(w))
    {
        words.truncate(at);
        return trim_dangling(&words.join(" ")).to_string();
    }
    cut.to_string()
}

/// `s` with its first letter upper-case when it opens with a plain
/// lower-case word (a clause picked from the middle of a sentence:
/// `delivery callbacks arrive …`); an identifier (`click_events`, `iOS`)
/// is left as written.
fn capitalised(s: &str) -> String {
    let first = s.split_whitespace().next().unwrap_or_default();
    let plain = !first.is_empty() && first.chars().all(|c| c.is_ascii_lowercase());
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if plain => c.to_uppercase().chain(chars).collect(),
        _ => s.to_string(),
    }
}

/// The one line of a STANDARD entry: of the agent's `what` and the
/// summary's sentences, their condensed forms and their clauses (each cut
/// to [`STANDARD_SENTENCE_CAP`]), the one that states the most whole facts
/// (the files are listed beside it); the first of them on a tie, so a summary without facts
/// keeps its first sentence. A lead that only announces the work ("Stock
/// reservations are live.") gives way to the sentence with the endpoint
/// and its status codes.
fn standard_sentence(r: &SummaryRecord, facts: &Facts) -> String {
    let mut pieces: Vec<String> = Vec::new();
    for s in r
        .what
        .iter()
        .flat_map(|w| ex::sentences(w))
        .chain(facts.sentences.iter().cloned())
    {
        // The sentence as written, then (when it is too long to fit whole)
        // its fact-carrying clauses, then each clause on its own: a later
        // piece wins only by stating more facts within the cap.
        let whole = ex::strip_label(&s).to_string();
        let cl = ex::clauses(&whole);
        if let Some(c) = ex::condense(&s).filter(|c| *c != whole) {
            pieces.push(whole);
            pieces.push(c);
        } else {
            pieces.push(whole);
        }
        if cl.len() > 1 {
            pieces.extend(cl.into_iter().map(|c| c.text));
        }
    }
    // A table cell needs no full stop (the files follow it after ` — `).
    let no_stop = |c: &str| match c.strip_suffix('.') {
        Some(t) if !t.ends_with('.') => t.to_string(),
        _ => c.to_string(),
    };
    let mut best: Option<(usize, String)> = None;
    for p in pieces {
        // Telegraphic, as the expanded lines are (a leading article, `now`,
        // `has been` go; a constraint keeps its words).
        let p = ex::telegraph(&p);
        let c = no_stop(&cut_clauses(&no_stop(&p), STANDARD_SENTENCE_CAP));
        if c.is_empty() {
            continue;
        }
        let n = facts
            .facts
            .iter()
            .filter(|f| f.kind != FactKind::File && c.contains(&f.text))
            .count();
        if best.as_ref().is_none_or(|(m, _)| n > *m) {
            best = Some((n, c));
        }
    }
    best.map_or_else(|| "(no summary)".to_string(), |(_, c)| capitalised(&c))
}

/// The shortest name of `files[i]` that no other file of `files` shares:
/// its file name, or as many of its last path components as it takes
/// (`notifications/routes.rb` beside `config/routes.rb`).
fn short_name(files: &[String], i: usize) -> String {
    let parts = |f: &str| -> Vec<String> {
        f.trim()
            .trim_end_matches('/')
            .split('/')
            .map(str::to_string)
            .collect()
    };
    let me = parts(&files[i]);
    let others: Vec<Vec<String>> = files
        .iter()
        .enumerate()
        .filter(|(j, f)| *j != i && f.trim() != files[i].trim())
        .map(|(_, f)| parts(f))
        .collect();
    let tail = |p: &[String], k: usize| p[p.len().saturating_sub(k)..].join("/");
    let mut k = 1;
    while k < me.len() && others.iter().any(|o| tail(o, k) == tail(&me, k)) {
        k += 1;
    }
    tail(&me, k)
}

/// File names as a head line or a LOW line writes them (the seed's LOW
/// template: "filename only"): the first file's name, then `+N` (how many
/// more files there are), as a MEDIUM line ([`one_line_files`]); the lead's
/// decision of 2026-12-03 (one name says where to look; the second cost
/// tokens on every entry). A name that two files share gets as much of its
/// directory as tells them apart.
pub fn short_file_list(files: &[String]) -> String {
    first_names(files, 1)
}

/// The file part of a MEDIUM line (`[agent] — sentence — files`): its
/// first file's name, then `+N` (the sentence is the entry's content; one
/// name says where to look, 14 o200k tokens fewer on the tuning half than
/// two).
pub fn one_line_files(files: &[String]) -> String {
    first_names(files, 1)
}

fn first_names(files: &[String], n: usize) -> String {
    let mut out = (0..files.len().min(n))
        .map(|i| short_name(files, i))
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > n {
        out.push_str(&format!(" +{}", files.len() - n));
    }
    out
}

/// Files joined by `, `, at most [`MAX_FILES`] then `+N more`.
pub fn file_list(files: &[String]) -> String {
    let mut out = files
        .iter()
        .take(MAX_FILES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > MAX_FILES {
        out.push_str(&format!(" +{} more", files.len() - MAX_FILES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_words_adds_ellipsis_on_boundary() {
        assert_eq!(cut_words("short", 80), "short");
        let s = cut_words("alpha beta gamma delta epsilon", 16);
        assert!(s.chars().count() <= 16, "{s}");
        assert!(s.ends_with('…'));
        assert_eq!(cut_words("a\n b", 10), "a b");
    }

    #[test]
    fn cut_clauses_never_cuts_inside_a_fact() {
        let s = "Clients that poll too often are throttled and then retried on GET /v2/payments/intents/{intent_id}";
        let c = cut_clauses(s, 80);
        assert!(c.chars().count() <= 80, "{c}");
        assert!(s.starts_with(&c), "{c}");
        assert!(!c.ends_with("GET") && !c.ends_with(" on"), "{c}");
        // The second verb lost its complement (`on GET /v2/…`) to the cut:
        // it goes with its `and`.
        assert_eq!(c, "Clients that poll too often are throttled");
        assert_eq!(
            cut_clauses(
                "Delivery callbacks arrive at POST /hooks/sms/status and are checked with the X-Twilio-Signature header",
                80
            ),
            "Delivery callbacks arrive at POST /hooks/sms/status"
        );
        // A second verb that names something stays.
        assert_eq!(
            cut_clauses(
                "The poller retries with backoff and honours Retry-After on every response from the upstream",
                80
            ),
            "The poller retries with backoff and honours Retry-After on every response"
        );
    }

    #[test]
    fn a_one_liner_opens_upper_case_and_never_ends_on_a_dangling_verb() {
        // A clause cut in its middle: the `-ing` verb whose object did not
        // fit goes.
        let s = "It needs GET /metrics/revenue?from=&to=&granularity=day returning [{date, channel, net_cents}]";
        assert_eq!(
            cut_clauses(s, 80),
            "It needs GET /metrics/revenue?from=&to=&granularity=day"
        );
        // A verb that ends its clause as written stays.
        assert_eq!(
            cut_clauses("The old services keep running", 80),
            "The old services keep running"
        );
        // A clause picked from the middle of a sentence starts upper-case;
        // an identifier keeps its case.
        assert_eq!(
            capitalised("delivery callbacks arrive at POST /hooks"),
            "Delivery callbacks arrive at POST /hooks"
        );
        assert_eq!(
            capitalised("click_events is partitioned"),
            "click_events is partitioned"
        );
        assert_eq!(capitalised("iOS builds"), "iOS builds");
        assert_eq!(capitalised(""), "");
    }

    #[test]
    fn cap_line_cuts_between_sentences_and_clauses_never_inside_a_fact() {
        // Whole sentences are dropped from the end.
        let s1 = format!(
            "POST /v2/intents returns 202 Accepted. {}",
            "Polling is fine. ".repeat(40)
        );
        let c = cap_line(&s1);
        assert!(c.chars().count() <= LINE_CAP, "{c}");
        assert!(
            c.starts_with("POST /v2/intents returns 202 Accepted."),
            "{c}"
        );
        assert!(c.ends_with('.') && !c.contains('…'), "{c}");
        // One long sentence: cut after its last clause that fits.
        let long = format!(
            "GET /a/{{id}} returns 410 Gone, {}and the end",
            "a list item, ".repeat(40)
        );
        let c = cap_line(&long);
        assert!(c.chars().count() <= LINE_CAP, "{c}");
        assert!(c.starts_with("GET /a/{id} returns 410 Gone"), "{c}");
        assert!(!c.contains('…') && !c.ends_with(','), "{c}");
        // One clause over the cap, the cap inside a fact: the cut falls
        // before the fact, between two plain words.
        let clause = format!(
            "{}GET /login?expired=1 answers 302 Found",
            "word ".repeat(93)
        );
        let c = cap_line(&clause);
        assert!(c.chars().count() <= LINE_CAP, "{c}");
        assert_eq!(c, "word ".repeat(93).trim());
        // The fact fits: it is kept, the cut after it.
        let clause = format!(
            "{}GET /login?expired=1 answers 302 Found{}",
            "word ".repeat(50),
            " word".repeat(80)
        );
        let c = cap_line(&clause);
        assert!(c.chars().count() <= LINE_CAP, "{c}");
        assert!(
            c.contains("GET /login?expired=1 answers 302 Found word"),
            "{c}"
        );
        assert!(!c.contains('…'), "{c}");
    }

    #[test]
    fn a_file_whose_distinctive_stem_is_named_is_not_listed_again() {
        let files: Vec<String> = [
            "db/V12__reservations.sql",
            "web/ReserveButton.vue",
            "web/Revenue.tsx",
            "k8s/default-deny.yaml",
            "db/purge_user.sql",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let text = "Flyway migration V12__reservations adds a table; the ReserveButton \
                    component and the Revenue page; default-deny is missing; purge_users stays.";
        // `Revenue` is an English word, `purge_users` another identifier.
        assert_eq!(
            unnamed_files(&files, text),
            vec![
                "web/Revenue.tsx".to_string(),
                "db/purge_user.sql".to_string()
            ]
        );
    }

    #[test]
    fn file_list_caps() {
        let files: Vec<String> = (0..6).map(|i| format!("f{i}.rs")).collect();
        assert_eq!(file_list(&files), "f0.rs, f1.rs, f2.rs, f3.rs +2 more");
        // A head line or a LOW line: one name, then how many more.
        assert_eq!(short_file_list(&files), "f0.rs +5");
        assert_eq!(short_file_list(&files[..2]), "f0.rs +1");
        assert_eq!(short_file_list(&files[..1]), "f0.rs");
        // A MEDIUM line names its first file.
        assert_eq!(one_line_files(&files), "f0.rs +5");
        assert_eq!(one_line_files(&files[..1]), "f0.rs");
        assert_eq!(one_line_files(&[]), "");
        // Shared file names keep as much of their directory as tells them
        // apart; a directory is named by its last component.
        let files: Vec<String> = [
            "app/notifications/routes.rb",
            "config/routes.rb",
            "app/notifications/templates/",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(short_file_list(&files), "notifications/routes.rb +2");
        assert_eq!(short_file_list(&files[1..]), "routes.rb +1");
    }

    fn standard(summary: &str, what: Option<&str>) -> Body {
        let config = Config::default();
        let record = SummaryRecord {
            agent: Some("hermes".into()),
            summary: summary.into(),
            what: what.map(str::to_string),
            files_changed: vec!["api/a.go".into()],
            ..SummaryRecord::default()
        };
        let req = SummaryRequest {
            record: &record,
            band: Band::Medium,
            mode: Mode::Standard,
            from: "hermes",
            to: Some("aphrodite"),
        };
        DeterministicSummarizer::new(&config).build(&req).body
    }

    #[test]
    fn a_one_line_entry_keeps_its_most_fact_dense_sentence() {
        let Body::Standard { sentence, files } = standard(
            "Stock reservations are live. POST /inventory/reservations holds stock and \
             returns 201 Created or 409 Conflict. A sweeper runs every minute.",
            None,
        ) else {
            panic!("not a one-line body");
        };
        assert_eq!(
            sentence,
            "POST /inventory/reservations holds stock and returns 201 Created or 409 Conflict"
        );
        assert_eq!(files, "a.go");
        // Without facts the first sentence stays; a tie keeps the first.
        let Body::Standard { sentence, .. } =
            standard("Settings got a tab. It has one toggle per channel.", None)
        else {
            panic!("not a one-line body");
        };
        assert_eq!(sentence, "Settings got a tab");
        let Body::Standard { sentence, .. } =
            standard("GET /a returns 200 OK. GET /b returns 404 Not Found.", None)
        else {
            panic!("not a one-line body");
        };
        assert_eq!(sentence, "GET /a returns 200 OK");
    }

    #[test]
    fn odd_text_never_panics_any_shape() {
        // Pieces a user's file may hold: labels, brackets left open,
        // quotes, backticks, letters whose lower case changes length,
        // combining marks, emoji, long words; stitched together by a fixed
        // pseudo-random sequence so that the run is repeatable.
        const PIECES: &[&str] = &[
            "Note: ",
            "Gotcha: ",
            "Heads up — ",
            "So this phase was ",
            "I have ",
            "(",
            ")",
            "[",
            "{",
            "}",
            "`",
            "'",
            "\"",
            "<",
            ">",
            " — ",
            ", ",
            "; ",
            ". ",
            "! ",
            "? ",
            "\n",
            "GET /a/{id}?x=1",
            "202 Accepted",
            "K\u{212A}",
            "\u{0130}stanbul",
            "\u{2126}",
            "e\u{301}",
            "🦀",
            "0.0.0.0/0",
            "ON DELETE SET NULL",
            "never ",
            "the ",
            "a ",
            "in order to ",
            "has been ",
            "which is ",
            "x_y.z",
            "a-b-c",
            "word ",
            "LONGWORD",
            "é",
            "…",
            "e.g. ",
            "1,000 ",
        ];
        let config = Config::default();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..80u32 {
            let len = (next() % 120) as usize;
            let mut text = String::new();
            for _ in 0..len {
                text.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            let field = |k: u64| {
                k.is_multiple_of(3)
                    .then(|| text.chars().rev().collect::<String>())
            };
            let record = SummaryRecord {
                agent: Some("hermes".into()),
                summary: text.clone(),
                what: field(next()),
                why: field(next()),
                gotcha: field(next()),
                files_changed: vec!["api/a.go".into(), text.chars().take(30).collect()],
                // Every other round a task made of the text's first words,
                // so that a lead restating it is met too.
                task: round.is_multiple_of(2).then(|| {
                    text.split_whitespace()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
                ..SummaryRecord::default()
            };
            for (band, mode) in [
                (Band::Critical, Mode::Expanded),
                (Band::High, Mode::Expanded),
                (Band::High, Mode::Standard),
                (Band::Medium, Mode::Standard),
                (Band::Low, Mode::Aggressive),
            ] {
                let req = SummaryRequest {
                    record: &record,
                    band,
                    mode,
                    from: "hermes",
                    to: Some("aphrodite"),
                };
                let s = DeterministicSummarizer::new(&config).build(&req);
                for l in s.lines() {
                    assert!(l.chars().count() <= LINE_CAP, "round {round}: {l}");
                    assert!(!l.contains('\n'), "round {round}: {l:?}");
                }
            }
            let _ = cut_clauses(&text, 40);
            let _ = cut_words(&text, 40);
        }
    }

    #[test]
    fn a_one_line_entry_over_the_cap_is_cut_outside_its_facts() {
        // The clause is longer than 80 characters and no comma ends a
        // clause before the cap: the cut never falls inside the payload.
        let Body::Standard { sentence, .. } = standard(
            "It needs GET /metrics/revenue?from=&to=&granularity=day returning \
             [{date, channel, net_cents}] for each row.",
            None,
        ) else {
            panic!("not a one-line body");
        };
        assert!(
            sentence.chars().count() <= STANDARD_SENTENCE_CAP,
            "{sentence}"
        );
        assert!(
            sentence.contains("GET /metrics/revenue?from=&to=&granularity=day"),
            "{sentence}"
        );
        assert!(!sentence.contains("[{date"), "{sentence}");
    }
}
