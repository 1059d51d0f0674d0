//! `mnemo trail`: the binary on a Claude Code and a Codex transcript.

use assert_cmd::Command;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-trail/tests/golden")
        .join(name)
}

fn mnemo() -> Command {
    match Command::cargo_bin("mnemo") {
        Ok(c) => c,
        Err(e) => panic!("mnemo binary: {e}"),
    }
}

#[test]
fn prints_the_trail_as_the_golden_file() {
    let want = std::fs::read_to_string(fixture("claude.md")).unwrap_or_default();
    let out = mnemo()
        .arg("trail")
        .arg(fixture("claude.jsonl"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn json_counts_what_the_budget_left_out() {
    let out = mnemo()
        .args(["trail", "--json", "--budget", "120"])
        .arg(fixture("claude.jsonl"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["budget"], 120);
    assert!(v["tokens"].as_u64().unwrap_or(999) <= 120);
    let omitted = v["omitted"].as_u64().unwrap_or(0);
    assert!(omitted > 0);
    let facts = v["facts"].as_array().map(Vec::len).unwrap_or(0) as u64;
    assert_eq!(v["shown"].as_u64().unwrap_or(0) + omitted, facts);
    assert_eq!(v["host"], "claude-code");
}

#[test]
fn summary_check_prints_only_the_lost_facts() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let summary = dir.path().join("summary.txt");
    std::fs::write(
        &summary,
        "Edited export/run.py and wrote export/batch.py. `pytest export -q` → exit 0.",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = mnemo()
        .arg("trail")
        .arg(fixture("codex.jsonl"))
        .arg("--summary")
        .arg(&summary)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("python export/run.py --full"), "{s}");
    assert!(s.contains("Always keep the CSV header order."), "{s}");
    assert!(!s.contains("pytest export -q"), "{s}");
}

#[test]
fn a_missing_transcript_is_an_error_naming_it() {
    let out = mnemo()
        .args(["trail", "/nonexistent/t.jsonl"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/t.jsonl"));
    assert!(out.stdout.is_empty());
}
