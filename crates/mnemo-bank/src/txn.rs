//! Atomic multi-file commits, their journal, recovery and the bank lock.
//!
//! A commit of several files is all-or-nothing, even under `kill -9`:
//!
//! 1. every new file is **staged** next to its target
//!    (`.<name>.mnemo-stage-<pid>-<n>.tmp`, same directory), written,
//!    fsynced and **validated** (non-empty; markdown has a `#`/`##` heading;
//!    JSON parses);
//! 2. the **journal** `.tmp/journal.json` (the list staged → target, and the
//!    files to delete) is written to its own temp file, fsynced and renamed
//!    into place, and `.tmp/` is fsynced: this is the commit point;
//! 3. each staged file is **renamed** over its target, deletions are done,
//!    and every touched directory is fsynced;
//! 4. the journal is removed (and `.tmp/` fsynced).
//!
//! [`recover`] (run under the lock by every bank command before it reads
//! anything) rolls an interrupted commit **forward** when the journal exists
//! (every staged file was fsynced before it was written), and rolls it
//! **back** otherwise (staged files without a journal are removed). Other
//! `*.tmp` files older than five minutes are cleaned.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::layout::{Bank, JOURNAL, LOCK_FILE, TMP_DIR};
use crate::{BankError, Result};

/// Marker in the names of staged files.
pub const STAGE_MARK: &str = ".mnemo-stage-";
/// Age after which a foreign `*.tmp` file is stale.
pub const STALE_AFTER: Duration = Duration::from_secs(5 * 60);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// One change of a commit (paths relative to the bank root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write the file (create or replace).
    Write {
        /// Bank-relative path.
        rel: String,
        /// Full new content.
        content: String,
    },
    /// Delete the file (absent: nothing to do).
    Delete {
        /// Bank-relative path.
        rel: String,
    },
}

impl Change {
    /// The bank-relative path.
    pub fn rel(&self) -> &str {
        match self {
            Change::Write { rel, .. } | Change::Delete { rel } => rel,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    version: u32,
    ops: Vec<JournalOp>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum JournalOp {
    Rename { staged: String, target: String },
    Delete { target: String },
}

/// The held bank lock (`.tmp/compress.lock`, `flock`); released on drop.
#[derive(Debug)]
pub struct BankLock {
    _file: File,
}

/// Takes the bank lock, waiting up to `timeout`. Creates `.tmp/` if needed.
#[allow(clippy::incompatible_msrv)] // File::try_lock: Rust ≥ 1.89, our toolchain is newer
pub fn lock(bank: &Bank, timeout: Duration) -> Result<BankLock> {
    let tmp = bank.path(TMP_DIR);
    std::fs::create_dir_all(&tmp).map_err(|e| BankError::io(&tmp, e))?;
    let path = bank.path(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| BankError::io(&path, e))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(BankLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {
                if start.elapsed() >= timeout {
                    return Err(BankError::Locked {
                        path,
                        secs: timeout.as_secs(),
                    });
                }
                std::thread::sleep(Duration::from_millis(3));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(BankError::io(&path, e)),
        }
    }
}

fn fsync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| BankError::io(dir, e))?;
    f.sync_all().map_err(|e| BankError::io(dir, e))
}

fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Validates content before it may replace a file: non-empty; markdown has
/// a `#` or `##` heading; JSON parses.
pub fn validate(rel: &str, content: &str) -> std::result::Result<(), String> {
    if content.is_empty() {
        return Err("would be empty".into());
    }
    if rel.ends_with(".md")
        && !content
            .lines()
            .any(|l| l.starts_with("# ") || l.starts_with("## "))
    {
        return Err("has no `#` or `##` heading".into());
    }
    if rel.ends_with(".json") && serde_json::from_str::<serde_json::Value>(content).is_err() {
        return Err("is not valid JSON".into());
    }
    Ok(())
}

fn stage_name(target: &Path) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| BankError::Refused(format!("{} is not a file path", target.display())))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Ok(parent_of(target).join(format!(
        ".{}{STAGE_MARK}{}-{nanos}-{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

fn write_synced(path: &Path, content: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| BankError::io(path, e))?;
    f.write_all(content).map_err(|e| BankError::io(path, e))?;
    f.sync_all().map_err(|e| BankError::io(path, e))
}

fn rel_of(bank: &Bank, p: &Path) -> String {
    p.strip_prefix(bank.root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Commits `changes` atomically. Must be called with the lock held (the
/// `_lock` argument proves it). Writes whose content equals the file's
/// current content, and deletions of absent files, are dropped first, so an
/// idempotent re-run touches nothing. Returns the bank-relative paths that
/// changed.
pub fn commit(bank: &Bank, _lock: &BankLock, changes: &[Change]) -> Result<Vec<String>> {
    // Drop no-ops and validate.
    let mut effective: Vec<&Change> = Vec::new();
    for c in changes {
        if crate::layout::never_touch(c.rel()) {
            return Err(BankError::Refused(format!(
                "{}: on the never-compress list (ADRs are never touched)",
                bank.path(c.rel()).display()
            )));
        }
        match c {
            Change::Write { rel, content } => {
                validate(rel, content).map_err(|m| {
                    BankError::invalid(bank.path(rel), None, format!("new content {m}"))
                })?;
                // Same length: compare the bytes (a different length is a change).
                let same_len = std::fs::metadata(bank.path(rel))
                    .is_ok_and(|m| m.len() == content.len() as u64);
                if same_len && bank.read(rel)?.as_deref() == Some(content.as_str()) {
                    continue;
                }
            }
            Change::Delete { rel } => {
                if !bank.path(rel).exists() {
                    continue;
                }
            }
        }
        effective.push(c);
    }
    if effective.is_empty() {
        return Ok(Vec::new());
    }
    // 1. Stage.
    let mut ops = Vec::new();
    let mut staged_paths = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let result = (|| -> Result<()> {
        for c in &effective {
            let target = bank.path(c.rel());
            let dir = parent_of(&target);
            if !dirs.contains(&dir) {
                dirs.push(dir.clone());
            }
            match c {
                Change::Write { rel, content } => {
                    std::fs::create_dir_all(&dir).map_err(|e| BankError::io(&dir, e))?;
                    let staged = stage_name(&target)?;
                    write_synced(&staged, content.as_bytes())?;
                    staged_paths.push(staged.clone());
                    ops.push(JournalOp::Rename {
                        staged: rel_of(bank, &staged),
                        target: rel.clone(),
                    });
                }
                Change::Delete { rel } => ops.push(JournalOp::Delete {
                    target: rel.clone(),
                }),
            }
        }
        for d in &dirs {
            fsync_dir(d)?;
        }
        // 2. Journal (the commit point).
        let journal = Journal { version: 1, ops };
        let text = serde_json::to_string_pretty(&journal)
            .map_err(|e| BankError::Refused(format!("cannot encode the journal: {e}")))?;
        let jpath = bank.path(JOURNAL);
        let jstaged = stage_name(&jpath)?;
        write_synced(&jstaged, text.as_bytes())?;
        std::fs::rename(&jstaged, &jpath).map_err(|e| BankError::io(&jpath, e))?;
        fsync_dir(&bank.path(TMP_DIR))?;
        Ok(())
    })();
    if let Err(e) = result {
        for s in &staged_paths {
            let _ = std::fs::remove_file(s);
        }
        return Err(e);
    }
    // 3 + 4. Apply and finish.
    apply_journal(bank)?;
    Ok(effective.iter().map(|c| c.rel().to_string()).collect())
}

/// Applies `.tmp/journal.json` (roll forward) and removes it. Returns the
/// number of operations, or `None` when there is no journal.
fn apply_journal(bank: &Bank) -> Result<Option<usize>> {
    let jpath = bank.path(JOURNAL);
    let text = match std::fs::read_to_string(&jpath) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BankError::io(&jpath, e)),
    };
    let journal: Journal = serde_json::from_str(&text).map_err(|e| BankError::Journal {
        path: jpath.clone(),
        message: e.to_string(),
    })?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for op in &journal.ops {
        let target = match op {
            JournalOp::Rename { target, .. } | JournalOp::Delete { target } => bank.path(target),
        };
        let dir = parent_of(&target);
        match op {
            JournalOp::Rename { staged, .. } => {
                let s = bank.path(staged);
                if s.exists() {
                    std::fs::rename(&s, &target).map_err(|e| BankError::io(&target, e))?;
                }
            }
            JournalOp::Delete { .. } => match std::fs::remove_file(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BankError::io(&target, e)),
            },
        }
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for d in &dirs {
        fsync_dir(d)?;
    }
    // No fsync needed: a journal that reappears after a crash is rolled
    // forward again, which finds every staged file already renamed.
    std::fs::remove_file(&jpath).map_err(|e| BankError::io(&jpath, e))?;
    Ok(Some(journal.ops.len()))
}

/// What [`recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Operations of an interrupted commit that were finished (roll forward).
    pub rolled_forward: usize,
    /// Staged files of an interrupted commit without a journal, removed
    /// (roll back).
    pub rolled_back: usize,
    /// Foreign `*.tmp` files older than five minutes, removed.
    pub stale_removed: Vec<String>,
}

impl Recovery {
    /// Whether anything was done.
    pub fn is_empty(&self) -> bool {
        self.rolled_forward == 0 && self.rolled_back == 0 && self.stale_removed.is_empty()
    }
}

/// Finishes or rolls back an interrupted commit and removes stale temp
/// files. Must run under the lock.
pub fn recover(bank: &Bank, _lock: &BankLock) -> Result<Recovery> {
    let mut rec = Recovery {
        rolled_forward: apply_journal(bank)?.unwrap_or(0),
        ..Recovery::default()
    };
    let now = SystemTime::now();
    for path in walk(bank.root()) {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if !name.ends_with(".tmp") {
            continue;
        }
        if name.contains(STAGE_MARK) {
            // Under the lock, with no journal left, a staged file is an orphan.
            if std::fs::remove_file(&path).is_ok() {
                rec.rolled_back += 1;
            }
            continue;
        }
        let rel = rel_of(bank, &path);
        if crate::layout::never_touch(&rel) {
            continue;
        }
        let old = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && std::fs::remove_file(&path).is_ok() {
            rec.stale_removed.push(rel);
        }
    }
    Ok(rec)
}

/// Every file under `root` (not following symlinks, skipping `.git`).
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = rd.filter_map(std::result::Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(e.path());
                }
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        assert!(validate("a.md", "").is_err());
        assert!(validate("a.md", "text only\n").is_err());
        assert!(validate("a.md", "# T\n").is_ok());
        assert!(validate("a.json", "{").is_err());
        assert!(validate("a.json", "{}\n").is_ok());
    }

    #[test]
    fn commit_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::new(dir.path());
        let l = lock(&bank, Duration::from_secs(5)).unwrap();
        let changed = commit(
            &bank,
            &l,
            &[
                Change::Write {
                    rel: "a.md".into(),
                    content: "# A\n".into(),
                },
                Change::Write {
                    rel: "_xref/b.json".into(),
                    content: "{}\n".into(),
                },
            ],
        )
        .unwrap();
        assert_eq!(changed.len(), 2);
        // Same content again: nothing changes.
        let again = commit(
            &bank,
            &l,
            &[Change::Write {
                rel: "a.md".into(),
                content: "# A\n".into(),
            }],
        )
        .unwrap();
        assert!(again.is_empty());
        // Invalid content: refused, nothing written.
        assert!(
            commit(
                &bank,
                &l,
                &[
                    Change::Write {
                        rel: "a.md".into(),
                        content: "# B\n".into()
                    },
                    Change::Write {
                        rel: "c.md".into(),
                        content: "no heading".into()
                    }
                ]
            )
            .is_err()
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.md")).unwrap(),
            "# A\n"
        );
        // An orphan stage is rolled back; a journal is rolled forward.
        std::fs::write(dir.path().join(".a.md.mnemo-stage-1-2-3.tmp"), "# X\n").unwrap();
        std::fs::write(dir.path().join(".c.md.mnemo-stage-1-2-4.tmp"), "# C\n").unwrap();
        std::fs::write(
            dir.path().join(JOURNAL),
            r#"{"version":1,"ops":[{"op":"rename","staged":".c.md.mnemo-stage-1-2-4.tmp","target":"c.md"},{"op":"delete","target":"a.md"}]}"#,
        )
        .unwrap();
        let r = recover(&bank, &l).unwrap();
        assert_eq!(r.rolled_forward, 2);
        assert_eq!(r.rolled_back, 1);
        assert!(!dir.path().join("a.md").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c.md")).unwrap(),
            "# C\n"
        );
        assert!(!dir.path().join(JOURNAL).exists());
    }
}
