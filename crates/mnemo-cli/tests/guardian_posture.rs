//! `mnemo gate --guardian-url` against fake Guardians: the client's
//! postures (ACS §4.1 startup posture, §6.4 `on_decision_failure`, both
//! fail closed by default) and its own audit log
//! (`_xref/guardian-audit.jsonl`: one line per consultation, the only
//! write of a refused gate; a line that cannot be written fails the gate).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::{Value, json};

#[path = "support/fake_guardian.rs"]
mod fake_guardian;
use fake_guardian::*;

#[test]
fn an_allowed_gate_records_what_it_asked_in_its_own_commit() {
    let fake = Fake::start(|m| {
        if m == "handshake/hello" {
            hello()
        } else {
            allow()
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(dir.path(), &fake.url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(compacted(dir.path()));
    assert!(!r.stderr.contains("warning:"), "{}", r.stderr);
    let lines = audit(dir.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    let a = &lines[0];
    assert_eq!(a["received"], "allow");
    assert_eq!(a["applied"], "allow");
    assert_eq!(a["event"], "decision");
    assert_eq!(a["compacted"], true);
    assert_eq!(a["method"], "steps/preCompact");
    let sent = fake.request_ids();
    assert_eq!(sent.len(), 3, "hello, one retrieval, preCompact");
    assert_eq!(a["request_ids"], json!(sent));
    assert_eq!(a["request_id"], json!(sent[2]));
    let session = fake.seen.lock().unwrap()[0]["params"]["metadata"]["session_id"].clone();
    assert_eq!(a["session_id"], session);
    // A second consultation is a second line (each is its own session).
    let r = gate(dir.path(), &fake.url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(audit(dir.path()).len(), 2);
}

#[test]
fn an_unanswered_hello_refuses_by_default_and_proceeds_loudly_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let url = free_url();
    let r = gate(dir.path(), &url, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot ask the Guardian"), "{}", r.stderr);
    assert_only_the_audit_line(dir.path());
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "unreachable");
    assert_eq!(a["applied"], "deny");
    assert_eq!(a["event"], "startup_failed");
    assert_eq!(a["method"], "handshake/hello");
    assert_eq!(a["compacted"], false);
    assert_eq!(a["postures"]["startup_posture"], "refuse");

    // A silent hello under the startup posture proceed (the flag).
    let fake = Fake::start(|m| {
        if m == "handshake/hello" {
            Answer::Silent
        } else {
            allow()
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-startup-posture", "proceed", "--quiet"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(compacted(dir.path()));
    assert!(
        r.stderr.contains("warning:") && r.stderr.contains("WITHOUT a decision"),
        "the warning survives --quiet: {}",
        r.stderr
    );
    assert_eq!(
        fake.methods(),
        ["handshake/hello"],
        "nothing after the hello"
    );
    let lines = audit(dir.path());
    assert_eq!(lines.len(), 1);
    let a = &lines[0];
    assert_eq!(a["received"], "no_answer");
    assert_eq!(a["applied"], "proceeded_unguarded");
    assert_eq!(a["event"], "started_unguarded");
    assert_eq!(a["reason_codes"], json!(["started_unguarded"]));
    assert_eq!(a["compacted"], true);
    assert_eq!(a["request_ids"], json!(fake.request_ids()));
}

#[test]
fn a_refusal_is_a_decision_whatever_the_startup_posture() {
    let fake = Fake::start(|_| Answer::Error(-32000));
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-startup-posture", "proceed"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_only_the_audit_line(dir.path());
    let a = &audit(dir.path())[0];
    assert_eq!(a["event"], "refused");
    assert_eq!(a["applied"], "deny");
}

#[test]
fn a_decision_failure_denies_by_default_and_proceeds_under_the_config_posture() {
    let page = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>";
    let fake = Fake::start(move |m| match m {
        "handshake/hello" => hello(),
        "steps/preCompact" => Answer::Raw(page),
        _ => allow(),
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(dir.path(), &fake.url, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_only_the_audit_line(dir.path());
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "not_json");
    assert_eq!(a["applied"], "deny");
    assert_eq!(a["event"], "decision_failed");
    assert_eq!(a["method"], "steps/preCompact");

    // mnemo.toml's posture proceed: compacted without a decision, loudly.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mnemo.toml"),
        "[guardian_client]\non_decision_failure = \"proceed\"\n",
    )
    .unwrap();
    let r = gate(dir.path(), &fake.url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(compacted(dir.path()));
    assert!(r.stderr.contains("WITHOUT a decision"), "{}", r.stderr);
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "not_json");
    assert_eq!(a["applied"], "proceeded_unguarded");
    assert_eq!(a["event"], "proceeded_without_decision");
    assert_eq!(a["reason_codes"], json!(["proceeded_without_decision"]));
    assert_eq!(a["compacted"], true);
    // The flag overrides the file.
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("mnemo.toml"),
        dir2.path().join("mnemo.toml"),
    )
    .unwrap();
    let r = gate(
        dir2.path(),
        &fake.url,
        &["--guardian-on-decision-failure", "deny"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_only_the_audit_line(dir2.path());
}

#[test]
fn a_silent_precompact_is_a_decision_failure() {
    let fake = Fake::start(|m| match m {
        "handshake/hello" => hello(),
        "steps/preCompact" => Answer::Silent,
        _ => allow(),
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-on-decision-failure", "proceed"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(compacted(dir.path()));
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "no_answer");
    assert_eq!(a["event"], "proceeded_without_decision");
    assert_eq!(a["request_id"], json!(fake.request_ids()[2]));
    // `gate --json` carries the warning.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("MNEMO_CONFIG")
        .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
        .args([
            "--to",
            "aphrodite",
            "--date",
            "2026-11-30",
            "--json",
            "--guardian-url",
            &free_url(),
        ])
        .args(["--guardian-startup-posture", "proceed", "-"])
        .write_stdin(
            r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders", "status": "complete"}"#,
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["guardian_warning"]
            .as_str()
            .is_some_and(|w| w.contains("WITHOUT a decision")),
        "{v}"
    );
}

#[test]
fn a_guardian_that_announces_deny_keeps_the_gate_closed() {
    let fake = Fake::start(|m| match m {
        "handshake/hello" => Answer::Result(json!({"negotiated_version": "0.1.0",
            "methods_evaluated": ["steps/preCompact"], "on_decision_failure": "deny"})),
        "steps/preCompact" => Answer::Error(-32603),
        _ => allow(),
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-on-decision-failure", "proceed"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("announced deny"), "{}", r.stderr);
    assert_only_the_audit_line(dir.path());
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "error");
    assert_eq!(a["applied"], "deny");
    assert_eq!(a["reason_codes"], json!(["guardian_requires_deny"]));
    assert_eq!(a["postures"]["announced_on_decision_failure"], "deny");
    assert_eq!(a["postures"]["effective_on_decision_failure"], "deny");
}

/// ACS §6.5: a MODIFY is honoured as a decision (applied as deny), never
/// as a failure the posture could let through.
#[test]
fn a_modify_is_recorded_as_received_modify_applied_deny() {
    let fake = Fake::start(|m| match m {
        "handshake/hello" => hello(),
        "steps/preCompact" => Answer::Result(json!({"type": "final", "decision": "modify",
            "reasoning": "redact the key", "modifications": {"redactions": [{"path": "x"}]}})),
        _ => allow(),
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &[
            "--guardian-on-decision-failure",
            "proceed",
            "--guardian-startup-posture",
            "proceed",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_only_the_audit_line(dir.path());
    let a = &audit(dir.path())[0];
    assert_eq!(a["received"], "modify");
    assert_eq!(a["applied"], "deny");
    assert_eq!(a["event"], "decision");
    assert_eq!(a["reason_codes"], json!(["modify_unsupported"]));
    assert_eq!(a["compacted"], false);
}

#[test]
fn a_failing_audit_write_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bank/_xref/guardian-audit.jsonl")).unwrap();
    // Refused: the error says the line could not be written.
    let r = gate(dir.path(), &free_url(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("audit log") && r.stderr.contains("could not be written"),
        "{}",
        r.stderr
    );
    // Proceed: no line, no compaction.
    let r = gate(
        dir.path(),
        &free_url(),
        &["--guardian-startup-posture", "proceed"],
    );
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(!compacted(dir.path()), "{}", r.stderr);
    assert!(r.stderr.contains("could not be written"), "{}", r.stderr);
}

#[test]
fn bad_posture_values_and_keys_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (toml, key) in [
        (
            "[guardian_client]\nstartup_posture = \"maybe\"\n",
            "guardian_client.startup_posture",
        ),
        (
            "[guardian_client]\non_decision_failure = \"allow\"\n",
            "guardian_client.on_decision_failure",
        ),
        (
            "[guardian_client]\nposture = \"proceed\"\n",
            "guardian_client",
        ),
    ] {
        std::fs::write(dir.path().join("mnemo.toml"), toml).unwrap();
        let r = gate(dir.path(), &free_url(), &[]);
        assert_eq!(r.code, 1, "{toml}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("`{key}")),
            "{toml}: {}",
            r.stderr
        );
        assert!(!dir.path().join("bank").exists(), "{toml}");
    }
    let r = Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir.path())
        .args(["gate", "--guardian-url", "http://127.0.0.1:1"])
        .args(["--guardian-startup-posture", "sometimes", "x.json"])
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("--guardian-startup-posture"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}
