//! The habits a new user expects of the `mnemo` binary: positional arguments
//! are files, `-` is standard input, literal text goes in `--text` (and
//! `--input` still works); a closed pipe ends quietly; `mnemo mcp` ends
//! cleanly when its client goes; `guard check` exits non-zero on a JSON-RPC
//! error; `history` outside git says so; `--help` says what mnemo is for and
//! keeps the global options apart; `mnemo inline scrub` is scrub-secrets.py.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mnemo_in(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.current_dir(dir)
        .env_remove("MNEMO_CONFIG")
        .env("MNEMO_HOME", dir.join(".mnemo-home"));
    c
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap()
}

#[test]
fn stats_measures_the_file_not_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let batch = repo().join("examples/phase-batch.md");
    let size = std::fs::read_to_string(&batch).unwrap().chars().count();
    for args in [vec!["stats", "--json"], vec!["stats", "--json", "--input"]] {
        let out = mnemo_in(dir.path())
            .args(&args)
            .arg(&batch)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_eq!(json(&out.stdout)["chars"], size, "{args:?}");
    }
    // `-` is standard input; literal text is --text.
    let out = mnemo_in(dir.path())
        .args(["stats", "--json", "-"])
        .write_stdin("four")
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["chars"], 4);
    let out = mnemo_in(dir.path())
        .args(["stats", "--json", "--text", "-"])
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["chars"], 1);
}

#[test]
fn score_scores_the_file_not_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = mnemo_in(dir.path())
        .args(["score", "--json"])
        .arg(repo().join("examples/phase-batch.md"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let bands: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| json(l.as_bytes())["band"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(bands, ["CRITICAL", "CRITICAL", "MEDIUM", "LOW"]);
    mnemo_in(dir.path())
        .args(["score", "--json", "--text", "Added a new table"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "\"keywords_found\":[\"new table\"]",
        ));
    // A path that does not exist is an error about the file, not a score.
    mnemo_in(dir.path())
        .args(["score", "missing.md"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot read missing.md"));
}

#[test]
fn scrub_takes_input_and_text_too() {
    let dir = tempfile::tempdir().unwrap();
    let secret = format!("token ghp_{}", "a1B2c3D4e5".repeat(4).get(..36).unwrap());
    std::fs::write(dir.path().join("s.txt"), &secret).unwrap();
    for args in [
        vec!["scrub", "s.txt"],
        vec!["scrub", "--input", "s.txt"],
        vec!["scrub", "--text", secret.as_str()],
    ] {
        mnemo_in(dir.path())
            .args(&args)
            .assert()
            .success()
            .stdout(predicate::str::contains("[REDACTED:github-pat]"));
    }
}

#[test]
fn gate_takes_input_as_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_in(dir.path())
        .args([
            "--bank", "bank", "--quiet", "gate", "--phase", "2", "--from", "hermes",
        ])
        .args(["--to", "aphrodite", "--date", "2026-11-30", "--input"])
        .arg(repo().join("examples/phase-batch.json"))
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Compression complete:"));
}

/// Spawns `mnemo ARGS`, closes the reading end of its standard output at
/// once, and returns its exit status and standard error.
fn with_closed_stdout(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // More than a pipe's buffer, so that a write must fail.
    let big = "Added the login endpoint and its schema.\n".repeat(20_000);
    std::fs::write(dir.path().join("big.md"), &big).unwrap();
    let records: Vec<String> = (0..3000)
        .map(|i| format!("{{\"agent\": \"hermes\", \"phase\": \"{i}\", \"summary\": \"Added the login endpoint\"}}"))
        .collect();
    std::fs::write(
        dir.path().join("big.json"),
        format!("[{}]", records.join(",")),
    )
    .unwrap();
    for args in [
        vec!["--quiet", "scrub", "big.md"],
        vec!["stats", "big.md"],
        vec!["--quiet", "scrub", "--json", "big.md"],
        vec!["--quiet", "score", "--json", "big.json"],
        vec!["inline", "stats", "--text", "x"],
        vec!["--help"],
    ] {
        let (code, err) = with_closed_stdout(dir.path(), &args);
        assert_eq!(code, Some(0), "{:?}: {err}", &args[..2]);
        assert!(!err.contains("error"), "{:?}: {err}", &args[..2]);
    }
}

#[test]
fn mcp_ends_cleanly_when_stdin_closes_first() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_in(dir.path())
        .args(["--quiet", "mcp"])
        .write_stdin("")
        .assert()
        .code(0)
        .stderr("");
}

#[test]
fn guard_check_exits_1_on_an_error_answer_and_0_on_a_deny() {
    let dir = tempfile::tempdir().unwrap();
    let out = mnemo_in(dir.path())
        .args(["guard", "check", "--memory"])
        .write_stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"steps/preCompact\"}")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out.stdout).get("error").is_some());
    let request = std::fs::read(repo().join("examples/guardian/pre-compact.json")).unwrap();
    let out = mnemo_in(dir.path())
        .args(["guard", "check", "--memory", "--policy"])
        .arg(repo().join("examples/guardian/policy.toml"))
        .write_stdin(request)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out.stdout)["result"]["decision"], "deny");
    mnemo_in(dir.path())
        .args(["guard", "check", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 when it is a JSON-RPC error"))
        .stdout(predicate::str::contains("a deny is an answer"));
}

#[test]
fn history_outside_git_is_a_mnemo_error_with_a_hint() {
    if !mnemo_testkit::require_command("git", &["--version"], "history uses git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("01-active-context.md"), "# x\n").unwrap();
    mnemo_in(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .args(["history", "01-active-context.md"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not inside a git repository"))
        .stderr(predicate::str::contains("hint:"))
        .stderr(predicate::str::contains("fatal:").not());
}

#[test]
fn help_says_what_mnemo_is_for_and_separates_global_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = mnemo_in(dir.path()).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.starts_with("mnemo keeps the working memory"), "{help}");
    assert!(!help.contains("The mnemo command-line tool"));
    let out = mnemo_in(dir.path())
        .args(["score", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let (own, global) = help
        .split_once("Global options:")
        .expect("a Global options section");
    assert!(own.contains("--text") && !own.contains("--bank"), "{help}");
    assert!(global.contains("--bank") && global.contains("--config") && global.contains("--quiet"));
}

#[test]
fn inline_rejects_a_hyphen_value_as_argparse_does() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_in(dir.path())
        .args(["inline", "score", "--text", "-x"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::ends_with(
            "mnemo inline: error: argument --text: expected one argument\n",
        ));
    mnemo_in(dir.path())
        .args(["inline", "stats", "--text", "-x y"])
        .assert()
        .success()
        .stdout("{\"tokens\": 1, \"lines\": 1, \"chars\": 4}\n");
}

const PAT: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

#[test]
fn inline_scrub_stdin_like_scrub_secrets() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_in(dir.path())
        .args(["inline", "scrub", "--stdin"])
        .write_stdin(format!("push with {PAT}\r\nthen\n"))
        .assert()
        .success()
        .stdout("push with [GITHUB TOKEN REDACTED]\r\nthen\n")
        .stderr("  [REDACTED github_pat]\n");
    mnemo_in(dir.path())
        .args(["inline", "scrub"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "error: one of the arguments --file --stdin --audit is required",
        ));
}

#[test]
fn inline_scrub_file_keeps_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.md");
    let original = format!("token {PAT}\n");
    std::fs::write(&f, &original).unwrap();
    mnemo_in(dir.path())
        .args(["inline", "scrub", "--audit", "notes.md"])
        .assert()
        .success()
        .stdout("[SCAN] notes.md: 1 potential secret(s) found:\n   [github_pat] at (6, 46) -> [GITHUB TOKEN REDACTED]\n");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        original,
        "--audit writes nothing"
    );
    mnemo_in(dir.path())
        .args(["inline", "scrub", "--file", "notes.md"])
        .assert()
        .success()
        .stdout("[SECURE] notes.md: 1 secret(s) redacted (github_pat)\n   Backup: notes.md.bak\n");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "token [GITHUB TOKEN REDACTED]\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md.bak")).unwrap(),
        original
    );
    // A second file with a secret: the existing backup is kept as it is.
    std::fs::write(&f, format!("again {PAT}\n")).unwrap();
    mnemo_in(dir.path())
        .args(["inline", "scrub", "--file", "notes.md"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "[WARN] notes.md.bak already exists, skipping backup\n[SECURE] notes.md: 1 secret(s) redacted",
        ));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md.bak")).unwrap(),
        original
    );
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "again [GITHUB TOKEN REDACTED]\n"
    );
    // Nothing to redact: nothing written, no backup.
    std::fs::write(dir.path().join("clean.md"), "nothing here\n").unwrap();
    mnemo_in(dir.path())
        .args(["inline", "scrub", "--file", "clean.md"])
        .assert()
        .success()
        .stdout("[OK] clean.md: no secrets found, file unchanged\n");
    assert!(!dir.path().join("clean.md.bak").exists());
}

/// Runs `sh -c CMD` with a pseudo-terminal as its standard error (util-linux
/// `script`); returns what the terminal received.
fn on_a_terminal(dir: &Path, cmd: &str) -> Option<String> {
    if !mnemo_testkit::require_command(
        "script",
        &["--version"],
        "the progress tests need a pseudo-terminal (util-linux `script`)",
    ) {
        return None;
    }
    let out = std::process::Command::new("script")
        .current_dir(dir)
        .args(["-qec", cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn progress_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let line = "Added the login endpoint, its schema and the users table index.\n";
    std::fs::write(dir.path().join("big.txt"), line.repeat(40_000)).unwrap();
    let agents = [
        "hermes",
        "aphrodite",
        "demeter",
        "themis",
        "hephaestus",
        "prometheus",
    ];
    for (i, agent) in agents.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("s{i}.json")),
            format!("{{\"agent\": \"{agent}\", \"status\": \"complete\", \"summary\": \"Added endpoint {i}\"}}"),
        )
        .unwrap();
    }
    dir
}

#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let dir = progress_fixture();
    let bin = assert_cmd::cargo::cargo_bin("mnemo");
    let bin = bin.display();
    let files = (0..6).map(|i| format!("s{i}.json")).collect::<Vec<_>>();
    let cases = [
        (format!("{bin} scrub big.txt"), "scrubbing big.txt"),
        (
            format!(
                "{bin} --bank bank gate --phase 1 --from hermes --to themis --date 2026-11-30 {}",
                files.join(" ")
            ),
            "summaries",
        ),
        (
            format!("{bin} inline batch --files {}", files.join(",")),
            "compressing files",
        ),
    ];
    for (cmd, marker) in &cases {
        // On a terminal: drawn (standard output goes to a file).
        let Some(tty) = on_a_terminal(dir.path(), &format!("{cmd} > out.txt")) else {
            return;
        };
        assert!(
            tty.contains(marker),
            "{cmd}: no progress on the terminal: {tty:?}"
        );
        // With --quiet (where mnemo has it): not drawn.
        if !cmd.contains(" inline ") {
            let quiet = cmd.replacen(&bin.to_string(), &format!("{bin} --quiet"), 1);
            let tty = on_a_terminal(dir.path(), &format!("{quiet} > out.txt")).unwrap();
            assert!(
                !tty.contains(marker),
                "{quiet}: progress despite --quiet: {tty:?}"
            );
        }
        // In a pipe: never.
        let out = std::process::Command::new("sh")
            .current_dir(dir.path())
            .args(["-c", &format!("{cmd} > out.txt")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains(marker) && !err.contains('\u{1b}'),
            "{cmd}: progress in a pipe: {err:?}"
        );
    }
    // --json is machine output: no bar on a terminal either.
    let tty = on_a_terminal(dir.path(), &format!("{bin} scrub --json big.txt > out.txt")).unwrap();
    assert!(!tty.contains("scrubbing"), "{tty:?}");
}
