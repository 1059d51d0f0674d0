//! mnemo's OpenCode plugin (`integrations/opencode`) in the real OpenCode
//! (npm `opencode-ai` 1.18.33, installed by `.ci/setup.d/31-opencode.sh`
//! into `$MNEMO_OPENCODE_BIN`), driven headless (`opencode run`) offline
//! inside `unshare -n` against our mock Chat Completions server as a custom
//! `@ai-sdk/openai-compatible` provider (`tests/hosts/opencode_session.sh`).
//! A 2,000-token model context and a turn the mock reports as 1,000,000
//! tokens make OpenCode compact the session by itself. Asserted: OpenCode
//! loads the plugin, the mock sees the trail in OpenCode's compaction
//! prompt, and a Guardian deny (untrusted bash output since the last user
//! message) stops the compaction with the Guardian's reason. Under CI=true a
//! missing host, `unshare` or python3 fails the test; elsewhere SKIPPED.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "hosts/common.rs"]
#[allow(dead_code)]
mod common;

use common::read;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn opencode_bin() -> PathBuf {
    std::env::var_os("MNEMO_OPENCODE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mnemo-opencode/node_modules/.bin/opencode"))
}

/// The text of a Chat Completions request's last message.
fn last_text(req: &Value) -> String {
    let Some(last) = req["body"]["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The mock's requests, split at the driver's marks: (allow, deny).
fn requests(w: &Path) -> (Vec<Value>, Vec<Value>) {
    let all: Vec<Value> = read(w, "requests.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let marks: Vec<usize> = read(w, "requests.jsonl.marks")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(marks.len(), 2, "marks: {marks:?}");
    let split = marks[1].min(all.len());
    (all[..split].to_vec(), all[split..].to_vec())
}

fn is_compaction(req: &Value) -> bool {
    last_text(req).contains("anchored summary")
}

#[test]
fn opencode_loads_the_plugin_the_trail_reaches_the_compactor_and_a_deny_stops_it() {
    let Some(dir) = common::run_session_at(
        &opencode_bin(),
        "OpenCode (opencode-ai)",
        "31-opencode.sh",
        "opencode_session.sh",
    ) else {
        return;
    };
    let w = dir.path();
    let log = format!("{}\n{}", read(w, "allow.err"), read(w, "deny.err"));
    assert!(
        !log.contains("failed to load plugin"),
        "OpenCode did not load the plugin:\n{log}"
    );
    let calls = read(w, "mnemo.calls");
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("guard check"))
            .count(),
        2,
        "one Guardian check per compaction: {calls}"
    );
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("trail --host opencode"))
            .count(),
        1,
        "a trail for the allowed compaction only: {calls}"
    );
    let (allow, deny) = requests(w);

    // Allowed: the compaction prompt carries the trail with the planted facts.
    assert_eq!(read(w, "allow.rc").trim(), "0", "{}", read(w, "allow.err"));
    let compactions: Vec<String> = allow
        .iter()
        .filter(|r| is_compaction(r))
        .map(last_text)
        .collect();
    assert_eq!(compactions.len(), 1, "{allow:#?}");
    let prompt = &compactions[0];
    assert!(prompt.contains("# mnemo trail"), "{prompt}");
    let trail = &prompt[prompt.find("# mnemo trail").unwrap()..];
    for fact in [
        "Never push to main directly.",
        "We chose port 8443 for the API instead of 8080.",
        "src/lib/config.rs",
    ] {
        assert!(trail.contains(fact), "{fact:?} not in the trail:\n{trail}");
    }
    // The session went on after the compaction (OpenCode's continue prompt).
    assert!(
        allow
            .iter()
            .skip_while(|r| !is_compaction(r))
            .skip(1)
            .any(|r| last_text(r).contains("Continue if you have next steps")),
        "{allow:#?}"
    );

    // Denied: the model saw the turn, no compaction request followed, and the
    // run stopped with the Guardian's reason and way out.
    assert!(
        deny.iter()
            .any(|r| last_text(r).contains("please run a command")),
        "{deny:#?}"
    );
    assert!(!deny.iter().any(is_compaction), "{deny:#?}");
    assert_ne!(read(w, "deny.rc").trim(), "0");
    let err = read(w, "deny.err");
    assert!(
        err.contains(
            "mnemo guardian blocked compaction: Compaction would fold policy-untrusted content"
        ),
        "{err}"
    );
    assert!(
        err.contains("This ends with a re-grounding from a trusted origin (user_input)"),
        "{err}"
    );
}
