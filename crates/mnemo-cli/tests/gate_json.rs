#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `mnemo gate --json` (issue #10 item 4): one JSON object on standard
//! output with the confirmation figures, every record of the batch (key,
//! agent, band, score, lines, o200k tokens in and out, action and reason),
//! the skipped inputs, the fields Layer 1 dropped and the flags; a re-run
//! reports every entry `unchanged`, an edited summary `updated`.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

fn gate_json(dir: &Path, files: &[String]) -> Value {
    let out = Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir)
        .env_remove("MNEMO_CONFIG")
        .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
        .args(["--to", "themis", "--date", "2026-11-30", "--json"])
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    // One object, one line.
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

const HERMES: &str = r#"{"agent": "hermes", "status": "complete",
 "summary": "Added POST /auth/login with JWT refresh rotation; answers 401 when expired.",
 "files_changed": ["src/auth.rs"], "stdout": "pytest: 14 passed"}"#;
const THEMIS: &str = r#"{"agent": "themis", "status": "blocked",
 "summary": "Review of the auth endpoints.", "blockers": ["fixtures missing"]}"#;

fn entry<'a>(v: &'a Value, agent: &str) -> &'a Value {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["agent"] == agent)
        .unwrap_or_else(|| panic!("no entry of {agent}: {v}"))
}

#[test]
fn one_object_with_figures_entries_skips_and_drops() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "hermes.json", HERMES),
        write(dir.path(), "themis.json", THEMIS),
    ];
    let v = gate_json(dir.path(), &files);
    assert!(
        v["confirmation"]
            .as_str()
            .unwrap()
            .starts_with("Compression complete: 1 entries compressed")
    );
    assert_eq!(v["compressed"], 1);
    assert_eq!(v["phase"], "1");
    assert_eq!(v["date"], "2026-11-30");
    assert_eq!(v["upsert"]["new"], 1);
    let h = entry(&v, "Hermes");
    assert_eq!(h["key"], "2026-11-30|1|hermes");
    assert_eq!(h["action"], "new");
    assert_eq!(h["source"], "hermes.json");
    assert!(matches!(h["band"].as_str(), Some("CRITICAL" | "HIGH")));
    let score = h["score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score));
    // Two decimals, as `score --json` prints.
    assert!((score * 100.0 - (score * 100.0).round()).abs() < 1e-9);
    assert!(h["lines"].as_f64().unwrap() >= 1.0);
    assert!(h["tokens_in"].as_u64().unwrap() > 0);
    assert!(h["tokens_out"].as_u64().unwrap() > 0);
    assert!(h["reason"].is_null());
    let t = entry(&v, "Themis");
    assert_eq!(t["action"], "skipped");
    assert!(t["key"].is_null());
    assert!(t["reason"].as_str().unwrap().contains("blockers"));
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["dropped"],
        serde_json::json!([{"source": "hermes.json", "line": null, "record": 1, "field": "stdout"}])
    );
    assert!(v["flags"].is_array());
    assert_eq!(
        v["tokens"]["in"].as_u64().unwrap(),
        h["tokens_in"].as_u64().unwrap() + t["tokens_in"].as_u64().unwrap()
    );
    assert_eq!(v["tokens"]["out"], h["tokens_out"]);
    // What the JSON says was written was written.
    let active = std::fs::read_to_string(dir.path().join("bank/01-active-context.md")).unwrap();
    assert!(active.contains("mnemo:key=2026-11-30|1|hermes"));
}

#[test]
fn rerun_is_unchanged_and_an_edit_is_updated() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "hermes.json", HERMES);
    let b = write(
        dir.path(),
        "demeter.json",
        r#"{"agent": "demeter", "status": "complete", "summary": "Migration 0012 adds table refresh_tokens."}"#,
    );
    let files = vec![a.clone(), b.clone()];
    gate_json(dir.path(), &files);
    let again = gate_json(dir.path(), &files);
    assert_eq!(again["upsert"]["new"], 0);
    assert_eq!(again["upsert"]["unchanged"], 2);
    assert_eq!(entry(&again, "Hermes")["action"], "unchanged");
    assert_eq!(entry(&again, "Demeter")["action"], "unchanged");
    write(
        dir.path(),
        "demeter.json",
        r#"{"agent": "demeter", "status": "complete", "summary": "Migration 0012 adds table refresh_tokens with column expires_at."}"#,
    );
    let edited = gate_json(dir.path(), &files);
    assert_eq!(entry(&edited, "Hermes")["action"], "unchanged");
    assert_eq!(entry(&edited, "Demeter")["action"], "updated");
    assert_eq!(edited["upsert"]["updated"], 1);
}
