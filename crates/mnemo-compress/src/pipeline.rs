//! One phase gate's compression, end to end and still pure: preflight →
//! score → allocate → summarize → mask → detect cross-references → views
//! ready to render.
//!
//! The bank layer calls [`compress_phase`] once per phase of a batch (passing
//! each phase's carryover to the next), merges [`CompressedPhase::refs`] into
//! the index, and renders with [`crate::render`].

use mnemo_model::{Config, Status, SummaryRecord};
use mnemo_score::{Band, Engine, ScoreInput};
use serde::Serialize;

use crate::budget::{AllocItem, BudgetParams, HalfLines, PhaseAllocation, allocate_phase};
use crate::facts::extract;
use crate::mask::{FieldMask, MaskedEntry, entry_fields, first_words, mask_entry};
use crate::preflight::{ArtifactType, Decision, Preflight, can_compress};
use crate::render::{EntryTokens, EntryView, confirmation};
use crate::summary::{
    Body, DeterministicSummarizer, STANDARD_SENTENCE_CAP, Summarizer, Summary, SummaryRequest,
    one_line_files,
};
use crate::xref::{NewRef, detect};

/// One phase of a gate.
#[derive(Debug, Clone, Copy)]
pub struct PhaseInput<'a> {
    /// Phase label (`1`, `2a`).
    pub phase: &'a str,
    /// Date of the gate, used when a record has none.
    pub date: &'a str,
    /// Next agent, used when a record has no `to`.
    pub to: Option<&'a str>,
    /// Planned phases of the feature (`None`: the configured default).
    pub phases: Option<u32>,
    /// Carryover from the previous phase.
    pub carry_in: HalfLines,
    /// The records.
    pub records: &'a [SummaryRecord],
}

/// A record that was compressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompressedEntry {
    /// Position in the input.
    pub index: usize,
    /// Ready to render.
    pub view: EntryView,
    /// The record after the pair's field mask.
    pub masked: MaskedEntry,
    /// The preflight's decision (compress, or compress with ⚠️).
    pub decision: Decision,
    /// True when a plugged-in summarizer failed and the deterministic one
    /// was used instead.
    pub fell_back: bool,
}

/// The result of one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompressedPhase {
    /// The budget allocation (of the compressed entries).
    pub allocation: PhaseAllocation,
    /// Compressed entries, in allocation order (score descending).
    pub entries: Vec<CompressedEntry>,
    /// Records the preflight refused, with the decision (and its reason).
    pub skipped: Vec<(usize, Decision)>,
    /// Cross-references detected (not yet given ids).
    pub refs: Vec<NewRef>,
}

impl CompressedPhase {
    /// The confirmation line, given how many cross-refs the merge added.
    pub fn confirmation(&self, xrefs_added: usize) -> String {
        confirmation(
            self.entries.len(),
            self.allocation.count(Band::Critical),
            self.allocation.count(Band::High),
            xrefs_added,
        )
    }
}

/// Compresses one phase. `summarizer` writes the summaries; when it fails
/// the deterministic summarizer is used and the entry says so.
pub fn compress_phase(
    config: &Config,
    engine: &Engine,
    summarizer: &dyn Summarizer,
    input: &PhaseInput<'_>,
) -> CompressedPhase {
    let fallback = DeterministicSummarizer::new(config);
    let mut kept: Vec<(usize, Decision)> = Vec::new();
    let mut skipped = Vec::new();
    for (i, r) in input.records.iter().enumerate() {
        let pre = Preflight {
            status: r.status,
            active_blockers: !r.blockers.is_empty(),
            ..Preflight::default()
        };
        // The seed requires `complete` (or `partial`, with ⚠️); a record
        // without a status is skipped with a reason.
        let d = can_compress(ArtifactType::SubtaskSummary, &pre);
        if d.compresses() {
            kept.push((i, d));
        } else {
            skipped.push((i, d));
        }
    }
    let mut items = Vec::with_capacity(kept.len());
    for (i, _) in &kept {
        let r = &input.records[*i];
        let text = r.scoring_text();
        let to = r.to.as_deref().or(input.to);
        let score = engine.score(&ScoreInput {
            text: &text,
            files: r.files_changed.len(),
            from: r.sender(),
            to,
            unblocks: r.unblocks,
            has_blockers: r.has_blockers(),
        });
        items.push(AllocItem {
            score: score.total.ten_thousandths(),
            band: score.band,
            partial: r.status == Some(Status::Partial),
        });
    }
    let tasks = task_discriminators(config, input);
    let params = BudgetParams::from_config(&config.budget, input.phases);
    let allocation = allocate_phase(&params, input.phase, input.carry_in, &items);
    let mut entries = Vec::with_capacity(kept.len());
    let mut refs = Vec::new();
    for ea in &allocation.entries {
        let Some((index, decision)) = kept.get(ea.index).cloned() else {
            continue;
        };
        let r = &input.records[index];
        let from = r.sender().unwrap_or("unknown");
        let to = r.to.as_deref().or(input.to);
        let req = SummaryRequest {
            record: r,
            band: ea.band,
            mode: ea.mode,
            from,
            to,
        };
        let (summary, fell_back) = match summarizer.summarize(&req) {
            Ok(s) => (s, false),
            Err(_) => (fallback.build(&req), true),
        };
        let pair_mask = FieldMask::for_pair(config, from, to.unwrap_or("*"));
        let summary = limit_summary(summary, r, &pair_mask);
        let agent = config.display_agent(r.agent.as_deref().unwrap_or(from));
        let phase = r.phase.as_deref().unwrap_or(input.phase).to_string();
        let date = r.date.as_deref().unwrap_or(input.date).to_string();
        let masked = mask_entry(
            config,
            r,
            summary.semantic().as_deref(),
            from,
            to.unwrap_or("*"),
        );
        let facts = extract(&r.scoring_text(), &r.files_changed);
        refs.extend(detect(r, ea.band, &phase, &agent, &facts));
        let shown = pair_mask.with_variant(config, from, to.unwrap_or("*"));
        let task = tasks.get(index).cloned().flatten();
        // What the entry says: its lines, and its title when the head line
        // shows it (a field the text states is not repeated).
        let said = match crate::render::shown_title(&summary, task.as_deref()) {
            Some(t) if matches!(summary.body, Body::Critical { .. } | Body::High { .. }) => {
                format!("{t} {}", summary.lines().join(" "))
            }
            _ => summary.lines().join(" "),
        };
        let fields = entry_fields(r, &shown, &said);
        let mut view = EntryView {
            agent,
            date,
            phase,
            score: ea.score,
            band: ea.band,
            mode: ea.mode,
            status: r.status,
            summary,
            source_summary: r.summary.clone(),
            task,
            fields,
            tokens: EntryTokens::default(),
        };
        view.tokens = EntryTokens::measure(r, &view, input.date);
        entries.push(CompressedEntry {
            index,
            view,
            masked,
            decision,
            fell_back,
        });
    }
    CompressedPhase {
        allocation,
        entries,
        skipped,
        refs,
    }
}

/// A pair whose mask keeps only the first `n` characters of the summary
/// and no semantic summary (seed §5: `* → mnemosyne`, "summary (first 60
/// chars)") gets that as its one line, cut at a word boundary
/// ([`first_words`]). A LOW entry is its file names (seed §4) when the
/// mask keeps `files`; when it hides them, the entry is the summary's first
/// words instead (the mask's limit, else [`STANDARD_SENTENCE_CAP`]), so
/// that no file the receiver's mask hides is on its page. Other pairs keep
/// the summarizer's lines.
fn limit_summary(mut summary: Summary, r: &SummaryRecord, mask: &FieldMask) -> Summary {
    let low = matches!(summary.body, Body::Aggressive { .. });
    let n = match (mask.summary, mask.summary_semantic) {
        _ if low && mask.files => return summary,
        (Some(Some(n)), false) => n,
        _ if low => STANDARD_SENTENCE_CAP,
        _ => return summary,
    };
    let files = match &summary.body {
        Body::Standard { files, .. } => files.clone(),
        _ => one_line_files(&r.files_changed),
    };
    summary.body = Body::Standard {
        sentence: first_words(&r.summary, n),
        files,
    };
    summary.files.clear();
    summary
}

/// The task discriminator of each record's §17 key (SPEC §2): `None` for a
/// record that is the only one of its (date, phase, agent) in the batch
/// (the seed's plain key, so existing banks stay valid); otherwise the
/// record's `task` (or `id`, or `title`), else its 1-based ordinal among
/// that agent's summaries of that phase. Two records that would still
/// share a discriminator get their ordinal appended (`task#2`).
pub fn task_discriminators(config: &Config, input: &PhaseInput<'_>) -> Vec<Option<String>> {
    use std::collections::HashMap;
    let group_of = |r: &SummaryRecord| {
        let agent = config.display_agent(r.agent.as_deref().or(r.sender()).unwrap_or("unknown"));
        (
            r.date.as_deref().unwrap_or(input.date).trim().to_string(),
            r.phase.as_deref().unwrap_or(input.phase).trim().to_string(),
            mnemo_model::agent_key(&agent),
        )
    };
    let groups: Vec<_> = input.records.iter().map(group_of).collect();
    let mut size: HashMap<&(String, String, String), usize> = HashMap::new();
    for g in &groups {
        *size.entry(g).or_default() += 1;
    }
    let mut ordinal: HashMap<&(String, String, String), usize> = HashMap::new();
    let mut used: HashMap<(&(String, String, String), String), usize> = HashMap::new();
    let mut out = Vec::with_capacity(groups.len());
    for (r, g) in input.records.iter().zip(&groups) {
        if size.get(g).copied().unwrap_or(0) < 2 {
            out.push(None);
            continue;
        }
        let n = {
            let o = ordinal.entry(g).or_default();
            *o += 1;
            *o
        };
        let base = r
            .task
            .as_deref()
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| n.to_string());
        let seen = used.entry((g, base.clone())).or_default();
        *seen += 1;
        out.push(Some(if *seen == 1 {
            base
        } else {
            format!("{base}#{n}")
        }));
    }
    out
}
