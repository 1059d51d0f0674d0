//! `mnemo hook claude-code user-prompt-submit`: never a word on stdout (Claude
//! Code would add it to the prompt) and always exit 0 (exit 2 would drop the
//! user's prompt), whatever the input; the record lands beside the store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook that refuses its arguments exits before it reads stdin: a
    // broken pipe here is not the behaviour under test.
    let _ = c.stdin.take().unwrap().write_all(stdin);
    c.wait_with_output().unwrap()
}

#[test]
fn records_silently_and_never_blocks_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("guardian.sqlite3");
    let store = store.to_str().unwrap();
    let args = [
        "hook",
        "claude-code",
        "user-prompt-submit",
        "--store",
        store,
    ];
    let input = br#"{"session_id":"s-1","prompt_id":"p-1","hook_event_name":"UserPromptSubmit","prompt":"carry on, I checked it"}"#;
    let out = run(&args, input);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let rec = std::fs::read_to_string(dir.path().join("guardian.sqlite3.trails/s-1.prompt.json"))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&rec).unwrap();
    assert_eq!(v["prompt_id"], "p-1");
    assert_eq!(v["typed"], true);
    assert!(!rec.contains("carry on"), "the text is not kept: {rec}");
    for bad in [&b"not json"[..], b"", br#"{"session_id":"s-2"}"#] {
        let out = run(&args, bad);
        assert_eq!(out.status.code(), Some(0), "{bad:?}");
        assert!(out.stdout.is_empty());
        assert!(
            !out.stderr.is_empty(),
            "a note says why nothing was recorded"
        );
    }
}

/// A bad flag (a typo in the hook's configuration, an option of a newer
/// mnemo) must not drop the user's prompt: clap's usage error is printed on
/// stderr, nothing on stdout, exit 0, and nothing is recorded.
#[test]
fn a_bad_flag_never_blocks_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("guardian.sqlite3");
    let store = store.to_str().unwrap();
    let input = br#"{"session_id":"s-1","prompt_id":"p-1","hook_event_name":"UserPromptSubmit","prompt":"hello"}"#;
    let cases: [&[&str]; 4] = [
        &[
            "hook",
            "claude-code",
            "user-prompt-submit",
            "--no-such-flag",
        ],
        &["hook", "claude-code", "user-prompt-submit", "--store"],
        &[
            "hook",
            "claude-code",
            "user-prompt-submit",
            "--memory",
            "--store",
            store,
        ],
        &[
            "--bogus",
            "hook",
            "claude-code",
            "user-prompt-submit",
            "--store",
            store,
        ],
    ];
    for args in cases {
        let out = run(args, input);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:"), "{args:?}: {err}");
        assert!(err.contains("the prompt goes through"), "{args:?}: {err}");
    }
    assert!(
        !dir.path().join("guardian.sqlite3.trails").exists(),
        "nothing recorded"
    );
    // Other hooks keep clap's usage exit code.
    let out = run(
        &["hook", "claude-code", "pre-compact", "--no-such-flag"],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(2));
}
