//! The gate log, `_xref/gate-log.jsonl`: one JSON line per gate that
//! changed the bank, with what the gate decided and why (issue #17: "a
//! visible record of what compaction dropped").
//!
//! [`plan::plan_gate`](crate::plan::plan_gate) builds a [`GateRecord`] from
//! what it decided (budget, guardrail flags, each entry's band, score and
//! explain, sizes in characters and o200k tokens, the facts of the input the
//! entry kept and dropped, the inputs the preflight skipped, what C7
//! trimmed) and [`append`] turns it into one more change of the same plan, so
//! the line lands in the gate's own commit or not at all. The change is a
//! [`FileChange::Append`]: the log is never rewritten, and the plan needs
//! only its end ([`crate::plan::reads_tail`], [`next_seq`]), so a gate's
//! cost does not grow with the log.
//!
//! **Re-runs append nothing.** A record is appended only when some other
//! change of the plan changes a byte of the bank; a gate re-run on the same
//! batch changes no file, so it changes no byte of the log either (the bank's
//! rule: re-running a command on the same input changes no byte). Every
//! gate that changed the bank has its line; its `seq` is its 1-based line
//! number, so earlier gates of a phase stay readable after a later gate
//! replaced the phase's ZZ artifact.
//!
//! Every string of a record passes the scrubber before the line is written
//! (each string on its own, so a redaction can never break the JSON).
//! Pure: no clock, no I/O; the same plan gives the same line.

use std::collections::BTreeSet;

use mnemo_model::{Config, SummaryRecord};
use mnemo_score::{Engine, ScoreInput};
use serde::{Deserialize, Serialize};

use crate::budget::{BudgetFlag, HalfLines, PhaseAllocation};
use crate::completed::{self, Item};
use crate::facts;
use crate::pipeline::CompressedPhase;
use crate::plan::{BankTexts, Clean, FileChange, GateOutcome, PlanError};
use crate::render::{self, fmt_score};
use crate::sections::find_section;

/// The log's bank-relative path.
pub const GATE_LOG: &str = "_xref/gate-log.jsonl";

/// Version of a record's shape (`version` of every line).
pub const GATE_LOG_VERSION: u32 = 1;

/// One gate, as its line of the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateRecord {
    /// [`GATE_LOG_VERSION`].
    pub version: u32,
    /// 1-based line number in the log.
    pub seq: u64,
    /// The gate's date (`YYYY-MM-DD`).
    pub date: String,
    /// Phase label (`2a`).
    pub phase: String,
    /// Sending agents as the gate was asked (empty: the records' own).
    pub from: Vec<String>,
    /// Receiving agents.
    pub to: Vec<String>,
    /// The batch's feature.
    pub feature: Option<String>,
    /// The §9 confirmation line.
    pub confirmation: String,
    /// Cross-references the gate added to the index.
    pub xrefs_added: usize,
    /// The phase's budget.
    pub budget: BudgetLog,
    /// Guardrail flags that fired (§18).
    pub flags: Vec<FlagLog>,
    /// Compressed entries, in allocation order (score descending).
    pub entries: Vec<EntryLog>,
    /// Records the preflight skipped, in input order.
    pub skipped: Vec<SkipLog>,
    /// What C7 trimmed, when the section went over its cap.
    pub c7: Option<TrimLog>,
}

/// A phase's budget, in half-line units (exact; `13` is 6.5 lines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetLog {
    /// The phase's base budget.
    pub base_half_lines: u32,
    /// Carried in from the previous phase.
    pub carry_in_half_lines: u32,
    /// Allocated (base + carry in).
    pub allocated_half_lines: u32,
    /// Used by the entries.
    pub used_half_lines: u32,
    /// Carried on to the next phase.
    pub carried_half_lines: u32,
    /// Used more than allocated.
    pub over_budget: bool,
}

/// A guardrail that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagLog {
    /// `too_many_critical`, `critical_exceeds_total`, `overrun`.
    pub kind: String,
    /// An escalation to the orchestrator.
    pub escalation: bool,
    /// The flag's message, as the gate printed it.
    pub message: String,
}

/// One compressed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryLog {
    /// The input it came from, as the caller named it.
    pub source: String,
    /// Idempotency key (`date|phase|agent[|task]`).
    pub key: String,
    /// Agent display name.
    pub agent: String,
    /// Phase label.
    pub phase: String,
    /// Band used (`CRITICAL`, …).
    pub band: String,
    /// Band the score alone gives (a partial entry is capped).
    pub scored_band: String,
    /// Score, two decimals.
    pub score: String,
    /// Exact score in ten-thousandths.
    pub score_exact: u32,
    /// Lines given, in half-lines.
    pub lines_half: u32,
    /// Allocation mode (`expanded`, …).
    pub mode: String,
    /// `new`, `updated` or `unchanged` in `## Completed Phases`.
    pub action: String,
    /// Which keyword or rule set each dimension, with its value.
    pub explain: Vec<ExplainLog>,
    /// Characters of the input (text fields and file list).
    pub input_chars: usize,
    /// o200k tokens of the input.
    pub input_tokens: usize,
    /// Characters of the entry as the ZZ artifact writes it.
    pub entry_chars: usize,
    /// o200k tokens of the entry.
    pub entry_tokens: usize,
    /// Facts the extractor finds in the input (`kind: text`, each once).
    pub facts_total: usize,
    /// Facts the entry still holds.
    pub facts_kept: Vec<String>,
    /// Facts the entry does not hold.
    pub facts_dropped: Vec<String>,
}

/// One dimension of a score's explain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainLog {
    /// `impact`, `risk`, `novelty`, `blockers`, `downstream` (`total`
    /// when forced).
    pub dimension: String,
    /// Its value, two decimals (empty for `total`).
    pub value: String,
    /// What set it.
    pub why: String,
}

/// A record the preflight skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkipLog {
    /// The input it came from.
    pub source: String,
    /// Agent display name.
    pub agent: String,
    /// Phase label.
    pub phase: String,
    /// Why.
    pub reason: String,
}

/// What C7 did to `## Completed Phases` in this gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimLog {
    /// The C7 log line.
    pub log: String,
    /// The archive file (bank-relative).
    pub archive: String,
    /// The section's cap, in half-lines.
    pub cap_half_lines: u32,
    /// The section's size before the trim, in half-lines.
    pub before_half_lines: u32,
    /// Its size after.
    pub after_half_lines: u32,
    /// Keys of the entries moved to the archive.
    pub removed: Vec<String>,
    /// Keys of the MEDIUM entries shortened to one line (`(trimmed)`).
    pub shortened: Vec<String>,
}

/// A line's kind when it is not a gate's: `trim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// C7 run on its own (`mnemo trim`).
    Trim,
}

/// C7 run on its own (`mnemo trim`, outside a gate), as its line of the
/// log records it: what it moved to the archive and shortened. A gate's
/// line has no `kind`; this one has `"kind":"trim"`, so neither reads as
/// the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimRecord {
    /// [`GATE_LOG_VERSION`].
    pub version: u32,
    /// 1-based line number in the log.
    pub seq: u64,
    /// [`RecordKind::Trim`].
    pub kind: RecordKind,
    /// The trim's date (`YYYY-MM-DD`; it names the archive's month).
    pub date: String,
    /// What C7 did.
    pub c7: TrimLog,
}

/// What [`record`] needs besides the phase and the outcome.
pub struct RecordInput<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The engine the gate scored with.
    pub engine: &'a Engine,
    /// The gate's phase, date, agents and feature.
    pub phase: &'a str,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// Sending agents.
    pub from: &'a [String],
    /// Receiving agents.
    pub to: &'a [String],
    /// Feature.
    pub feature: Option<&'a str>,
    /// The batch: (source, record).
    pub records: &'a [(String, SummaryRecord)],
    /// The active context before C7 trimmed it (`None`: no trim).
    pub untrimmed: Option<&'a str>,
    /// The active context as the gate writes it.
    pub active: &'a str,
    /// The archive C7 wrote to.
    pub archive: Option<&'a str>,
    /// Each entry's part of the ZZ's `## Priority Entries`, in the phase's
    /// entry order ([`render::render_zz_entries`]); an entry without one
    /// is measured rendered alone.
    pub written: &'a [String],
}

/// The record of a gate (its `seq` is set by [`append`]).
pub fn record(
    input: &RecordInput<'_>,
    phase: &CompressedPhase,
    outcome: &GateOutcome,
) -> GateRecord {
    let a = &phase.allocation;
    let entries = phase
        .entries
        .iter()
        .zip(&a.entries)
        .enumerate()
        .map(|(k, (e, ea))| {
            let (source, r) = &input.records[e.index];
            let action = outcome
                .outcomes
                .iter()
                .find(|o| o.key.as_deref() == Some(e.view.key().render().as_str()))
                .map_or("new", |o| o.action.as_str());
            let to = r.to.as_deref().or(input.to.first().map(String::as_str));
            let text = r.scoring_text();
            let score = input.engine.score(&ScoreInput {
                text: &text,
                files: r.files_changed.len(),
                from: r.sender(),
                to,
                unblocks: r.unblocks,
                has_blockers: r.has_blockers(),
            });
            let value = |d: &str| match d {
                "impact" => score.impact.to_string(),
                "risk" => score.risk.to_string(),
                "novelty" => score.novelty.to_string(),
                "blockers" => score.blockers.to_string(),
                "downstream" => score.downstream.to_string(),
                _ => String::new(),
            };
            let explain = input
                .engine
                .explain(&score)
                .into_iter()
                .map(|(d, why)| ExplainLog {
                    dimension: d.to_string(),
                    value: value(d),
                    why,
                })
                .collect();
            let written = input
                .written
                .get(k)
                .cloned()
                .unwrap_or_else(|| render::render_entry(&e.view, input.date));
            let (kept, dropped, total) = facts_of(&text, &r.files_changed, &written);
            EntryLog {
                source: source.clone(),
                key: e.view.key().render(),
                agent: e.view.agent.clone(),
                phase: e.view.phase.clone(),
                band: e.view.band.as_str().to_string(),
                scored_band: ea.scored_band.as_str().to_string(),
                score: fmt_score(e.view.score),
                score_exact: e.view.score,
                lines_half: ea.lines.units(),
                mode: ea.mode.as_str().to_string(),
                action: action.to_string(),
                explain,
                input_chars: render::entry_input(r).chars().count(),
                input_tokens: e.view.tokens.input,
                entry_chars: written.chars().count(),
                entry_tokens: e.view.tokens.output,
                facts_total: total,
                facts_kept: kept,
                facts_dropped: dropped,
            }
        })
        .collect();
    let skipped = outcome
        .outcomes
        .iter()
        .filter(|o| o.key.is_none())
        .map(|o| SkipLog {
            source: o.source.clone(),
            agent: o.agent.clone(),
            phase: o.phase.clone(),
            reason: o.reason.clone().unwrap_or_default(),
        })
        .collect();
    GateRecord {
        version: GATE_LOG_VERSION,
        seq: 0,
        date: input.date.to_string(),
        phase: input.phase.to_string(),
        from: input.from.to_vec(),
        to: input.to.to_vec(),
        feature: input.feature.map(str::to_string),
        confirmation: outcome.confirmation.clone(),
        xrefs_added: outcome.xrefs_added,
        budget: budget_of(a),
        flags: a.flags.iter().map(flag_of).collect(),
        entries,
        skipped,
        c7: trim_of(input, outcome),
    }
}

fn budget_of(a: &PhaseAllocation) -> BudgetLog {
    BudgetLog {
        base_half_lines: a.base.units(),
        carry_in_half_lines: a.carry_in.units(),
        allocated_half_lines: a.allocated.units(),
        used_half_lines: a.used.units(),
        carried_half_lines: a.carried.units(),
        over_budget: a.used > a.allocated,
    }
}

fn flag_of(f: &BudgetFlag) -> FlagLog {
    let kind = match f {
        BudgetFlag::TooManyCritical { .. } => "too_many_critical",
        BudgetFlag::CriticalExceedsTotal { .. } => "critical_exceeds_total",
        BudgetFlag::Overrun { .. } => "overrun",
    };
    FlagLog {
        kind: kind.to_string(),
        escalation: f.is_escalation(),
        message: f.to_string(),
    }
}

/// The input's facts (each `kind: text` once) split into those the
/// written entry holds and those it does not, and their number.
fn facts_of(text: &str, files: &[String], written: &str) -> (Vec<String>, Vec<String>, usize) {
    let found = facts::extract(text, files);
    let mut seen = BTreeSet::new();
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for f in &found.facts {
        if !seen.insert((f.kind.label(), f.text.as_str())) {
            continue;
        }
        let s = format!("{}: {}", f.kind.label(), f.text);
        if written.contains(f.text.as_str()) {
            kept.push(s);
        } else {
            dropped.push(s);
        }
    }
    let total = kept.len() + dropped.len();
    (kept, dropped, total)
}

/// Entries of `## Completed Phases` in `text`: (key, text).
fn section_entries(text: &str) -> Vec<(String, String)> {
    let Some((_, b, e)) = find_section(text, crate::layout::COMPLETED_PHASES) else {
        return Vec::new();
    };
    completed::parse_section(&text[b..e])
        .into_iter()
        .filter_map(|it| match it {
            Item::Entry { key, text, .. } => Some((key.render(), text)),
            Item::Other(_) => None,
        })
        .collect()
}

fn section_size(text: &str) -> HalfLines {
    match find_section(text, crate::layout::COMPLETED_PHASES) {
        Some((_, b, e)) => crate::plan::section_size(&completed::parse_section(&text[b..e])),
        None => HalfLines(0),
    }
}

fn trim_of(input: &RecordInput<'_>, outcome: &GateOutcome) -> Option<TrimLog> {
    let (untrimmed, log) = (input.untrimmed?, outcome.trim.as_ref()?);
    Some(trim_log_of(
        input.config,
        untrimmed,
        input.active,
        log,
        input.archive.unwrap_or_default(),
    ))
}

/// What C7 did to `## Completed Phases`: `untrimmed` is the active context
/// before it, `trimmed` after it, `log` its log line, `archive` the
/// archive file it wrote to.
pub fn trim_log_of(
    config: &Config,
    untrimmed: &str,
    trimmed: &str,
    log: &str,
    archive: &str,
) -> TrimLog {
    let after = section_entries(trimmed);
    let mut removed = Vec::new();
    let mut shortened = Vec::new();
    for (key, text) in section_entries(untrimmed) {
        match after.iter().find(|(k, _)| *k == key) {
            None => removed.push(key),
            Some((_, t)) if *t != text => shortened.push(key),
            Some(_) => {}
        }
    }
    TrimLog {
        log: log.to_string(),
        archive: archive.to_string(),
        cap_half_lines: HalfLines::lines(config.budget.total_lines).units(),
        before_half_lines: section_size(untrimmed).units(),
        after_half_lines: section_size(trimmed).units(),
        removed,
        shortened,
    }
}

/// True when some change writes a byte the bank does not hold yet (or
/// deletes a file it holds). A file the caller did not read counts as
/// changed.
pub fn changes_bank(texts: &BankTexts, changes: &[FileChange]) -> bool {
    // Two texts without a `\r` (memchr) that differ differ after the
    // CRLF → LF normalisation too: no copy of a large file.
    let has_cr = |s: &str| memchr::memchr(b'\r', s.as_bytes()).is_some();
    let norm = |s: &str| s.replace("\r\n", "\n");
    changes.iter().any(|c| match c {
        FileChange::Write { rel, content } => match texts.get(rel) {
            Ok(Some(old)) => {
                old != content && (!(has_cr(old) || has_cr(content)) || norm(old) != norm(content))
            }
            Ok(None) | Err(_) => true,
        },
        FileChange::Delete { rel } => !matches!(texts.get(rel), Ok(None)),
        FileChange::Append { content, .. } => !content.is_empty(),
    })
}

/// The change that appends `rec` to the log, when `changes` change the
/// bank (else `None`: a re-run appends nothing). Sets `rec.seq`. The log
/// must have been read, whole or its end ([`crate::plan::reads_tail`]).
pub fn append(
    texts: &BankTexts,
    changes: &[FileChange],
    rec: &mut GateRecord,
    clean: Clean<'_>,
) -> Result<Option<FileChange>, PlanError> {
    append_line(texts, changes, |seq| {
        rec.seq = seq;
        to_line(rec, clean)
    })
}

/// [`append`] for a trim's record.
pub fn append_trim(
    texts: &BankTexts,
    changes: &[FileChange],
    rec: &mut TrimRecord,
    clean: Clean<'_>,
) -> Result<Option<FileChange>, PlanError> {
    append_line(texts, changes, |seq| {
        rec.seq = seq;
        to_line(rec, clean)
    })
}

fn append_line(
    texts: &BankTexts,
    changes: &[FileChange],
    line_of: impl FnOnce(u64) -> String,
) -> Result<Option<FileChange>, PlanError> {
    let tail = texts.tail(GATE_LOG)?;
    if !changes_bank(texts, changes) {
        return Ok(None);
    }
    let (seq, ends_open) = match tail {
        None => (1, false),
        Some((len, text)) => (
            next_seq(len, text).ok_or_else(|| PlanError::NotRead {
                rel: GATE_LOG.to_string(),
            })?,
            !text.is_empty() && !text.ends_with('\n'),
        ),
    };
    let line = line_of(seq);
    let mut content = String::with_capacity(line.len() + 2);
    if ends_open {
        content.push('\n');
    }
    content.push_str(&line);
    content.push('\n');
    Ok(Some(FileChange::Append {
        rel: GATE_LOG.to_string(),
        content,
    }))
}

/// Bytes of the log's end a gate reads ([`crate::plan::FileText::Tail`]):
/// many lines of any gate mnemo writes.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// The `seq` of the next line: the number of non-blank lines plus one.
/// From the whole log it is counted; from its end (`text` shorter than
/// `len`) it is the last readable record's `seq` plus the non-blank lines
/// after it, the same number in a log mnemo wrote (its `seq` is its line
/// number). `None`: the end holds no readable record (then the whole log
/// must be read, [`tail_suffices`]).
pub fn next_seq(len: u64, text: &str) -> Option<u64> {
    let count = |t: &str| t.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    if text.len() as u64 >= len {
        return Some(count(text).saturating_add(1));
    }
    #[derive(Deserialize)]
    struct Seq {
        version: u32,
        seq: u64,
    }
    let mut after = 0u64;
    for line in text.lines().rev() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Seq>(line) {
            Ok(r) if r.version == GATE_LOG_VERSION => {
                return Some(r.seq.saturating_add(after).saturating_add(1));
            }
            _ => after += 1,
        }
    }
    None
}

/// Whether the end of a log read ([`TAIL_BYTES`]) is enough to append to
/// it: the whole log, or an end with a readable record.
pub fn tail_suffices(len: u64, text: &str) -> bool {
    next_seq(len, text).is_some()
}

/// One line of JSON (no newline), every string scrubbed on its own.
pub fn to_line<T: Serialize>(rec: &T, clean: Clean<'_>) -> String {
    let mut v = match serde_json::to_value(rec) {
        Ok(v) => v,
        // Plain structs of strings and numbers always serialise.
        Err(_) => return String::from("{}"),
    };
    scrub_value(&mut v, clean);
    serde_json::to_string(&v).unwrap_or_else(|_| String::from("{}"))
}

fn scrub_value(v: &mut serde_json::Value, clean: Clean<'_>) {
    match v {
        serde_json::Value::String(s) => {
            let c = clean(s);
            if c != *s {
                *s = c;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scrub_value(x, clean)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| scrub_value(x, clean)),
        _ => {}
    }
}

/// What [`parse`] read from a log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedLog {
    /// Records, in line order.
    pub records: Vec<GateRecord>,
    /// C7 runs on their own (`mnemo trim`), in line order.
    pub trims: Vec<TrimRecord>,
    /// 1-based numbers of the lines that are not a record of this version
    /// (kept out, counted).
    pub unreadable: Vec<usize>,
}

/// Reads a log's text with every string passed through `clean` (the
/// report's rule: nothing read reaches a page unscrubbed). The whole text
/// is scrubbed once; only when that changes something are the lines that
/// change scrubbed string by string, so a redaction never breaks a line.
pub fn parse_clean(text: &str, clean: Clean<'_>) -> ParsedLog {
    if clean(text) == text {
        return parse(text);
    }
    let mut out = ParsedLog::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .map(|mut v| {
                if clean(line) != line {
                    scrub_value(&mut v, clean);
                }
                v
            });
        match v {
            Some(v) => out.push_value(i + 1, v),
            None => out.unreadable.push(i + 1),
        }
    }
    out
}

impl ParsedLog {
    /// Files line `n` (a gate's record, a trim's, or unreadable).
    fn push_line(&mut self, n: usize, line: &str) {
        match serde_json::from_str::<GateRecord>(line) {
            Ok(r) if r.version == GATE_LOG_VERSION => self.records.push(r),
            Ok(_) => self.unreadable.push(n),
            Err(_) => match serde_json::from_str::<TrimRecord>(line) {
                Ok(t) if t.version == GATE_LOG_VERSION => self.trims.push(t),
                _ => self.unreadable.push(n),
            },
        }
    }

    fn push_value(&mut self, n: usize, v: serde_json::Value) {
        if v.get("kind").is_some() {
            match serde_json::from_value::<TrimRecord>(v) {
                Ok(t) if t.version == GATE_LOG_VERSION => self.trims.push(t),
                _ => self.unreadable.push(n),
            }
            return;
        }
        match serde_json::from_value::<GateRecord>(v) {
            Ok(r) if r.version == GATE_LOG_VERSION => self.records.push(r),
            _ => self.unreadable.push(n),
        }
    }
}

/// Reads a log's text (blank lines are skipped; a line that does not
/// parse is counted in `unreadable`, never a panic).
pub fn parse(text: &str) -> ParsedLog {
    let mut out = ParsedLog::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push_line(i + 1, line);
    }
    out
}
