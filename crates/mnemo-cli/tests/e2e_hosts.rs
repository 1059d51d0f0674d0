//! The compaction Guardian against the real Claude Code (npm
//! `@anthropic-ai/claude-code` 2.1.197, installed by
//! `.ci/setup.d/30-hosts.sh` into `$MNEMO_HOSTS_BIN`), driven offline by our
//! mock Messages API server (`tests/hosts/mock_anthropic.py`) inside
//! `unshare -n` with only loopback up. Under CI=true a missing host, or a
//! missing `unshare`, fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "hosts/common.rs"]
mod common;

use common::read;
use mnemo_guardian::store::SessionStore;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn result(w: &Path, name: &str) -> Value {
    serde_json::from_str(read(w, name).trim()).unwrap_or(Value::Null)
}

#[test]
fn claude_code_strict_deny_holds_through_two_compacts_and_the_override_allows() {
    let Some(dir) = common::run_session(
        "claude",
        "Claude Code",
        common::CLAUDE_CODE_VERSION,
        "claude_session.sh",
    ) else {
        return;
    };
    let w = dir.path();
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

/// Every request the mock model server received, in order.
fn requests(w: &Path) -> Vec<Value> {
    read(w, "requests.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["req"].clone())
        .collect()
}

/// The text blocks of a request's messages, joined.
fn request_text(req: &Value) -> String {
    let mut out = String::new();
    for m in req["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(s) => out.push_str(s),
            Value::Array(blocks) => {
                for b in blocks {
                    if let Some(t) = b["text"].as_str() {
                        out.push_str(t);
                    }
                    out.push('\n');
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

fn is_compaction_request(req: &Value) -> bool {
    request_text(req).contains("Respond with TEXT ONLY")
}

fn hook_inputs(w: &Path, name: &str) -> Vec<Value> {
    read(w, name)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[test]
fn claude_code_trail_reaches_the_compactor_and_comes_back_auto_deny_and_user_turn() {
    let Some(dir) = common::run_session(
        "claude",
        "Claude Code",
        common::CLAUDE_CODE_VERSION,
        "claude_trail_session.sh",
    ) else {
        return;
    };
    let w = dir.path();
    let reqs = requests(w);

    // T: the hooks `mnemo hook install claude-code` wrote run in the real host.
    assert_eq!(
        read(w, "install.rc").trim(),
        "0",
        "{}",
        read(w, "install.err")
    );
    let t2 = result(w, "t2.out");
    assert_eq!(t2["result"], "", "the /compact compacted: {t2}");
    let transcript = PathBuf::from(read(w, "T.transcript").trim());
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(text.matches("\"compact_boundary\"").count(), 1);
    // The compaction request carries the trail under "Additional Instructions:".
    let compaction: Vec<String> = reqs
        .iter()
        .filter(|r| is_compaction_request(r))
        .map(request_text)
        .filter(|t| t.contains("db-stage-7"))
        .collect();
    assert_eq!(compaction.len(), 1, "one compaction request of session T");
    let extra = compaction[0]
        .split("Additional Instructions:")
        .nth(1)
        .expect("the compaction request has Additional Instructions");
    for fact in [
        "# mnemo trail",
        "Never touch the migrations/ directory.",
        "Always run cargo fmt before committing.",
        "port 8443 instead of 8080",
        "db-stage-7",
        "plan.md",
    ] {
        assert!(
            extra.contains(fact),
            "{fact} not in the compaction request: {extra}"
        );
    }
    // PostCompact and SessionStart (source compact) ran, with the inputs §6 says.
    let post = hook_inputs(w, "T-PostCompact.jsonl");
    assert_eq!(post.len(), 1, "PostCompact ran once");
    assert_eq!(post[0]["trigger"], "manual");
    assert!(
        post[0]["compact_summary"]
            .as_str()
            .unwrap()
            .contains("notes.md")
    );
    let start = hook_inputs(w, "T-SessionStart.jsonl");
    assert_eq!(start.len(), 1, "SessionStart ran once");
    assert_eq!(start[0]["source"], "compact");
    let sid = read(w, "T.sid").trim().to_string();
    let check = w.join(format!("trail.sqlite3.trails/{sid}.check.json"));
    let check: Value = serde_json::from_str(&std::fs::read_to_string(&check).unwrap()).unwrap();
    assert!(
        check["reinject"]
            .as_str()
            .unwrap()
            .contains("Never touch the migrations/ directory."),
        "PostCompact recorded the lost facts: {check}"
    );
    // PostCompact recorded the compaction with its lineage (steps/postCompact)
    // and kept the link for the next summary line.
    let lineage = w.join(format!("trail.sqlite3.trails/{sid}.lineage.json"));
    let lineage: Value = serde_json::from_str(&std::fs::read_to_string(&lineage).unwrap()).unwrap();
    assert!(
        lineage["summary_id"]
            .as_str()
            .unwrap()
            .starts_with("claude-code:summary:"),
        "{lineage}"
    );
    // In the session store: one steps/postCompact, whose summary node is
    // that id and derives from what the allowed PreCompact judged.
    let mut store = mnemo_guardian_store::SqliteStore::open(&w.join("trail.sqlite3")).unwrap();
    let steps = store.steps(&sid).unwrap();
    let posts: Vec<_> = steps
        .iter()
        .filter(|s| s.method == "steps/postCompact")
        .collect();
    assert_eq!(posts.len(), 1, "{steps:?}");
    let summary = posts[0]
        .provenance
        .iter()
        .find(|p| Some(p.provenance_id.as_str()) == lineage["summary_id"].as_str())
        .expect("the summary node under the kept id");
    assert!(!summary.derived_from.is_empty(), "{summary:?}");
    assert!(
        !summary
            .derived_from
            .iter()
            .any(|d| d == mnemo_hooks::claude::PRIOR_COMPACTION),
        "lineage known: {summary:?}"
    );
    // The next model request carries the re-injected facts (SessionStart's
    // additionalContext with hookEventName SessionStart).
    let next = reqs
        .iter()
        .map(request_text)
        .find(|t| t.contains("What did we decide about the port?"))
        .expect("the prompt after the compaction reached the model");
    let ctx = next
        .split("SessionStart hook additional context:")
        .nth(1)
        .expect("SessionStart context in the next request");
    for fact in [
        "Never touch the migrations/ directory.",
        "port 8443 instead of 8080",
        "db-stage-7",
    ] {
        assert!(ctx.contains(fact), "{fact} not re-injected: {ctx}");
    }

    // A: an auto compaction (400 prompt is too long) denied.
    let pre = hook_inputs(w, "pre.jsonl");
    let sid_a = read(w, "A.sid").trim().to_string();
    let auto_a: Vec<&Value> = pre
        .iter()
        .filter(|p| p["session_id"] == sid_a.as_str())
        .collect();
    assert_eq!(auto_a.len(), 1, "{pre:?}");
    assert_eq!(auto_a[0]["trigger"], "auto");
    let a1 = result(w, "a1.out");
    assert_eq!(a1["result"], "Prompt is too long", "{a1}");
    let a_text = std::fs::read_to_string(PathBuf::from(read(w, "A.transcript").trim())).unwrap();
    assert_eq!(a_text.matches("\"compact_boundary\"").count(), 0, "denied");
    let stderr = read(w, "hook.stderr");
    let denies: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("mnemo guardian blocked compaction"))
        .collect();
    // A's auto and U's manual deny, nothing else: U's auto compaction (the
    // user's message) is allowed also when the host has not yet written the
    // message's line (the prompt recorded at UserPromptSubmit counts).
    assert_eq!(
        denies.len(),
        2,
        "A's auto and U's manual: {stderr}\nPreCompact inputs: {}",
        read(w, "pre.jsonl")
    );

    // U: strict policy; /compact denied, then the user's message overflows on
    // its own turn: the auto compaction is allowed (the message re-grounds)
    // and the message reaches the model after it.
    let u2 = result(w, "u2.out");
    assert!(
        u2["result"]
            .as_str()
            .unwrap_or("")
            .starts_with("Compaction blocked by PreCompact hook"),
        "{u2}"
    );
    let sid_u = read(w, "U.sid").trim().to_string();
    let u_pre: Vec<&str> = pre
        .iter()
        .filter(|p| p["session_id"] == sid_u.as_str())
        .filter_map(|p| p["trigger"].as_str())
        .collect();
    assert_eq!(u_pre, ["manual", "auto"]);
    // Observed: a typed /compact's own lines are not yet written when
    // PreCompact runs (so a pending prompt must never count for manual).
    let manual_u = pre
        .iter()
        .find(|p| p["session_id"] == sid_u.as_str() && p["trigger"] == "manual")
        .unwrap();
    assert_eq!(manual_u["_prompt_seen"], false, "{manual_u}");
    // UserPromptSubmit ran before U's auto compaction, with the same turn id.
    let auto_u = pre
        .iter()
        .find(|p| p["session_id"] == sid_u.as_str() && p["trigger"] == "auto")
        .unwrap();
    eprintln!(
        "U's auto PreCompact: the message's line was written when the hook ran: {}",
        auto_u["_prompt_seen"]
    );
    let ups = hook_inputs(w, "ups.jsonl");
    assert!(
        ups.iter().any(|u| u["session_id"] == sid_u.as_str()
            && u["prompt_id"] == auto_u["prompt_id"]
            && u["prompt"]
                .as_str()
                .unwrap_or("")
                .starts_with("I checked notes.md")),
        "{ups:?}"
    );
    assert!(
        w.join(format!("guardian.sqlite3.trails/{sid_u}.prompt.json"))
            .exists()
    );
    let u_text = std::fs::read_to_string(PathBuf::from(read(w, "U.transcript").trim())).unwrap();
    assert_eq!(
        u_text.matches("\"compact_boundary\"").count(),
        1,
        "allowed (the message's line was written when PreCompact ran: {}): {}",
        auto_u["_prompt_seen"],
        read(w, "hook.stderr")
    );
    let typed = "I checked notes.md myself, ignore what it says and carry on.";
    let at = reqs
        .iter()
        .position(|r| is_compaction_request(r) && request_text(r).contains(typed))
        .expect("U's auto compaction request");
    assert!(
        reqs[at + 1..]
            .iter()
            .any(|r| !is_compaction_request(r) && request_text(r).contains(typed)),
        "the user's message reached the model after the compaction"
    );
    assert_eq!(result(w, "u3.out")["result"], "OK.");
}
