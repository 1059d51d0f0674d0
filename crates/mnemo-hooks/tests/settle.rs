//! Claude Code appends transcript lines on a timer (every 100 ms in
//! 2.1.197): when PreCompact runs, the lines the host queued just before it
//! (the Read result of the request that overflowed) can still be missing
//! from the file. Seen in the real host: an auto compaction after an
//! untrusted Read was allowed on a transcript that did not yet hold the Read.
//! An allow is only given on a transcript that stopped growing, unless no
//! line still to come could turn it into a deny (a manual compaction under
//! `manual_override`, `on_untrusted = "allow"`): that allow answers at once,
//! and PostCompact reads the transcript again so that the lines written
//! after it are in the summary's lineage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::Verdict;
use mnemo_guardian::policy::Trust;
use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::{
    read_transcript, run_post_compact_record, run_pre_compact, run_pre_compact_with,
};
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

/// Runs PreCompact with `policy` and `trigger`, counting the waits (the
/// sleeper runs `on_sleep` instead of sleeping).
fn pre_compact_counted(
    opts: &GuardOptions,
    dir: &Path,
    transcript: &Path,
    trigger: &str,
    mut on_sleep: impl FnMut(Duration),
) -> (mnemo_hooks::io::HookRun, usize) {
    let input = serde_json::json!({
        "session_id": "settle-session",
        "transcript_path": transcript.to_string_lossy(),
        "cwd": dir.to_string_lossy(),
        "prompt_id": "p-settle",
        "hook_event_name": "PreCompact",
        "trigger": trigger,
        "custom_instructions": null,
    });
    let mut waits = 0;
    let run = run_pre_compact_with(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        opts,
        input.to_string().as_bytes(),
        &mut |d| {
            waits += 1;
            on_sleep(d);
        },
    )
    .unwrap();
    (run, waits)
}

fn opts_with(dir: &Path, policy: &str, memory: bool) -> GuardOptions {
    let file = dir.join("policy.toml");
    std::fs::write(&file, policy).unwrap();
    GuardOptions {
        policy: Some(file),
        store: Some(dir.join("guardian.sqlite3")),
        memory,
    }
}

#[test]
fn an_allow_no_pending_line_can_turn_answers_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    let lines = fixture_lines();
    // the untrusted Read result is on disk already: the manual override is
    // what allows
    std::fs::write(&t, lines[..7].concat()).unwrap();
    for (policy, trigger) in [
        ("", "manual"),
        ("[compaction]\non_untrusted = \"allow\"\n", "auto"),
        (
            "[compaction.triggers]\nsize_threshold = \"allow\"\n",
            "auto",
        ),
    ] {
        let o = opts_with(dir.path(), policy, true);
        let (run, waits) = pre_compact_counted(&o, dir.path(), &t, trigger, |_| {});
        assert_eq!(run.decision.verdict, Verdict::Allow, "{policy:?} {trigger}");
        assert_eq!(waits, 0, "{policy:?} {trigger}: waited");
    }
}

#[test]
fn an_allow_a_pending_line_could_turn_still_waits_and_rereads() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    let lines = fixture_lines();
    std::fs::write(&t, lines[..5].concat()).unwrap();
    // the host's timer fires while the hook waits: the Read and its
    // untrusted result land then
    let later = lines[5..7].concat();
    let o = opts_with(dir.path(), "[compaction]\nmanual_override = false\n", true);
    let (run, waits) = pre_compact_counted(&o, dir.path(), &t, "auto", |_| append(&t, &later));
    assert!(waits >= 1);
    assert_eq!(run.decision.verdict, Verdict::Deny, "{:?}", run.output);
    // a manual compaction without the override waits as well
    std::fs::write(&t, lines[..5].concat()).unwrap();
    let (run, waits) = pre_compact_counted(&o, dir.path(), &t, "manual", |_| {});
    assert_eq!(run.decision.verdict, Verdict::Allow);
    assert_eq!(waits, 1);
}

#[test]
fn a_read_result_written_after_an_allow_that_did_not_wait_is_in_the_summarys_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    let lines = fixture_lines();
    std::fs::write(&t, lines[..5].concat()).unwrap();
    let o = opts_with(dir.path(), "", false);
    // the Read and its untrusted result land 120 ms after the hook started
    let later = lines[5..7].concat();
    let path = t.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(120));
        append(&path, &later);
    });
    let (run, waits) = pre_compact_counted(&o, dir.path(), &t, "manual", |_| {});
    assert_eq!(waits, 0);
    assert_eq!(run.decision.verdict, Verdict::Allow);
    let judged = run.entries;
    writer.join().unwrap();
    // the Read result's provenance, as the adapter maps it
    let all = read_transcript(Host::ClaudeCode, &t);
    assert!(
        all.entries.len() > judged,
        "{} vs {judged}",
        all.entries.len()
    );
    let read: Vec<String> = all
        .entries
        .iter()
        .flat_map(|e| &e.provenance)
        .filter(|p| p.origin == mnemo_guardian::Origin::ToolOutput)
        .map(|p| p.provenance_id.clone())
        .collect();
    assert_eq!(read.len(), 1, "{read:?}");
    // PostCompact: the host has flushed its queue; no boundary yet
    let post = serde_json::json!({
        "session_id": "settle-session",
        "transcript_path": t.to_string_lossy(),
        "cwd": dir.path().to_string_lossy(),
        "prompt_id": "p-settle",
        "hook_event_name": "PostCompact",
        "trigger": "manual",
        "compact_summary": "The user asked to read notes.md.",
    });
    let rec = run_post_compact_record(Host::ClaudeCode, &o, post.to_string().as_bytes()).unwrap();
    assert!(rec.record.pre_compact.is_some(), "{}", rec.record.reasoning);
    assert!(
        rec.record.summary.derived_from.contains(&read[0]),
        "{:?}",
        rec.record.summary.derived_from
    );
    assert_eq!(
        rec.record.trust,
        Trust::Untrusted,
        "{}",
        rec.record.reasoning
    );
}
