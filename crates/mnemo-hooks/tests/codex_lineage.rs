//! Codex CLI: trust carried across a compaction (PostCompact records the
//! lineage), and the pre-turn compaction that runs before the user's
//! message is written (issue #11 item 8). Rollouts in the shapes Codex
//! 0.171.0 writes (observed with `codex exec` and `codex app-server`
//! against a mock model server). Each test failed on the adapter before
//! the change it names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::{run_post_compact_record, run_pre_compact};
use mnemo_hooks::{BlockStyle, Host, codex};
use serde_json::{Value, json};
use std::path::Path;

const SESSION: &str = "01a235b2-5085-7012-8297-1cce0622e7ee";

fn user(text: &str, turn: &str) -> Value {
    json!({"type": "response_item", "payload": {"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": text}],
        "internal_chat_message_metadata_passthrough": {"turn_id": turn}}})
}

fn assistant(text: &str) -> Value {
    json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": text}]}})
}

fn web_search() -> Value {
    json!({"type": "response_item", "payload": {"type": "web_search_call", "id": "ws_1",
        "status": "completed", "action": {"type": "search", "query": "q"}}})
}

fn task_started(turn: &str, user_turn: bool) -> Value {
    let mut p = json!({"type": "task_started", "turn_id": turn, "root_turn_id": turn});
    if user_turn {
        p["turn_attribution"] = json!({"turn_id": turn, "turn_trigger": null,
            "parent_turn_id": null, "initiating_agent_path": null, "root_turn_id": turn});
    }
    json!({"type": "event_msg", "payload": p})
}

fn compacted(summary: &str, kept_user: &str) -> Value {
    let message = format!(
        "Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary:\n{summary}"
    );
    json!({"type": "compacted", "payload": {"message": message, "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": kept_user}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": message}]},
    ]}})
}

struct Session {
    dir: tempfile::TempDir,
    rollout: std::path::PathBuf,
}

impl Session {
    fn new() -> Session {
        let dir = tempfile::tempdir().unwrap();
        let rollout = dir.path().join("rollout.jsonl");
        std::fs::write(&rollout, "").unwrap();
        Session { dir, rollout }
    }

    fn push(&self, lines: &[Value]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.rollout)
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn opts(&self, policy: &str) -> GuardOptions {
        let p = self.dir.path().join("policy.toml");
        std::fs::write(&p, policy).unwrap();
        GuardOptions {
            policy: Some(p),
            store: Some(self.dir.path().join("guardian.sqlite3")),
            memory: false,
        }
    }

    fn input(&self, event: &str, trigger: &str, turn: &str) -> Vec<u8> {
        json!({"session_id": SESSION, "turn_id": turn,
            "transcript_path": self.rollout.to_string_lossy(), "cwd": "/w",
            "hook_event_name": event, "model": "mock-model", "trigger": trigger})
        .to_string()
        .into_bytes()
    }

    /// True when the PreCompact hook blocks.
    fn pre(&self, policy: &str, trigger: &str, turn: &str) -> bool {
        let run = run_pre_compact(
            Host::Codex,
            BlockStyle::default(),
            &self.opts(policy),
            &self.input("PreCompact", trigger, turn)[..],
        )
        .unwrap();
        if run.output.stdout.is_empty() {
            return false;
        }
        let v: Value = serde_json::from_str(&run.output.stdout).unwrap();
        v["continue"] == false
    }

    fn post(&self, policy: &str) -> mnemo_hooks::io::PostRecord {
        run_post_compact_record(
            Host::Codex,
            &self.opts(policy),
            &self.input("PostCompact", "manual", "t-compact"),
        )
        .unwrap()
    }
}

const STRICT: &str = "[compaction]\nmanual_override = false\n";
const OVERRIDE: &str = "[compaction]\nmanual_override = true\n";

#[test]
fn a_trusted_compaction_stays_trusted_after_post_compact() {
    // Before: the summary in the `compacted` line was derived from an
    // unknown lineage, so every later compaction of a session compacted
    // once was denied by default, whatever it had folded.
    let s = Session::new();
    s.push(&[
        task_started("t1", true),
        user("hello", "t1"),
        assistant("Hi."),
    ]);
    assert!(
        !s.pre(STRICT, "manual", "t-compact"),
        "all trusted: allowed"
    );
    s.push(&[compacted("SUMMARY 1: said hello", "hello")]);
    let rec = s.post(STRICT);
    assert!(rec.record.pre_compact.is_some(), "{}", rec.notes);
    assert_eq!(rec.record.trust.as_str(), "trusted");
    let mut lineage = rec.record.summary.derived_from.clone();
    lineage.sort();
    assert_eq!(lineage, ["line-2#0", "line-3#0"]);
    assert_eq!(
        rec.record.summary.provenance_id,
        codex::summary_id(
            "Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary:\nSUMMARY 1: said hello"
        )
    );
    assert!(rec.recorded.is_some());
    s.push(&[assistant("Anything else?")]);
    assert!(
        !s.pre(STRICT, "manual", "t-compact-2"),
        "the summary of trusted content is trusted"
    );
}

#[test]
fn an_untrusted_compaction_carries_its_taint_into_the_summary() {
    let s = Session::new();
    s.push(&[
        task_started("t1", true),
        user("search the web", "t1"),
        web_search(),
        assistant("I searched."),
    ]);
    assert!(s.pre(STRICT, "manual", "t-compact"), "strict: denied");
    assert!(!s.pre(OVERRIDE, "manual", "t-compact"), "override: allowed");
    s.push(&[compacted("SUMMARY 2: searched", "search the web")]);
    let rec = s.post(OVERRIDE);
    assert_eq!(rec.record.trust.as_str(), "untrusted");
    assert!(
        rec.record
            .summary
            .derived_from
            .iter()
            .any(|id| id == "line-3#0"),
        "{:?}",
        rec.record.summary.derived_from
    );
    s.push(&[assistant("Done.")]);
    assert!(
        s.pre(STRICT, "manual", "t-compact-2"),
        "the summary of untrusted content is untrusted"
    );
}

#[test]
fn a_compaction_no_precompact_allowed_has_an_unknown_lineage() {
    let s = Session::new();
    s.push(&[
        user("hello", "t1"),
        compacted("SUMMARY 3", "hello"),
        assistant("ok"),
    ]);
    let rec = s.post(STRICT);
    assert!(rec.record.pre_compact.is_none());
    assert_eq!(rec.record.summary.derived_from, [codex::PRIOR_COMPACTION]);
    assert_eq!(rec.record.trust.as_str(), "untrusted");
    assert!(rec.notes.contains("lineage is unknown"), "{}", rec.notes);
    // A second PostCompact for the same (allowed) PreCompact is not given
    // its lineage twice.
    let s = Session::new();
    s.push(&[user("hello", "t1")]);
    assert!(!s.pre(STRICT, "manual", "c1"));
    s.push(&[compacted("SUMMARY 4", "hello")]);
    assert!(s.post(STRICT).record.pre_compact.is_some());
    s.push(&[compacted("SUMMARY 5", "hello")]);
    assert!(s.post(STRICT).record.pre_compact.is_none());
}

#[test]
fn the_users_message_ends_a_deny_on_its_own_pre_turn_compaction() {
    // Before: Codex's pre-turn compaction runs before the new message is
    // written, so the deny repeated on the very turn meant to end it, and
    // the message never reached the model.
    let s = Session::new();
    s.push(&[
        task_started("t1", true),
        user("search the web", "t1"),
        web_search(),
        assistant("I searched."),
    ]);
    assert!(s.pre(STRICT, "auto", "t1"), "mid-turn: denied");
    s.push(&[task_started("t2", true)]);
    assert!(
        !s.pre(STRICT, "auto", "t2"),
        "the user's new turn re-grounds its own pre-turn compaction"
    );
    // Only for the hook's own turn, only for auto, and only before its
    // message is written.
    assert!(s.pre(STRICT, "auto", "t-other"));
    assert!(s.pre(STRICT, "manual", "t2"));
    s.push(&[user("go on", "t2"), web_search()]);
    assert!(s.pre(STRICT, "auto", "t2"), "taint after the message");
}

#[test]
fn codexs_own_compaction_task_is_not_a_user_turn() {
    let s = Session::new();
    s.push(&[
        task_started("t1", true),
        user("search the web", "t1"),
        web_search(),
        task_started("t-compact", false),
    ]);
    assert!(s.pre(STRICT, "auto", "t-compact"));
    let mut m = codex::Mapper::new();
    for (i, l) in std::fs::read_to_string(&s.rollout)
        .unwrap()
        .lines()
        .enumerate()
    {
        m.line(l, i + 1);
    }
    assert!(!m.pending_user_turn("t-compact"));
    assert!(!m.pending_user_turn("t1"), "its message is written");
}

#[test]
fn post_compact_without_a_readable_transcript_still_records() {
    let s = Session::new();
    let opts = s.opts(STRICT);
    let input = json!({"session_id": SESSION, "transcript_path": "/nonexistent/rollout.jsonl",
        "hook_event_name": "PostCompact", "trigger": "auto"})
    .to_string();
    let rec = run_post_compact_record(Host::Codex, &opts, input.as_bytes()).unwrap();
    assert!(
        rec.record
            .summary
            .provenance_id
            .starts_with("codex:summary:unlinked-")
    );
    assert!(rec.notes.contains("cannot read"), "{}", rec.notes);
    assert!(Path::new(&s.dir.path().join("guardian.sqlite3")).exists());
}
