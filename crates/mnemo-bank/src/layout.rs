//! Where things live in a bank.

use std::path::{Path, PathBuf};

use crate::{BankError, Result};

pub use mnemo_compress::layout::{
    ACTIVE_CONTEXT, COMPLETED_PHASES, COMPLETED_PLANS, JOURNAL, LOCK_FILE, NEXT_ID, PROGRESS_LOG,
    TMP_DIR, XREF_INDEX, is_date, is_feature_name, is_phase_label, is_zz, never_touch, zz_path,
};

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

/// Today's date in UTC as `YYYY-MM-DD` (no time-zone database needed).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    mnemo_model::date::format_date(i64::try_from(secs / 86_400).unwrap_or(0))
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
