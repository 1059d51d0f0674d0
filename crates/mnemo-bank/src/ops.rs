//! The bank commands: gate (C1–C3), feature-complete (C4), sprint-close
//! (C5), compress (C6), trim (C7), handoff, doctor and init.
//!
//! Every command that writes: loads the scrubber (fail closed), takes the
//! lock, recovers an interrupted commit, reads, computes every new file,
//! scrubs what it generated, and commits all files at once. A command that
//! fails writes nothing.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use mnemo_compress::budget::HalfLines;
use mnemo_compress::completed::{self, Item, NewEntry, TrimCandidate};
use mnemo_compress::preflight::{ArtifactType, DiscDecision, Preflight};
use mnemo_compress::render::{
    self, EntryKey, Review, ZzHeader, entry_hash, handoff_prompt, marker, progress_section,
    review_line,
};
use mnemo_compress::xref::RefId;
use mnemo_compress::{
    DeterministicSummarizer, NextIds, PhaseInput, XrefIndex, can_compress, compress_phase,
    parse_index,
};
use mnemo_guardian::decide::{EntryProvenance, check_compaction};
use mnemo_guardian::model::{Origin as GOrigin, Provenance as GProvenance, Trigger};
use mnemo_guardian::policy::Policy;
use mnemo_model::{Config, Format, SummaryRecord, parse_records};
use mnemo_score::{Band, Engine};
use mnemo_scrub::Scrubber;
use serde::Serialize;

use crate::layout::{
    ACTIVE_CONTEXT, Bank, COMPLETED_PHASES, COMPLETED_PLANS, JOURNAL, LOCK_FILE, NEXT_ID,
    PROGRESS_LOG, TMP_DIR, XREF_INDEX, never_touch, zz_path,
};
use crate::sections::{append_progress, find_section, upsert_section};
use crate::txn::{self, BankLock, Change, Recovery, is_own_temp};
use crate::{BankError, Result};

/// Default wait for the bank lock.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(120);

const ACTIVE_CONTEXT_NEW: &str = "# Active Context\n";
const PROGRESS_LOG_NEW: &str = "# Progress Log\n\n> Append-only. Never edit previous entries.\n";

fn scrubber() -> Result<&'static Scrubber> {
    Scrubber::default_rules().map_err(|e| BankError::Scrubber(e.to_string()))
}

fn clean(s: &Scrubber, text: &str) -> String {
    s.scrub(text).text
}

/// Takes the lock and recovers any interrupted commit.
pub fn open_locked(bank: &Bank, timeout: Duration) -> Result<(BankLock, Recovery)> {
    let lock = txn::lock(bank, timeout)?;
    let rec = txn::recover(bank, &lock)?;
    Ok((lock, rec))
}

/// Creates an empty bank at `root` (directories and the four files), never
/// replacing a file that exists. Returns the bank-relative paths created.
pub fn init_bank(root: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(root).map_err(|e| BankError::io(root, e))?;
    let bank = Bank::new(root);
    let s = scrubber()?;
    let (lock, _) = open_locked(&bank, LOCK_TIMEOUT)?;
    let files = [
        (
            ACTIVE_CONTEXT,
            format!("{ACTIVE_CONTEXT_NEW}\n## {COMPLETED_PHASES}\n\n"),
        ),
        (PROGRESS_LOG, PROGRESS_LOG_NEW.to_string()),
        (XREF_INDEX, XrefIndex::empty().render()),
        (NEXT_ID, NextIds::default().render()),
    ];
    let mut changes = Vec::new();
    for (rel, content) in files {
        if !bank.path(rel).exists() {
            changes.push(Change::Write {
                rel: rel.to_string(),
                content: clean(s, &content),
            });
        }
    }
    let dir = bank.path("_notes/archive");
    std::fs::create_dir_all(&dir).map_err(|e| BankError::io(&dir, e))?;
    txn::commit(&bank, &lock, &changes)
}

/// One summary input: its name (a path) and its text.
#[derive(Debug, Clone)]
pub struct Input {
    /// Name used in messages.
    pub name: String,
    /// The text.
    pub text: String,
}

/// Options of a gate.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Phase label (`1`, `2a`).
    pub phase: String,
    /// Sending agents.
    pub from: Vec<String>,
    /// Receiving agents.
    pub to: Vec<String>,
    /// Planned phases of the feature.
    pub phases: Option<u32>,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Feature name (By Feature row of the index).
    pub feature: Option<String>,
    /// The Guardian's policy (in process).
    pub policy: Policy,
    /// A remote Guardian (`mnemo guard http`) to ask instead of deciding in
    /// process; when it cannot be reached nothing is compacted (fail closed).
    pub guardian_url: Option<String>,
    /// What triggered the compaction.
    pub trigger: Trigger,
    /// Lock wait.
    pub lock_timeout: Duration,
}

/// What a gate did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GateReport {
    /// The §9 confirmation line.
    pub confirmation: String,
    /// Entries compressed.
    pub entries: usize,
    /// Cross-refs newly added to the index.
    pub xrefs_added: usize,
    /// Records the preflight skipped, with reasons.
    pub skipped: Vec<String>,
    /// Budget flags (overflow, escalation, overrun).
    pub flags: Vec<String>,
    /// The C7 log line when the section went over its cap.
    pub trim: Option<String>,
    /// Files that changed (bank-relative).
    pub changed: Vec<String>,
    /// What recovery did first.
    pub recovery: Recovery,
    /// `## Completed Phases` entries: new, unchanged (same key and hash)
    /// and updated (same key, other hash); a re-run reports 0 new.
    pub upsert: mnemo_compress::completed::UpsertReport,
    /// The feature the By Feature rows were written under: `--feature`,
    /// else the records' own `feature` when they all name the same one.
    pub feature: Option<String>,
    /// Fields Layer 1 refused to promote (`src:line: field`), as `score`
    /// reports them.
    pub dropped: Vec<String>,
}

impl GateReport {
    /// What changed in `## Completed Phases`: `0 new entries, 3 unchanged`
    /// (`, 1 updated` when one was).
    pub fn change_line(&self) -> String {
        let u = self.upsert;
        let mut s = format!(
            "{} new entr{}, {} unchanged",
            u.added,
            if u.added == 1 { "y" } else { "ies" },
            u.skipped
        );
        if u.replaced > 0 {
            s.push_str(&format!(", {} updated", u.replaced));
        }
        s
    }
}

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

/// The Guardian's view of the records: each record is an entry; without
/// provenance (or without origins) it is the orchestrator's own (`system`).
pub fn entry_provenance(records: &[(String, SummaryRecord)]) -> Vec<EntryProvenance> {
    records
        .iter()
        .enumerate()
        .map(|(i, (src, r))| {
            let step = format!("{src}#{}", i + 1);
            match &r.provenance {
                Some(p) if !p.origins.is_empty() => EntryProvenance {
                    step_id: step.clone(),
                    provenance: p
                        .origins
                        .iter()
                        .map(|o| GProvenance::new(format!("{step}:{}", o.as_str()), *o, None))
                        .collect(),
                },
                _ => EntryProvenance::single(
                    step.clone(),
                    GProvenance::new(format!("{step}:system"), GOrigin::System, Some("mnemo")),
                ),
            }
        })
        .collect()
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

fn scrub_opt(s: &Scrubber, v: &mut Option<String>) {
    if let Some(x) = v {
        *x = clean(s, x);
    }
}

/// Layer 2 scrub of every text field of a record.
pub fn scrub_record(s: &Scrubber, r: &mut SummaryRecord) {
    r.summary = clean(s, &r.summary);
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
        scrub_opt(s, f);
    }
    for list in [&mut r.files_changed, &mut r.blockers, &mut r.unblocks_refs] {
        for x in list.iter_mut() {
            *x = clean(s, x);
        }
    }
}

fn check_args(phase: &str, date: &str, feature: Option<&str>) -> Result<()> {
    if !crate::layout::is_phase_label(phase) {
        return Err(BankError::Refused(format!(
            "phase {phase:?} cannot name a file: use letters, digits, `.`, `_`, `+` or `-`"
        )));
    }
    if !crate::layout::is_date(date) {
        return Err(BankError::Refused(format!(
            "date {date:?} is not YYYY-MM-DD"
        )));
    }
    if let Some(f) = feature
        && !crate::layout::is_feature_name(f)
    {
        return Err(BankError::Refused(format!(
            "feature {f:?} cannot name a directory"
        )));
    }
    Ok(())
}

/// The agent of a record that names none: a roster agent named in its file
/// name (`subtask-hermes.json`), else the gate's single `--from` agent.
pub fn infer_agent(config: &Config, source: &str, from: &[String]) -> Option<String> {
    let stem = Path::new(source)
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

/// Refuses a summary with a NUL byte (it is binary, or corrupt: written
/// raw, it would corrupt the progress log), naming its line and column.
pub fn check_text(name: &str, text: &str) -> Result<()> {
    if let Some(at) = text.find('\0') {
        let line = text[..at].matches('\n').count() + 1;
        let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        return Err(BankError::invalid(
            name,
            Some(line),
            format!(
                "column {col}: NUL byte in a summary (binary or corrupt input); nothing was written"
            ),
        ));
    }
    Ok(())
}

/// Refuses a summary over `budget.max_summary_bytes`.
pub fn check_size(name: &str, len: u64, limit: u64) -> Result<()> {
    if len > limit {
        return Err(BankError::Refused(format!(
            "{name}: the summary is {len} bytes, over the limit of {limit} bytes (`budget.max_summary_bytes` in mnemo.toml); nothing was written"
        )));
    }
    Ok(())
}

/// Parses the inputs into records (errors name the file and line).
pub fn parse_inputs(inputs: &[Input]) -> Result<Vec<(String, SummaryRecord)>> {
    let mut out = Vec::new();
    for i in inputs {
        check_text(&i.name, &i.text)?;
        let format = Format::detect(&i.text, Some(&i.name));
        for r in parse_records(&i.text, &i.name, format)? {
            // An escaped NUL (`\u0000` in JSON, `\0` / `\x00` in YAML).
            if serde_json::to_string(&r).is_ok_and(|j| j.contains("\\u0000")) {
                let line = ["\\u0000", "\\x00", "\\0"]
                    .iter()
                    .filter_map(|esc| i.text.find(esc))
                    .min()
                    .map(|at| i.text[..at].matches('\n').count() + 1);
                return Err(BankError::invalid(
                    &i.name,
                    line,
                    "a field holds a NUL character (an escaped `\\u0000`); nothing was written",
                ));
            }
            out.push((i.name.clone(), r));
        }
    }
    Ok(out)
}

fn carry_in(bank: &Bank, phase: &str) -> Result<HalfLines> {
    let digits: String = phase
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let Some(prev) = digits.parse::<u64>().ok().and_then(|n| n.checked_sub(1)) else {
        return Ok(HalfLines(0));
    };
    if prev == 0 {
        return Ok(HalfLines(0));
    }
    let Some(text) = bank.read(&zz_path(&prev.to_string()))? else {
        return Ok(HalfLines(0));
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("- Carried: ") {
            let n = rest.trim_end_matches(" lines").trim();
            let (whole, half) = match n.split_once('.') {
                Some((w, "5")) => (w, 1),
                Some((w, _)) => (w, 0),
                None => (n, 0),
            };
            if let Ok(w) = whole.parse::<u32>() {
                return Ok(HalfLines(w.saturating_mul(2).saturating_add(half)));
            }
        }
    }
    Ok(HalfLines(0))
}

/// C1–C3: compress a batch of summaries into the bank and write the ZZ
/// artifact. `extra` changes (e.g. C6's deletions of compressed `.tmp/`
/// artifacts) land in the same commit.
pub fn gate(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    inputs: &[Input],
) -> Result<GateReport> {
    gate_with(bank, config, opts, inputs, &[])
}

fn gate_with(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    inputs: &[Input],
    extra: &[Change],
) -> Result<GateReport> {
    check_args(&opts.phase, &opts.date, opts.feature.as_deref())?;
    for i in inputs {
        check_size(
            &i.name,
            i.text.len() as u64,
            config.budget.max_summary_bytes,
        )?;
    }
    let s = scrubber()?;
    let mut records = parse_inputs(inputs)?;
    let feature = batch_feature(opts.feature.as_deref(), &records);
    check_args(&opts.phase, &opts.date, feature.as_deref())?;
    let mut dropped = Vec::new();
    let mut ordinal: HashMap<&str, usize> = HashMap::new();
    for (src, r) in &records {
        let n = ordinal.entry(src.as_str()).or_default();
        *n += 1;
        for d in &r.dropped {
            let at = match d.line {
                Some(line) => format!("{src}:{line}"),
                None => format!("{src} record {n}"),
            };
            dropped.push(format!(
                "{at}: field `{}` dropped (only metadata is promoted: Layer 1)",
                d.name
            ));
        }
    }
    for (src, r) in &mut records {
        scrub_record(s, r);
        if r.agent.is_none() && r.from.is_none() {
            r.agent = infer_agent(config, src, &opts.from);
        }
    }
    // Ask the Guardian before compacting anything.
    let entries = entry_provenance(&records);
    let decision = match &opts.guardian_url {
        None => check_compaction(&opts.policy, &entries, opts.trigger),
        Some(url) => mnemo_guardian_server::client::RemoteGuardian::new(url)
            .and_then(|g| g.check_compaction(&entries, opts.trigger))
            .map_err(|e| {
                BankError::Refused(format!(
                    "cannot ask the Guardian, so nothing was compacted: {e}"
                ))
            })?,
    };
    if !decision.allowed() {
        return Err(BankError::Denied {
            reasoning: decision.reasoning,
            codes: decision.reason_codes.join(", "),
        });
    }
    let engine = Engine::new(config).map_err(|e| BankError::Refused(e.to_string()))?;
    std::fs::create_dir_all(bank.root()).map_err(|e| BankError::io(bank.root(), e))?;
    let (lock, recovery) = open_locked(bank, opts.lock_timeout)?;

    let active = bank.read(ACTIVE_CONTEXT)?;
    let progress = bank.read(PROGRESS_LOG)?;
    let index_text = bank.read(XREF_INDEX)?;
    let next_text = bank.read(NEXT_ID)?;
    let mut ids = NextIds::parse(next_text.as_deref().unwrap_or_default())
        .map_err(|e| BankError::invalid(bank.path(NEXT_ID), None, e.to_string()))?;
    let mut index = index_text
        .as_deref()
        .map_or_else(XrefIndex::empty, parse_index);

    let plain: Vec<SummaryRecord> = records.iter().map(|(_, r)| r.clone()).collect();
    let summarizer = DeterministicSummarizer::new(config);
    let phase = compress_phase(
        config,
        &engine,
        &summarizer,
        &PhaseInput {
            phase: &opts.phase,
            date: &opts.date,
            to: opts.to.first().map(String::as_str),
            phases: opts.phases,
            carry_in: carry_in(bank, &opts.phase)?,
            records: &plain,
        },
    );
    let mut report = GateReport {
        recovery,
        feature: feature.clone(),
        dropped,
        ..GateReport::default()
    };
    for (i, d) in &phase.skipped {
        let (src, r) = &records[*i];
        report.skipped.push(format!(
            "{src}: {} (phase {}): skipped — {}",
            r.agent.as_deref().or(r.sender()).unwrap_or("unknown"),
            r.phase.as_deref().unwrap_or(&opts.phase),
            d.reason().unwrap_or("not compressible")
        ));
    }
    report.flags = phase
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
            let p = phase_label(r.phase.as_deref().unwrap_or(&opts.phase));
            refs.push(mnemo_compress::xref::NewRef {
                prefix: mnemo_compress::xref::Prefix::D,
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
        mnemo_compress::xref::unblock_links(&blocked_before, &current)
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
        .map_err(|e| BankError::invalid(bank.path(XREF_INDEX), None, e.to_string()))?;
    report.xrefs_added = merged.iter().filter(|(_, added)| *added).count();
    let xrefs: Vec<(RefId, mnemo_compress::xref::NewRef)> = merged
        .iter()
        .zip(&refs)
        .map(|((id, _), r)| (*id, r.clone()))
        .collect();
    if let Some(feature) = &feature {
        for e in &phase.entries {
            index.upsert_feature(
                feature,
                &e.view.phase,
                &e.view.agent,
                e.view.band,
                &clean(s, &e.view.summary.title),
            );
        }
    }

    // Completed Phases entries and progress-log sections.
    let mut new_entries = Vec::new();
    let mut progress_text = progress
        .clone()
        .unwrap_or_else(|| PROGRESS_LOG_NEW.to_string());
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
            text: clean(s, &text),
        });
        let review = Review::of(record);
        let section = clean(s, &progress_section(&e.view, record, review.as_ref()));
        let rl = review.as_ref().map(|r| clean(s, &review_line(r)));
        let (t, changed) = append_progress(&progress_text, &section, rl.as_deref());
        progress_text = t;
        progress_changed |= changed;
    }
    let base_active = active
        .clone()
        .unwrap_or_else(|| ACTIVE_CONTEXT_NEW.to_string());
    let (mut active_text, upserted) = upsert_section(&base_active, COMPLETED_PHASES, &new_entries);

    // C7 when the section is over its cap.
    let mut archive_change = None;
    let cap = HalfLines::lines(config.budget.total_lines);
    if let Some(t) = trim_section(bank, s, &active_text, cap, &opts.date)? {
        active_text = t.text;
        report.trim = Some(t.log);
        archive_change = Some(t.archive);
    }

    // ZZ artifact.
    let views: Vec<render::EntryView> = phase.entries.iter().map(|e| e.view.clone()).collect();
    let from = if opts.from.is_empty() {
        plain
            .iter()
            .filter_map(|r| r.sender().map(str::to_string))
            .collect()
    } else {
        opts.from.clone()
    };
    let zz = render::render_zz(
        &ZzHeader {
            phase: &opts.phase,
            next_phase: None,
            from: &from,
            to: &opts.to,
        },
        &phase.allocation,
        &views,
        &xrefs,
    );

    let mut changes = Vec::new();
    if active.is_some() || !new_entries.is_empty() {
        changes.push(Change::Write {
            rel: ACTIVE_CONTEXT.into(),
            content: active_text,
        });
    }
    if progress.is_some() || progress_changed {
        changes.push(Change::Write {
            rel: PROGRESS_LOG.into(),
            content: progress_text,
        });
    }
    changes.push(Change::Write {
        rel: XREF_INDEX.into(),
        content: clean_index(s, index_text.as_deref(), &index.render()),
    });
    changes.push(Change::Write {
        rel: NEXT_ID.into(),
        content: ids.render(),
    });
    changes.push(Change::Write {
        rel: zz_path(&opts.phase),
        content: clean(s, &zz),
    });
    if let Some(a) = archive_change {
        changes.push(a);
    }
    // Artifacts with a skipped record stay where they are.
    let skipped_srcs: BTreeSet<&str> = phase
        .skipped
        .iter()
        .map(|(i, _)| records[*i].0.as_str())
        .collect();
    changes.extend(
        extra
            .iter()
            .filter(|c| match c {
                Change::Delete { rel } => {
                    !skipped_srcs.contains(bank.path(rel).display().to_string().as_str())
                }
                Change::Write { .. } => true,
            })
            .cloned(),
    );
    report.upsert = upserted;
    report.changed = txn::commit(bank, &lock, &changes)?;
    report.entries = phase.entries.len();
    report.confirmation = phase.confirmation(report.xrefs_added);
    Ok(report)
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
        .table(mnemo_compress::xref::TableKind::DecisionLinks)
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
fn blocked_entries(index: &XrefIndex) -> Vec<mnemo_compress::xref::BlockedEntry> {
    let Some(t) = index.table(mnemo_compress::xref::TableKind::DecisionLinks) else {
        return Vec::new();
    };
    t.rows
        .iter()
        .filter(|r| r.cell(1).eq_ignore_ascii_case("blocked"))
        .filter_map(|r| {
            let name = r.cell(2);
            let mut w = name.split_whitespace();
            let (phase, agent) = (w.next()?, w.next()?);
            Some(mnemo_compress::xref::BlockedEntry {
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
fn clean_index(s: &Scrubber, old: Option<&str>, new: &str) -> String {
    let old_lines: std::collections::HashSet<&str> = old.unwrap_or_default().lines().collect();
    new.split_inclusive('\n')
        .map(|l| {
            if old_lines.contains(l.trim_end_matches('\n')) {
                l.to_string()
            } else {
                clean(s, l)
            }
        })
        .collect()
}

struct Trimmed {
    text: String,
    log: String,
    archive: Change,
}

fn entry_band(first_line: &str) -> Option<(Band, u32, bool)> {
    let rest = first_line.split_once("** — ")?.1;
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
    let frac: String = f.chars().take(2).collect();
    let frac = format!("{frac:0<2}").parse::<u32>().unwrap_or(0);
    let n = w
        .parse::<u32>()
        .unwrap_or(0)
        .saturating_mul(10_000)
        .saturating_add(frac.saturating_mul(100));
    Some((band, n, rest.contains("(trimmed)")))
}

fn non_blank_lines(s: &str) -> u32 {
    u32::try_from(s.lines().filter(|l| !l.trim().is_empty()).count()).unwrap_or(u32::MAX)
}

/// Section size in half-lines and the trim candidates (positions into `items`).
fn measure(items: &[Item]) -> (HalfLines, Vec<TrimCandidate>, Vec<usize>) {
    let mut size = HalfLines(0);
    let mut cands = Vec::new();
    let mut pos = Vec::new();
    for (i, it) in items.iter().enumerate() {
        match it {
            Item::Entry { key, text, .. } => {
                let first = text.lines().next().unwrap_or_default();
                let (band, score, trimmed) = entry_band(first).unwrap_or((Band::High, 0, false));
                let sz = if band == Band::Low || trimmed {
                    HalfLines(1)
                } else {
                    HalfLines::lines(non_blank_lines(text))
                };
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
    bank: &Bank,
    s: &Scrubber,
    text: &str,
    cap: HalfLines,
    date: &str,
) -> Result<Option<Trimmed>> {
    let Some((_, b, e)) = find_section(text, COMPLETED_PHASES) else {
        return Ok(None);
    };
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
    let mut archive = bank
        .read(&rel)?
        .unwrap_or_else(|| format!("# Compressed entries — {month}\n\n"));
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
        archive: Change::Write {
            rel,
            content: clean(s, &archive),
        },
    }))
}

/// C7 on its own: trims `## Completed Phases` when over the cap. Returns the
/// one-line report.
pub fn trim(bank: &Bank, config: &Config, date: &str, timeout: Duration) -> Result<String> {
    check_args("trim", date, None)?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let Some(text) = bank.read(ACTIVE_CONTEXT)? else {
        return Ok(format!(
            "C7 trim: nothing to trim ({ACTIVE_CONTEXT} is absent)"
        ));
    };
    let cap = HalfLines::lines(config.budget.total_lines);
    match trim_section(bank, s, &text, cap, date)? {
        None => {
            let size = find_section(&text, COMPLETED_PHASES)
                .map(|(_, b, e)| measure(&completed::parse_section(&text[b..e])).0)
                .unwrap_or_default();
            Ok(format!(
                "C7 trim: nothing to trim ({size} of {} lines)",
                config.budget.total_lines
            ))
        }
        Some(t) => {
            txn::commit(
                bank,
                &lock,
                &[
                    Change::Write {
                        rel: ACTIVE_CONTEXT.into(),
                        content: t.text,
                    },
                    t.archive,
                ],
            )?;
            Ok(t.log)
        }
    }
}

/// §15: the next agent's prompt block (learnings + ZZ artifact).
pub fn handoff(
    bank: &Bank,
    learnings_root: &Path,
    phase: &str,
    feature: Option<&str>,
    timeout: Duration,
) -> Result<String> {
    check_args(phase, "2000-01-01", feature)?;
    bank.require()?;
    let s = scrubber()?;
    let (_lock, _) = open_locked(bank, timeout)?;
    let rel = zz_path(phase);
    let zz = bank.read(&rel)?.ok_or_else(|| {
        BankError::invalid(
            bank.path(&rel),
            None,
            format!("no ZZ artifact for phase {phase} (run `mnemo gate --phase {phase}` first)"),
        )
    })?;
    let learnings = match feature {
        Some(f) => {
            let p = learnings_root.join(f).join("learnings.md");
            match std::fs::read_to_string(&p) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(BankError::io(p, e)),
            }
        }
        None => None,
    };
    Ok(clean(
        s,
        &handoff_prompt(learnings.as_deref(), phase, None, &zz),
    ))
}

/// What `doctor` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DoctorReport {
    /// Recovery done first.
    pub recovery: Recovery,
    /// Files checked.
    pub files_checked: usize,
    /// Problems (`file:line: what`).
    pub problems: Vec<String>,
    /// Unrecognised `.tmp/` artifacts (left in place).
    pub foreign: Vec<String>,
    /// Recognised artifacts waiting in `.tmp/`.
    pub pending: Vec<String>,
}

impl DoctorReport {
    /// The one-line report.
    pub fn line(&self) -> String {
        let r = &self.recovery;
        format!(
            "{}: {} files checked, {} problems, {} journal ops finished, {} staged files rolled back, {} other *.tmp files left in place, {} unrecognised .tmp artifacts",
            if self.problems.is_empty() {
                "Bank OK"
            } else {
                "Bank has problems"
            },
            self.files_checked,
            self.problems.len(),
            r.rolled_forward,
            r.rolled_back,
            r.other_tmp.len(),
            self.foreign.len()
        )
    }
}

fn split_cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in t.chars() {
        if esc {
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            cur.push(c);
            esc = true;
        } else if c == '|' {
            cells.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    cells.push(cur.trim().to_string());
    cells
}

fn check_index(path: &Path, text: &str, problems: &mut Vec<String>) {
    let mut in_table: Option<(String, usize)> = None;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading = String::new();
    for (n, line) in text.lines().enumerate() {
        let ln = n + 1;
        let t = line.trim();
        if let Some(h) = t.strip_prefix("## ") {
            heading = h.trim().to_string();
            in_table = None;
            continue;
        }
        if !t.starts_with('|') {
            in_table = None;
            continue;
        }
        let cells = split_cells(t);
        match &in_table {
            None => in_table = Some((heading.clone(), cells.len())),
            Some((_, width)) => {
                if cells
                    .iter()
                    .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
                {
                    continue;
                }
                let first = cells.first().map(String::as_str).unwrap_or_default();
                if first.starts_with("_(") {
                    continue;
                }
                if cells.len() > *width {
                    problems.push(format!(
                        "{}:{ln}: table row has {} cells, its header has {width}",
                        path.display(),
                        cells.len()
                    ));
                }
                let by_entity = heading.eq_ignore_ascii_case("By Entity");
                let decisions = heading.eq_ignore_ascii_case("Decision Links");
                if by_entity || decisions {
                    match RefId::parse(first) {
                        Ok(id) => {
                            if let Some(prev) = seen.insert(id.to_string(), ln) {
                                problems.push(format!(
                                    "{}:{ln}: id {id} is also used on line {prev}",
                                    path.display()
                                ));
                            }
                        }
                        Err(e) => problems.push(format!("{}:{ln}: {e}", path.display())),
                    }
                }
            }
        }
    }
}

/// Validates the bank, finishes or rolls back an interrupted commit, removes
/// mnemo's own orphaned temp files, and reports other `*.tmp` files and
/// unrecognised `.tmp/` artifacts (left in place). A journal that can be
/// neither finished nor undone is a problem with a hint. Writes nothing
/// else.
pub fn doctor(bank: &Bank, timeout: Duration) -> Result<DoctorReport> {
    bank.require()?;
    let lock = txn::lock(bank, timeout)?;
    let mut rep = DoctorReport::default();
    match txn::recover(bank, &lock) {
        Ok(r) => rep.recovery = r,
        // A journal that can be neither finished nor undone: say what to do.
        Err(e) => rep.problems.push(match e.hint() {
            Some(h) => format!("{e} (hint: {h})"),
            None => e.to_string(),
        }),
    }
    for rel in [ACTIVE_CONTEXT, PROGRESS_LOG, XREF_INDEX] {
        let path = bank.path(rel);
        match bank.read(rel) {
            Err(e) => rep.problems.push(e.to_string()),
            Ok(None) => rep.problems.push(format!(
                "{}: missing (the next gate creates it)",
                path.display()
            )),
            Ok(Some(text)) => {
                rep.files_checked += 1;
                if let Err(m) = txn::validate(rel, &text) {
                    rep.problems.push(format!("{}: {m}", path.display()));
                }
                if rel == XREF_INDEX {
                    check_index(&path, &text, &mut rep.problems);
                }
                if rel == ACTIVE_CONTEXT {
                    let mut keys: HashMap<EntryKey, usize> = HashMap::new();
                    for (n, line) in text.lines().enumerate() {
                        if let Some((k, _)) = render::parse_marker(line)
                            && let Some(prev) = keys.insert(k.clone(), n + 1)
                        {
                            rep.problems.push(format!(
                                "{}:{}: entry {} is also on line {prev}",
                                path.display(),
                                n + 1,
                                k.render()
                            ));
                        }
                    }
                }
            }
        }
    }
    match bank.read(NEXT_ID) {
        Err(e) => rep.problems.push(e.to_string()),
        Ok(None) => {}
        Ok(Some(t)) => {
            rep.files_checked += 1;
            if let Err(e) = NextIds::parse(&t) {
                rep.problems
                    .push(format!("{}: {e}", bank.path(NEXT_ID).display()));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(bank.path(TMP_DIR)) {
        let mut names: Vec<String> = rd
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{TMP_DIR}/{name}");
            if rel == LOCK_FILE || rel == JOURNAL || is_own_temp(&name) || is_zz(&name) {
                continue;
            }
            match ArtifactType::from_file_name(&name) {
                Some(ArtifactType::Unrecognized) | None => rep.foreign.push(rel),
                Some(_) => rep.pending.push(rel),
            }
        }
    }
    Ok(rep)
}

fn is_zz(name: &str) -> bool {
    name.starts_with("ZZ-phase") && name.ends_with("-context.md")
}

fn tmp_artifacts(bank: &Bank) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(bank.path(TMP_DIR))
        .map(|rd| {
            rd.filter_map(std::result::Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn preflight_of(artifact: ArtifactType, text: &str) -> Preflight {
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

/// C4: records the plan of a completed feature in `## Completed Plans`
/// (key: date + feature, §17) and removes the feature's PLAN artifacts and
/// the ZZ artifacts from `.tmp/`.
pub fn feature_complete(
    bank: &Bank,
    feature: &str,
    date: &str,
    timeout: Duration,
) -> Result<String> {
    check_args("plan", date, Some(feature))?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let feature_l = feature.to_ascii_lowercase();
    let mut plans = Vec::new();
    let mut deletes = Vec::new();
    for name in tmp_artifacts(bank) {
        let rel = format!("{TMP_DIR}/{name}");
        if is_zz(&name) {
            deletes.push(Change::Delete { rel });
        } else if ArtifactType::from_file_name(&name) == Some(ArtifactType::Plan)
            && name.to_ascii_lowercase().contains(&feature_l)
            && !never_touch(&rel)
        {
            plans.push(name);
            deletes.push(Change::Delete { rel });
        }
    }
    let plan_ref = if plans.is_empty() {
        "no PLAN artifact in .tmp/".to_string()
    } else {
        format!("PLAN {}", plans.join(", "))
    };
    let key = EntryKey::new(date, "plan", feature);
    let hash = entry_hash(date, "plan", feature, feature);
    let line = clean(
        s,
        &format!(
            "- **{date} · {feature}** — feature complete — {plan_ref} {}\n",
            marker(&key, &hash)
        ),
    );
    let active = bank
        .read(ACTIVE_CONTEXT)?
        .unwrap_or_else(|| ACTIVE_CONTEXT_NEW.to_string());
    let (text, rep) = upsert_section(
        &active,
        COMPLETED_PLANS,
        &[NewEntry {
            key,
            hash,
            text: line,
        }],
    );
    let mut changes = vec![Change::Write {
        rel: ACTIVE_CONTEXT.into(),
        content: text,
    }];
    let removed = deletes.len();
    changes.extend(deletes);
    txn::commit(bank, &lock, &changes)?;
    Ok(format!(
        "Feature complete: {feature} {} in {ACTIVE_CONTEXT} ({plan_ref}), {removed} .tmp artifacts removed",
        if rep.skipped > 0 {
            "already recorded"
        } else {
            "recorded"
        }
    ))
}

/// C5: bulk clean-up of `.tmp/` (compressible artifacts archived and
/// removed, DISC `DISCARD` deleted, the rest flagged and left), a snapshot
/// of the cross-reference index archived, unresolved entries flagged.
/// Returns the one-line report and the flags.
pub fn sprint_close(bank: &Bank, date: &str, timeout: Duration) -> Result<(String, Vec<String>)> {
    check_args("close", date, None)?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let mut flags = Vec::new();
    let mut changes = Vec::new();
    let archive_rel = completed::archive_path(date);
    let month = date.get(..7).unwrap_or(date);
    let mut archive = bank
        .read(&archive_rel)?
        .unwrap_or_else(|| format!("# Compressed entries — {month}\n\n"));
    let (mut archived, mut deleted) = (0, 0);
    for name in tmp_artifacts(bank) {
        let rel = format!("{TMP_DIR}/{name}");
        if rel == LOCK_FILE || rel == JOURNAL || is_own_temp(&name) {
            continue;
        }
        if is_zz(&name) {
            changes.push(Change::Delete { rel });
            deleted += 1;
            continue;
        }
        let kind = match ArtifactType::from_file_name(&name) {
            Some(ArtifactType::Unrecognized) | None => {
                flags.push(format!("{rel}: unrecognised .tmp artifact, left in place"));
                continue;
            }
            Some(k) => k,
        };
        let text = bank.read(&rel)?.unwrap_or_default();
        let mut pre = preflight_of(kind, &text);
        pre.under_notes_or_adr = never_touch(&rel);
        let d = can_compress(kind, &pre);
        match d {
            mnemo_compress::Decision::Delete { .. } => {
                changes.push(Change::Delete { rel });
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
                changes.push(Change::Delete { rel });
                archived += 1;
            }
            d => flags.push(format!(
                "{rel}: {}",
                d.reason().unwrap_or("not compressible, left in place")
            )),
        }
    }
    if archived > 0 {
        changes.push(Change::Write {
            rel: archive_rel,
            content: clean(s, &archive),
        });
    }
    let xref_rel = format!("_notes/archive/{date}-xref-index.md");
    if let Some(index) = bank.read(XREF_INDEX)? {
        changes.push(Change::Write {
            rel: xref_rel.clone(),
            content: clean(s, &index),
        });
    }
    if let Some(active) = bank.read(ACTIVE_CONTEXT)?
        && let Some((_, b, e)) = find_section(&active, COMPLETED_PHASES)
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
    txn::commit(bank, &lock, &changes)?;
    Ok((
        format!(
            "Sprint close: {archived} artifacts archived, {deleted} deleted, {} flagged, cross-refs archived to {xref_rel}",
            flags.len()
        ),
        flags,
    ))
}

/// C6: compresses the subtask summaries waiting in `.tmp/` (and any given
/// files) through the gate, removing the compressed `.tmp/` artifacts in
/// the same commit. Other artifacts are reported and left.
pub fn compress(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    files: &[Input],
) -> Result<(GateReport, Vec<String>)> {
    let mut inputs = files.to_vec();
    let mut deletes = Vec::new();
    let mut flags = Vec::new();
    for name in tmp_artifacts(bank) {
        let rel = format!("{TMP_DIR}/{name}");
        if rel == LOCK_FILE || rel == JOURNAL || is_own_temp(&name) || is_zz(&name) {
            continue;
        }
        match ArtifactType::from_file_name(&name) {
            Some(ArtifactType::SubtaskSummary) => {
                if let Some(text) = bank.read(&rel)? {
                    inputs.push(Input {
                        name: bank.path(&rel).display().to_string(),
                        text,
                    });
                    deletes.push(Change::Delete { rel });
                }
            }
            Some(ArtifactType::Unrecognized) | None => {
                flags.push(format!("{rel}: unrecognised .tmp artifact, left in place"));
            }
            Some(_) => flags.push(format!(
                "{rel}: left for its own trigger (C2/C3 at the gate, C4, C5)"
            )),
        }
    }
    if inputs.is_empty() {
        return Err(BankError::Refused(format!(
            "{}: nothing to compress (no subtask summaries in .tmp/ and no files given)",
            bank.path(TMP_DIR).display()
        )));
    }
    let report = gate_with(bank, config, opts, &inputs, &deletes)?;
    Ok((report, flags))
}
