//! `mnemo hook …` as a host runs it: hook JSON on stdin, the transcript it
//! names, the answer in the host's own format, the decision recorded in the
//! session store named by `--store` (or `$MNEMO_HOME`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-hooks/tests/fixtures")
        .join(rel)
}

fn hook_input(input: &str, transcript: &str) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(input)).unwrap()).unwrap();
    v["transcript_path"] = fixture(transcript).to_string_lossy().into_owned().into();
    v.to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mnemo-hook-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn claude_code_hook_blocks_with_exit_2_and_records_in_mnemo_home() {
    let home = tmp("claude");
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "claude-code", "pre-compact"])
        .env("MNEMO_HOME", &home)
        .write_stdin(hook_input(
            "claude/precompact-auto.json",
            "claude/transcript-tainted.jsonl",
        ))
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "mnemo guardian blocked compaction:",
        ))
        .stderr(predicate::str::contains("re-grounding"));
    // The store is where MNEMO_HOME says, and holds the decision.
    let db = home.join("guardian.sqlite3");
    assert!(db.is_file());
    let mut s = mnemo_guardian_store::SqliteStore::open(&db).unwrap();
    use mnemo_guardian::SessionStore;
    let last = s
        .last_compaction("3f2b9c1e-5d6a-4e8b-9c0d-1a2b3c4d5e6f")
        .unwrap()
        .unwrap();
    assert_eq!(last.verdict, mnemo_guardian::Verdict::Deny);
    // Manual compaction is the operator's override: allowed, silent.
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "claude-code", "pre-compact", "--block-with", "json"])
        .env("MNEMO_HOME", &home)
        .write_stdin(hook_input(
            "claude/precompact-manual.json",
            "claude/transcript-tainted.jsonl",
        ))
        .assert()
        .code(0)
        // Allowed: the artifact trail goes to the compactor (stdout, exit 0).
        .stdout(predicate::str::starts_with("# mnemo trail:"))
        .stderr("");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn codex_hook_answers_in_codex_format_with_an_explicit_store() {
    let dir = tmp("codex");
    let store = dir.join("state").join("g.sqlite3");
    let out = Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "codex", "pre-compact", "--store"])
        .arg(&store)
        .env_remove("MNEMO_HOME")
        .write_stdin(hook_input(
            "codex/precompact-auto.json",
            "codex/rollout-tainted.jsonl",
        ))
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["continue"], false);
    assert!(
        v["stopReason"]
            .as_str()
            .unwrap()
            .contains("mnemo guardian blocked")
    );
    assert!(store.is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hook_with_memory_store_writes_nothing_and_bad_input_never_blocks() {
    let home = tmp("memory");
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "claude-code", "pre-compact", "--memory"])
        .env("MNEMO_HOME", &home)
        .write_stdin(hook_input(
            "claude/precompact-auto.json",
            "claude/transcript-regrounded.jsonl",
        ))
        .assert()
        .code(0);
    assert!(!home.join("guardian.sqlite3").exists());
    // Not JSON: an error that names stdin, exit 1 (a non-blocking error for both hosts).
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "claude-code", "pre-compact", "--memory"])
        .write_stdin("{not json")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "hook input on stdin is not valid JSON",
        ));
    // The same with the default store: nothing is created.
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "codex", "pre-compact"])
        .env("MNEMO_HOME", &home)
        .write_stdin("{not json")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "hook input on stdin is not valid JSON",
        ));
    assert!(
        !home.join("guardian.sqlite3").exists(),
        "bad input wrote the store"
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// The README's "try it" commands on the bundled examples, run from the
/// repository root as the README says.
#[test]
fn readme_guardian_examples_work_as_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ex = root.join("examples/guardian");
    let out = Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(&root)
        .args([
            "guard",
            "check",
            "--memory",
            "--policy",
            "examples/guardian/policy.toml",
        ])
        .pipe_stdin(ex.join("pre-compact.json"))
        .unwrap()
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["result"]["decision"], "deny", "{v}");
    assert_eq!(
        v["result"]["policy_data"]["aarm"]["earliest_untrusted_step_id"],
        "step-2"
    );
    assert!(
        v["result"]["reasoning"]
            .as_str()
            .unwrap()
            .contains("This ends with")
    );
    Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(&root)
        .args(["hook", "claude-code", "pre-compact", "--memory"])
        .pipe_stdin(ex.join("hook-input.json"))
        .unwrap()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("earliest at step e3"));
}

/// `codex exec` shows only "hook: PreCompact Stopped": `mnemo hook
/// decision` prints what the hook decided and why, from the store, without
/// changing it; a store or session with no decision says so and exits 1.
#[test]
fn hook_decision_prints_what_the_hook_decided_and_why() {
    let dir = tmp("decision");
    let store = dir.join("g.sqlite3");
    let decision = |args: &[&str]| {
        let mut c = Command::cargo_bin("mnemo").unwrap();
        c.args(["hook", "decision", "--store"])
            .arg(&store)
            .args(args)
            .env_remove("MNEMO_STORE");
        c
    };
    // No store yet: an error naming it, and nothing is created.
    decision(&[])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("no session store at"))
        .stderr(predicate::str::contains("g.sqlite3"));
    assert!(!store.exists());
    let input = hook_input("codex/precompact-auto.json", "codex/rollout-tainted.jsonl");
    let session = serde_json::from_str::<serde_json::Value>(&input).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let hook = Command::cargo_bin("mnemo")
        .unwrap()
        .args(["hook", "codex", "pre-compact", "--store"])
        .arg(&store)
        .write_stdin(input)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let said: serde_json::Value = serde_json::from_slice(&hook).unwrap();
    let before = std::fs::read(&store).unwrap();
    // Text: the verdict, the hook's own reasoning (its way out) and codes.
    let out = decision(&["--session", &session])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(&format!("session {session}: deny (preCompact ")),
        "{text}"
    );
    assert!(text.contains("\n  reasoning: "), "{text}");
    assert!(text.contains("re-ground"), "{text}");
    assert!(text.contains("\n  reason codes: "), "{text}");
    // JSON, and without --session the newest decision of any session.
    let out = decision(&["--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["session_id"], session.as_str());
    assert_eq!(v["verdict"], "deny");
    let reasoning = v["reasoning"].as_str().unwrap();
    assert!(
        said["stopReason"].as_str().unwrap().contains(reasoning),
        "the hook told Codex {} but the store says {reasoning}",
        said["stopReason"]
    );
    assert!(v["reason_codes"].as_array().is_some_and(|c| !c.is_empty()));
    // Another session: none recorded, exit 1, nothing on stdout.
    decision(&["--session", "no-such-session"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "no compaction decision is recorded for session no-such-session",
        ));
    // Read-only: the store's bytes are unchanged.
    assert_eq!(std::fs::read(&store).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}
