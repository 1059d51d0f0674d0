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
