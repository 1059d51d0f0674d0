#![allow(clippy::unwrap_used, clippy::expect_used)]
//! SPEC §2 batch keys: several summaries from one agent in one phase each
//! become their own entry (a task discriminator after date|phase|agent), a
//! lone summary keeps the seed's plain key, re-running changes no byte and
//! an updated summary replaces only its own entry.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use mnemo_bank::layout::ACTIVE_CONTEXT;
use mnemo_bank::ops::{self, GateOptions, Input};
use mnemo_bank::{Bank, init_bank};
use mnemo_guardian::model::Trigger;
use mnemo_guardian::policy::Policy;
use mnemo_model::Config;

fn opts(phase: &str) -> GateOptions {
    GateOptions {
        phase: phase.into(),
        from: vec!["hermes".into()],
        to: vec!["aphrodite".into()],
        phases: None,
        date: "2026-06-20".into(),
        feature: None,
        policy: Policy::default(),
        guardian_url: None,
        guardian_cmd: None,
        trace_quiet: false,
        guardian_tls: Default::default(),
        trigger: Trigger::FrameworkInitiated,
        lock_timeout: Duration::from_secs(30),
    }
}

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    mnemo_bank::txn::walk(root)
        .into_iter()
        .filter(|p| !p.ends_with(".tmp/compress.lock"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn input(name: &str, text: &str) -> Input {
    Input {
        name: name.into(),
        text: text.into(),
    }
}

const LOGIN: &str = r#"{"agent": "hermes", "status": "complete",
 "summary": "Added POST /auth/login; answers 401 on a bad password.",
 "files_changed": ["api/login.py"]}"#;
const REFRESH: &str = r#"{"agent": "hermes", "status": "complete",
 "summary": "Added POST /auth/refresh; answers 410 Gone for a revoked token.",
 "files_changed": ["api/refresh.py"]}"#;
const REFRESH_V2: &str = r#"{"agent": "hermes", "status": "complete",
 "summary": "Added POST /auth/refresh; answers 410 Gone for a revoked token and 429 when rate limited.",
 "files_changed": ["api/refresh.py"]}"#;

fn markers(active: &str) -> Vec<String> {
    active
        .lines()
        .filter_map(|l| mnemo_compress::render::parse_marker(l).map(|(k, _)| k.render()))
        .collect()
}

fn entry_line<'a>(active: &'a str, key: &str) -> &'a str {
    active
        .lines()
        .find(|l| l.contains(&format!("mnemo:key={key} ")))
        .unwrap_or_else(|| panic!("no entry {key} in\n{active}"))
}

#[test]
fn two_summaries_of_one_agent_without_phases_each_get_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let batch = [input("login.json", LOGIN), input("refresh.json", REFRESH)];
    // Before SPEC §2 this was refused: "has the same key (2026-06-20|1|hermes)".
    let rep = ops::gate(&bank, &Config::default(), &opts("1"), &batch).unwrap();
    assert_eq!(rep.entries, 2, "{rep:?}");
    let active = std::fs::read_to_string(root.join(ACTIVE_CONTEXT)).unwrap();
    let keys = markers(&active);
    assert_eq!(
        keys,
        ["2026-06-20|1|hermes|1", "2026-06-20|1|hermes|2"],
        "{active}"
    );
    assert!(entry_line(&active, "2026-06-20|1|hermes|1").contains("P1 · Hermes"));
    let progress = std::fs::read_to_string(root.join("02-progress-log.md")).unwrap();
    assert!(
        progress.contains("### 2026-06-20 — Phase 1: Hermes — 1\n"),
        "{progress}"
    );
    assert!(
        progress.contains("### 2026-06-20 — Phase 1: Hermes — 2\n"),
        "{progress}"
    );

    // Re-running the same batch changes no byte.
    let before = snapshot(&root);
    ops::gate(&bank, &Config::default(), &opts("1"), &batch).unwrap();
    assert_eq!(before, snapshot(&root));

    // An updated summary replaces its own entry only.
    let first = entry_line(&active, "2026-06-20|1|hermes|1").to_string();
    let second = entry_line(&active, "2026-06-20|1|hermes|2").to_string();
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1"),
        &[
            input("login.json", LOGIN),
            input("refresh.json", REFRESH_V2),
        ],
    )
    .unwrap();
    let after = std::fs::read_to_string(root.join(ACTIVE_CONTEXT)).unwrap();
    assert_eq!(markers(&after), keys, "{after}");
    assert_eq!(entry_line(&after, "2026-06-20|1|hermes|1"), first);
    assert_ne!(entry_line(&after, "2026-06-20|1|hermes|2"), second);
    assert!(after.contains("429"), "{after}");
}

#[test]
fn task_fields_discriminate_and_a_lone_summary_keeps_the_plain_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let a = r#"{"agent": "hermes", "task": "login endpoint", "status": "complete", "summary": "Added POST /auth/login."}"#;
    let b = r#"---
agent: hermes
title: refresh endpoint
status: complete
summary: Added POST /auth/refresh.
"#;
    let c = "## subtask_summary\n- **agent:** demeter\n- **status:** complete\n- **summary:** Added table sessions.\n";
    ops::gate(
        &bank,
        &Config::default(),
        &opts("2"),
        &[input("a.json", a), input("b.yaml", b), input("c.md", c)],
    )
    .unwrap();
    let active = std::fs::read_to_string(root.join(ACTIVE_CONTEXT)).unwrap();
    let mut keys = markers(&active);
    keys.sort();
    assert_eq!(
        keys,
        [
            "2026-06-20|2|demeter",
            "2026-06-20|2|hermes|login_endpoint",
            "2026-06-20|2|hermes|refresh_endpoint",
        ],
        "{active}"
    );
}

#[test]
fn an_existing_plain_key_entry_is_updated_by_a_lone_summary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1"),
        &[input("l.json", LOGIN)],
    )
    .unwrap();
    let before = std::fs::read_to_string(root.join(ACTIVE_CONTEXT)).unwrap();
    assert_eq!(markers(&before), ["2026-06-20|1|hermes"]);
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1"),
        &[input("l.json", REFRESH)],
    )
    .unwrap();
    let after = std::fs::read_to_string(root.join(ACTIVE_CONTEXT)).unwrap();
    assert_eq!(markers(&after), ["2026-06-20|1|hermes"], "{after}");
    assert!(after.contains("/auth/refresh"), "{after}");
}
