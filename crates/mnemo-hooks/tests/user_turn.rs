//! The user's way out of a deny on the turn that overflows (issue #11,
//! Claude Code 2.1.197): inputs recorded from the real host. The auto
//! compaction of the turn the user's message overflowed can run before the
//! host has written that message's line (its transcript writes are
//! asynchronous): `transcript-user-turn-pending.jsonl` is the transcript as
//! PreCompact saw it then, `…-written.jsonl` one line later. The prompt
//! recorded at UserPromptSubmit stands for the missing line; before it, the
//! same inputs were denied at random.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::Verdict;
use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::{HookRun, run_pre_compact};
use mnemo_hooks::prompt::{prompt_path, run_user_prompt_submit, typed_prompt};
use mnemo_hooks::{BlockStyle, Host};
use serde_json::Value;
use std::path::PathBuf;

const STRICT: &str = "[compaction]\nmanual_override = false\n";
const SESSION: &str = "633d436b-33db-4569-9fd3-55b4ff10edbb";

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/claude"
    ))
    .join(rel)
}

fn json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fx(name)).unwrap()).unwrap()
}

struct Store {
    dir: tempfile::TempDir,
    memory: bool,
}

impl Store {
    fn new() -> Self {
        Store {
            dir: tempfile::tempdir().unwrap(),
            memory: false,
        }
    }

    fn opts(&self) -> GuardOptions {
        let policy = self.dir.path().join("policy.toml");
        std::fs::write(&policy, STRICT).unwrap();
        GuardOptions {
            policy: Some(policy),
            store: Some(self.dir.path().join("guardian.sqlite3")),
            memory: self.memory,
        }
    }

    /// UserPromptSubmit with the recorded input, `edit` applied.
    fn submit(&self, name: &str, edit: impl FnOnce(&mut Value)) -> String {
        let mut v = json(name);
        edit(&mut v);
        run_user_prompt_submit(&self.opts(), v.to_string().as_bytes())
    }

    /// PreCompact with the recorded input on `transcript`, `edit` applied.
    fn pre_compact(&self, name: &str, transcript: &str, edit: impl FnOnce(&mut Value)) -> HookRun {
        let mut v = json(name);
        v["transcript_path"] = Value::String(fx(transcript).to_string_lossy().into_owned());
        edit(&mut v);
        run_pre_compact(
            Host::ClaudeCode,
            BlockStyle::ExitCode,
            &self.opts(),
            v.to_string().as_bytes(),
        )
        .unwrap()
    }
}

const PRE: &str = "precompact-auto-user-turn.json";
const UPS: &str = "userpromptsubmit-user-turn.json";
const PENDING: &str = "transcript-user-turn-pending.jsonl";
const WRITTEN: &str = "transcript-user-turn-written.jsonl";

#[test]
fn the_users_message_ends_the_deny_before_its_line_is_written() {
    let s = Store::new();
    // What the hook saw in the failing runs: the message's line not yet
    // written, nothing recorded — denied (the untrusted Read result is the
    // newest thing it can see).
    let before = s.pre_compact(PRE, PENDING, |_| {});
    assert_eq!(before.decision.verdict, Verdict::Deny);
    // With the prompt recorded at UserPromptSubmit: allowed, as when the
    // line is already there.
    assert_eq!(s.submit(UPS, |_| {}), "");
    let run = s.pre_compact(PRE, PENDING, |_| {});
    assert_eq!(run.decision.verdict, Verdict::Allow, "{:?}", run.output);
    assert_eq!(run.output.exit_code, 0);
    let written = Store::new().pre_compact(PRE, WRITTEN, |_| {});
    assert_eq!(written.decision.verdict, Verdict::Allow);
    assert_eq!(
        run.entries, written.entries,
        "the prompt stands for its line"
    );
}

#[test]
fn the_record_keeps_no_text_and_says_whose_words() {
    let s = Store::new();
    s.submit(UPS, |_| {});
    let rec = std::fs::read_to_string(prompt_path(&s.opts(), SESSION)).unwrap();
    assert!(!rec.contains("notes.md"), "{rec}");
    let r = typed_prompt(&s.opts(), SESSION, "eca6d68e-3c2a-4588-9ffe-5b3ad588a2f7").unwrap();
    assert!(r.typed && !r.command);
    assert!(typed_prompt(&s.opts(), SESSION, "another-turn").is_none());
    assert!(typed_prompt(&s.opts(), "another-session", &r.prompt_id).is_none());
}

#[test]
fn a_manual_compact_never_counts_the_recorded_prompt() {
    let s = Store::new();
    s.submit(UPS, |_| {});
    let run = s.pre_compact(PRE, PENDING, |v| v["trigger"] = "manual".into());
    assert_eq!(run.decision.verdict, Verdict::Deny);
    assert_eq!(run.output.exit_code, 2);
}

#[test]
fn commands_and_host_lines_are_not_the_users_words() {
    for text in [
        "/compact",
        "<command-name>/compact</command-name>",
        "<local-command-stdout>Compacted.</local-command-stdout>",
        "<system-reminder>carry on</system-reminder>",
        "",
    ] {
        let s = Store::new();
        s.submit(UPS, |v| v["prompt"] = text.into());
        let run = s.pre_compact(PRE, PENDING, |_| {});
        assert_eq!(run.decision.verdict, Verdict::Deny, "{text:?}");
    }
}

#[test]
fn only_the_same_turn_counts() {
    // A prompt of an earlier turn (its line is in the transcript) does not
    // stand for a later turn's.
    let s = Store::new();
    s.submit(UPS, |v| {
        v["prompt_id"] = "ea9ae08a-43bd-4568-baf1-911e7cd667e9".into()
    });
    assert_eq!(
        s.pre_compact(PRE, PENDING, |_| {}).decision.verdict,
        Verdict::Deny
    );
    // Another session's record is another file.
    let s = Store::new();
    s.submit(UPS, |v| v["session_id"] = "other-session".into());
    assert_eq!(
        s.pre_compact(PRE, PENDING, |_| {}).decision.verdict,
        Verdict::Deny
    );
}

#[test]
fn a_turn_whose_lines_are_written_is_judged_by_them() {
    // Session A: the prompt, then a Read of an injected file in the same
    // turn, then the overflow. The turn's lines are in the transcript, so
    // the recorded prompt adds nothing: the Read result after it denies.
    let s = Store::new();
    s.submit("userpromptsubmit-after-read.json", |_| {});
    let run = s.pre_compact(
        "precompact-auto-after-read.json",
        "transcript-after-read.jsonl",
        |_| {},
    );
    assert_eq!(run.decision.verdict, Verdict::Deny);
}

#[test]
fn memory_mode_records_nothing() {
    let mut s = Store::new();
    s.memory = true;
    assert_eq!(s.submit(UPS, |_| {}), "");
    assert!(!prompt_path(&s.opts(), SESSION).exists());
    assert_eq!(
        s.pre_compact(PRE, PENDING, |_| {}).decision.verdict,
        Verdict::Deny
    );
}

#[test]
fn bad_input_is_only_a_note() {
    let s = Store::new();
    let note = run_user_prompt_submit(&s.opts(), &b"not json"[..]);
    assert!(note.contains("not valid JSON"), "{note}");
    let note = s.submit(UPS, |v| {
        v.as_object_mut().unwrap().remove("prompt_id");
    });
    assert!(note.contains("no prompt_id"), "{note}");
    assert!(!prompt_path(&s.opts(), SESSION).exists());
}
