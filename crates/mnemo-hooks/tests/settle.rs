//! Claude Code appends transcript lines on a timer (every 100 ms in
//! 2.1.197): when PreCompact runs, the lines the host queued just before it
//! (the Read result of the request that overflowed) can still be missing
//! from the file. Seen in the real host: an auto compaction after an
//! untrusted Read was allowed on a transcript that did not yet hold the Read.
//! An allow is only given on a transcript that stopped growing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::Verdict;
use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::run_pre_compact;
use mnemo_hooks::{BlockStyle, Host};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixture_lines() -> Vec<String> {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/claude/transcript-user-turn-pending.jsonl"
    ));
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

fn opts(dir: &Path) -> GuardOptions {
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "[compaction]\nmanual_override = false\n").unwrap();
    GuardOptions {
        policy: Some(policy),
        store: None,
        memory: true,
    }
}

fn pre_compact(dir: &Path, transcript: &Path) -> mnemo_hooks::io::HookRun {
    let input = serde_json::json!({
        "session_id": "settle-session",
        "transcript_path": transcript.to_string_lossy(),
        "cwd": dir.to_string_lossy(),
        "prompt_id": "p-settle",
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": null,
    });
    run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(dir),
        input.to_string().as_bytes(),
    )
    .unwrap()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn the_typed_prompt_alone_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    std::fs::write(&t, fixture_lines()[..5].concat()).unwrap();
    let run = pre_compact(dir.path(), &t);
    assert_eq!(run.decision.verdict, Verdict::Allow, "{:?}", run.output);
}

#[test]
fn a_read_result_the_host_writes_after_the_hook_started_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    let lines = fixture_lines();
    // The typed prompt and the host's attachments are on disk; the Read's
    // tool_use and its untrusted result land 120 ms later, as the host's
    // write timer drains its queue.
    std::fs::write(&t, lines[..5].concat()).unwrap();
    let later = lines[5..7].concat();
    let path = t.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(120));
        append(&path, &later);
    });
    let run = pre_compact(dir.path(), &t);
    writer.join().unwrap();
    assert_eq!(run.decision.verdict, Verdict::Deny, "{:?}", run.output);
    assert_eq!(run.output.exit_code, 2);
}

#[test]
fn a_transcript_that_keeps_growing_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    let lines = fixture_lines();
    std::fs::write(&t, lines[..5].concat()).unwrap();
    // Host bookkeeping lines (trusted) keep arriving for 4 s.
    let filler = lines[0].clone();
    let path = t.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let halt = stop.clone();
    let writer = std::thread::spawn(move || {
        for _ in 0..80 {
            if halt.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            append(&path, &filler);
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let run = pre_compact(dir.path(), &t);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(run.decision.verdict, Verdict::Deny, "{:?}", run.output);
    assert!(
        run.output.stderr.contains("kept growing"),
        "{}",
        run.output.stderr
    );
}
