//! Host adapters against recorded hook inputs and transcripts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Origin, Policy, Trigger, Verdict, check_compaction};
use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::run_pre_compact;
use mnemo_hooks::{BlockStyle, Host, claude, codex, tool_origin};
use serde_json::Value;
use std::path::PathBuf;

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).join(rel)
}

/// The recorded hook input with its transcript path pointed at a fixture.
fn hook_input(input: &str, transcript: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fx(input)).unwrap()).unwrap();
    v["transcript_path"] = Value::String(fx(transcript).to_string_lossy().into_owned());
    v.to_string().into_bytes()
}

fn opts(policy: Option<&str>) -> GuardOptions {
    let policy = policy.map(|text| {
        let digest = mnemo_guardian::chain::to_hex(&mnemo_guardian::chain::sha256(text.as_bytes()));
        let p = std::env::temp_dir().join(format!(
            "mnemo-guard-adapter-{}-{}.toml",
            std::process::id(),
            &digest[..16]
        ));
        std::fs::write(&p, text).unwrap();
        p
    });
    GuardOptions {
        policy,
        store: None,
        memory: true,
    }
}

#[test]
fn claude_transcript_mapping() {
    let text = std::fs::read_to_string(fx("claude/transcript-tainted.jsonl")).unwrap();
    let (entries, bad) = claude::transcript_entries(&text);
    assert_eq!(bad, 0);
    let steps: Vec<&str> = entries.iter().map(|e| e.step_id.as_str()).collect();
    assert_eq!(steps, ["u1", "a1", "r1", "r2", "a3"]);
    let origin = |i: usize| {
        (
            entries[i].provenance[0].origin,
            entries[i].provenance[0].source_id.clone(),
        )
    };
    assert_eq!(
        origin(0),
        (Origin::UserInput, Some("claude-code:user".into()))
    );
    assert_eq!(origin(1).0, Origin::AgentGenerated);
    assert_eq!(origin(2), (Origin::ToolOutput, Some("Read".into())));
    assert_eq!(
        origin(3),
        (
            Origin::Retrieved,
            Some("https://docs.example.com/jwt".into())
        )
    );
    let text = std::fs::read_to_string(fx("claude/transcript-mcp.jsonl")).unwrap();
    let (entries, bad) = claude::transcript_entries(&text);
    assert_eq!(bad, 1);
    let steps: Vec<&str> = entries.iter().map(|e| e.step_id.as_str()).collect();
    assert_eq!(
        steps,
        ["s1", "u3", "r3", "a5"],
        "only entries after the compact boundary"
    );
    assert_eq!(
        entries[2].provenance[0].source_id.as_deref(),
        Some("github")
    );
    assert_eq!(
        entries[0].provenance[0].derived_from,
        [claude::PRIOR_COMPACTION]
    );
}

#[test]
fn hook_decisions_are_recorded_in_the_session_store() {
    use mnemo_guardian::SessionStore;
    let dir = std::env::temp_dir().join(format!("mnemo-hook-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = dir.join("nested").join("guardian.sqlite3");
    let opts = GuardOptions {
        policy: None,
        store: Some(store.clone()),
        memory: false,
    };
    let deny = hook_input(
        "claude/precompact-auto.json",
        "claude/transcript-tainted.jsonl",
    );
    let allow = hook_input(
        "claude/precompact-manual.json",
        "claude/transcript-tainted.jsonl",
    );
    let first = run_pre_compact(Host::ClaudeCode, BlockStyle::ExitCode, &opts, &deny[..]).unwrap();
    let second =
        run_pre_compact(Host::ClaudeCode, BlockStyle::ExitCode, &opts, &allow[..]).unwrap();
    assert_eq!(first.decision.verdict, Verdict::Deny);
    assert_eq!(second.decision.verdict, Verdict::Allow);
    let (id1, hash1) = first.recorded.clone().unwrap();
    let (id2, hash2) = second.recorded.clone().unwrap();
    assert_ne!(id1, id2, "every decision gets its own step id");
    assert!(first.output.stderr.starts_with("mnemo guardian blocked"));

    // A new process sees both decisions, the last one for the postCompact check.
    let session = "3f2b9c1e-5d6a-4e8b-9c0d-1a2b3c4d5e6f";
    let mut s = mnemo_guardian_store::SqliteStore::open(&store).unwrap();
    let last = s.last_compaction(session).unwrap().unwrap();
    assert_eq!(last.step_id, id2);
    assert_eq!(last.verdict, Verdict::Allow);
    assert_eq!(last.entries, ["u1", "a1", "r1", "r2", "a3"]);
    assert!(
        s.mark_request(session, &id1, 0).is_ok_and(|fresh| !fresh),
        "ids are marked"
    );

    // The chain links: each hash covers its canonical entry and the one before.
    let chain = s.chain_entries(session).unwrap();
    assert_eq!(chain.len(), 2);
    let h1 = mnemo_guardian::chain::entry_hash_canonical(&chain[0].0, None);
    let h2 = mnemo_guardian::chain::entry_hash_canonical(&chain[1].0, Some(&h1));
    assert_eq!(mnemo_guardian::chain::to_hex(&h1), hash1);
    assert_eq!(mnemo_guardian::chain::to_hex(&h2), hash2);
    assert_eq!((chain[0].1, chain[1].1), (h1, h2));
    let entry: Value = serde_json::from_str(&chain[0].0).unwrap();
    assert!(entry.to_string().contains("steps/preCompact"), "{entry}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hook_decides_even_when_the_store_cannot_be_opened() {
    let dir = std::env::temp_dir().join(format!("mnemo-hook-nostore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A directory where the database file should be.
    let store = dir.join("guardian.sqlite3");
    std::fs::create_dir_all(&store).unwrap();
    let opts = GuardOptions {
        policy: None,
        store: Some(store),
        memory: false,
    };
    let deny = hook_input(
        "claude/precompact-auto.json",
        "claude/transcript-tainted.jsonl",
    );
    let run = run_pre_compact(Host::ClaudeCode, BlockStyle::ExitCode, &opts, &deny[..]).unwrap();
    assert_eq!(run.output.exit_code, 2, "a broken store never unblocks");
    assert!(run.recorded.is_none());
    assert!(
        run.output.stderr.contains("decision not recorded"),
        "{}",
        run.output.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hook_keeps_every_note_when_store_and_transcript_both_fail() {
    let dir = std::env::temp_dir().join(format!("mnemo-hook-twonotes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = dir.join("guardian.sqlite3");
    std::fs::create_dir_all(&store).unwrap();
    let opts = GuardOptions {
        policy: None,
        store: Some(store),
        memory: false,
    };
    let input =
        br#"{"session_id": "s", "transcript_path": "/nonexistent/t.jsonl", "trigger": "auto"}"#;
    let run = run_pre_compact(Host::ClaudeCode, BlockStyle::ExitCode, &opts, &input[..]).unwrap();
    assert!(
        run.output.stderr.contains("session store unavailable"),
        "{}",
        run.output.stderr
    );
    assert!(
        run.output
            .stderr
            .contains("cannot read transcript /nonexistent/t.jsonl"),
        "{}",
        run.output.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tool_names_map_to_origins() {
    assert_eq!(tool_origin("WebSearch", None).0, Origin::External);
    assert_eq!(
        tool_origin("mcp__linear__list_issues", None),
        (Origin::ToolOutput, "linear".into())
    );
    assert_eq!(
        tool_origin("Bash", None),
        (Origin::ToolOutput, "Bash".into())
    );
}

#[test]
fn claude_auto_compaction_after_web_fetch_is_blocked() {
    let input = hook_input(
        "claude/precompact-auto.json",
        "claude/transcript-tainted.jsonl",
    );
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(None),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.decision.verdict, Verdict::Deny);
    assert_eq!(run.output.exit_code, 2);
    assert!(run.output.stdout.is_empty());
    assert!(
        run.output.stderr.contains("blocked compaction") && run.output.stderr.contains("manual"),
        "{}",
        run.output.stderr
    );
    assert_eq!(run.decision.cited_provenance_ids, ["r1#0", "r2#0"]);
    // JSON style: exit 0, {"decision":"block"} on stdout, reason on stderr too.
    let run = run_pre_compact(Host::ClaudeCode, BlockStyle::Json, &opts(None), &input[..]).unwrap();
    assert_eq!(run.output.exit_code, 0);
    let v: Value = serde_json::from_str(&run.output.stdout).unwrap();
    assert_eq!(v["decision"], "block");
    assert!(v["reason"].as_str().unwrap().contains("re-grounding"));
    assert!(!run.output.stderr.is_empty());
}

#[test]
fn claude_exits_manual_and_regrounding() {
    let input = hook_input(
        "claude/precompact-manual.json",
        "claude/transcript-tainted.jsonl",
    );
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(None),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 0);
    assert!(run.output.stderr.is_empty());
    let input = hook_input(
        "claude/precompact-auto.json",
        "claude/transcript-regrounded.jsonl",
    );
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(None),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 0, "{}", run.output.stderr);
    // Manual override off: manual compaction of tainted context is blocked too.
    let strict = "[compaction]\nmanual_override = false\n";
    let input = hook_input(
        "claude/precompact-manual.json",
        "claude/transcript-tainted.jsonl",
    );
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(Some(strict)),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 2);
    assert!(run.output.stderr.contains("user_input"));
}

#[test]
fn claude_trusted_mcp_server_after_boundary() {
    let input = hook_input("claude/precompact-auto.json", "claude/transcript-mcp.jsonl");
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(None),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 2, "github is untrusted by default");
    let trusted =
        "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"github\"\ntrust = \"trusted\"\n";
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(Some(trusted)),
        &input[..],
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 0, "{}", run.output.stderr);
    assert_eq!(run.entries, 4);
    assert_eq!(run.bad_lines, 1);
}

#[test]
fn missing_transcript_fails_closed_with_a_note_and_bad_input_is_an_error() {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fx("claude/precompact-auto.json")).unwrap())
            .unwrap();
    v["transcript_path"] = Value::String("/nonexistent/t.jsonl".into());
    let run = run_pre_compact(
        Host::ClaudeCode,
        BlockStyle::ExitCode,
        &opts(None),
        v.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(run.output.exit_code, 2, "what cannot be read is untrusted");
    assert!(run.output.stderr.contains("cannot read transcript"));
    assert_eq!(
        run.decision.cited_provenance_ids,
        ["mnemo:transcript-unread#0"]
    );
    assert!(
        run_pre_compact(
            Host::ClaudeCode,
            BlockStyle::ExitCode,
            &opts(None),
            &b"not json"[..]
        )
        .is_err()
    );
}

#[test]
fn codex_transcript_and_answers() {
    let text = std::fs::read_to_string(fx("codex/rollout-tainted.jsonl")).unwrap();
    let (entries, bad) = codex::transcript_entries(&text);
    assert_eq!(bad, 0);
    let origins: Vec<(Origin, Option<String>)> = entries
        .iter()
        .map(|e| (e.provenance[0].origin, e.provenance[0].source_id.clone()))
        .collect();
    assert_eq!(
        origins,
        [
            (Origin::System, Some("codex:instructions".into())),
            (Origin::UserInput, Some("codex:user".into())),
            (Origin::ToolOutput, Some("shell".into())),
            (Origin::ToolOutput, Some("github".into())),
            (Origin::AgentGenerated, None),
        ]
    );
    let input = hook_input("codex/precompact-auto.json", "codex/rollout-tainted.jsonl");
    let run = run_pre_compact(Host::Codex, BlockStyle::default(), &opts(None), &input[..]).unwrap();
    assert_eq!(run.output.exit_code, 0);
    let v: Value = serde_json::from_str(&run.output.stdout).unwrap();
    assert_eq!(v["continue"], false);
    assert!(
        v["stopReason"]
            .as_str()
            .unwrap()
            .contains("blocked compaction")
    );
    let input = hook_input(
        "codex/precompact-manual.json",
        "codex/rollout-tainted.jsonl",
    );
    let run = run_pre_compact(Host::Codex, BlockStyle::default(), &opts(None), &input[..]).unwrap();
    assert!(run.output.stdout.is_empty());
    let input = hook_input(
        "codex/precompact-auto.json",
        "codex/rollout-regrounded.jsonl",
    );
    let run = run_pre_compact(Host::Codex, BlockStyle::default(), &opts(None), &input[..]).unwrap();
    assert!(run.output.stdout.is_empty());
}

#[test]
fn in_process_api_for_bank_compaction() {
    // What mnemo's own bank compaction does: entries with their origins.
    let policy = Policy::default();
    let (entries, _) = claude::transcript_entries(
        &std::fs::read_to_string(fx("claude/transcript-regrounded.jsonl")).unwrap(),
    );
    assert!(check_compaction(&policy, &entries, Trigger::FrameworkInitiated).allowed());
}

#[test]
fn odd_lines_fall_back_to_the_lenient_reader() {
    // isMeta of the wrong type and content blocks with odd members: the typed
    // reader rejects these lines, the lenient one still maps them.
    let text = concat!(
        r#"{"type":"user","uuid":"u1","isMeta":"no","message":{"content":"hello"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a1","message":{"content":[{"type":"tool_use","id":7,"name":"Bash"},{"type":"tool_use","id":"t2","name":"WebFetch","input":{"url":"https://x.example/"}}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"r1","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"page"}]}]}}"#,
        "\n"
    );
    let (entries, bad) = claude::transcript_entries(text);
    assert_eq!(bad, 0);
    let got: Vec<(String, Origin, Option<String>)> = entries
        .iter()
        .map(|e| {
            (
                e.step_id.clone(),
                e.provenance[0].origin,
                e.provenance[0].source_id.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "u1".to_string(),
                Origin::UserInput,
                Some("claude-code:user".to_string())
            ),
            (
                "r1".to_string(),
                Origin::Retrieved,
                Some("https://x.example/".to_string())
            ),
        ]
    );
}
