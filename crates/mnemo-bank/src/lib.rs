//! The memory bank on disk: mnemo's edge with files, locks and processes.
//!
//! This crate owns:
//!
//! * the [`layout`] of a bank (default `.pantheon/memory-bank/`):
//!   `01-active-context.md` (its `## Completed Phases` section),
//!   `02-progress-log.md`, `_xref/index.md`, `_xref/_next_id.json`,
//!   `.tmp/ZZ-phase{N}-context.md`, `_notes/archive/…` and the learnings
//!   files;
//! * [`sections`]: section-preserving edits that are tolerant of hand-written
//!   markdown and change no byte outside mnemo's own sections;
//! * [`txn`]: atomic multi-file commits (stage, fsync, validate, journal,
//!   rename, directory fsync), recovery of interrupted journals, stale temp
//!   cleanup, and the bank lock `.tmp/compress.lock`;
//! * [`ops`]: the pipeline commands (gate C1–C3, feature-complete C4,
//!   sprint-close C5, compress C6, trim C7, handoff, doctor, init), which ask
//!   the Guardian before compacting and scrub every byte they write;
//! * [`failpoint`]: numbered steps of the commit for deterministic fault
//!   injection in tests (feature `failpoints`);
//! * [`git`]: history and restore of bank files through the `git` binary.
//!
//! What it must never do: write a byte that did not pass the secret scrubber
//! (if the scrubber fails to load, nothing is written), leave a bank half
//! written (a command lands whole or not at all, even under `kill -9`), touch
//! an ADR (`_notes/`, `adr/`) or a byte of human text outside its own
//! sections, write without holding the lock, or panic on anything a user or a
//! file controls.

pub mod error;
pub mod failpoint;
pub mod git;
pub mod layout;
pub mod ops;
pub mod sections;
pub mod txn;

pub use error::BankError;
pub use layout::Bank;
pub use ops::{
    DoctorReport, GateOptions, GateReport, doctor, feature_complete, gate, handoff, init_bank,
    sprint_close, trim,
};
pub use txn::{BankLock, Change, Recovery};

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, BankError>;
