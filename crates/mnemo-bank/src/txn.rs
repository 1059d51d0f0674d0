//! Atomic multi-file commits, their journal, recovery and the bank lock.
//!
//! A commit of several files is all-or-nothing, even under `kill -9`:
//!
//! 0. every **target is checked** first: no directory, symbolic link,
//!    read-only, immutable or otherwise unreplaceable file stands where a
//!    file is to be written or deleted, and no directory on the way
//!    (`_xref/`, `.tmp/`, …) is a symbolic link (mnemo never writes through
//!    a link out of the bank). A refusal names the path and what to do, and
//!    nothing is written;
//! 1. every new file is **staged** next to its target
//!    (`.<name>.mnemo-stage-<pid>-<nanos>-<n>.tmp`, same directory), written,
//!    fsynced and **validated** (non-empty; markdown has a `#`/`##` heading;
//!    JSON parses); every existing target gets a **backup**, a hard link
//!    `.<name>.mnemo-backup-<pid>-<nanos>-<n>.tmp` (a copy where links are
//!    not supported), so that the commit can be undone;
//! 2. the **journal** `.tmp/journal.json` (staged → target with its backup,
//!    and the files to delete) is written to its own temp file, fsynced and
//!    renamed into place, and `.tmp/` is fsynced: this is the commit point;
//! 3. each staged file is **renamed** over its target, deletions are done,
//!    and every touched directory is fsynced;
//! 4. the journal is removed (and `.tmp/` fsynced), then the backups.
//!
//! When a step after the commit point fails, the journal is marked
//! `rollback` (with the reason) and **undone**: each backup is renamed back
//! over its target, new files are removed, staged files are removed. The
//! command then fails naming the file that could not be replaced, with the
//! bank as it was before.
//!
//! [`recover`] (run under the lock by every bank command before it reads
//! anything) rolls an interrupted commit **forward** when the journal exists
//! (every staged file was fsynced before it was written); when it cannot be
//! applied, it is rolled **back** and [`Recovery::rolled_back_commit`] says
//! why. Staged files and backups without a journal are removed. These are
//! mnemo's own temporary files, recognised by their exact name pattern
//! ([`is_own_temp`]); every other `*.tmp` file in the bank is left where it
//! is and reported ([`Recovery::other_tmp`]).

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::failpoint::step;
use crate::layout::{Bank, JOURNAL, LOCK_FILE, TMP_DIR};
use crate::{BankError, Result};

/// Marker in the names of staged files.
pub const STAGE_MARK: &str = ".mnemo-stage-";
/// Marker in the names of backups of replaced files.
pub const BACKUP_MARK: &str = ".mnemo-backup-";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether a file name is one of mnemo's own temporary files, exactly
/// `.<name>.mnemo-stage-<pid>-<nanos>-<n>.tmp` or
/// `.<name>.mnemo-backup-<pid>-<nanos>-<n>.tmp` (three decimal numbers).
/// Nothing else is ever removed by recovery.
pub fn is_own_temp(name: &str) -> bool {
    let Some(inner) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    [STAGE_MARK, BACKUP_MARK].iter().any(|mark| {
        inner.rfind(mark).is_some_and(|i| {
            let tail = &inner[i + mark.len()..];
            let parts: Vec<&str> = tail.split('-').collect();
            i > 0
                && parts.len() == 3
                && parts.iter().all(|p| {
                    !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit())
                })
        })
    })
}

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
    /// Append bytes to the file (absent: create it with them). The file
    /// is not rewritten: the journal records its old length, so a rollback
    /// truncates it back and a roll-forward truncates a torn append before
    /// writing the bytes again.
    Append {
        /// Bank-relative path.
        rel: String,
        /// The bytes to add.
        content: String,
    },
}

impl Change {
    /// The bank-relative path.
    pub fn rel(&self) -> &str {
        match self {
            Change::Write { rel, .. } | Change::Delete { rel } | Change::Append { rel, .. } => rel,
        }
    }
}

/// Version of journals with backups (they can be rolled back).
const JOURNAL_VERSION: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum State {
    #[default]
    Forward,
    Rollback,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    version: u32,
    #[serde(default)]
    state: State,
    /// Why a rollback was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    ops: Vec<JournalOp>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum JournalOp {
    Rename {
        staged: String,
        target: String,
        /// The old target (a hard link or copy); absent: the target is new.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backup: Option<String>,
    },
    Delete {
        target: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backup: Option<String>,
    },
    /// `data` goes at byte `len` of `target` (its length before the
    /// commit): forward truncates to `len` and writes `data`, back
    /// truncates to `len`; both can be repeated.
    Append {
        target: String,
        len: u64,
        data: String,
    },
}

impl JournalOp {
    fn target(&self) -> &str {
        match self {
            JournalOp::Rename { target, .. }
            | JournalOp::Delete { target, .. }
            | JournalOp::Append { target, .. } => target,
        }
    }

    fn backup(&self) -> Option<&str> {
        match self {
            JournalOp::Rename { backup, .. } | JournalOp::Delete { backup, .. } => {
                backup.as_deref()
            }
            JournalOp::Append { .. } => None,
        }
    }
}

/// Bytes of a file's end [`commit`] reads to match an append's line
/// endings.
const APPEND_TAIL: u64 = 64 * 1024;

/// The last bytes of `path` (at most `max`), from the start of a line
/// (the whole file when it is shorter), as text; a cut inside a UTF-8
/// sequence is skipped with the partial line.
pub fn read_tail(path: &Path, max: u64) -> std::io::Result<(u64, String)> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(max);
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity(usize::try_from(len - from).unwrap_or(0));
    f.read_to_end(&mut buf)?;
    let start = if from == 0 {
        0
    } else {
        // The first line may be cut: start after its end.
        memchr_nl(&buf).map_or(buf.len(), |i| i + 1)
    };
    buf.drain(..start);
    let text = String::from_utf8(buf)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((len, text))
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Truncates `path` to `len` bytes when it is longer, and fsyncs it.
fn truncate_to(path: &Path, len: u64) -> Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| BankError::io(path, e))?;
    let now = f.metadata().map_err(|e| BankError::io(path, e))?.len();
    if now > len {
        f.set_len(len).map_err(|e| BankError::io(path, e))?;
        f.sync_all().map_err(|e| BankError::io(path, e))?;
    }
    Ok(())
}

/// Writes `data` at byte `len` of `path` (truncating a torn earlier
/// attempt first) and fsyncs it. A file shorter than `len` is not the one
/// the journal was written for: refused.
fn append_at(path: &Path, len: u64, data: &[u8]) -> Result<()> {
    use std::io::{Seek as _, SeekFrom};
    let mut f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| BankError::io(path, e))?;
    let now = f.metadata().map_err(|e| BankError::io(path, e))?.len();
    if now < len {
        return Err(BankError::io(
            path,
            std::io::Error::other(format!(
                "the file is {now} bytes, shorter than the {len} bytes the journal appends after"
            )),
        ));
    }
    if now > len {
        f.set_len(len).map_err(|e| BankError::io(path, e))?;
    }
    f.seek(SeekFrom::Start(len))
        .and_then(|_| f.write_all(data))
        .and_then(|()| f.sync_all())
        .map_err(|e| BankError::io(path, e))
}

/// The held bank lock (`.tmp/compress.lock`, `flock`); released on drop.
#[derive(Debug)]
pub struct BankLock {
    _file: File,
}

/// Takes the bank lock, waiting up to `timeout`. Creates `.tmp/` if needed
/// (refused when `.tmp` is a symbolic link or not a directory).
#[allow(clippy::incompatible_msrv)] // File::try_lock: Rust ≥ 1.89, our toolchain is newer
pub fn lock(bank: &Bank, timeout: Duration) -> Result<BankLock> {
    check_dirs(bank, LOCK_FILE)?;
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

/// Every directory between the bank root and `rel` that exists must be a
/// real directory: a symbolic link (`_xref -> /elsewhere`) is refused, so
/// nothing is ever written through it to a place outside the bank.
pub fn check_dirs(bank: &Bank, rel: &str) -> Result<()> {
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    let mut prefix = String::new();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        let p = bank.path(&prefix);
        match std::fs::symlink_metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(BankError::io(&p, e)),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(BankError::Target {
                    path: p,
                    problem: "is a symbolic link; mnemo never writes through a link to a place outside the bank".into(),
                    hint: "replace the link with a real directory (move its content into the bank), then run the command again".into(),
                });
            }
            Ok(m) if !m.is_dir() => {
                return Err(BankError::Target {
                    path: p,
                    problem: "is not a directory, but mnemo keeps files in it".into(),
                    hint: "move the file away, then run the command again".into(),
                });
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// What stands at a target path: nothing, or a regular file (with its
/// metadata). Directories, links and special files are refused.
fn classify(bank: &Bank, rel: &str) -> Result<Option<std::fs::Metadata>> {
    check_dirs(bank, rel)?;
    let path = bank.path(rel);
    let m = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BankError::io(&path, e)),
    };
    let ft = m.file_type();
    let refuse = |problem: &str, hint: &str| BankError::Target {
        path: path.clone(),
        problem: problem.into(),
        hint: hint.into(),
    };
    if ft.is_dir() {
        return Err(refuse(
            "is a directory where mnemo keeps a file",
            "move the directory away (it is not mnemo's), then run the command again",
        ));
    }
    if ft.is_symlink() {
        return Err(refuse(
            "is a symbolic link; mnemo neither writes through nor replaces links",
            "replace the link with the file it points to, then run the command again",
        ));
    }
    if !ft.is_file() {
        return Err(refuse(
            "is not a regular file",
            "move it away, then run the command again",
        ));
    }
    Ok(Some(m))
}

/// Whether an existing regular file may be replaced or deleted: it is not
/// read-only, and it can be opened for writing (an immutable or
/// append-only file, or a read-only file system, cannot).
fn check_replaceable(bank: &Bank, rel: &str, m: &std::fs::Metadata) -> Result<()> {
    let path = bank.path(rel);
    if m.permissions().readonly() {
        return Err(BankError::Target {
            path: path.clone(),
            problem: "is read-only; mnemo does not replace a file that was made read-only".into(),
            hint: format!(
                "make it writable (`chmod u+w {}`) to let mnemo update it",
                path.display()
            ),
        });
    }
    if let Err(e) = OpenOptions::new().write(true).open(&path) {
        return Err(BankError::Target {
            path: path.clone(),
            problem: format!("cannot be replaced ({e})"),
            hint: format!(
                "if it is immutable or append-only, clear the flag (`chattr -i -a {}`); otherwise fix its permissions or the file system, then run the command again",
                path.display()
            ),
        });
    }
    Ok(())
}

fn temp_name(target: &Path, mark: &str) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| BankError::Refused(format!("{} is not a file path", target.display())))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Ok(parent_of(target).join(format!(
        ".{}{mark}{}-{nanos}-{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes and fsyncs a new file; on any failure (a full disk) the file is
/// removed again, so no empty or partial temp file is left.
fn write_synced(path: &Path, content: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| BankError::io(path, e))?;
    if let Err(e) = f.write_all(content).and_then(|()| f.sync_all()) {
        drop(f);
        let _ = std::fs::remove_file(path);
        return Err(BankError::io(path, e));
    }
    Ok(())
}

/// A backup of `target` at `backup`: a hard link, or a copy where the file
/// system has none.
fn make_backup(target: &Path, backup: &Path) -> Result<()> {
    if std::fs::hard_link(target, backup).is_ok() {
        return Ok(());
    }
    let bytes = std::fs::read(target).map_err(|e| BankError::io(target, e))?;
    write_synced(backup, &bytes)
}

fn rel_of(bank: &Bank, p: &Path) -> String {
    p.strip_prefix(bank.root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// When `old` ends every line with CRLF, the bare LFs of `new` (mnemo's
/// own lines) become CRLF too; a file with mixed or LF endings is left to
/// its LF lines.
pub fn match_line_endings(old: &str, new: String) -> String {
    // A file with no `\r` at all (memchr) is LF: no substring count over it.
    if !old.contains('\r') {
        return new;
    }
    let crlf = old.matches("\r\n").count();
    if crlf == 0 || crlf != old.matches('\n').count() {
        return new;
    }
    let bare = new.matches('\n').count() - new.matches("\r\n").count();
    if bare == 0 {
        return new;
    }
    let mut out = String::with_capacity(new.len() + bare);
    let mut prev = '\0';
    for c in new.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Commits `changes` atomically. Must be called with the lock held (the
/// `_lock` argument proves it). Writes whose content equals the file's
/// current content, and deletions of absent files, are dropped first, so an
/// idempotent re-run touches nothing. Returns the bank-relative paths that
/// changed.
pub fn commit(bank: &Bank, _lock: &BankLock, changes: &[Change]) -> Result<Vec<String>> {
    // 0. Drop no-ops, validate, and check every target.
    let mut effective: Vec<(Change, bool)> = Vec::new();
    for c in changes {
        if crate::layout::never_touch(c.rel()) {
            return Err(BankError::Refused(format!(
                "{}: on the never-compress list (ADRs are never touched)",
                bank.path(c.rel()).display()
            )));
        }
        let meta = classify(bank, c.rel())?;
        match c {
            Change::Write { rel, content } => {
                validate(rel, content).map_err(|m| {
                    BankError::invalid(bank.path(rel), None, format!("new content {m}"))
                })?;
                let content = match &meta {
                    Some(_) => {
                        let old = bank.read(rel)?.unwrap_or_default();
                        let content = match_line_endings(&old, content.clone());
                        if old == content {
                            continue;
                        }
                        content
                    }
                    None => content.clone(),
                };
                if let Some(m) = &meta {
                    check_replaceable(bank, rel, m)?;
                }
                effective.push((
                    Change::Write {
                        rel: rel.clone(),
                        content,
                    },
                    meta.is_some(),
                ));
            }
            Change::Delete { rel } => {
                let Some(m) = &meta else { continue };
                check_replaceable(bank, rel, m)?;
                effective.push((c.clone(), true));
            }
            Change::Append { rel, content } => {
                if content.is_empty() {
                    continue;
                }
                let Some(m) = &meta else {
                    // A new file: written like any other.
                    validate(rel, content).map_err(|m| {
                        BankError::invalid(bank.path(rel), None, format!("new content {m}"))
                    })?;
                    effective.push((
                        Change::Write {
                            rel: rel.clone(),
                            content: content.clone(),
                        },
                        false,
                    ));
                    continue;
                };
                check_replaceable(bank, rel, m)?;
                // CRLF lines get CRLF (judged on the file's last lines).
                let path = bank.path(rel);
                let (_, tail) =
                    read_tail(&path, APPEND_TAIL).map_err(|e| BankError::io(&path, e))?;
                effective.push((
                    Change::Append {
                        rel: rel.clone(),
                        content: match_line_endings(&tail, content.clone()),
                    },
                    true,
                ));
            }
        }
    }
    if effective.is_empty() {
        return Ok(Vec::new());
    }
    // 1. Stage, back up, write the journal's temp file.
    let mut created: Vec<PathBuf> = Vec::new();
    let jpath = bank.path(JOURNAL);
    let staged_journal = (|| -> Result<(Journal, PathBuf)> {
        let mut ops = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (c, exists) in &effective {
            let rel = c.rel();
            let target = bank.path(rel);
            let dir = parent_of(&target);
            if !dirs.contains(&dir) {
                dirs.push(dir.clone());
            }
            if let Change::Append { content, .. } = c {
                // No staged file and no backup (a hard link would share
                // the bytes): the journal holds the old length and the data.
                let len = std::fs::metadata(&target)
                    .map_err(|e| BankError::io(&target, e))?
                    .len();
                ops.push(JournalOp::Append {
                    target: rel.to_string(),
                    len,
                    data: content.clone(),
                });
                continue;
            }
            let mut staged = None;
            if let Change::Write { content, .. } = c {
                step(&format!("stage {rel}"))?;
                std::fs::create_dir_all(&dir).map_err(|e| BankError::io(&dir, e))?;
                let s = temp_name(&target, STAGE_MARK)?;
                created.push(s.clone());
                write_synced(&s, content.as_bytes())?;
                if let Ok(m) = std::fs::metadata(&target) {
                    std::fs::set_permissions(&s, m.permissions())
                        .map_err(|e| BankError::io(&s, e))?;
                }
                staged = Some(rel_of(bank, &s));
            }
            let backup = if *exists {
                step(&format!("back up {rel}"))?;
                let b = temp_name(&target, BACKUP_MARK)?;
                created.push(b.clone());
                make_backup(&target, &b)?;
                Some(rel_of(bank, &b))
            } else {
                None
            };
            ops.push(match staged {
                Some(staged) => JournalOp::Rename {
                    staged,
                    target: rel.to_string(),
                    backup,
                },
                None => JournalOp::Delete {
                    target: rel.to_string(),
                    backup,
                },
            });
        }
        for d in &dirs {
            fsync_dir(d)?;
        }
        let journal = Journal {
            version: JOURNAL_VERSION,
            state: State::Forward,
            reason: None,
            ops,
        };
        step("write the journal")?;
        let jstaged = write_journal_temp(bank, &journal)?;
        created.push(jstaged.clone());
        Ok((journal, jstaged))
    })();
    let (journal, jstaged) = match staged_journal {
        Ok(j) => j,
        Err(e) => {
            for p in &created {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    // 2. The commit point.
    let committed = step("commit point (journal renamed into place)")
        .and_then(|()| std::fs::rename(&jstaged, &jpath).map_err(|e| BankError::io(&jpath, e)));
    if let Err(e) = committed {
        for p in &created {
            let _ = std::fs::remove_file(p);
        }
        return Err(e);
    }
    // 3 + 4. Apply and finish, or undo.
    let changed: Vec<String> = effective.iter().map(|(c, _)| c.rel().to_string()).collect();
    let synced = fsync_dir(&bank.path(TMP_DIR));
    match settle(bank, journal, synced.err())? {
        Settled::Forward(_) => Ok(changed),
        Settled::RolledBack(cause) => Err(BankError::RolledBack { cause }),
    }
}

fn write_journal_temp(bank: &Bank, journal: &Journal) -> Result<PathBuf> {
    let text = serde_json::to_string_pretty(journal)
        .map_err(|e| BankError::Refused(format!("cannot encode the journal: {e}")))?;
    let jpath = bank.path(JOURNAL);
    let jstaged = temp_name(&jpath, STAGE_MARK)?;
    write_synced(&jstaged, text.as_bytes())?;
    Ok(jstaged)
}

fn read_journal(bank: &Bank) -> Result<Option<Journal>> {
    let jpath = bank.path(JOURNAL);
    let text = match std::fs::read_to_string(&jpath) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BankError::io(&jpath, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| BankError::Journal {
            path: jpath.clone(),
            message: e.to_string(),
        })
}

enum Settled {
    /// Rolled forward: the number of operations.
    Forward(usize),
    /// Rolled back, with the reason.
    RolledBack(String),
}

/// Finishes a journal: forward when possible, else back. `failed` is an
/// error that already happened after the commit point.
fn settle(bank: &Bank, mut journal: Journal, failed: Option<BankError>) -> Result<Settled> {
    let jpath = bank.path(JOURNAL);
    if journal.state == State::Forward {
        let forward = match failed {
            Some(e) => Err(e),
            None => roll_forward(bank, &journal).and_then(|()| {
                step("remove the journal")?;
                std::fs::remove_file(&jpath).map_err(|e| BankError::io(&jpath, e))
            }),
        };
        match forward {
            Ok(()) => {
                // The commit has landed; backups left by a failure here are
                // removed by the next recovery.
                let _ = fsync_dir(&bank.path(TMP_DIR));
                for op in &journal.ops {
                    if let Some(b) = op.backup() {
                        if step(&format!("remove the backup of {}", op.target())).is_err() {
                            continue;
                        }
                        let _ = std::fs::remove_file(bank.path(b));
                    }
                }
                return Ok(Settled::Forward(journal.ops.len()));
            }
            Err(e) => {
                if journal.version < JOURNAL_VERSION {
                    return Err(BankError::Stuck {
                        path: jpath,
                        message: format!(
                            "an interrupted commit cannot be finished ({e}) and its journal (version {}) has no backups to roll it back",
                            journal.version
                        ),
                    });
                }
                journal.state = State::Rollback;
                journal.reason = Some(e.to_string());
                let marked = step("mark the journal for rollback")
                    .and_then(|()| write_journal_temp(bank, &journal))
                    .and_then(|t| {
                        std::fs::rename(&t, &jpath).map_err(|e| {
                            let _ = std::fs::remove_file(&t);
                            BankError::io(&jpath, e)
                        })
                    });
                if let Err(m) = marked {
                    return Err(stuck(&jpath, &e.to_string(), &m));
                }
            }
        }
    }
    let reason = journal
        .reason
        .clone()
        .unwrap_or_else(|| "an earlier attempt failed".into());
    roll_back(bank, &journal)
        .and_then(|()| {
            step("remove the rolled-back journal")?;
            std::fs::remove_file(&jpath).map_err(|e| BankError::io(&jpath, e))
        })
        .map_err(|e| stuck(&jpath, &reason, &e))?;
    let _ = fsync_dir(&bank.path(TMP_DIR));
    Ok(Settled::RolledBack(reason))
}

fn stuck(jpath: &Path, reason: &str, e: &BankError) -> BankError {
    BankError::Stuck {
        path: jpath.to_path_buf(),
        message: format!(
            "an interrupted commit could not be finished ({reason}) nor rolled back ({e})"
        ),
    }
}

fn roll_forward(bank: &Bank, journal: &Journal) -> Result<()> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for op in &journal.ops {
        let target = bank.path(op.target());
        match op {
            JournalOp::Rename { staged, .. } => {
                step(&format!("rename over {}", op.target()))?;
                let s = bank.path(staged);
                if s.exists() {
                    std::fs::rename(&s, &target).map_err(|e| BankError::io(&target, e))?;
                }
            }
            JournalOp::Delete { .. } => {
                step(&format!("delete {}", op.target()))?;
                match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(BankError::io(&target, e)),
                }
            }
            JournalOp::Append { len, data, .. } => {
                step(&format!("append to {}", op.target()))?;
                append_at(&target, *len, data.as_bytes())?;
            }
        }
        let dir = parent_of(&target);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for d in &dirs {
        fsync_dir(d)?;
    }
    Ok(())
}

fn remove_if_present(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BankError::io(p, e)),
    }
}

/// Undoes a journal (idempotent, so an interrupted rollback is finished by
/// the next recovery): a staged file still present means its rename did
/// not happen; otherwise the backup goes back over the target, or a new
/// target is removed.
fn roll_back(bank: &Bank, journal: &Journal) -> Result<()> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for op in journal.ops.iter().rev() {
        let target = bank.path(op.target());
        step(&format!("undo {}", op.target()))?;
        let backup = op.backup().map(|b| bank.path(b));
        match op {
            JournalOp::Rename { staged, .. } => {
                let s = bank.path(staged);
                if s.exists() {
                    if let Some(b) = &backup {
                        remove_if_present(b)?;
                    }
                    remove_if_present(&s)?;
                } else if let Some(b) = &backup {
                    if b.exists() {
                        std::fs::rename(b, &target).map_err(|e| BankError::io(&target, e))?;
                    }
                } else if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file()) {
                    remove_if_present(&target)?;
                }
            }
            JournalOp::Append { len, .. } => {
                if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file()) {
                    truncate_to(&target, *len)?;
                }
            }
            JournalOp::Delete { .. } => {
                if let Some(b) = &backup
                    && b.exists()
                {
                    if std::fs::symlink_metadata(&target).is_err() {
                        std::fs::rename(b, &target).map_err(|e| BankError::io(&target, e))?;
                    } else {
                        remove_if_present(b)?;
                    }
                }
            }
        }
        let dir = parent_of(&target);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for d in &dirs {
        fsync_dir(d)?;
    }
    Ok(())
}

/// What [`recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Operations of an interrupted commit that were finished (roll forward).
    pub rolled_forward: usize,
    /// mnemo's own temporary files without a journal (staged files and
    /// backups of an interrupted commit), removed (roll back).
    pub rolled_back: usize,
    /// An interrupted commit that could not be finished and was rolled
    /// back: why.
    pub rolled_back_commit: Option<String>,
    /// Other `*.tmp` files in the bank (not mnemo's): left in place.
    pub other_tmp: Vec<String>,
}

impl Recovery {
    /// Whether anything was done.
    pub fn is_empty(&self) -> bool {
        self.rolled_forward == 0 && self.rolled_back == 0 && self.rolled_back_commit.is_none()
    }
}

/// Finishes or rolls back an interrupted commit, removes mnemo's own
/// orphaned temporary files and lists the other `*.tmp` files. Must run
/// under the lock.
pub fn recover(bank: &Bank, _lock: &BankLock) -> Result<Recovery> {
    let mut rec = Recovery::default();
    if let Some(journal) = read_journal(bank)? {
        match settle(bank, journal, None)? {
            Settled::Forward(n) => rec.rolled_forward = n,
            Settled::RolledBack(why) => rec.rolled_back_commit = Some(why),
        }
    }
    for path in walk(bank.root()) {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if !name.ends_with(".tmp") {
            continue;
        }
        if is_own_temp(&name) {
            // Under the lock, with no journal left, it is an orphan.
            if std::fs::remove_file(&path).is_ok() {
                rec.rolled_back += 1;
            }
            continue;
        }
        rec.other_tmp.push(rel_of(bank, &path));
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

    #[test]
    fn own_temp_pattern_is_exact() {
        assert!(is_own_temp(".a.md.mnemo-stage-12-345-6.tmp"));
        assert!(is_own_temp(".journal.json.mnemo-backup-1-0-0.tmp"));
        for name in [
            "a.md.mnemo-stage-12-345-6.tmp",
            ".a.md.mnemo-stage-12-345.tmp",
            ".a.md.mnemo-stage-12-345-6-7.tmp",
            ".a.md.mnemo-stage-1x-345-6.tmp",
            "..mnemo-stage-1-2-3.tmp",
            ".a.md.mnemo-stage-1-2-3.tmp.orig",
            "sprint-12.tmp",
            "ideas.tmp",
        ] {
            assert!(!is_own_temp(name), "{name}");
        }
    }

    #[test]
    fn crlf_files_get_crlf_rows() {
        let old = "# T\r\n\r\nhuman\r\n";
        assert_eq!(
            match_line_endings(old, "# T\r\n\r\nhuman\r\n- new\n".into()),
            "# T\r\n\r\nhuman\r\n- new\r\n"
        );
        // Mixed or LF files keep what mnemo writes.
        assert_eq!(match_line_endings("# T\r\nx\n", "a\n".into()), "a\n");
        assert_eq!(match_line_endings("# T\n", "a\n".into()), "a\n");
    }

    /// A journal whose second rename cannot be done (a directory stands at
    /// its target) is undone: the first target gets its old bytes back,
    /// the new file is removed, staged files and backups are gone.
    #[test]
    fn a_journal_that_cannot_be_applied_is_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bank = Bank::new(root);
        let l = lock(&bank, Duration::from_secs(5)).unwrap();
        std::fs::write(root.join("a.md"), "# old A\n").unwrap();
        // The first op was already applied before a crash: a.md has the
        // new content and its backup holds the old one.
        std::fs::hard_link(root.join("a.md"), root.join(".a.md.mnemo-backup-1-2-1.tmp")).unwrap();
        std::fs::write(root.join(".a.md.mnemo-stage-1-2-0.tmp"), "# new A\n").unwrap();
        std::fs::rename(root.join(".a.md.mnemo-stage-1-2-0.tmp"), root.join("a.md")).unwrap();
        std::fs::write(root.join(".n.md.mnemo-stage-1-2-2.tmp"), "# N\n").unwrap();
        std::fs::write(root.join(".z.md.mnemo-stage-1-2-3.tmp"), "# Z\n").unwrap();
        std::fs::create_dir(root.join("z.md")).unwrap();
        std::fs::write(root.join("z.md/person.md"), "mine").unwrap();
        std::fs::write(
            root.join(JOURNAL),
            r#"{"version":2,"ops":[
                {"op":"rename","staged":".a.md.mnemo-stage-1-2-0.tmp","target":"a.md","backup":".a.md.mnemo-backup-1-2-1.tmp"},
                {"op":"rename","staged":".n.md.mnemo-stage-1-2-2.tmp","target":"n.md"},
                {"op":"rename","staged":".z.md.mnemo-stage-1-2-3.tmp","target":"z.md"}]}"#,
        )
        .unwrap();
        let r = recover(&bank, &l).unwrap();
        let why = r.rolled_back_commit.expect("rolled back");
        assert!(why.contains("z.md"), "{why}");
        assert_eq!(
            std::fs::read_to_string(root.join("a.md")).unwrap(),
            "# old A\n"
        );
        assert!(!root.join("n.md").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("z.md/person.md")).unwrap(),
            "mine"
        );
        assert!(!root.join(JOURNAL).exists());
        let left: Vec<_> = walk(root)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".mnemo-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // A second recovery has nothing to do.
        assert!(recover(&bank, &l).unwrap().is_empty());
    }

    /// An append lands in place: the file is not replaced (same inode),
    /// a re-commit of nothing changes nothing, and a new file is created.
    #[test]
    fn an_append_extends_the_file_in_place() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bank = Bank::new(root);
        let l = lock(&bank, Duration::from_secs(5)).unwrap();
        let append = |content: &str| Change::Append {
            rel: "_xref/log.jsonl".into(),
            content: content.into(),
        };
        assert_eq!(
            commit(&bank, &l, &[append("{\"a\":1}\n")]).unwrap().len(),
            1
        );
        let ino = std::fs::metadata(root.join("_xref/log.jsonl"))
            .unwrap()
            .ino();
        let changed = commit(
            &bank,
            &l,
            &[
                Change::Write {
                    rel: "a.md".into(),
                    content: "# A\n".into(),
                },
                append("{\"b\":2}\n"),
            ],
        )
        .unwrap();
        assert_eq!(changed, ["a.md", "_xref/log.jsonl"]);
        let log = root.join("_xref/log.jsonl");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(std::fs::metadata(&log).unwrap().ino(), ino);
        assert!(commit(&bank, &l, &[append("")]).unwrap().is_empty());
        // A CRLF log gets CRLF lines.
        std::fs::write(&log, "x\r\ny\r\n").unwrap();
        commit(&bank, &l, &[append("z\n")]).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "x\r\ny\r\nz\r\n");
        let left: Vec<_> = walk(root)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".mnemo-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// A crash in the middle of an append (part of the line written, the
    /// journal in place): recovery cuts the torn bytes and writes the whole
    /// line; a journal marked for rollback cuts the file back to its old
    /// length; a file shorter than the journal says is refused, and the
    /// rollback leaves it alone.
    #[test]
    fn a_torn_append_is_finished_or_cut_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bank = Bank::new(root);
        let l = lock(&bank, Duration::from_secs(5)).unwrap();
        let log = root.join("log.jsonl");
        let journal = |state: &str, len: u64| {
            format!(
                r#"{{"version":2,"state":"{state}","ops":[{{"op":"append","target":"log.jsonl","len":{len},"data":"{{\"b\":2}}\n"}}]}}"#
            )
        };
        std::fs::create_dir_all(root.join(TMP_DIR)).unwrap();
        // Forward: the torn `{"b` is replaced by the whole line.
        std::fs::write(&log, "{\"a\":1}\n{\"b").unwrap();
        std::fs::write(root.join(JOURNAL), journal("forward", 8)).unwrap();
        let r = recover(&bank, &l).unwrap();
        assert_eq!(r.rolled_forward, 1);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        assert!(!root.join(JOURNAL).exists());
        // Back: cut to the old length.
        std::fs::write(root.join(JOURNAL), journal("rollback", 8)).unwrap();
        let r = recover(&bank, &l).unwrap();
        assert!(r.rolled_back_commit.is_some());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "{\"a\":1}\n");
        // A file shorter than the journal's length: the append is refused
        // and rolled back, which leaves the shorter file as it is.
        std::fs::write(&log, "{\"a\"").unwrap();
        std::fs::write(root.join(JOURNAL), journal("forward", 8)).unwrap();
        let r = recover(&bank, &l).unwrap();
        let why = r.rolled_back_commit.expect("refused");
        assert!(why.contains("shorter"), "{why}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "{\"a\"");
        assert!(!root.join(JOURNAL).exists());
    }

    /// The end of a file from a line start, or all of a short file.
    #[test]
    fn tails_start_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "first line\nsecond\nthird\n").unwrap();
        assert_eq!(
            read_tail(&p, 100).unwrap(),
            (24, "first line\nsecond\nthird\n".into())
        );
        assert_eq!(read_tail(&p, 10).unwrap(), (24, "third\n".into()));
        assert_eq!(read_tail(&p, 13).unwrap(), (24, "third\n".into()));
        assert_eq!(read_tail(&p, 14).unwrap(), (24, "second\nthird\n".into()));
        // A cut inside a multi-byte character is skipped with its line.
        std::fs::write(&p, "ééé\nx\n").unwrap();
        assert_eq!(read_tail(&p, 5).unwrap().1, "x\n");
    }

    /// An old (version 1) journal has no backups: when it cannot be
    /// applied, every command stops with what to do.
    #[test]
    fn an_old_journal_that_cannot_be_applied_is_stuck_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bank = Bank::new(root);
        let l = lock(&bank, Duration::from_secs(5)).unwrap();
        std::fs::write(root.join(".z.md.mnemo-stage-1-2-3.tmp"), "# Z\n").unwrap();
        std::fs::create_dir(root.join("z.md")).unwrap();
        std::fs::write(
            root.join(JOURNAL),
            r#"{"version":1,"ops":[{"op":"rename","staged":".z.md.mnemo-stage-1-2-3.tmp","target":"z.md"}]}"#,
        )
        .unwrap();
        let e = recover(&bank, &l).unwrap_err();
        assert!(matches!(e, BankError::Stuck { .. }), "{e}");
        assert!(e.to_string().contains("z.md"), "{e}");
        assert!(e.hint().unwrap().contains("mnemo doctor"));
        std::fs::remove_dir(root.join("z.md")).unwrap();
        let r = recover(&bank, &l).unwrap();
        assert_eq!(r.rolled_forward, 1);
        assert_eq!(std::fs::read_to_string(root.join("z.md")).unwrap(), "# Z\n");
    }
}
