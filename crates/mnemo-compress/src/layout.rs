//! Where things live in a bank, as bank-relative paths, and which names
//! are acceptable (pure: the plan names the files it writes; reading and
//! writing them is `mnemo-bank`'s job).

/// `01-active-context.md`.
pub const ACTIVE_CONTEXT: &str = "01-active-context.md";
/// `02-progress-log.md`.
pub const PROGRESS_LOG: &str = "02-progress-log.md";
/// `_xref/index.md`.
pub const XREF_INDEX: &str = "_xref/index.md";
/// `_xref/_next_id.json`.
pub const NEXT_ID: &str = "_xref/_next_id.json";
/// `.tmp/`.
pub const TMP_DIR: &str = ".tmp";
/// `.tmp/compress.lock`.
pub const LOCK_FILE: &str = ".tmp/compress.lock";
/// `.tmp/journal.json`.
pub const JOURNAL: &str = ".tmp/journal.json";
/// The heading of mnemo's section in `01-active-context.md`.
pub const COMPLETED_PHASES: &str = "Completed Phases";
/// The heading of the completed-plans section (C4).
pub const COMPLETED_PLANS: &str = "Completed Plans";

/// `.tmp/ZZ-phase{N}-context.md`, relative to the bank root.
pub fn zz_path(phase: &str) -> String {
    format!(".tmp/ZZ-phase{}-context.md", phase.trim())
}

/// Whether a `.tmp/` file name is a ZZ artifact (`ZZ-phase…-context.md`).
pub fn is_zz(name: &str) -> bool {
    name.starts_with("ZZ-phase") && name.ends_with("-context.md")
}

/// Whether a bank-relative path is on the never-compress list (ADRs under
/// `_notes/` or `adr/`, except mnemo's own `_notes/archive/`).
pub fn never_touch(rel: &str) -> bool {
    let rel = rel.trim_start_matches("./");
    if rel.starts_with("_notes/archive/") {
        return false;
    }
    rel.starts_with("_notes/")
        || rel.starts_with("adr/")
        || rel.contains("/adr/")
        || rel
            .rsplit('/')
            .next()
            .is_some_and(|n| n.to_ascii_uppercase().starts_with("ADR-"))
}

/// Whether `s` can name a phase in a file name (`1`, `2a`, `final`): ASCII
/// letters, digits, `.`, `_`, `+`, `-`, not starting with `.`, at most 32.
pub fn is_phase_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'))
}

/// Whether `s` can name a feature directory (no path separators, not `.`/`..`).
pub fn is_feature_name(s: &str) -> bool {
    !s.trim().is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

/// Whether `s` is a `YYYY-MM-DD` date.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}
