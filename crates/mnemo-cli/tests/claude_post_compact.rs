//! `mnemo hook claude-code post-compact` on fixture hook inputs in the shape
//! the real Claude Code 2.1.197 sends (SPEC §6): the summary is scanned for
//! secrets whether or not a trail was kept, and the compaction is recorded
//! with its lineage. Each run uses its own `MNEMO_HOME`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn hook(home: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("hook")
        .args(args)
        .env("MNEMO_HOME", home)
        .env_remove("MNEMO_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn post_input(session: &str, summary: &str) -> String {
    serde_json::json!({
        "session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": "/p",
        "prompt_id": "p-1", "hook_event_name": "PostCompact", "trigger": "manual",
        "compact_summary": summary,
    })
    .to_string()
}

#[test]
fn a_secret_in_the_summary_is_reported_without_a_kept_trail() {
    let home = tempfile::tempdir().unwrap();
    // Built at run time: no secret-looking literal in the repository.
    let token = format!("ghp_{}", "A1b2C3d4E5".repeat(4).get(..36).unwrap());
    let summary = format!("<summary>\nDeployed.\nThe CI token is {token}.\n</summary>");
    let out = hook(
        home.path(),
        &["claude-code", "post-compact"],
        &post_input("s-x", &summary),
    );
    assert_eq!(out.status.code(), Some(0), "never blocks");
    assert!(
        out.stdout.is_empty(),
        "PostCompact prints nothing on stdout"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the compaction summary holds 1 secret (github-pat at line 3)"),
        "{err}"
    );
    assert!(
        !err.contains(&token),
        "the secret itself is never printed: {err}"
    );
    // A clean summary says nothing.
    let out = hook(
        home.path(),
        &["claude-code", "post-compact"],
        &post_input("s-y", "<summary>Nothing secret.</summary>"),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
