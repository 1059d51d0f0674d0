//! The pure core of mnemo's Level 2 compression (seed §4–§10, §15, §17–§18).
//!
//! This crate owns the *logic* that turns scored subtask summaries into the
//! memory bank's compressed text:
//!
//! * [`budget`] — priority-greedy line-budget allocation in half-lines, with
//!   per-phase budgets, 20% carryover and the guardrails of §18;
//! * [`mask`] — downstream-aware field masks per (from, to) agent pair (§5);
//! * [`facts`] and [`summary`] — a deterministic fact extractor and the
//!   [`summary::Summarizer`] trait with its deterministic implementation (§4);
//! * [`xref`] — cross-reference detection, the E/M/C/D id allocator and the
//!   `_xref/index.md` parser and renderer (§7);
//! * [`render`] — the ZZ handoff artifact (§8), the `## Completed Phases`
//!   lines with idempotency keys and content hashes (§17), progress-log
//!   sections, the next-agent prompt block (§15) and the confirmation line;
//! * [`completed`] — idempotent upsert of `## Completed Phases` entries by
//!   key and content hash (§17), and the C7 trim plan (§18);
//! * [`preflight`] — the `can_compress` safety preflight (§9, §10);
//! * [`pipeline`] — one phase gate end to end (preflight → score → allocate
//!   → summarize → mask → cross-references), still without I/O;
//! * [`gatelog`] — the gate log `_xref/gate-log.jsonl`: one JSON line per
//!   gate that changed the bank and per C7 run alone that trimmed, built by
//!   the plan and appended (the log is never rewritten);
//! * [`plan`] — every bank command's decisions as one pure function from
//!   parsed records and the bank's current file texts to the new file
//!   contents and a report (gate C1–C3, C4, C5, C6's inputs, C7), so that
//!   `mnemo-bank` only reads, asks the Guardian and commits;
//! * [`sections`] — section-preserving edits of hand-written markdown;
//! * [`layout`] — the bank-relative paths the plans read and write.
//!
//! What it must never do: any I/O (callers hand it text and get text back),
//! panic on any input, or drop an entry — allocation always places every
//! entry and reports overruns instead.

pub mod budget;
pub mod completed;
pub mod extractive;
pub mod facts;
pub mod gatelog;
pub mod layout;
pub mod mask;
pub mod pipeline;
pub mod plan;
pub mod preflight;
pub mod render;
pub mod sections;
pub mod summary;
pub mod xref;

pub use budget::{
    AllocItem, Allocation, BudgetFlag, BudgetParams, HalfLines, Mode, PhaseAllocation,
};
pub use pipeline::{CompressedPhase, PhaseInput, compress_phase};
pub use preflight::{ArtifactType, Decision, can_compress};
pub use summary::{DeterministicSummarizer, Summarizer, Summary};
pub use xref::{NextIds, XrefIndex, parse_index};
