//! What the real hosts were observed to do (SPEC §6, issue #11), on
//! fixtures in the recorded shapes: each test failed on the adapter before
//! the fix it names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::Origin;
use mnemo_guardian_store::GuardOptions;
use mnemo_hooks::io::run_pre_compact;
use mnemo_hooks::{BlockStyle, Host, claude};
use serde_json::Value;
use std::path::PathBuf;

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).join(rel)
}

fn hook_input(input: &str, transcript: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fx(input)).unwrap()).unwrap();
    v["transcript_path"] = Value::String(fx(transcript).to_string_lossy().into_owned());
    v.to_string().into_bytes()
}

fn opts(dir: &tempfile::TempDir, policy: Option<&str>) -> GuardOptions {
    let policy = policy.map(|text| {
        let p = dir.path().join("policy.toml");
        std::fs::write(&p, text).unwrap();
        p
    });
    GuardOptions {
        policy,
        store: None,
        memory: true,
    }
}

fn run(
    host: Host,
    input: &str,
    transcript: &str,
    policy: Option<&str>,
) -> mnemo_hooks::io::HookRun {
    let dir = tempfile::tempdir().unwrap();
    let bytes = hook_input(input, transcript);
    run_pre_compact(host, BlockStyle::ExitCode, &opts(&dir, policy), &bytes[..]).unwrap()
}

fn origins(transcript: &str) -> Vec<(String, Origin, Option<String>)> {
    let text = std::fs::read_to_string(fx(transcript)).unwrap();
    let (entries, bad) = claude::transcript_entries(&text);
    assert_eq!(bad, 0);
    entries
        .iter()
        .map(|e| {
            (
                e.step_id.clone(),
                e.provenance[0].origin,
                e.provenance[0].source_id.clone(),
            )
        })
        .collect()
}

const STRICT: &str = "[compaction]\nmanual_override = false\n";

#[test]
fn claude_two_compacts_in_a_row_stay_denied() {
    // Observed 1: `/compact`, blocked, left host lines that counted as typed words.
    let got = origins("claude/transcript-compact-twice.jsonl");
    let user_input: Vec<&str> = got
        .iter()
        .filter(|(_, o, _)| *o == Origin::UserInput)
        .map(|(s, _, _)| s.as_str())
        .collect();
    assert_eq!(
        user_input,
        ["u1"],
        "only the typed prompt is the user's: {got:?}"
    );
    for step in ["c1", "o1", "c2"] {
        let (_, o, src) = got.iter().find(|(s, _, _)| s == step).unwrap();
        assert_eq!(
            (*o, src.as_deref()),
            (Origin::System, Some("claude-code:host"))
        );
    }
    let run = run(
        Host::ClaudeCode,
        "claude/precompact-manual.json",
        "claude/transcript-compact-twice.jsonl",
        Some(STRICT),
    );
    assert_eq!(run.output.exit_code, 2, "{}", run.output.stderr);
    assert_eq!(run.decision.cited_provenance_ids, ["r1#0"]);
}

#[test]
fn claude_attachments_have_origins_and_an_injected_file_is_denied() {
    // Observed 2: attachment lines were invisible.
    let got = origins("claude/transcript-attachment.jsonl");
    let want = [
        ("u1", Origin::UserInput, "claude-code:user"),
        ("t1", Origin::ToolOutput, "file:/home/dev/repo/notes.md"),
        ("t2", Origin::ToolOutput, "wiki"),
        (
            "t3",
            Origin::ToolOutput,
            "claude-code:hook:UserPromptSubmit",
        ),
        ("t4", Origin::System, "claude-code:host"),
        ("a1", Origin::AgentGenerated, ""),
    ];
    let got: Vec<(&str, Origin, &str)> = got
        .iter()
        .map(|(s, o, src)| (s.as_str(), *o, src.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(got, want);
    let run1 = run(
        Host::ClaudeCode,
        "claude/precompact-auto.json",
        "claude/transcript-attachment.jsonl",
        Some(STRICT),
    );
    assert_eq!(run1.output.exit_code, 2);
    assert_eq!(run1.decision.cited_provenance_ids, ["t1#0", "t2#0", "t3#0"]);
    // A policy that trusts that file, that MCP server and hooks allows.
    let trusting = "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"file:/home/dev/repo/*\"\ntrust = \"trusted\"\n\
[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"wiki\"\ntrust = \"trusted\"\n\
[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"claude-code:hook:*\"\ntrust = \"trusted\"\n";
    let run2 = run(
        Host::ClaudeCode,
        "claude/precompact-auto.json",
        "claude/transcript-attachment.jsonl",
        Some(trusting),
    );
    assert_eq!(run2.output.exit_code, 0, "{}", run2.output.stderr);
}

#[test]
fn claude_preserved_messages_keep_their_taint() {
    // Observed 3: the preserved segment was dropped with the summarised prefix.
    // Trusting the unknown lineage of the summary isolates the preserved tail.
    let lenient = "[trust]\nunknown_lineage = \"trusted\"\n";
    for t in [
        "claude/transcript-preserved.jsonl",
        "claude/transcript-preserved-segment.jsonl",
    ] {
        let got = origins(t);
        let steps: Vec<&str> = got.iter().map(|(s, _, _)| s.as_str()).collect();
        assert_eq!(
            steps,
            ["s1", "r1", "a2", "a3"],
            "{t}: summary, kept tail, new"
        );
        let run = run(
            Host::ClaudeCode,
            "claude/precompact-auto.json",
            t,
            Some(lenient),
        );
        assert_eq!(run.output.exit_code, 2, "{t}: {}", run.output.stderr);
        assert_eq!(run.decision.cited_provenance_ids, ["r1#0"], "{t}");
    }
    // Summarised (not preserved), the fetch is gone: only the summary's
    // lineage speaks, here trusted by the policy.
    let got = origins("claude/transcript-summarised.jsonl");
    let steps: Vec<&str> = got.iter().map(|(s, _, _)| s.as_str()).collect();
    assert_eq!(steps, ["s1", "a3"]);
    let run2 = run(
        Host::ClaudeCode,
        "claude/precompact-auto.json",
        "claude/transcript-summarised.jsonl",
        Some(lenient),
    );
    assert_eq!(run2.output.exit_code, 0, "{}", run2.output.stderr);
    // The default policy does not trust what it cannot see.
    let run3 = run(
        Host::ClaudeCode,
        "claude/precompact-auto.json",
        "claude/transcript-summarised.jsonl",
        None,
    );
    assert_eq!(run3.output.exit_code, 2);
}

#[test]
fn codex_mcp_namespace_names_the_server() {
    // Observed 6: the tool name was taken as the source id.
    let text = std::fs::read_to_string(fx("codex/rollout-mcp-namespace.jsonl")).unwrap();
    let (entries, bad) = mnemo_hooks::codex::transcript_entries(&text);
    assert_eq!(bad, 0);
    let out = entries
        .iter()
        .find(|e| e.provenance[0].origin == Origin::ToolOutput)
        .unwrap();
    assert_eq!(out.provenance[0].source_id.as_deref(), Some("github"));
    let trusted =
        "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"github\"\ntrust = \"trusted\"\n";
    let r = run(
        Host::Codex,
        "codex/precompact-auto.json",
        "codex/rollout-mcp-namespace.jsonl",
        Some(trusted),
    );
    assert!(r.output.stdout.is_empty(), "{}", r.output.stdout);
    let r = run(
        Host::Codex,
        "codex/precompact-auto.json",
        "codex/rollout-mcp-namespace.jsonl",
        None,
    );
    let v: Value = serde_json::from_str(&r.output.stdout).unwrap();
    assert_eq!(v["continue"], false);
    // Observed 10: `codex exec` shows systemMessage, not stopReason.
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("blocked compaction")
    );
}

#[test]
fn codex_compacted_history_keeps_the_taint() {
    // Observed 7: a `compacted` line cleared what it had folded in.
    let text = std::fs::read_to_string(fx("codex/rollout-compacted.jsonl")).unwrap();
    let (entries, _) = mnemo_hooks::codex::transcript_entries(&text);
    let got: Vec<(Origin, Option<String>)> = entries
        .iter()
        .map(|e| (e.provenance[0].origin, e.provenance[0].source_id.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (Origin::System, Some("codex:instructions".into())),
            (Origin::UserInput, Some("codex:user".into())),
            (Origin::AgentGenerated, Some("codex:compact-summary".into())),
            (Origin::AgentGenerated, None),
        ],
        "the summary in the history is not the user's"
    );
    let r = run(
        Host::Codex,
        "codex/precompact-auto.json",
        "codex/rollout-compacted.jsonl",
        None,
    );
    let v: Value = serde_json::from_str(&r.output.stdout).unwrap();
    assert_eq!(
        v["continue"], false,
        "unknown lineage is untrusted by default"
    );
}

#[test]
fn recorded_step_ids_are_uuids() {
    // Observed 9: ids were 68 characters.
    let dir = tempfile::tempdir().unwrap();
    let o = GuardOptions {
        policy: None,
        store: Some(dir.path().join("g.sqlite3")),
        memory: false,
    };
    let bytes = hook_input("codex/precompact-auto.json", "codex/rollout-tainted.jsonl");
    let r = run_pre_compact(Host::Codex, BlockStyle::ExitCode, &o, &bytes[..]).unwrap();
    let (id, _) = r.recorded.unwrap();
    assert_eq!(id.len(), 36, "{id}");
    let groups: Vec<usize> = id.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12]);
    assert_eq!(&id[14..15], "4");
}
