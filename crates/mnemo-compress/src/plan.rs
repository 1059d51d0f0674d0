//! The bank commands' decisions as pure functions: from parsed records and
//! the bank's current file texts (plus configuration, date and options) to
//! the set of new file contents and a report.
//!
//! `mnemo-bank` only reads, asks the Guardian, and commits: for a gate it
//! reads the files [`gate_reads`] names into a [`BankTexts`], calls
//! [`plan_gate`], and commits [`GatePlan::changes`] in one transaction.
//! Everything that decides something (skips, flags, blocked → unblocked
//! links, feature rows, the `## Completed Phases` upsert, the progress log,
//! the C7 trim, the ZZ artifact, which lines of the index need scrubbing)
//! lives here and is tested without a disk. The same holds for C4
//! ([`plan_feature_complete`]), C5 ([`plan_sprint_close`]), C6's choice of
//! inputs ([`plan_compress_inputs`]) and C7 alone ([`plan_trim_only`]).
//!
//! The scrubber is passed in as a function (`clean`) so that this crate
//! does not depend on it; every text the plan generates goes through it,
//! and text that was already in the bank is kept as it was.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use mnemo_model::{Config, SummaryRecord};
use mnemo_score::{Band, Engine};
use serde::Serialize;

use crate::budget::HalfLines;
use crate::completed::{self, Item, NewEntry, Span, TrimCandidate, UpsertReport, Upserted};
use crate::gatelog;
use crate::layout::{
    ACTIVE_CONTEXT, COMPLETED_PHASES, COMPLETED_PLANS, JOURNAL, LOCK_FILE, NEXT_ID, PROGRESS_LOG,
    TMP_DIR, XREF_INDEX, is_zz, never_touch, zz_path,
};
use crate::pipeline::{PhaseInput, compress_phase};
use crate::preflight::{ArtifactType, Decision, DiscDecision, Preflight, can_compress};
use crate::render::{
    self, EntryKey, Review, ZzHeader, entry_hash, marker, progress_section, review_line,
};
use crate::sections::{append_progress, find_section, upsert_section, upsert_section_each};
use crate::summary::DeterministicSummarizer;
use crate::xref::{
    BlockedEntry, NewRef, NextIds, Prefix, RefId, TableKind, XrefIndex, parse_index,
};

/// The scrubber, as the plan sees it: text in, scrubbed text out.
pub type Clean<'a> = &'a dyn Fn(&str) -> String;

/// The first text of a new `01-active-context.md`.
pub const ACTIVE_CONTEXT_NEW: &str = "# Active Context\n";
/// The first text of a new `02-progress-log.md`.
pub const PROGRESS_LOG_NEW: &str =
    "# Progress Log\n\n> Append-only. Never edit previous entries.\n";

/// One bank file as the caller read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileText {
    /// The file does not exist.
    Absent,
    /// Its text (UTF-8).
    Text(String),
    /// It could not be read; the caller keeps the error and gives it when
    /// the plan says it needs this file ([`PlanError::Unreadable`]).
    Unreadable,
    /// The end of an append-only file ([`reads_tail`]): its length in
    /// bytes and its last lines, from the start of a line (the whole file
    /// when `text.len() == len`).
    Tail {
        /// The file's length in bytes.
        len: u64,
        /// Its last bytes, from a line start.
        text: String,
    },
}

/// Whether a plan reads `rel` only from its end ([`FileText::Tail`]): the
/// gate log, which a gate appends one line to, so that a gate's cost does
/// not grow with the log.
pub fn reads_tail(rel: &str) -> bool {
    rel == gatelog::GATE_LOG
}

/// The bank's current files, by bank-relative path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BankTexts {
    files: BTreeMap<String, FileText>,
}

impl BankTexts {
    /// No file read yet.
    pub fn new() -> BankTexts {
        BankTexts::default()
    }

    /// Records what reading `rel` gave.
    pub fn insert(&mut self, rel: impl Into<String>, text: FileText) {
        self.files.insert(rel.into(), text);
    }

    /// Builder: `rel` holds `text` (`None`: absent).
    pub fn with(mut self, rel: &str, text: Option<&str>) -> BankTexts {
        self.insert(
            rel,
            text.map_or(FileText::Absent, |t| FileText::Text(t.to_string())),
        );
        self
    }

    /// An empty bank: every path in `rels` absent.
    pub fn absent(rels: &[String]) -> BankTexts {
        let mut t = BankTexts::new();
        for r in rels {
            t.insert(r.clone(), FileText::Absent);
        }
        t
    }

    /// The text of `rel` (`None`: absent). A path the caller did not read
    /// is an error, never an absent file (which would be overwritten).
    pub fn get(&self, rel: &str) -> Result<Option<&str>, PlanError> {
        match self.files.get(rel) {
            Some(FileText::Text(t)) => Ok(Some(t)),
            Some(FileText::Tail { len, text }) if text.len() as u64 == *len => Ok(Some(text)),
            Some(FileText::Absent) => Ok(None),
            Some(FileText::Unreadable) => Err(PlanError::Unreadable { rel: rel.into() }),
            Some(FileText::Tail { .. }) | None => Err(PlanError::NotRead { rel: rel.into() }),
        }
    }

    /// The end of `rel`: its length in bytes and its last lines (all of
    /// them when the whole file was read); `None`: absent.
    pub fn tail(&self, rel: &str) -> Result<Option<(u64, &str)>, PlanError> {
        match self.files.get(rel) {
            Some(FileText::Text(t)) => Ok(Some((t.len() as u64, t))),
            Some(FileText::Tail { len, text }) => Ok(Some((*len, text))),
            Some(FileText::Absent) => Ok(None),
            Some(FileText::Unreadable) => Err(PlanError::Unreadable { rel: rel.into() }),
            None => Err(PlanError::NotRead { rel: rel.into() }),
        }
    }

    /// Applies changes, giving the texts a later plan would read (tests,
    /// and a caller that plans twice).
    pub fn apply(&mut self, changes: &[FileChange]) {
        for c in changes {
            match c {
                FileChange::Write { rel, content } => {
                    self.insert(rel.clone(), FileText::Text(content.clone()));
                }
                FileChange::Delete { rel } => self.insert(rel.clone(), FileText::Absent),
                FileChange::Append { rel, content } => {
                    let next = match self.files.remove(rel) {
                        Some(FileText::Text(mut t)) => {
                            t.push_str(content);
                            FileText::Text(t)
                        }
                        Some(FileText::Tail { len, mut text }) => {
                            text.push_str(content);
                            FileText::Tail {
                                len: len + content.len() as u64,
                                text,
                            }
                        }
                        _ => FileText::Text(content.clone()),
                    };
                    self.insert(rel.clone(), next);
                }
            }
        }
    }
}

/// Why a plan could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A bank file's content is not what mnemo can work with.
    #[error("{rel}: {message}")]
    Invalid {
        /// Bank-relative path.
        rel: String,
        /// What is wrong.
        message: String,
    },
    /// A file the plan needs could not be read (the caller has the error).
    #[error("{rel}: could not be read")]
    Unreadable {
        /// Bank-relative path.
        rel: String,
    },
    /// The caller did not read a file the plan needs.
    #[error("{rel}: the plan needs this file, and it was not read")]
    NotRead {
        /// Bank-relative path.
        rel: String,
    },
}

/// One change of a plan (the bank commits them all at once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum FileChange {
    /// Write the file (create or replace).
    Write {
        /// Bank-relative path.
        rel: String,
        /// Full new content.
        content: String,
    },
    /// Delete the file.
    Delete {
        /// Bank-relative path.
        rel: String,
    },
    /// Append bytes to the file (create it when absent): the gate log's
    /// new line, committed without rewriting the log.
    Append {
        /// Bank-relative path.
        rel: String,
        /// The bytes to add at its end.
        content: String,
    },
}

impl FileChange {
    /// Its bank-relative path.
    pub fn rel(&self) -> &str {
        match self {
            FileChange::Write { rel, .. }
            | FileChange::Delete { rel }
            | FileChange::Append { rel, .. } => rel,
        }
    }
}

// ---------------------------------------------------------------------
// Records before the gate

/// The feature of a batch: the gate's own, else the one every record
/// names (none when a record names none or two records disagree).
pub fn batch_feature(opt: Option<&str>, records: &[(String, SummaryRecord)]) -> Option<String> {
    if let Some(f) = opt {
        return Some(f.to_string());
    }
    let mut it = records.iter().map(|(_, r)| r.feature.as_deref());
    let first = it.next()??;
    it.all(|f| f == Some(first)).then(|| first.to_string())
}

/// The agent of a record that names none: a roster agent named in its file
/// name (`subtask-hermes.json`), else the gate's single `--from` agent.
pub fn infer_agent(config: &Config, source: &str, from: &[String]) -> Option<String> {
    let stem = std::path::Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let words: Vec<&str> = stem
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let named = config.agents.roster.iter().find(|a| {
        let k = mnemo_model::agent_key(a);
        words.iter().any(|w| *w == k)
    });
    match (named, from) {
        (Some(a), _) => Some(a.clone()),
        (None, [one]) => Some(one.clone()),
        _ => None,
    }
}

fn scrub_opt(clean: Clean<'_>, v: &mut Option<String>) {
    if let Some(x) = v {
        *x = clean(x);
    }
}

/// Layer 2 scrub of every text field of a record.
pub fn scrub_record(clean: Clean<'_>, r: &mut SummaryRecord) {
    r.summary = clean(&r.summary);
    for f in [
        &mut r.agent,
        &mut r.phase,
        &mut r.date,
        &mut r.feature,
        &mut r.tests,
        &mut r.coverage,
        &mut r.status_reason,
        &mut r.what,
        &mut r.why,
        &mut r.gotcha,
        &mut r.from,
        &mut r.to,
    ] {
        scrub_opt(clean, f);
    }
    for list in [&mut r.files_changed, &mut r.blockers, &mut r.unblocks_refs] {
        for x in list.iter_mut() {
            *x = clean(x);
        }
    }
}

/// A batch ready to gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// `(source, record)`, scrubbed, with inferred agents.
    pub records: Vec<(String, SummaryRecord)>,
    /// The batch's feature ([`batch_feature`]).
    pub feature: Option<String>,
    /// The fields Layer 1 refused to promote, one line each.
    pub dropped: Vec<DroppedField>,
}

/// A field Layer 1 refused to promote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedField {
    /// The input it came from.
    pub source: String,
    /// Its line, when the parser knows it.
    pub line: Option<usize>,
    /// The record's position in its input (1-based).
    pub record: usize,
    /// The field's name.
    pub field: String,
}

impl DroppedField {
    /// `src:line: field `x` dropped (only metadata is promoted: Layer 1)`.
    pub fn message(&self) -> String {
        let at = match self.line {
            Some(line) => format!("{}:{line}", self.source),
            None => format!("{} record {}", self.source, self.record),
        };
        format!(
            "{at}: field `{}` dropped (only metadata is promoted: Layer 1)",
            self.field
        )
    }
}

/// Before the gate: the batch's feature, the Layer 1 report, the Layer 2
/// scrub of every record and the agents of records that name none.
pub fn prepare(
    config: &Config,
    feature: Option<&str>,
    from: &[String],
    mut records: Vec<(String, SummaryRecord)>,
    clean: Clean<'_>,
) -> Prepared {
    let feature = batch_feature(feature, &records);
    let mut dropped = Vec::new();
    let mut ordinal: HashMap<&str, usize> = HashMap::new();
    for (src, r) in &records {
        let n = ordinal.entry(src.as_str()).or_default();
        *n += 1;
        for d in &r.dropped {
            dropped.push(DroppedField {
                source: src.clone(),
                line: d.line,
                record: *n,
                field: d.name.clone(),
            });
        }
    }
    for (src, r) in &mut records {
        scrub_record(clean, r);
        if r.agent.is_none() && r.from.is_none() {
            r.agent = infer_agent(config, src, from);
        }
    }
    Prepared {
        records,
        feature,
        dropped,
    }
}

fn safe_token(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_whitespace() || matches!(c, ',' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect::<String>()
        .replace("--", "-")
}

/// The provenance comment of an entry (`<!-- mnemo:prov origins=… derived_from=… -->`),
/// or `None` for the orchestrator's own records.
pub fn provenance_comment(r: &SummaryRecord) -> Option<String> {
    let p = r.provenance.as_ref()?;
    if p.origins.is_empty() && p.derived_from.is_empty() {
        return None;
    }
    let origins: Vec<&str> = p.origins.iter().map(|o| o.as_str()).collect();
    let mut s = String::from("<!-- mnemo:prov");
    if !origins.is_empty() {
        let _ = write!(s, " origins={}", origins.join(","));
    }
    if !p.derived_from.is_empty() {
        let ids: Vec<String> = p.derived_from.iter().map(|d| safe_token(d)).collect();
        let _ = write!(s, " derived_from={}", ids.join(","));
    }
    s.push_str(" -->");
    Some(s)
}

fn with_comment(entry: &str, comment: Option<&str>) -> String {
    match (comment, entry.find('\n')) {
        (Some(c), Some(i)) => format!("{} {c}{}", &entry[..i], &entry[i..]),
        (Some(c), None) => format!("{entry} {c}"),
        (None, _) => entry.to_string(),
    }
}

// ---------------------------------------------------------------------
// The gate (C1–C3)

/// What a gate is asked to do.
#[derive(Clone, Copy)]
pub struct GateRequest<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The scoring engine built from it.
    pub engine: &'a Engine,
    /// Phase label (`1`, `2a`).
    pub phase: &'a str,
    /// Sending agents (empty: the records' own).
    pub from: &'a [String],
    /// Receiving agents.
    pub to: &'a [String],
    /// Planned phases of the feature.
    pub phases: Option<u32>,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// The batch's feature (By Feature rows), see [`batch_feature`].
    pub feature: Option<&'a str>,
    /// The batch, after [`prepare`].
    pub records: &'a [(String, SummaryRecord)],
}

/// The previous phase's ZZ artifact (its `Carried:` line is this phase's
/// carryover), when the phase label starts with a number above 1.
fn previous_zz(phase: &str) -> Option<String> {
    let digits: String = phase
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let prev = digits.parse::<u64>().ok()?.checked_sub(1)?;
    (prev != 0).then(|| zz_path(&prev.to_string()))
}

/// The bank files a gate of `phase` on `date` reads: the four bank files,
/// the previous phase's ZZ artifact (carryover), the month's archive (C7),
/// the gate log and the phase's own ZZ artifact (whether the gate changes
/// anything, [`gatelog::append`]).
pub fn gate_reads(phase: &str, date: &str) -> Vec<String> {
    let mut v: Vec<String> = [ACTIVE_CONTEXT, PROGRESS_LOG, XREF_INDEX, NEXT_ID]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(previous_zz(phase));
    v.push(completed::archive_path(date));
    v.push(gatelog::GATE_LOG.to_string());
    v.push(zz_path(phase));
    v
}

/// The carryover a ZZ artifact states (`- Carried: 2.5 lines`).
pub fn carried(zz: &str) -> HalfLines {
    for line in zz.lines() {
        if let Some(rest) = line.strip_prefix("- Carried: ") {
            let n = rest.trim_end_matches(" lines").trim();
            let (whole, half) = match n.split_once('.') {
                Some((w, "5")) => (w, 1),
                Some((w, _)) => (w, 0),
                None => (n, 0),
            };
            if let Ok(w) = whole.parse::<u32>() {
                return HalfLines(w.saturating_mul(2).saturating_add(half));
            }
        }
    }
    HalfLines(0)
}

/// What happened to one record of the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// A new entry.
    New,
    /// Same key, other content: its entry was updated.
    Updated,
    /// Same key and content: nothing changed.
    Unchanged,
    /// The preflight refused it (see the reason).
    Skipped,
}

impl Action {
    /// `new`, `updated`, `unchanged`, `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::New => "new",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Skipped => "skipped",
        }
    }
}

impl From<Upserted> for Action {
    fn from(u: Upserted) -> Action {
        match u {
            Upserted::New => Action::New,
            Upserted::Unchanged => Action::Unchanged,
            Upserted::Updated => Action::Updated,
        }
    }
}

/// One record of the batch in the gate's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryOutcome {
    /// The input it came from.
    pub source: String,
    /// Its idempotency key (`date|phase|agent[|task]`); `None` when skipped.
    pub key: Option<String>,
    /// Display name of its agent.
    pub agent: String,
    /// Its phase.
    pub phase: String,
    /// The band used (`None` when skipped).
    pub band: Option<Band>,
    /// Exact score in ten-thousandths (`None` when skipped).
    pub score: Option<u32>,
    /// Lines the budget gave it.
    pub lines: Option<HalfLines>,
    /// What happened to it.
    pub action: Action,
    /// Why it was skipped.
    pub reason: Option<String>,
    /// o200k tokens of its input (summary text plus file list).
    pub tokens_in: Option<usize>,
    /// o200k tokens of its ZZ entry.
    pub tokens_out: Option<usize>,
    /// The texts the tokens are counted on (input; ZZ entry), kept so that
    /// only a caller that reports tokens pays for loading the vocabulary
    /// ([`EntryOutcome::count_tokens`]).
    #[serde(skip)]
    pub token_texts: (String, Option<String>),
}

impl EntryOutcome {
    /// Fills `tokens_in` and `tokens_out` (o200k; loads the vocabulary on
    /// first use, so the gate itself does not).
    /// Figures already set (the ZZ entry's own measure) are kept.
    pub fn count_tokens(&mut self) {
        if self.tokens_in.is_none() {
            self.tokens_in = o200k(&self.token_texts.0);
        }
        if self.tokens_out.is_none() {
            self.tokens_out = self.token_texts.1.as_deref().and_then(o200k);
        }
    }
}

/// What a gate decided (without what recovery and the commit did).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GateOutcome {
    /// The §9 confirmation line.
    pub confirmation: String,
    /// Entries compressed.
    pub entries: usize,
    /// CRITICAL entries among them.
    pub critical: usize,
    /// HIGH entries among them.
    pub high: usize,
    /// Cross-refs newly added to the index.
    pub xrefs_added: usize,
    /// Records the preflight skipped, with reasons.
    pub skipped: Vec<String>,
    /// Budget flags (overflow, escalation, overrun).
    pub flags: Vec<String>,
    /// The C7 log line when the section went over its cap.
    pub trim: Option<String>,
    /// `## Completed Phases` entries: new, unchanged and updated.
    pub upsert: UpsertReport,
    /// Every record of the batch, in input order.
    pub outcomes: Vec<EntryOutcome>,
}

/// The plan of a gate: every new file content, and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatePlan {
    /// The writes, in commit order (unchanged files included: the commit
    /// drops no-ops).
    pub changes: Vec<FileChange>,
    /// What it decided.
    pub outcome: GateOutcome,
    /// Inputs with a skipped record (their `.tmp/` artifacts stay).
    pub skipped_sources: BTreeSet<String>,
    /// The gate's line of `_xref/gate-log.jsonl` (in `changes`), `None`
    /// when the gate changes nothing ([`gatelog`]).
    pub gate_log: Option<gatelog::GateRecord>,
}

fn phase_label(phase: &str) -> String {
    let p = phase.trim();
    if p.starts_with(['P', 'p']) && p[1..].starts_with(|c: char| c.is_ascii_digit()) {
        format!("P{}", &p[1..])
    } else {
        format!("P{p}")
    }
}

/// The names of the `unblocks` rows of the index.
fn resolved_links(index: &XrefIndex) -> Vec<String> {
    index
        .table(TableKind::DecisionLinks)
        .map(|t| {
            t.rows
                .iter()
                .filter(|r| r.cell(1).eq_ignore_ascii_case("unblocks"))
                .map(|r| r.cell(2).to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Entries recorded as blocked in the index (Decision Links rows of type
/// `blocked`, `P2 Themis blocked`).
fn blocked_entries(index: &XrefIndex) -> Vec<BlockedEntry> {
    let Some(t) = index.table(TableKind::DecisionLinks) else {
        return Vec::new();
    };
    t.rows
        .iter()
        .filter(|r| r.cell(1).eq_ignore_ascii_case("blocked"))
        .filter_map(|r| {
            let name = r.cell(2);
            let mut w = name.split_whitespace();
            let (phase, agent) = (w.next()?, w.next()?);
            Some(BlockedEntry {
                phase: phase.to_string(),
                agent: agent.to_string(),
                blockers: r
                    .cell(3)
                    .split("; ")
                    .map(str::to_string)
                    .filter(|b| !b.is_empty())
                    .collect(),
            })
        })
        .collect()
}

/// Scrubs the rows mnemo added to the index (lines not in the old text).
fn clean_index(clean: Clean<'_>, old: Option<&str>, new: &str) -> String {
    let old_lines: HashSet<&str> = old.unwrap_or_default().lines().collect();
    new.split_inclusive('\n')
        .map(|l| {
            if old_lines.contains(l.trim_end_matches('\n')) {
                l.to_string()
            } else {
                clean(l)
            }
        })
        .collect()
}

fn invalid(rel: &str, e: impl std::fmt::Display) -> PlanError {
    PlanError::Invalid {
        rel: rel.to_string(),
        message: e.to_string(),
    }
}

fn o200k(text: &str) -> Option<usize> {
    mnemo_tokens::count_o200k(text).ok()
}

/// The input of an entry as the size target counts it: its text and its
/// file list (the same text as [`render::entry_input`]).
fn input_text(r: &SummaryRecord) -> String {
    render::entry_input(r)
}

/// C1–C3: the plan of a gate over a prepared batch on the bank's current
/// texts. Pure: the same request and texts give the same plan, and a
/// re-plan on the texts the plan wrote changes no byte.
pub fn plan_gate(
    req: &GateRequest<'_>,
    texts: &BankTexts,
    clean: Clean<'_>,
) -> Result<GatePlan, PlanError> {
    let config = req.config;
    let records = req.records;
    let active = texts.get(ACTIVE_CONTEXT)?;
    let progress = texts.get(PROGRESS_LOG)?;
    let index_text = texts.get(XREF_INDEX)?;
    let next_text = texts.get(NEXT_ID)?;
    let mut ids = NextIds::parse(next_text.unwrap_or_default()).map_err(|e| invalid(NEXT_ID, e))?;
    let mut index = index_text.map_or_else(XrefIndex::empty, parse_index);

    let carry_in = match previous_zz(req.phase) {
        Some(rel) => texts.get(&rel)?.map_or(HalfLines(0), carried),
        None => HalfLines(0),
    };
    let plain: Vec<SummaryRecord> = records.iter().map(|(_, r)| r.clone()).collect();
    let summarizer = DeterministicSummarizer::new(config);
    let mut phase = compress_phase(
        config,
        req.engine,
        &summarizer,
        &PhaseInput {
            phase: req.phase,
            date: req.date,
            to: req.to.first().map(String::as_str),
            phases: req.phases,
            carry_in,
            records: &plain,
        },
    );
    let mut out = GateOutcome::default();
    let mut outcomes: Vec<Option<EntryOutcome>> = vec![None; records.len()];
    for (i, d) in &phase.skipped {
        let (src, r) = &records[*i];
        let agent = r.agent.as_deref().or(r.sender()).unwrap_or("unknown");
        let p = r.phase.as_deref().unwrap_or(req.phase);
        let reason = d.reason().unwrap_or("not compressible");
        out.skipped
            .push(format!("{src}: {agent} (phase {p}): skipped — {reason}"));
        if let Some(slot) = outcomes.get_mut(*i) {
            *slot = Some(EntryOutcome {
                source: src.clone(),
                key: None,
                agent: config.display_agent(agent),
                phase: p.to_string(),
                band: None,
                score: None,
                lines: None,
                action: Action::Skipped,
                reason: Some(reason.to_string()),
                tokens_in: None,
                tokens_out: None,
                token_texts: (input_text(r), None),
            });
        }
    }
    out.flags = phase
        .allocation
        .flags
        .iter()
        .map(ToString::to_string)
        .collect();

    // Cross-references, with blocked → unblocked links (§9 d).
    let mut refs = phase.refs.clone();
    let blocked_before = blocked_entries(&index);
    for (i, _) in &phase.skipped {
        let (_, r) = &records[*i];
        if r.has_blockers() {
            let agent =
                config.display_agent(r.agent.as_deref().or(r.sender()).unwrap_or("unknown"));
            let p = phase_label(r.phase.as_deref().unwrap_or(req.phase));
            refs.push(NewRef {
                prefix: Prefix::D,
                kind: "blocked".into(),
                name: format!("{p} {agent} blocked"),
                location: if r.blockers.is_empty() {
                    r.status_reason.clone().unwrap_or_else(|| "blocked".into())
                } else {
                    r.blockers.join("; ")
                },
                phase: p,
                agent,
            });
        }
    }
    let current: Vec<(&str, &str, &SummaryRecord)> = phase
        .entries
        .iter()
        .map(|e| {
            (
                e.view.phase.as_str(),
                e.view.agent.as_str(),
                &plain[e.index],
            )
        })
        .collect();
    // A blocked entry is unblocked once: links to it by other entries are dropped.
    let resolved = resolved_links(&index);
    refs.extend(
        crate::xref::unblock_links(&blocked_before, &current)
            .into_iter()
            .filter(|l| {
                let base = l.name.split(" → ").next().unwrap_or_default();
                !resolved
                    .iter()
                    .any(|u| u.starts_with(&format!("{base} → ")) && *u != l.name)
            }),
    );
    let merged = index
        .merge(&refs, &mut ids)
        .map_err(|e| invalid(XREF_INDEX, e))?;
    out.xrefs_added = merged.iter().filter(|(_, added)| *added).count();
    let xrefs: Vec<(RefId, NewRef)> = merged
        .iter()
        .zip(&refs)
        .map(|((id, _), r)| (*id, r.clone()))
        .collect();
    if let Some(feature) = req.feature {
        for e in &phase.entries {
            index.upsert_feature(
                feature,
                &e.view.phase,
                &e.view.agent,
                e.view.band,
                &clean(&e.view.summary.title),
            );
        }
    }

    // Completed Phases entries and progress-log sections.
    let mut new_entries = Vec::new();
    let mut progress_text = progress.unwrap_or(PROGRESS_LOG_NEW).to_string();
    let mut progress_changed = false;
    for e in &phase.entries {
        let record = &plain[e.index];
        let text = with_comment(
            &render::completed_entry(&e.view),
            provenance_comment(record).as_deref(),
        );
        new_entries.push(NewEntry {
            key: e.view.key(),
            hash: e.view.hash(),
            text: clean(&text),
        });
        let review = Review::of(record);
        let section = clean(&progress_section(&e.view, record, review.as_ref()));
        let rl = review.as_ref().map(|r| clean(&review_line(r)));
        let (t, changed) = append_progress(&progress_text, &section, rl.as_deref());
        progress_text = t;
        progress_changed |= changed;
    }
    let base_active = active.unwrap_or(ACTIVE_CONTEXT_NEW);
    let (mut active_text, upserted, each) =
        upsert_section_each(base_active, COMPLETED_PHASES, &new_entries);

    // C7 when the section is over its cap.
    let mut archive_change = None;
    let mut untrimmed = None;
    let cap = HalfLines::lines(config.budget.total_lines);
    if let Some(t) = trim_section(texts, clean, &active_text, cap, req.date)? {
        untrimmed = Some(std::mem::replace(&mut active_text, t.text));
        out.trim = Some(t.log);
        archive_change = Some(t.archive);
    }

    // ZZ artifact.
    let views: Vec<render::EntryView> = phase.entries.iter().map(|e| e.view.clone()).collect();
    let from = if req.from.is_empty() {
        plain
            .iter()
            .filter_map(|r| r.sender().map(str::to_string))
            .collect()
    } else {
        req.from.to_vec()
    };
    let (zz, written) = render::render_zz_entries(
        &ZzHeader {
            phase: req.phase,
            next_phase: None,
            from: &from,
            to: req.to,
        },
        &phase.allocation,
        &views,
        &xrefs,
    );
    // An entry's tokens out are those of exactly what the page shows of it
    // (a head line without the files the Cross-References name, its part
    // of a shared LOW row), not of the entry rendered alone.
    for (e, w) in phase.entries.iter_mut().zip(&written) {
        e.view.tokens.output = render::count_tokens(w).0;
    }

    for ((e, ea), action) in phase
        .entries
        .iter()
        .zip(&phase.allocation.entries)
        .zip(&each)
    {
        let (src, _) = &records[e.index];
        if let Some(slot) = outcomes.get_mut(e.index) {
            *slot = Some(EntryOutcome {
                source: src.clone(),
                key: Some(e.view.key().render()),
                agent: e.view.agent.clone(),
                phase: e.view.phase.clone(),
                band: Some(e.view.band),
                score: Some(e.view.score),
                lines: Some(ea.lines),
                action: (*action).into(),
                reason: None,
                // The entry's own measure (render::EntryTokens), the
                // same the ZZ Budget states.
                tokens_in: Some(e.view.tokens.input),
                tokens_out: Some(e.view.tokens.output),
                token_texts: (String::new(), None),
            });
        }
    }
    out.outcomes = outcomes.into_iter().flatten().collect();

    let mut changes = Vec::new();
    if active.is_some() || !new_entries.is_empty() {
        changes.push(FileChange::Write {
            rel: ACTIVE_CONTEXT.into(),
            content: active_text.clone(),
        });
    }
    if progress.is_some() || progress_changed {
        changes.push(FileChange::Write {
            rel: PROGRESS_LOG.into(),
            content: progress_text,
        });
    }
    changes.push(FileChange::Write {
        rel: XREF_INDEX.into(),
        content: clean_index(clean, index_text, &index.render()),
    });
    changes.push(FileChange::Write {
        rel: NEXT_ID.into(),
        content: ids.render(),
    });
    changes.push(FileChange::Write {
        rel: zz_path(req.phase),
        content: clean(&zz),
    });
    changes.extend(archive_change);
    let skipped_sources = phase
        .skipped
        .iter()
        .map(|(i, _)| records[*i].0.clone())
        .collect();
    out.upsert = upserted;
    out.entries = phase.entries.len();
    out.critical = phase.allocation.count(Band::Critical);
    out.high = phase.allocation.count(Band::High);
    out.confirmation = phase.confirmation(out.xrefs_added);
    let archive_rel = completed::archive_path(req.date);
    let mut log = gatelog::record(
        &gatelog::RecordInput {
            config,
            engine: req.engine,
            phase: req.phase,
            date: req.date,
            from: req.from,
            to: req.to,
            feature: req.feature,
            records,
            untrimmed: untrimmed.as_deref(),
            active: &active_text,
            archive: Some(&archive_rel),
            written: &written,
        },
        &phase,
        &out,
    );
    let appended = gatelog::append(texts, &changes, &mut log, clean)?;
    let gate_log = appended.is_some().then_some(log);
    changes.extend(appended);
    Ok(GatePlan {
        changes,
        outcome: out,
        skipped_sources,
        gate_log,
    })
}

// ---------------------------------------------------------------------
// C7: the size trim

struct Trimmed {
    text: String,
    log: String,
    archive: FileChange,
}

fn entry_band(first_line: &str) -> Option<(Band, u32, bool)> {
    const SEP: &str = "** — ";
    let at = completed::find_bytes(first_line, SEP)?;
    let rest = &first_line[at + SEP.len()..];
    let mut it = rest.split_whitespace();
    let band = match it.next()? {
        "CRITICAL" => Band::Critical,
        "HIGH" => Band::High,
        "MEDIUM" => Band::Medium,
        "LOW" => Band::Low,
        _ => return None,
    };
    let score = it.next().unwrap_or("0");
    let (w, f) = score.split_once('.').unwrap_or((score, "0"));
    // The first two characters of the fraction, right-padded with `0`
    // (`5` is 50), parsed (no allocation: a gate measures every entry).
    let mut buf = [0u8; 8];
    let mut n = 0;
    let mut chars = 0;
    for c in f.chars().take(2) {
        n += c.encode_utf8(&mut buf[n..]).len();
        chars += 1;
    }
    for _ in chars..2 {
        buf[n] = b'0';
        n += 1;
    }
    let frac = std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|t| t.parse::<u32>().ok())
        .unwrap_or(0);
    let n = w
        .parse::<u32>()
        .unwrap_or(0)
        .saturating_mul(10_000)
        .saturating_add(frac.saturating_mul(100));
    let trimmed = completed::find_bytes(rest, "(trimmed)").is_some();
    Some((band, n, trimmed))
}

fn non_blank_lines(s: &str) -> u32 {
    u32::try_from(s.lines().filter(|l| !l.trim().is_empty()).count()).unwrap_or(u32::MAX)
}

/// An entry's band, score and size in the section, as C7 counts them.
fn entry_measure(text: &str) -> (Band, u32, HalfLines) {
    let first = text.lines().next().unwrap_or_default();
    let (band, score, trimmed) = entry_band(first).unwrap_or((Band::High, 0, false));
    let size = if band == Band::Low || trimmed {
        HalfLines(1)
    } else {
        HalfLines::lines(non_blank_lines(text))
    };
    (band, score, size)
}

/// Size in half-lines of a parsed `## Completed Phases` section, as C7
/// counts it.
pub(crate) fn section_size(items: &[Item]) -> HalfLines {
    measure(items).0
}

/// Section size in half-lines and the trim candidates (positions into `items`).
fn measure(items: &[Item]) -> (HalfLines, Vec<TrimCandidate>, Vec<usize>) {
    let mut size = HalfLines(0);
    let mut cands = Vec::new();
    let mut pos = Vec::new();
    for (i, it) in items.iter().enumerate() {
        match it {
            Item::Entry { key, text, .. } => {
                let (band, score, sz) = entry_measure(text);
                size = size.plus(sz);
                cands.push(TrimCandidate {
                    key: key.clone(),
                    band,
                    score,
                    size: sz,
                });
                pos.push(i);
            }
            Item::Other(o) => size = size.plus(HalfLines::lines(non_blank_lines(o))),
        }
    }
    (size, cands, pos)
}

/// The section's size (as [`measure`] gives it) and whether C7 has
/// anything it may trim (a LOW entry, or a MEDIUM entry longer than half
/// a line), from the borrowed parse: [`completed::plan_trim`] plans
/// nothing exactly when the size is within the cap or nothing may be
/// trimmed, so a gate under no pressure copies no entry.
fn measure_spans(spans: &[Span<'_>]) -> (HalfLines, bool) {
    let mut size = HalfLines(0);
    let mut trimmable = false;
    for s in spans {
        match s {
            Span::Entry { text, .. } => {
                let (band, _, sz) = entry_measure(text);
                size = size.plus(sz);
                trimmable |= band == Band::Low || (band == Band::Medium && sz > HalfLines(1));
            }
            Span::Other(o) => size = size.plus(HalfLines::lines(non_blank_lines(o))),
        }
    }
    (size, trimmable)
}

fn shorten_medium(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let (before_marker, marker_part) = match first.find(" <!-- mnemo:key=") {
        Some(i) => (&first[..i], &first[i..]),
        None => (first, ""),
    };
    let Some((head, rest)) = before_marker.split_once("** — ") else {
        return text.to_string();
    };
    let mut parts: Vec<&str> = rest.split(" — ").collect();
    let band_score = parts.remove(0);
    let files = if parts.len() >= 2 {
        parts.last().copied().unwrap_or_default()
    } else {
        "(no files)"
    };
    format!("{head}** — {band_score} (trimmed) — {files}{marker_part}\n")
}

fn trim_section(
    texts: &BankTexts,
    clean: Clean<'_>,
    text: &str,
    cap: HalfLines,
    date: &str,
) -> Result<Option<Trimmed>, PlanError> {
    let Some((_, b, e)) = find_section(text, COMPLETED_PHASES) else {
        return Ok(None);
    };
    let (size, trimmable) = measure_spans(&completed::parse_spans(&text[b..e]));
    if size <= cap || !trimmable {
        return Ok(None);
    }
    let mut items = completed::parse_section(&text[b..e]);
    let (size, cands, pos) = measure(&items);
    let plan = completed::plan_trim(&cands, size, cap);
    if plan.remove.is_empty() && plan.shorten.is_empty() {
        return Ok(None);
    }
    let mut archived = String::new();
    for &c in plan.remove.iter().chain(&plan.shorten) {
        if let Some(Item::Entry { text, .. }) = items.get(pos[c]) {
            archived.push_str(text);
        }
    }
    for &c in &plan.shorten {
        if let Some(Item::Entry { text, .. }) = items.get_mut(pos[c]) {
            *text = shorten_medium(text);
        }
    }
    let mut remove: Vec<usize> = plan.remove.iter().map(|&c| pos[c]).collect();
    remove.sort_unstable();
    for i in remove.into_iter().rev() {
        items.remove(i);
    }
    let body = completed::render_section(&items);
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..b]);
    out.push_str(&body);
    out.push_str(&text[e..]);
    let rel = completed::archive_path(date);
    let month = date.get(..7).unwrap_or(date);
    let mut archive = texts.get(&rel)?.map_or_else(
        || format!("# Compressed entries — {month}\n\n"),
        str::to_string,
    );
    for line in archived.split_inclusive('\n') {
        // Idempotent: an archived first line is not archived twice.
        if line.starts_with("- ") && archive.contains(line.trim_end()) {
            continue;
        }
        if !archive.ends_with('\n') {
            archive.push('\n');
        }
        archive.push_str(line);
    }
    Ok(Some(Trimmed {
        text: out,
        log: completed::trim_log(plan.remove.len(), &rel),
        archive: FileChange::Write {
            rel,
            content: clean(&archive),
        },
    }))
}

/// The files C7 alone reads on `date` (the gate log: its end).
pub fn trim_reads(date: &str) -> Vec<String> {
    vec![
        ACTIVE_CONTEXT.to_string(),
        completed::archive_path(date),
        gatelog::GATE_LOG.to_string(),
    ]
}

/// The plan of C7 alone: the changes (empty when nothing is trimmed) and
/// the one-line report. A trim that changes the bank appends its record
/// ([`gatelog::TrimRecord`]: what it moved to the archive) to the gate log
/// in the same commit.
pub fn plan_trim_only(
    config: &Config,
    date: &str,
    texts: &BankTexts,
    clean: Clean<'_>,
) -> Result<(Vec<FileChange>, String), PlanError> {
    let Some(text) = texts.get(ACTIVE_CONTEXT)? else {
        return Ok((
            Vec::new(),
            format!("C7 trim: nothing to trim ({ACTIVE_CONTEXT} is absent)"),
        ));
    };
    let cap = HalfLines::lines(config.budget.total_lines);
    match trim_section(texts, clean, text, cap, date)? {
        None => {
            let size = find_section(text, COMPLETED_PHASES)
                .map(|(_, b, e)| measure_spans(&completed::parse_spans(&text[b..e])).0)
                .unwrap_or_default();
            Ok((
                Vec::new(),
                format!(
                    "C7 trim: nothing to trim ({size} of {} lines)",
                    config.budget.total_lines
                ),
            ))
        }
        Some(t) => {
            let archive = completed::archive_path(date);
            let mut rec = gatelog::TrimRecord {
                version: gatelog::GATE_LOG_VERSION,
                seq: 0,
                kind: gatelog::RecordKind::Trim,
                date: date.to_string(),
                c7: gatelog::trim_log_of(config, text, &t.text, &t.log, &archive),
            };
            let mut changes = vec![
                FileChange::Write {
                    rel: ACTIVE_CONTEXT.into(),
                    content: t.text,
                },
                t.archive,
            ];
            let appended = gatelog::append_trim(texts, &changes, &mut rec, clean)?;
            changes.extend(appended);
            Ok((changes, t.log))
        }
    }
}

// ---------------------------------------------------------------------
// C4, C5, C6: `.tmp/` artifacts

fn is_own_file(rel: &str, own_temp: &dyn Fn(&str) -> bool, name: &str) -> bool {
    rel == LOCK_FILE || rel == JOURNAL || own_temp(name)
}

/// C4: records the plan of a completed feature in `## Completed Plans`
/// (key: date + feature, §17) and removes the feature's PLAN artifacts and
/// the ZZ artifacts from `.tmp/`. `tmp_names` are the file names in
/// `.tmp/`, sorted; `active` is `01-active-context.md` (`None`: absent).
pub fn plan_feature_complete(
    feature: &str,
    date: &str,
    tmp_names: &[String],
    active: Option<&str>,
    clean: Clean<'_>,
) -> (Vec<FileChange>, String) {
    let feature_l = feature.to_ascii_lowercase();
    let mut plans = Vec::new();
    let mut deletes = Vec::new();
    for name in tmp_names {
        let rel = format!("{TMP_DIR}/{name}");
        if is_zz(name) {
            deletes.push(FileChange::Delete { rel });
        } else if ArtifactType::from_file_name(name) == Some(ArtifactType::Plan)
            && name.to_ascii_lowercase().contains(&feature_l)
            && !never_touch(&rel)
        {
            plans.push(name.as_str());
            deletes.push(FileChange::Delete { rel });
        }
    }
    let plan_ref = if plans.is_empty() {
        "no PLAN artifact in .tmp/".to_string()
    } else {
        format!("PLAN {}", plans.join(", "))
    };
    let key = EntryKey::new(date, "plan", feature);
    let hash = entry_hash(date, "plan", feature, feature);
    let line = clean(&format!(
        "- **{date} · {feature}** — feature complete — {plan_ref} {}\n",
        marker(&key, &hash)
    ));
    let (text, rep) = upsert_section(
        active.unwrap_or(ACTIVE_CONTEXT_NEW),
        COMPLETED_PLANS,
        &[NewEntry {
            key,
            hash,
            text: line,
        }],
    );
    let mut changes = vec![FileChange::Write {
        rel: ACTIVE_CONTEXT.into(),
        content: text,
    }];
    let removed = deletes.len();
    changes.extend(deletes);
    (
        changes,
        format!(
            "Feature complete: {feature} {} in {ACTIVE_CONTEXT} ({plan_ref}), {removed} .tmp artifacts removed",
            if rep.skipped > 0 {
                "already recorded"
            } else {
                "recorded"
            }
        ),
    )
}

/// The preflight of a `.tmp/` artifact from its text (verdict and DISC
/// decision words).
pub fn preflight_of(artifact: ArtifactType, text: &str) -> Preflight {
    let upper = text.to_ascii_uppercase();
    let verdict = if upper.contains("NEEDS_REVISION") || upper.contains("NEEDS REVISION") {
        mnemo_model::Verdict::parse_loose("NEEDS_REVISION")
    } else if upper.contains("FAILED") {
        mnemo_model::Verdict::parse_loose("FAILED")
    } else if upper.contains("APPROVED") {
        mnemo_model::Verdict::parse_loose("APPROVED")
    } else {
        None
    };
    let disc = if artifact == ArtifactType::Disc {
        if upper.contains("DISCARD") {
            DiscDecision::parse("DISCARD")
        } else if upper.contains("REQUEST CHANGES") {
            DiscDecision::parse("REQUEST CHANGES")
        } else if upper.contains("APPROVED") {
            DiscDecision::parse("APPROVED")
        } else {
            None
        }
    } else {
        None
    };
    Preflight {
        verdict,
        disc,
        all_phases_complete: true,
        ..Preflight::default()
    }
}

/// The files C5 reads: the recognised `.tmp/` artifacts (their text
/// decides), the month's archive, the index and the active context.
pub fn sprint_close_reads(
    date: &str,
    tmp_names: &[String],
    own_temp: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut v = vec![
        completed::archive_path(date),
        XREF_INDEX.to_string(),
        ACTIVE_CONTEXT.to_string(),
    ];
    for name in tmp_names {
        let rel = format!("{TMP_DIR}/{name}");
        if is_own_file(&rel, own_temp, name) || is_zz(name) {
            continue;
        }
        if matches!(
            ArtifactType::from_file_name(name),
            Some(k) if k != ArtifactType::Unrecognized
        ) {
            v.push(rel);
        }
    }
    v
}

/// C5: bulk clean-up of `.tmp/` (compressible artifacts archived and
/// removed, DISC `DISCARD` deleted, the rest flagged and left), a snapshot
/// of the cross-reference index archived, unresolved entries flagged.
/// Returns the changes, the one-line report and the flags.
pub fn plan_sprint_close(
    date: &str,
    tmp_names: &[String],
    own_temp: &dyn Fn(&str) -> bool,
    texts: &BankTexts,
    clean: Clean<'_>,
) -> Result<(Vec<FileChange>, String, Vec<String>), PlanError> {
    let mut flags = Vec::new();
    let mut changes = Vec::new();
    let archive_rel = completed::archive_path(date);
    let month = date.get(..7).unwrap_or(date);
    let mut archive = texts.get(&archive_rel)?.map_or_else(
        || format!("# Compressed entries — {month}\n\n"),
        str::to_string,
    );
    let (mut archived, mut deleted) = (0, 0);
    for name in tmp_names {
        let rel = format!("{TMP_DIR}/{name}");
        if is_own_file(&rel, own_temp, name) {
            continue;
        }
        if is_zz(name) {
            changes.push(FileChange::Delete { rel });
            deleted += 1;
            continue;
        }
        let kind = match ArtifactType::from_file_name(name) {
            Some(ArtifactType::Unrecognized) | None => {
                flags.push(format!("{rel}: unrecognised .tmp artifact, left in place"));
                continue;
            }
            Some(k) => k,
        };
        let text = texts.get(&rel)?.unwrap_or_default();
        let mut pre = preflight_of(kind, text);
        pre.under_notes_or_adr = never_touch(&rel);
        match can_compress(kind, &pre) {
            Decision::Delete { .. } => {
                changes.push(FileChange::Delete { rel });
                deleted += 1;
            }
            d if d.compresses() => {
                let heading = format!("## {date} — sprint close: {name}");
                if !archive.contains(&heading) {
                    if !archive.ends_with("\n\n") {
                        archive.push('\n');
                    }
                    let _ = write!(archive, "{heading}\n\n{}\n", text.trim_end());
                }
                changes.push(FileChange::Delete { rel });
                archived += 1;
            }
            d => flags.push(format!(
                "{rel}: {}",
                d.reason().unwrap_or("not compressible, left in place")
            )),
        }
    }
    if archived > 0 {
        changes.push(FileChange::Write {
            rel: archive_rel,
            content: clean(&archive),
        });
    }
    let xref_rel = format!("_notes/archive/{date}-xref-index.md");
    if let Some(index) = texts.get(XREF_INDEX)? {
        changes.push(FileChange::Write {
            rel: xref_rel.clone(),
            content: clean(index),
        });
    }
    if let Some(active) = texts.get(ACTIVE_CONTEXT)?
        && let Some((_, b, e)) = find_section(active, COMPLETED_PHASES)
    {
        for line in active[b..e].lines() {
            if line.contains("⚠️") && line.contains("<!-- mnemo:key=") {
                let key = render::parse_marker(line)
                    .map(|(k, _)| k.render())
                    .unwrap_or_default();
                flags.push(format!("{ACTIVE_CONTEXT}: unresolved partial entry {key}"));
            }
        }
    }
    let line = format!(
        "Sprint close: {archived} artifacts archived, {deleted} deleted, {} flagged, cross-refs archived to {xref_rel}",
        flags.len()
    );
    Ok((changes, line, flags))
}

/// C6's inputs: which `.tmp/` artifacts are subtask summaries to compress
/// (their bank-relative paths, to read and then delete in the gate's
/// commit) and what is flagged and left.
pub fn plan_compress_inputs(
    tmp_names: &[String],
    own_temp: &dyn Fn(&str) -> bool,
) -> (Vec<String>, Vec<String>) {
    let mut take = Vec::new();
    let mut flags = Vec::new();
    for name in tmp_names {
        let rel = format!("{TMP_DIR}/{name}");
        if is_own_file(&rel, own_temp, name) || is_zz(name) {
            continue;
        }
        match ArtifactType::from_file_name(name) {
            Some(ArtifactType::SubtaskSummary) => take.push(rel),
            Some(ArtifactType::Unrecognized) | None => {
                flags.push(format!("{rel}: unrecognised .tmp artifact, left in place"));
            }
            Some(_) => flags.push(format!(
                "{rel}: left for its own trigger (C2/C3 at the gate, C4, C5)"
            )),
        }
    }
    (take, flags)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    mod gate_fixtures {
        include!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/common/gate_fixtures.rs"
        ));
    }
    use gate_fixtures::{DATE, demeter, hermes, ident, records};

    /// Plans a gate of `phase` over `recs` on `texts`.
    fn plan(phase: &str, recs: &[(String, SummaryRecord)], texts: &BankTexts) -> GatePlan {
        let config = Config::default();
        let engine = Engine::new(&config).unwrap();
        let prepared = prepare(&config, None, &[], recs.to_vec(), &ident);
        plan_gate(
            &GateRequest {
                config: &config,
                engine: &engine,
                phase,
                from: &["hermes".to_string()],
                to: &["themis".to_string()],
                phases: None,
                date: DATE,
                feature: Some("auth"),
                records: &prepared.records,
            },
            texts,
            &ident,
        )
        .unwrap()
    }

    fn empty(phase: &str) -> BankTexts {
        BankTexts::absent(&gate_reads(phase, DATE))
    }

    fn text<'a>(changes: &'a [FileChange], rel: &str) -> &'a str {
        changes
            .iter()
            .find_map(|c| match c {
                FileChange::Write { rel: r, content } if r == rel => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no write of {rel}"))
    }

    /// The writes whose content differs from what `texts` holds.
    fn effective(changes: &[FileChange], texts: &BankTexts) -> Vec<String> {
        changes
            .iter()
            .filter(|c| match c {
                FileChange::Write { rel, content } => {
                    texts.get(rel).ok().flatten() != Some(content.as_str())
                }
                FileChange::Delete { rel } => texts.get(rel).ok().flatten().is_some(),
                FileChange::Append { content, .. } => !content.is_empty(),
            })
            .map(|c| c.rel().to_string())
            .collect()
    }

    #[test]
    fn plans_a_gate_on_in_memory_texts() {
        let recs = records(&[
            hermes("Added POST /auth/login with JWT refresh rotation; answers 401 when expired."),
            demeter(),
        ]);
        let p = plan("1", &recs, &empty("1"));
        let rels: Vec<&str> = p.changes.iter().map(FileChange::rel).collect();
        assert_eq!(
            rels,
            [
                ACTIVE_CONTEXT,
                PROGRESS_LOG,
                XREF_INDEX,
                NEXT_ID,
                ".tmp/ZZ-phase1-context.md",
                gatelog::GATE_LOG,
            ]
        );
        let active = text(&p.changes, ACTIVE_CONTEXT);
        assert!(active.starts_with("# Active Context\n"));
        assert!(active.contains("## Completed Phases"));
        assert!(active.contains("mnemo:key=2026-06-20|1|hermes"));
        assert!(active.contains("mnemo:key=2026-06-20|1|demeter"));
        assert!(text(&p.changes, PROGRESS_LOG).contains("Phase 1: Hermes"));
        assert!(text(&p.changes, XREF_INDEX).contains("| auth |"));
        assert_eq!(p.outcome.entries, 2);
        assert_eq!(p.outcome.upsert.added, 2);
        assert!(
            p.outcome
                .confirmation
                .starts_with("Compression complete: 2 entries")
        );
        assert_eq!(p.outcome.outcomes.len(), 2);
        for o in &mut p.outcome.outcomes.clone() {
            assert_eq!(o.action, Action::New);
            o.count_tokens();
            assert!(o.key.is_some() && o.band.is_some() && o.lines.is_some());
            assert!(o.tokens_in.unwrap_or(0) > 0 && o.tokens_out.unwrap_or(0) > 0);
        }
        assert!(p.skipped_sources.is_empty());
    }

    #[test]
    fn each_entrys_tokens_out_are_what_the_page_shows_of_it() {
        use mnemo_model::Format;
        // A CRITICAL entry whose router file is also the Cross-References'
        // File (its head line leaves it out), and two LOW entries of one
        // agent that share one row.
        let critical = serde_json::json!({"agent": "hermes", "status": "complete",
            "summary": "Added POST /auth/login and POST /auth/refresh with JWT rotation: a breaking change to the auth security schema, with a migration that adds the new table refresh_tokens. Answers 401 when expired. Never log a raw refresh token.",
            "unblocks": true,
            "files_changed": ["app/routers/auth.py", "app/services/tokens.py", "app/models/user.py"]});
        let low = |n: u32, file: &str| {
            serde_json::json!({"agent": "mnemosyne", "status": "complete",
                "task": format!("docs {n}"), "summary": "Fixed a typo.",
                "files_changed": [file]})
        };
        let mut recs = Vec::new();
        for (name, v) in [
            ("hermes.json", critical),
            ("a.json", low(1, "docs/README.md")),
            ("b.json", low(2, "docs/CHANGELOG.md")),
        ] {
            for r in mnemo_model::parse_records(&v.to_string(), name, Format::Json).unwrap() {
                recs.push((name.to_string(), r));
            }
        }
        let p = plan("1", &recs, &empty("1"));
        let zz = text(&p.changes, ".tmp/ZZ-phase1-context.md");
        let start = zz.find("## Priority Entries").unwrap();
        let end = zz.find("\n## Cross-References").unwrap();
        let section = &zz[start..end + 1];
        let tokens = |t: &str| render::count_tokens(t).0;
        let out: Vec<(String, usize)> = p
            .outcome
            .outcomes
            .iter()
            .map(|o| (o.key.clone().unwrap(), o.tokens_out.unwrap()))
            .collect();
        assert_eq!(out.len(), 3, "{out:?}");
        // The CRITICAL entry as the page writes it: head line without the
        // router file (it is the E row's File), then its three lines.
        assert!(zz.contains("| app/routers/auth.py |"), "{zz}");
        let h0 = section.find("\nHermes ").unwrap();
        let h1 = section[h0 + 1..]
            .find("\n\n")
            .map_or(section.len(), |n| h0 + 1 + n + 1);
        let hermes_block = &section[h0..h1];
        assert!(!hermes_block.contains("auth.py"), "{hermes_block}");
        assert_eq!(hermes_block.lines().count(), 5, "{hermes_block}");
        assert_eq!(out[0].1, tokens(hermes_block), "{hermes_block}");
        // The shared row: the first entry has the agent and its file, the
        // second `; ` and its file with the line end.
        let row = section
            .lines()
            .find(|l| l.starts_with("Mnemosyne "))
            .unwrap();
        assert_eq!(row, "Mnemosyne README.md; CHANGELOG.md", "{section}");
        assert_eq!(out[1].1, tokens("Mnemosyne README.md"));
        assert_eq!(out[2].1, tokens("; CHANGELOG.md\n"));
        // The Budget's tokens out are the section's: the entries' figures
        // and the headings', up to one token where two parts meet (o200k
        // writes a blank line as one token, `\n` + `\n` as two).
        let budget: usize = zz
            .lines()
            .find_map(|l| l.strip_prefix("- Tokens: "))
            .and_then(|l| l.split(", ").nth(1))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(budget, tokens(section));
        let headings: usize = section
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(|l| tokens(&format!("{l}\n")))
            .sum();
        let sum: usize = out.iter().map(|(_, n)| n).sum::<usize>() + headings;
        assert!(
            sum >= budget && sum - budget <= out.len() + 3,
            "entries {out:?} + headings {headings} vs Budget {budget}:\n{section}"
        );
    }

    #[test]
    fn re_plan_on_its_own_output_changes_nothing() {
        let recs = records(&[hermes("Added POST /auth/login."), demeter()]);
        let mut texts = empty("1");
        let first = plan("1", &recs, &texts);
        texts.apply(&first.changes);
        let again = plan("1", &recs, &texts);
        assert_eq!(effective(&again.changes, &texts), Vec::<String>::new());
        assert_eq!(again.outcome.upsert.added, 0);
        assert_eq!(again.outcome.upsert.skipped, 2);
        assert!(
            again
                .outcome
                .outcomes
                .iter()
                .all(|o| o.action == Action::Unchanged)
        );
    }

    #[test]
    fn an_updated_summary_touches_only_its_entry() {
        let mut texts = empty("1");
        let first = plan(
            "1",
            &records(&[hermes("Added POST /auth/login."), demeter()]),
            &texts,
        );
        texts.apply(&first.changes);
        let before = texts.get(ACTIVE_CONTEXT).unwrap().unwrap().to_string();
        let second = plan(
            "1",
            &records(&[
                hermes("Added POST /auth/login and POST /auth/logout."),
                demeter(),
            ]),
            &texts,
        );
        let after = text(&second.changes, ACTIVE_CONTEXT);
        let actions: Vec<(String, Action)> = second
            .outcome
            .outcomes
            .iter()
            .map(|o| (o.agent.clone(), o.action))
            .collect();
        assert!(actions.contains(&("Hermes".into(), Action::Updated)));
        assert!(actions.contains(&("Demeter".into(), Action::Unchanged)));
        // Every line but Hermes's entry is byte for byte the same.
        let changed: Vec<(&str, &str)> = before
            .lines()
            .zip(after.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(before.lines().count(), after.lines().count());
        assert!(!changed.is_empty());
        assert!(
            changed
                .iter()
                .all(|(a, b)| a.contains("|1|hermes") && b.contains("|1|hermes"))
        );
    }

    #[test]
    fn a_blocked_entry_is_linked_when_it_is_unblocked() {
        let themis = |status: &str| {
            (
                "themis.json",
                serde_json::json!({"agent": "themis", "status": status,
                    "summary": "Review of the auth endpoints.",
                    "blockers": if status == "blocked" { vec!["fixtures missing"] } else { vec![] }}),
            )
        };
        let mut texts = empty("2");
        let blocked = plan("2", &records(&[themis("blocked")]), &texts);
        assert_eq!(blocked.outcome.entries, 0);
        assert_eq!(blocked.outcome.outcomes[0].action, Action::Skipped);
        assert!(blocked.outcome.outcomes[0].reason.is_some());
        assert!(blocked.skipped_sources.contains("themis.json"));
        let index = text(&blocked.changes, XREF_INDEX);
        assert!(index.contains("| blocked | P2 Themis blocked | fixtures missing |"));
        texts.apply(&blocked.changes);
        for rel in gate_reads("4", DATE) {
            if texts.get(&rel).is_err() {
                texts.insert(rel, FileText::Absent);
            }
        }
        let done = plan("4", &records(&[themis("complete")]), &texts);
        assert!(text(&done.changes, XREF_INDEX).contains(
            "| unblocks | P2 Themis blocked → unblocked by P4 Themis | fixtures missing | P4 |"
        ));
    }

    #[test]
    fn a_file_it_was_not_given_is_an_error_not_an_empty_file() {
        let recs = records(&[hermes("Added POST /auth/login.")]);
        let config = Config::default();
        let engine = Engine::new(&config).unwrap();
        let err = plan_gate(
            &GateRequest {
                config: &config,
                engine: &engine,
                phase: "1",
                from: &[],
                to: &[],
                phases: None,
                date: DATE,
                feature: None,
                records: &recs,
            },
            &BankTexts::new().with(ACTIVE_CONTEXT, None),
            &ident,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PlanError::NotRead {
                rel: PROGRESS_LOG.into()
            }
        );
        let mut bad = empty("1");
        bad.insert(NEXT_ID, FileText::Text("{not json".into()));
        let err = plan_gate(
            &GateRequest {
                config: &config,
                engine: &engine,
                phase: "1",
                from: &[],
                to: &[],
                phases: None,
                date: DATE,
                feature: None,
                records: &recs,
            },
            &bad,
            &ident,
        )
        .unwrap_err();
        assert!(matches!(err, PlanError::Invalid { rel, .. } if rel == NEXT_ID));
    }

    #[test]
    fn generated_text_passes_the_scrubber_and_old_index_rows_do_not() {
        let recs = records(&[hermes("Added POST /auth/login.")]);
        let config = Config::default();
        let engine = Engine::new(&config).unwrap();
        let old_index = "# Cross-Reference Index\n\nkept as is\n";
        let texts = empty("1").with(XREF_INDEX, Some(old_index));
        let upper = |t: &str| t.replace("auth", "AUTH");
        let p = plan_gate(
            &GateRequest {
                config: &config,
                engine: &engine,
                phase: "1",
                from: &[],
                to: &[],
                phases: None,
                date: DATE,
                feature: Some("auth"),
                records: &recs,
            },
            &texts,
            &upper,
        )
        .unwrap();
        assert!(text(&p.changes, ".tmp/ZZ-phase1-context.md").contains("/AUTH/login"));
        assert!(!text(&p.changes, ".tmp/ZZ-phase1-context.md").contains("/auth/login"));
        assert!(text(&p.changes, XREF_INDEX).contains("kept as is"));
    }

    #[test]
    fn carryover_and_reads() {
        assert_eq!(carried("## Budget\n- Carried: 2.5 lines\n"), HalfLines(5));
        assert_eq!(carried("- Carried: 3 lines\n"), HalfLines(6));
        assert_eq!(carried("nothing"), HalfLines(0));
        assert!(gate_reads("3", DATE).contains(&".tmp/ZZ-phase2-context.md".to_string()));
        // No previous phase: only the phase's own artifact is read.
        let zz = |p: &str| -> Vec<String> {
            gate_reads(p, DATE)
                .into_iter()
                .filter(|r| r.contains("ZZ"))
                .collect()
        };
        assert_eq!(zz("1"), [".tmp/ZZ-phase1-context.md"]);
        assert_eq!(zz("final"), [".tmp/ZZ-phasefinal-context.md"]);
        assert!(gate_reads("1", DATE).contains(&gatelog::GATE_LOG.to_string()));
    }

    #[test]
    fn c4_c5_c6_plans() {
        let names: Vec<String> = [
            "PLAN-auth.md",
            "ZZ-phase1-context.md",
            "notes.txt",
            "subtask-summary-hermes.md",
            "compress.lock",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (changes, line) = plan_feature_complete("auth", DATE, &names, None, &ident);
        assert!(
            line.starts_with("Feature complete: auth recorded"),
            "{line}"
        );
        assert!(text(&changes, ACTIVE_CONTEXT).contains("## Completed Plans"));
        let deleted: Vec<&str> = changes
            .iter()
            .filter(|c| matches!(c, FileChange::Delete { .. }))
            .map(FileChange::rel)
            .collect();
        assert_eq!(deleted, [".tmp/PLAN-auth.md", ".tmp/ZZ-phase1-context.md"]);
        let active = text(&changes, ACTIVE_CONTEXT).to_string();
        let (_, again) = plan_feature_complete("auth", DATE, &names, Some(&active), &ident);
        assert!(again.contains("already recorded"), "{again}");

        let (take, flags) = plan_compress_inputs(&names, &|_| false);
        assert_eq!(take, [".tmp/subtask-summary-hermes.md"]);
        assert!(flags.iter().any(|f| f.contains("notes.txt: unrecognised")));

        let own = |n: &str| n == "compress.lock";
        let reads = sprint_close_reads(DATE, &names, &own);
        let texts = BankTexts::absent(&reads);
        let (changes, line, flags) = plan_sprint_close(DATE, &names, &own, &texts, &ident).unwrap();
        assert!(line.starts_with("Sprint close:"), "{line}");
        assert!(
            changes
                .iter()
                .any(|c| c.rel() == ".tmp/ZZ-phase1-context.md")
        );
        assert!(flags.iter().any(|f| f.contains("notes.txt")));
    }
}
