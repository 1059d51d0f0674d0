//! Where things live in a bank.

use std::path::{Path, PathBuf};

use crate::{BankError, Result};

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

/// A memory bank rooted at a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bank {
    root: PathBuf,
}

impl Bank {
    /// A bank at `root` (nothing is read or created).
    pub fn new(root: impl Into<PathBuf>) -> Bank {
        Bank { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `root/rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Fails with [`BankError::NoBank`] when the root is not a directory.
    pub fn require(&self) -> Result<()> {
        if self.root.is_dir() {
            Ok(())
        } else {
            Err(BankError::NoBank {
                path: self.root.clone(),
            })
        }
    }

    /// Reads `rel` as UTF-8; `None` when absent.
    pub fn read(&self, rel: &str) -> Result<Option<String>> {
        let p = self.path(rel);
        match std::fs::read(&p) {
            Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
                BankError::invalid(
                    &p,
                    None,
                    format!(
                        "not valid UTF-8 (byte {} is not part of a UTF-8 character)",
                        e.utf8_error().valid_up_to()
                    ),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(_) if p.is_dir() => Err(BankError::Target {
                path: p,
                problem: "is a directory where mnemo keeps a file".into(),
                hint: "move the directory away (it is not mnemo's), then run the command again"
                    .into(),
            }),
            Err(e) => Err(BankError::io(p, e)),
        }
    }
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

/// Today's date in UTC as `YYYY-MM-DD` (no time-zone database needed).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    mnemo_model::date::format_date(i64::try_from(secs / 86_400).unwrap_or(0))
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

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_model::date::civil_from_days;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_624), (2026, 6, 20));
        assert!(is_date(&today_utc()));
        assert!(!is_date("2026-6-20"));
        assert!(is_phase_label("2a"));
        assert!(!is_phase_label("../x"));
        assert!(!is_phase_label(""));
        assert!(is_feature_name("auth"));
        assert!(!is_feature_name("../auth"));
    }

    #[test]
    fn never_touch_list() {
        assert!(never_touch("_notes/ADR-0001-agent-rename.md"));
        assert!(never_touch("adr/0007-release-standardization.md"));
        assert!(never_touch(".tmp/ADR-0003.md"));
        assert!(!never_touch("_notes/archive/2026-06-compressed-entries.md"));
        assert!(!never_touch("01-active-context.md"));
    }
}
