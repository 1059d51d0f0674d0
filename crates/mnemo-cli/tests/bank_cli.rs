#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The bank commands through the binary: exact one-line reports, errors
//! that name the file, nothing written on failure, history and restore.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-bank/tests/fixtures")
        .join(name)
}

fn mnemo(cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.current_dir(cwd).env_remove("MNEMO_CONFIG");
    c
}

fn gate(cwd: &Path, phase: &str, files: &[&str]) -> assert_cmd::assert::Assert {
    let mut c = mnemo(cwd);
    c.args([
        "--bank",
        "bank",
        "gate",
        "--phase",
        phase,
        "--from",
        "hermes",
        "--to",
        "aphrodite",
        "--date",
        "2026-06-20",
    ]);
    for f in files {
        c.arg(fixture(f));
    }
    c.assert()
}

#[test]
fn gate_prints_the_confirmation_line_and_handoff_the_block() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_bank::init_bank(&dir.path().join("bank")).unwrap();
    gate(
        dir.path(),
        "1",
        &["hermes.json", "demeter.yaml", "aphrodite.md"],
    )
    .success()
    .stdout(
        "Compression complete: 3 entries compressed (2 CRITICAL, 1 HIGH), 2 cross-refs added\n",
    );
    // Same input again: same line, nothing added.
    gate(
        dir.path(),
        "1",
        &["hermes.json", "demeter.yaml", "aphrodite.md"],
    )
    .success()
    .stdout(
        "Compression complete: 3 entries compressed (2 CRITICAL, 1 HIGH), 0 cross-refs added\n",
    );
    mnemo(dir.path())
        .args(["--bank", "bank", "handoff", "--phase", "1"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "## Previous Wave Learnings\n_(no learnings recorded)_\n\n## Compressed Context (Phase 1 → Phase 2)\n# Phase 1 → Phase 2 Context\n",
        ))
        .stdout(predicate::str::ends_with(
            "Apply these learnings and context to your implementation.\n",
        ));
    mnemo(dir.path())
        .args(["--bank", "bank", "doctor"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "Bank OK: 4 files checked, 0 problems",
        ));
    mnemo(dir.path())
        .args(["--bank", "bank", "trim", "--date", "2026-06-20"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("C7 trim: nothing to trim"));
    mnemo(dir.path())
        .args([
            "--bank",
            "bank",
            "feature-complete",
            "--feature",
            "auth",
            "--date",
            "2026-06-21",
        ])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "Feature complete: auth recorded",
        ));
    mnemo(dir.path())
        .args(["--bank", "bank", "sprint-close", "--date", "2026-06-30"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "Sprint close: 0 artifacts archived",
        ));
}

#[test]
fn failures_name_the_file_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    mnemo_bank::init_bank(&root).unwrap();
    let before = std::fs::read(root.join("01-active-context.md")).unwrap();
    std::fs::write(dir.path().join("bad.json"), "{\n \"summary\": [1,\n").unwrap();
    mnemo(dir.path())
        .args([
            "--bank", "bank", "gate", "--phase", "1", "--from", "a", "--to", "b", "bad.json",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad.json:"));
    mnemo(dir.path())
        .args([
            "--bank", "bank", "gate", "--phase", "1", "--from", "hermes", "--to", "b",
        ])
        .arg(fixture("tainted.json"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("denied by the Guardian"));
    mnemo(dir.path())
        .args(["--bank", "bank", "handoff", "--phase", "9"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("ZZ-phase9-context.md"));
    mnemo(dir.path())
        .args(["--bank", "nowhere", "doctor"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("nowhere: no memory bank here"));
    assert_eq!(
        before,
        std::fs::read(root.join("01-active-context.md")).unwrap()
    );
    assert!(!root.join(".tmp/journal.json").exists());
    // A malformed index: doctor reports the line and fails, changing nothing.
    std::fs::write(
        root.join("_xref/index.md"),
        "# X\n\n## By Entity\n| Entity ID | Type | Name | Location | Phase | Agent |\n|-|-|-|-|-|-|\n| X12 | endpoint | GET /a | a | P1 | H |\n",
    )
    .unwrap();
    std::fs::write(root.join(".tmp/stray.bin"), "x").unwrap();
    mnemo(dir.path())
        .args(["--bank", "bank", "doctor"])
        .assert()
        .failure()
        .stdout(predicate::str::starts_with("Bank has problems"))
        .stderr(predicate::str::contains("_xref/index.md:6:"))
        .stderr(predicate::str::contains(
            ".tmp/stray.bin: unrecognised .tmp artifact, left in place",
        ));
    assert!(root.join(".tmp/stray.bin").exists());
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn history_and_restore_over_git() {
    if !mnemo_testkit::require_command("git", &["--version"], "history and restore use git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    mnemo_bank::init_bank(&root).unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "empty bank"]);
    let empty = std::fs::read(root.join("01-active-context.md")).unwrap();
    gate(dir.path(), "1", &["hermes.json"]).success();
    git(dir.path(), &["commit", "-qam", "gate 1"]);
    mnemo(dir.path())
        .args(["--bank", "bank", "history", "bank/01-active-context.md"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gate 1"))
        .stdout(predicate::str::contains(
            "bank/01-active-context.md: 2 revisions",
        ));
    // Uncommitted changes: refused, nothing changed.
    let mut text = std::fs::read_to_string(root.join("01-active-context.md")).unwrap();
    text.push_str("hand edit\n");
    std::fs::write(root.join("01-active-context.md"), &text).unwrap();
    mnemo(dir.path())
        .args([
            "--bank",
            "bank",
            "restore",
            "bank/01-active-context.md",
            "--to",
            "HEAD~1",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("uncommitted changes"));
    assert_eq!(
        text,
        std::fs::read_to_string(root.join("01-active-context.md")).unwrap()
    );
    git(
        dir.path(),
        &["checkout", "-q", "--", "bank/01-active-context.md"],
    );
    mnemo(dir.path())
        .args([
            "--bank",
            "bank",
            "restore",
            "bank/01-active-context.md",
            "--to",
            "HEAD~1",
        ])
        .assert()
        .success()
        .stdout("Restored 01-active-context.md to HEAD~1\n");
    assert_eq!(
        empty,
        std::fs::read(root.join("01-active-context.md")).unwrap()
    );
}
