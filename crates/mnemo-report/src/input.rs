//! What the report is computed from: the bank's files and the Guardian
//! store's rows, as the caller read them (this crate reads nothing).

use serde::Serialize;

/// The files of one bank (bank-relative paths, raw text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BankFiles {
    /// `01-active-context.md`.
    pub active_context: Option<String>,
    /// `02-progress-log.md`.
    pub progress_log: Option<String>,
    /// `_xref/index.md`.
    pub xref_index: Option<String>,
    /// `.tmp/ZZ-phase{N}-context.md` files: (relative path, text).
    pub zz: Vec<(String, String)>,
    /// `_notes/archive/*-compressed-entries.md` files: (relative path, text).
    pub archives: Vec<(String, String)>,
    /// `_xref/gate-log.jsonl`.
    pub gate_log: Option<String>,
}

/// The Guardian store's rows, every session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreDump {
    /// Sessions, in the order given (the caller sorts them).
    pub sessions: Vec<SessionRows>,
}

/// One session's rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionRows {
    /// Session id.
    pub session_id: String,
    /// Steps, in sequence order.
    pub steps: Vec<StepRow>,
    /// preCompact decisions, in the order they were recorded.
    pub compactions: Vec<CompactionRow>,
}

/// One recorded step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StepRow {
    /// Order in the session (1-based).
    pub seq: u64,
    /// Step (request) id.
    pub step_id: String,
    /// ACS method.
    pub method: String,
    /// The request's timestamp, from its chain entry.
    pub timestamp: Option<String>,
    /// Origins of what it carried, one per provenance node.
    pub origins: Vec<String>,
    /// Trust of the step under the policy in effect (`trusted`,
    /// `untrusted`, `lineage`), when the caller classified it.
    pub trust: Option<String>,
    /// True when the policy counts the step as a re-grounding.
    pub regrounding: bool,
}

/// One preCompact decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactionRow {
    /// The preCompact's step id.
    pub step_id: String,
    /// Its `entries_to_compact`.
    pub entries: Vec<String>,
    /// `allow`, `deny` or `modify`.
    pub verdict: String,
    /// The Guardian's reasoning; a deny's says what ends it (its way out).
    /// `None` for stores written before it was kept.
    pub reasoning: Option<String>,
    /// The decision's reason codes.
    pub reason_codes: Vec<String>,
}
