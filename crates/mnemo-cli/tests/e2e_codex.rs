//! The compaction Guardian against the real Codex CLI (npm `@openai/codex`
//! 0.171.0, installed by `.ci/setup.d/30-hosts.sh` into
//! `$MNEMO_HOSTS_BIN`), driven offline through `codex app-server`
//! (`tests/hosts/codex_appserver.py`) against our mock Responses API
//! server (`tests/hosts/mock_openai.py`), inside `unshare -n` with only
//! loopback up. The hooks are installed by `mnemo hook install codex`, so
//! Codex itself checks our trusted hashes (it skips an untrusted hook
//! silently). A second test drives `codex exec` (`tests/hosts/codex_exec_session.sh`)
//! and records what it shows of a deny. Under CI=true a missing host (or
//! one that is not the pinned version), `unshare` or python3 fails the
//! test; elsewhere it is SKIPPED.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::store::SessionStore;
#[path = "hosts/common.rs"]
mod common;

use common::read;
use serde_json::Value;
use std::path::PathBuf;

/// The `hook/completed` runs a step saw: (event, status, texts).
fn hook_runs(step: &Value) -> Vec<(String, String, Vec<String>)> {
    step["notifications"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["method"] == "hook/completed")
        .map(|n| {
            let run = &n["params"]["run"];
            (
                run["eventName"].as_str().unwrap_or("").to_string(),
                run["status"].as_str().unwrap_or("").to_string(),
                run["entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["text"].as_str().map(str::to_string))
                    .collect(),
            )
        })
        .collect()
}

fn turn_status(step: &Value) -> Option<String> {
    step["notifications"]
        .as_array()?
        .iter()
        .find(|n| n["method"] == "turn/completed")
        .and_then(|n| n["params"]["turn"]["status"].as_str())
        .map(str::to_string)
}

#[test]
fn codex_strict_deny_holds_the_override_allows_and_the_users_turn_ends_an_auto_deny() {
    let Some(dir) = common::run_session(
        "codex",
        "Codex CLI",
        common::CODEX_VERSION,
        "codex_session.sh",
    ) else {
        return;
    };
    let w = dir.path();
    assert_eq!(
        read(w, "install.rc").trim(),
        "0",
        "{}",
        read(w, "install.out")
    );
    assert_eq!(read(w, "driver.rc").trim(), "0");
    let session: Value = serde_json::from_str(&read(w, "session.json")).unwrap();

    // `hook install codex`: Codex lists our four handlers as trusted, with
    // the hashes we wrote (its own computation, not ours).
    let config: toml::Value = toml::from_str(&read(w, "home/config.toml")).unwrap();
    let hooks = session["hooks"]["result"]["data"][0]["hooks"]
        .as_array()
        .unwrap();
    let ours: Vec<&Value> = hooks
        .iter()
        .filter(|h| h["command"].as_str().unwrap_or("").contains(" hook codex "))
        .collect();
    assert_eq!(ours.len(), 4, "{hooks:?}");
    for h in &ours {
        assert_eq!(h["trustStatus"], "trusted", "{h}");
        let key = h["key"].as_str().unwrap();
        assert_eq!(
            config["hooks"]["state"][key]["trusted_hash"].as_str(),
            h["currentHash"].as_str(),
            "{key}"
        );
    }

    let steps = session["steps"].as_array().unwrap();
    let denied = |i: usize| {
        let runs = hook_runs(&steps[i]);
        runs.iter().any(|(e, s, t)| {
            e == "preCompact"
                && s == "stopped"
                && t.iter()
                    .any(|x| x.contains("mnemo guardian blocked compaction"))
        })
    };
    // 0: the model searched the web (external content in the context).
    assert_eq!(turn_status(&steps[0]).as_deref(), Some("completed"));
    // 1, 2: strict policy, manual compaction (thread/compact/start) denied,
    // and the second one too; the reason reaches the client.
    assert!(denied(1), "{:?}", hook_runs(&steps[1]));
    assert!(denied(2), "{:?}", hook_runs(&steps[2]));
    // 4: manual_override = true: the compaction goes through, PostCompact ran.
    assert!(!denied(4), "{:?}", hook_runs(&steps[4]));
    assert!(
        hook_runs(&steps[4])
            .iter()
            .any(|(e, s, _)| e == "postCompact" && s == "completed"),
        "{:?}",
        hook_runs(&steps[4])
    );
    // 6: strict again; the tool output makes the mid-turn auto compaction
    // (model_auto_compact_token_limit) fold untrusted content: denied.
    assert!(denied(6), "{:?}", hook_runs(&steps[6]));
    // 7: the user's next message: Codex compacts before writing it; the
    // message ends the deny on its own turn and reaches the model.
    assert!(!denied(7), "{:?}", hook_runs(&steps[7]));
    assert_eq!(turn_status(&steps[7]).as_deref(), Some("completed"));
    let requests = read(w, "requests.jsonl");
    let last = requests.lines().last().unwrap_or("");
    assert!(last.contains("hello again, go on"), "{last}");

    // What Codex 0.171.0 does with a hook's systemMessage (the trail on
    // allow): shown to the user (hook output entries), never sent to the
    // model, neither in the compaction request nor after it (docs/trail.md).
    assert!(
        hook_runs(&steps[4])
            .iter()
            .any(|(e, _, t)| e == "preCompact" && t.iter().any(|x| x.contains("mnemo trail"))),
        "{:?}",
        hook_runs(&steps[4])
    );
    assert!(
        !requests.contains("mnemo trail"),
        "Codex now sends systemMessage to the model: update docs/trail.md"
    );

    let stderr = read(w, "hook.stderr");
    let denies = stderr
        .lines()
        .filter(|l| l.starts_with("mnemo guardian blocked compaction"))
        .count();
    assert_eq!(denies, 3, "{stderr}");
    let transcript = PathBuf::from(read(w, "transcript_path").trim());
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"type\":\"compacted\""))
            .count(),
        2,
        "the two allowed compactions only"
    );

    // PostCompact recorded both compactions with their lineage: the first
    // summary folded the web search, so it is untrusted.
    let sid = session["thread"].as_str().unwrap();
    let mut store = mnemo_guardian_store::SqliteStore::open(&w.join("guardian.sqlite3")).unwrap();
    let steps = store.steps(sid).unwrap();
    let posts: Vec<_> = steps
        .iter()
        .filter(|s| s.method == "steps/postCompact")
        .collect();
    assert_eq!(posts.len(), 2, "{steps:?}");
    let first = &posts[0].provenance[0];
    assert!(
        first.provenance_id.starts_with("codex:summary:"),
        "{first:?}"
    );
    assert!(!first.derived_from.is_empty());
    assert!(
        !first
            .derived_from
            .iter()
            .any(|d| d == mnemo_hooks::codex::PRIOR_COMPACTION),
        "lineage known: {first:?}"
    );
    let compacted = text
        .lines()
        .find(|l| l.contains("\"type\":\"compacted\""))
        .unwrap();
    let v: Value = serde_json::from_str(compacted).unwrap();
    assert_eq!(
        first.provenance_id,
        mnemo_hooks::codex::summary_id(v["payload"]["message"].as_str().unwrap()),
        "the id the next PreCompact derives the summary from"
    );
}

#[test]
fn codex_exec_stops_the_turn_on_a_deny_and_does_not_show_the_reason() {
    let Some(dir) = common::run_session(
        "codex",
        "Codex CLI",
        common::CODEX_VERSION,
        "codex_exec_session.sh",
    ) else {
        return;
    };
    let w = dir.path();
    assert_eq!(
        read(w, "install.rc").trim(),
        "0",
        "{}",
        read(w, "install.out")
    );
    assert_eq!(read(w, "e1.rc").trim(), "0", "{}", read(w, "e1.err"));
    // The mid-turn auto compaction after the untrusted search is denied:
    // the turn stops (exit 1) and nothing is compacted.
    let shown = read(w, "e2.out") + &read(w, "e2.err");
    assert_eq!(read(w, "e2.rc").trim(), "1", "{shown}");
    assert!(shown.contains("hook: PreCompact Stopped"), "{shown}");
    assert!(shown.contains("turn interrupted"), "{shown}");
    let answers: Vec<Value> = read(w, "hook.stdout")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let deny = answers
        .iter()
        .find(|a| a["continue"] == false)
        .expect("the hook denied");
    let reason = deny["systemMessage"].as_str().unwrap();
    assert!(
        reason.starts_with("mnemo guardian blocked compaction"),
        "{deny}"
    );
    assert_eq!(deny["stopReason"], reason);
    let transcript = PathBuf::from(read(w, "transcript_path").trim());
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        !text.contains("\"type\":\"compacted\""),
        "denied: nothing compacted"
    );
    // What Codex 0.171.0's `codex exec` shows of a PreCompact stop: only
    // "hook: PreCompact Stopped" and "turn interrupted"; neither the
    // stopReason nor the systemMessage (nor the hook's stderr) is printed,
    // in text or `--json` output. The reason reaches app-server clients
    // (hook/completed entries, the test above) and the session store.
    assert!(
        !shown.contains("mnemo guardian blocked compaction"),
        "codex exec now shows the hook's reason: update README and docs/guardian.md (Codex CLI)"
    );
}

#[test]
fn a_project_install_is_trusted_by_codex() {
    let Some(dir) = common::run_session(
        "codex",
        "Codex CLI",
        common::CODEX_VERSION,
        "codex_project_install.sh",
    ) else {
        return;
    };
    let w = dir.path();
    assert_eq!(
        read(w, "install.rc").trim(),
        "0",
        "{}",
        read(w, "install.out")
    );
    assert_eq!(read(w, "driver.rc").trim(), "0");
    let session: Value = serde_json::from_str(&read(w, "session.json")).unwrap();
    let hooks: Vec<&Value> = session["hooks"]["result"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["hooks"].as_array().into_iter().flatten())
        .filter(|h| h["command"].as_str().unwrap_or("").contains(" hook codex "))
        .collect();
    // Four handlers from the project layer, trusted with the hashes the
    // install wrote into the user config (Codex reads trust only there).
    assert_eq!(hooks.len(), 4, "{hooks:?}");
    let user: toml::Value = toml::from_str(&read(w, "home/config.toml")).unwrap();
    assert_eq!(
        user["model"].as_str(),
        Some("mock-model"),
        "the user's keys kept"
    );
    let project = w.join("proj/.codex/config.toml");
    for h in &hooks {
        let key = h["key"].as_str().unwrap();
        assert!(key.starts_with(&format!("{}:", project.display())), "{key}");
        assert_eq!(h["trustStatus"], "trusted", "{h}");
        assert_eq!(
            user["hooks"]["state"][key]["trusted_hash"].as_str(),
            h["currentHash"].as_str(),
            "{key}"
        );
    }
}
