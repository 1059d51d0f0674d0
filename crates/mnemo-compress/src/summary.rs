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

use mnemo_model::{Config, Status, SummaryRecord};
use mnemo_score::Band;
use serde::Serialize;

use crate::budget::Mode;
use crate::facts::{Fact, FactKind, Facts, extract};
use crate::mask::first_chars;

/// The longest line a summary writes, in characters (labels excluded).
pub const LINE_CAP: usize = 240;
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
    /// A short title (the ZZ artifact's `**Entry:**`).
    pub title: String,
    /// The lines.
    pub body: Body,
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
                files: file_list(&r.files_changed),
            },
            _ => Body::Standard {
                sentence: standard_sentence(r, &facts),
                files: file_list(&r.files_changed),
            },
        };
        let mut summary = Summary { title, body };
        summary.single_lines();
        summary
    }

    fn include(&self, req: &SummaryRequest<'_>) -> Vec<String> {
        let to = req.to.unwrap_or("*");
        self.config
            .variant_for(req.from, to)
            .map(|v| v.include.clone())
            .unwrap_or_default()
    }

    fn expanded(
        &self,
        req: &SummaryRequest<'_>,
        facts: &Facts,
        critical: bool,
    ) -> (String, String, String) {
        let r = req.record;
        let include = self.include(req);
        let order = FactKind::priority(&include);
        let mut pool: Vec<&Fact> = Vec::new();
        for k in &order {
            pool.extend(facts.of(*k));
        }

        // Line 1: the lead sentence, then facts.
        let lead_src = r
            .what
            .clone()
            .or_else(|| facts.sentences.first().cloned())
            .unwrap_or_else(|| "No summary given.".to_string());
        let lead = cut_words(&lead_src, LEAD_CAP);
        let mut what = lead.clone();
        let mut rest = pack(&mut what, &pool, " — ", LINE_CAP);

        // Review fields travel on line 1 for review variants.
        let review = review_bits(r, &include);
        if !review.is_empty() {
            append_piece(&mut what, &review, "; ", LINE_CAP);
        }

        // Line 2: why it matters to the next agent.
        let next = req
            .to
            .map(|t| self.config.display_agent(t))
            .unwrap_or_else(|| "Next agent".to_string());
        let mut to_next = match &r.why {
            Some(why) => cut_words(why, LEAD_CAP),
            None => derived_why(&next, &pool, &what, facts),
        };
        let gotcha_src = r
            .gotcha
            .clone()
            .or_else(|| facts.gotchas.iter().find(|g| **g != lead_src).cloned())
            .or_else(|| facts.decisions.iter().find(|g| **g != lead_src).cloned());
        rest = pack(&mut to_next, &rest, "; also ", LINE_CAP);
        // Sentences not yet used, for the room that is left.
        let spare: Vec<&String> = facts
            .sentences
            .iter()
            .filter(|s| **s != lead_src && Some(*s) != gotcha_src.as_ref())
            .filter(|s| !contains_ci(&what, s) && !contains_ci(&to_next, s))
            .collect();
        if !critical {
            // HIGH: the gotcha closes line 2 when it fits, else a spare sentence.
            let extra = gotcha_src
                .as_ref()
                .map(|g| ("Gotcha: ", g))
                .or_else(|| spare.first().map(|s| ("", *s)));
            if let Some((label, text)) = extra {
                fill(&mut to_next, label, text);
            }
            end_sentence(&mut to_next);
            return (what, to_next, String::new());
        }
        if let Some(s) = spare.first() {
            fill(&mut to_next, "", s);
        }

        end_sentence(&mut to_next);

        // Line 3: gotcha, decision or trade-off.
        let mut gotcha = match &gotcha_src {
            Some(g) => cut_words(g, LINE_CAP),
            None => "None stated.".to_string(),
        };
        if !rest.is_empty() {
            // Whatever still does not fit is left out of the lines (the
            // record keeps it; the fact list is in priority order).
            pack(&mut gotcha, &rest, " Also: ", LINE_CAP);
        }
        let more = facts
            .gotchas
            .iter()
            .chain(facts.decisions.iter())
            .find(|g| {
                !contains_ci(&gotcha, g) && !contains_ci(&what, g) && !contains_ci(&to_next, g)
            });
        if let Some(g) = more {
            fill(&mut gotcha, "", g);
        }
        (what, to_next, gotcha)
    }
}

impl Summarizer for DeterministicSummarizer<'_> {
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Ok(self.build(request))
    }
}

fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
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
    let src = r
        .what
        .as_deref()
        .or(facts.sentences.first().map(String::as_str))
        .unwrap_or("Untitled entry");
    cut_words(src.trim_end_matches(['.', '!', '?', ';']), 60)
}

fn standard_sentence(r: &SummaryRecord, facts: &Facts) -> String {
    let src = r
        .what
        .as_deref()
        .or(facts.sentences.first().map(String::as_str))
        .unwrap_or("(no summary)");
    let mut s = cut_words(src, STANDARD_SENTENCE_CAP);
    if r.status == Some(Status::Partial) && !s.starts_with('⚠') {
        // The ⚠️ marker is rendered by the status column; keep the text clean.
        s = s.trim().to_string();
    }
    s
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

fn review_bits(r: &SummaryRecord, include: &[String]) -> String {
    let wants = |k: &str| include.iter().any(|i| i == k || i == "all");
    let mut bits = Vec::new();
    if wants("verdict")
        && let Some(v) = r.verdict
    {
        bits.push(format!("verdict {v}"));
    }
    if wants("critical_issues")
        && let Some(n) = r.critical_issues
    {
        bits.push(format!("{n} critical issues"));
    }
    if wants("coverage")
        && let Some(c) = &r.coverage
    {
        bits.push(format!("coverage {c}"));
    }
    bits.join(", ")
}

fn derived_why(next: &str, pool: &[&Fact], line1: &str, facts: &Facts) -> String {
    // Name the top facts (up to three, the variant's kinds first) that the
    // next agent builds on.
    let top: Vec<String> = pool
        .iter()
        .filter(|f| f.kind != FactKind::File)
        .take(3)
        .map(|f| match f.kind {
            FactKind::StatusCode => format!("HTTP {}", f.text),
            FactKind::Table => format!("table {}", f.text),
            FactKind::Column => format!("column {}", f.text),
            FactKind::EnvVar => format!("env {}", f.text),
            FactKind::Migration => format!("migration {}", f.text),
            FactKind::ForeignKey => format!("FK {}", f.text),
            _ => f.text.clone(),
        })
        .collect();
    if !top.is_empty() {
        return cut_words(&format!("{next} builds on {}", top.join(", ")), LEAD_CAP);
    }
    match facts.sentences.get(1) {
        Some(second) if !contains_ci(line1, second) => {
            format!("{next}: {}", cut_words(second, LEAD_CAP))
        }
        _ => format!("{next} picks up from this change."),
    }
}

/// Ends a line with a full stop when it ends without punctuation and has room.
fn end_sentence(line: &mut String) {
    if !line.ends_with(['.', '!', '?', '…', ')']) && line.chars().count() < LINE_CAP {
        line.push('.');
    }
}

/// Appends as much of `text` (cut on words) as the line has room for, when
/// that is a useful amount (30 characters or more).
fn fill(line: &mut String, label: &str, text: &str) {
    let used = line.chars().count() + 1 + label.chars().count();
    let room = LINE_CAP.saturating_sub(used);
    let lower = line.to_lowercase();
    // A sentence that brings fewer than two new words is not worth the room.
    let new_words = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':'))
        .filter(|w| w.chars().count() > 3 && !lower.contains(&w.to_lowercase()))
        .count();
    let adds_nothing = new_words < 2;
    if room >= 30 && !adds_nothing && !contains_ci(line, text) {
        if !line.ends_with(['.', '!', '?', '…']) {
            line.push('.');
        }
        line.push(' ');
        line.push_str(label);
        line.push_str(&cut_words(text, room));
    }
}

/// Appends `piece` after `sep` when the line stays within `cap`.
fn append_piece(line: &mut String, piece: &str, sep: &str, cap: usize) -> bool {
    if line.chars().count() + sep.chars().count() + piece.chars().count() <= cap {
        line.push_str(sep);
        line.push_str(piece);
        true
    } else {
        false
    }
}

/// Packs facts not already on `line` into it, grouped by kind with labels
/// (`endpoints POST /a, GET /b; status 201, 409`). Returns the facts that
/// did not fit, in order.
fn pack<'f>(line: &mut String, pool: &[&'f Fact], first_sep: &str, cap: usize) -> Vec<&'f Fact> {
    let lower_line = line.to_lowercase();
    let todo: Vec<&Fact> = pool
        .iter()
        .copied()
        .filter(|f| !lower_line.contains(&f.text.to_lowercase()))
        .collect();
    let mut left = Vec::new();
    let mut current: Option<FactKind> = None;
    let mut wrote_any = false;
    for f in todo {
        let sep = if !wrote_any {
            first_sep.to_string()
        } else if current == Some(f.kind) {
            ", ".to_string()
        } else {
            "; ".to_string()
        };
        let label = if current == Some(f.kind) && wrote_any {
            String::new()
        } else {
            format!("{} ", f.kind.label())
        };
        let piece = format!("{label}{}", f.text);
        if append_piece(line, &piece, &sep, cap) {
            wrote_any = true;
            current = Some(f.kind);
        } else {
            left.push(f);
        }
    }
    left
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
    fn file_list_caps() {
        let files: Vec<String> = (0..6).map(|i| format!("f{i}.rs")).collect();
        assert_eq!(file_list(&files), "f0.rs, f1.rs, f2.rs, f3.rs +2 more");
    }
}
