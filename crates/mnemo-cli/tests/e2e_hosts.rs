//! The compaction Guardian against the real Claude Code (npm
//! `@anthropic-ai/claude-code` 2.1.197, installed by
//! `.ci/setup.d/30-hosts.sh` into `$MNEMO_HOSTS_BIN`), driven offline by our
//! mock Messages API server (`tests/hosts/mock_anthropic.py`) inside
//! `unshare -n` with only loopback up. Under CI=true a missing host, or a
//! missing `unshare`, fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn hosts_bin() -> PathBuf {
    std::env::var_os("MNEMO_HOSTS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mnemo-hosts/node_modules/.bin"))
}

fn read(w: &Path, name: &str) -> String {
    std::fs::read_to_string(w.join(name)).unwrap_or_default()
}

fn result(w: &Path, name: &str) -> Value {
    serde_json::from_str(read(w, name).trim()).unwrap_or(Value::Null)
}

#[test]
fn claude_code_strict_deny_holds_through_two_compacts_and_the_override_allows() {
    let claude = hosts_bin().join("claude");
    if !claude.exists() {
        mnemo_testkit::skip(&format!(
            "Claude Code not installed at {} (.ci/setup.d/30-hosts.sh)",
            claude.display()
        ));
        return;
    }
    if !mnemo_testkit::require_command("unshare", &["-n", "true"], "a network namespace")
        || !mnemo_testkit::require_command("python3", &["-c", "pass"], "the mock model server")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hosts/claude_session.sh");
    let st = Command::new("timeout")
        .args(["600", "unshare", "-n", "sh", script])
        .arg(&claude)
        .arg(env!("CARGO_BIN_EXE_mnemo"))
        .arg(w)
        .status()
        .unwrap();
    assert!(st.success(), "driver: {st}");
    // The session read a file with an injected instruction through Read.
    let s1 = result(w, "s1.out");
    assert_eq!(s1["result"], "I read notes.md.", "{s1}");
    let transcript = PathBuf::from(read(w, "transcript_path").trim());
    let text = std::fs::read_to_string(&transcript).unwrap();
    // Strict policy (manual_override = false): /compact denied, and the
    // second /compact too (the host's /compact lines are not re-grounding).
    for step in ["c1.out", "c2.out"] {
        let r = result(w, step);
        let msg = r["result"].as_str().unwrap_or("");
        assert!(
            msg.starts_with("Compaction blocked by PreCompact hook"),
            "{step}: {r}"
        );
    }
    let stderr = read(w, "hook.stderr");
    let denies: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("mnemo guardian blocked compaction"))
        .collect();
    assert_eq!(denies.len(), 2, "{stderr}");
    assert!(
        denies[1].contains("1 untrusted entry since the last re-grounding"),
        "{stderr}"
    );
    // The entry cited is the Read tool's result.
    let step = denies[0]
        .split("earliest at step ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("\"uuid\":\"{step}\"")))
        .unwrap();
    assert!(line.contains("tool_result"), "{line}");
    // Manual override on: the third /compact goes through.
    assert_eq!(
        text.matches("\"compact_boundary\"").count(),
        1,
        "one compaction, the allowed one"
    );
    assert!(w.join("guardian.sqlite3").exists(), "decisions recorded");
}
