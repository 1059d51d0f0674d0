//! Rollback through git (seed §16): history and restore of bank files with
//! the `git` binary. A restore refuses to run when the file has uncommitted
//! changes that it would destroy, and lands through the bank's atomic commit.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::layout::Bank;
use crate::txn::{self, Change};
use crate::{BankError, Result};

fn split(file: &Path) -> Result<(PathBuf, String)> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = file
        .file_name()
        .ok_or_else(|| BankError::Git(format!("{}: not a file path", file.display())))?
        .to_string_lossy()
        .into_owned();
    Ok((dir, name))
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| BankError::Git(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(BankError::Git(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| BankError::Git(format!("git {}: output is not UTF-8", args.join(" "))))
}

/// One commit that touched a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Full hash.
    pub rev: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Subject line.
    pub subject: String,
}

/// The commits that touched `file`, newest first.
pub fn history(file: &Path) -> Result<Vec<Revision>> {
    let (dir, name) = split(file)?;
    let out = git(
        &dir,
        &[
            "log",
            "--format=%H%x09%ad%x09%s",
            "--date=short",
            "--",
            &name,
        ],
    )?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, '\t');
            Some(Revision {
                rev: it.next()?.to_string(),
                date: it.next()?.to_string(),
                subject: it.next().unwrap_or_default().to_string(),
            })
        })
        .collect())
}

/// Restores `file` (inside `bank`) to its content at `rev`. Refuses when the
/// file has uncommitted changes. Returns the one-line report.
pub fn restore(
    bank: &Bank,
    file: &Path,
    rev: &str,
    timeout: std::time::Duration,
) -> Result<String> {
    if rev.starts_with('-') || rev.contains(':') {
        return Err(BankError::Git(format!("{rev:?} is not a revision")));
    }
    let (dir, name) = split(file)?;
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let rel = canon(file)
        .strip_prefix(canon(bank.root()))
        .map_err(|_| {
            BankError::Refused(format!(
                "{}: not inside the bank {}",
                file.display(),
                bank.root().display()
            ))
        })?
        .to_string_lossy()
        .replace('\\', "/");
    let (lock, _) = crate::ops::open_locked(bank, timeout)?;
    let status = git(&dir, &["status", "--porcelain", "--", &name])?;
    if !status.trim().is_empty() {
        return Err(BankError::Git(format!(
            "{}: has uncommitted changes that a restore would destroy; commit or stash them first",
            file.display()
        )));
    }
    let content = git(&dir, &["show", &format!("{rev}:./{name}")])?;
    let changed = txn::commit(
        bank,
        &lock,
        &[Change::Write {
            rel: rel.clone(),
            content,
        }],
    )?;
    let short: String = rev.chars().take(12).collect();
    Ok(if changed.is_empty() {
        format!("{rel} already matches {short}")
    } else {
        format!("Restored {rel} to {short}")
    })
}
