//! `mnemo scrub` as users drive it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn mnemo() -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.env_remove("MNEMO_CONFIG");
    c
}

/// A fake GitHub token, built so that no literal secret sits in the source.
fn fake_pat() -> String {
    format!(
        "ghp_{}",
        "a1B2c3D4e5".repeat(4).chars().take(36).collect::<String>()
    )
}

#[test]
fn json_redactions_point_into_the_original() {
    let input = format!(
        "deploy with token {} now\npassword: hunter2hunter2\n",
        fake_pat()
    );
    let out = mnemo()
        .args(["scrub", "--json", "-"])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["text"].as_str().unwrap();
    assert!(!text.contains(&fake_pat()));
    assert!(!text.contains("hunter2hunter2"));
    assert!(text.contains("[REDACTED:"));
    let reds = v["redactions"].as_array().unwrap();
    assert_eq!(reds.len(), 2, "{v}");
    let first = &reds[0];
    let (s, e) = (
        first["start"].as_u64().unwrap() as usize,
        first["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&input[s..e], fake_pat(), "offsets are bytes of the input");
    assert_eq!(
        first["replacement"],
        format!("[REDACTED:{}]", first["type"].as_str().unwrap())
    );
}

#[test]
fn streaming_output_is_scrubbed_and_rest_untouched() {
    let input = format!("line one\nkey {}\nline three\n", fake_pat());
    mnemo()
        .args(["scrub", "--quiet"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("line one\nkey [REDACTED:"))
        .stdout(predicate::str::ends_with("]\nline three\n"))
        .stderr("");
}

#[test]
fn audit_lists_findings_without_rewriting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.md");
    std::fs::write(&file, format!("# Notes\n\nthe token is {}\n", fake_pat())).unwrap();
    mnemo()
        .args(["scrub", "--audit"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("notes.md:3:14: github-"))
        .stdout(predicate::str::contains("[REDACTED").not());
}

#[test]
fn pantheon_style() {
    mnemo()
        .args(["scrub", "--style", "pantheon", "-", "--quiet"])
        .write_stdin("Authorization: Bearer abcdefghij0123456789")
        .assert()
        .success()
        .stdout("Authorization: Bearer [REDACTED]");
}

#[test]
fn missing_file_is_an_error() {
    mnemo()
        .args(["scrub", "/nonexistent/file.txt"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "cannot read /nonexistent/file.txt",
        ));
}
