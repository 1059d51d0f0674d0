//! Errors of the bank. Every error names the file (and the line when known).

use std::path::PathBuf;

/// What went wrong in a bank operation. Nothing was written when one is
/// returned (commits are all-or-nothing).
#[derive(Debug, thiserror::Error)]
pub enum BankError {
    /// A filesystem operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is invalid.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// An input summary could not be parsed.
    #[error(transparent)]
    Parse(#[from] mnemo_model::ParseError),
    /// The secret scrubber could not be loaded: nothing is written.
    #[error("the secret scrubber failed to load ({0}); nothing was written")]
    Scrubber(String),
    /// The Guardian denied the compaction.
    #[error("compaction denied by the Guardian ({codes}): {reasoning}; nothing was written")]
    Denied {
        /// Its reasoning (says what ends the deny).
        reasoning: String,
        /// Its reason codes, comma-separated.
        codes: String,
    },
    /// The lock could not be taken in time.
    #[error("{}: the bank is locked by another mnemo process (waited {secs} s)", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        secs: u64,
    },
    /// A journal could not be read: the bank needs a look by a person.
    #[error("{}: interrupted commit journal is unreadable: {message}", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A target of a commit cannot be replaced (checked before anything is
    /// written).
    #[error("{}: {problem}; nothing was written", path.display())]
    Target {
        /// The target (or the directory on its way).
        path: PathBuf,
        /// What stands in the way.
        problem: String,
        /// What to do.
        hint: String,
    },
    /// A step after the commit point failed and the commit was undone.
    #[error("{cause}; the commit was rolled back, the bank is as it was before")]
    RolledBack {
        /// What failed.
        cause: String,
    },
    /// An interrupted commit can be neither finished nor rolled back.
    #[error("{}: {message}", path.display())]
    Stuck {
        /// The journal.
        path: PathBuf,
        /// What happened.
        message: String,
    },
    /// The bank does not exist.
    #[error("{}: no memory bank here (create one with `mnemo init`)", path.display())]
    NoBank {
        /// The bank root.
        path: PathBuf,
    },
    /// A git operation failed or was refused.
    #[error("{0}")]
    Git(String),
    /// The operation is not allowed (never-compress list, bad argument…).
    #[error("{0}")]
    Refused(String),
}

impl BankError {
    /// What the user can do about it, when mnemo knows.
    pub fn hint(&self) -> Option<String> {
        match self {
            BankError::Target { hint, .. } => Some(hint.clone()),
            BankError::RolledBack { .. } => Some(
                "fix what the message names, then run the command again (`mnemo doctor` checks the bank)".into(),
            ),
            BankError::Stuck { path, .. } => Some(format!(
                "fix the file the message names (move a directory away, `chattr -i`, `chmod u+w`, free disk space), then run `mnemo doctor`, which finishes or undoes the commit that {} lists",
                path.display()
            )),
            BankError::Journal { path, .. } => Some(format!(
                "{} lists the files of an interrupted commit; to give that commit up, move the journal away and run `mnemo doctor` (it removes the staged files and keeps the bank as it was)",
                path.display()
            )),
            _ => None,
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> BankError {
        BankError::Io {
            path: path.into(),
            source,
        }
    }

    /// An invalid-content error.
    pub fn invalid(
        path: impl Into<PathBuf>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        BankError::Invalid {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}
