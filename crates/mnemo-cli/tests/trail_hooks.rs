//! The trail across a compaction, as the hosts run the hooks: PreCompact
//! hands it to the compactor and keeps it, PostCompact checks the summary,
//! SessionStart re-injects what the summary lost; Codex gets it as
//! `systemMessage`. Every run uses its own `MNEMO_HOME` (a temp dir).

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-trail/tests/golden")
        .join(name)
}

fn hook(home: &Path, args: &[&str], stdin: String) -> std::process::Output {
    let mut c = match Command::cargo_bin("mnemo") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    c.arg("hook")
        .args(args)
        .env("MNEMO_HOME", home)
        .write_stdin(stdin)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn claude_code_trail_survives_compaction() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let input = serde_json::json!({
        "session_id": "s-1", "transcript_path": golden("claude.jsonl"), "cwd": "/home/dev/repo",
        "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": null,
    });
    let pre = hook(
        home.path(),
        &["claude-code", "pre-compact"],
        input.to_string(),
    );
    assert_eq!(pre.status.code(), Some(0), "{}", text(&pre.stderr));
    let trail = text(&pre.stdout);
    let want = std::fs::read_to_string(golden("claude.md")).unwrap_or_default();
    assert_eq!(trail, want, "the compactor gets the trail as plain text");
    assert!(!trail.contains("ghp_"), "scrubbed");
    let kept = home.path().join("guardian.sqlite3.trails/s-1.json");
    assert!(kept.is_file(), "trail kept in the store");

    // The summary keeps two facts; PostCompact records the rest as lost.
    let post = serde_json::json!({
        "session_id": "s-1", "hook_event_name": "PostCompact", "trigger": "manual",
        "compact_summary": "Fixed src/auth/redirect.rs. Never touch src/legacy/.",
    });
    let out = hook(
        home.path(),
        &["claude-code", "post-compact"],
        post.to_string(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());

    let start = serde_json::json!({"session_id": "s-1", "hook_event_name": "SessionStart", "source": "compact", "model": "m"});
    let out = hook(
        home.path(),
        &["claude-code", "session-start"],
        start.to_string(),
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("");
    assert!(ctx.contains("`cargo clippy -p auth` → exit 1"), "{ctx}");
    assert!(ctx.contains("GET /auth/callback"), "{ctx}");
    assert!(
        !ctx.contains("Never touch src/legacy/."),
        "survived, not re-injected: {ctx}"
    );
    assert!(!ctx.contains("edited src/auth/redirect.rs"), "{ctx}");
    // Every fact of the trail is in context: the summary's or the re-injected.
    for line in trail.lines().filter(|l| l.starts_with("- ")) {
        let fact = &line[2..];
        let in_summary =
            fact == "Never touch src/legacy/." || fact.contains("src/auth/redirect.rs");
        assert!(in_summary || ctx.contains(fact), "lost: {fact}");
    }

    // Another source: nothing to add.
    let start = serde_json::json!({"session_id": "s-1", "source": "startup"});
    let out = hook(
        home.path(),
        &["claude-code", "session-start"],
        start.to_string(),
    );
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn session_start_without_a_check_reinjects_the_whole_trail() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let input = serde_json::json!({"session_id": "s-2", "transcript_path": golden("claude.jsonl"), "trigger": "manual"});
    let pre = hook(
        home.path(),
        &["claude-code", "pre-compact"],
        input.to_string(),
    );
    assert!(pre.status.success());
    let start = serde_json::json!({"session_id": "s-2", "source": "compact"});
    let out = hook(
        home.path(),
        &["claude-code", "session-start"],
        start.to_string(),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        v["hookSpecificOutput"]["additionalContext"].as_str(),
        Some(text(&pre.stdout).as_str())
    );
}

#[test]
fn no_trail_flag_and_a_deny_print_no_trail() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let manual = serde_json::json!({"session_id": "s-3", "transcript_path": golden("claude.jsonl"), "trigger": "manual"});
    let out = hook(
        home.path(),
        &["claude-code", "pre-compact", "--no-trail"],
        manual.to_string(),
    );
    assert!(out.status.success() && out.stdout.is_empty());
    // Auto compaction over untrusted tool output: denied, and no trail.
    let auto = serde_json::json!({"session_id": "s-4", "transcript_path": golden("claude.jsonl"), "trigger": "auto"});
    let out = hook(
        home.path(),
        &["claude-code", "pre-compact"],
        auto.to_string(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        !home
            .path()
            .join("guardian.sqlite3.trails/s-4.json")
            .exists()
    );
}

#[test]
fn codex_gets_the_trail_as_system_message_before_and_after() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let input = serde_json::json!({
        "session_id": "c-1", "turn_id": "t", "transcript_path": golden("codex.jsonl"),
        "hook_event_name": "PreCompact", "model": "m", "trigger": "manual",
    });
    let out = hook(
        home.path(),
        &["codex", "pre-compact", "--trail-budget", "400"],
        input.to_string(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let msg = v["systemMessage"].as_str().unwrap_or("");
    assert!(
        msg.contains("`python export/run.py --full` → exit 137"),
        "{msg}"
    );
    assert!(v.get("continue").is_none());
    let post = serde_json::json!({"session_id": "c-1", "turn_id": "t", "hook_event_name": "PostCompact", "trigger": "manual"});
    let out = hook(home.path(), &["codex", "post-compact"], post.to_string());
    let v2: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v2["systemMessage"], v["systemMessage"]);
}
