//! `mnemo gate --guardian-url`: the bank's compaction asks a Guardian served
//! by `mnemo guard http` over loopback; a deny or an unreachable Guardian
//! writes nothing but the client's audit line (`_xref/guardian-audit.jsonl`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_guardian() -> (Server, String) {
    let port = free_port();
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .args([
            "guard",
            "http",
            "--memory",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the Guardian did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, format!("http://127.0.0.1:{port}"))
}

fn gate(dir: &Path, url: &str, summary: &str) -> assert_cmd::assert::Assert {
    std::fs::write(dir.join("summary.json"), summary).unwrap();
    Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir)
        .env_remove("MNEMO_CONFIG")
        .args([
            "--bank",
            "bank",
            "gate",
            "--phase",
            "1",
            "--from",
            "hermes",
            "--to",
            "aphrodite",
        ])
        .args([
            "--date",
            "2026-11-30",
            "--guardian-url",
            url,
            "summary.json",
        ])
        .assert()
}

#[test]
fn the_gate_asks_a_remote_guardian() {
    let (_server, url) = start_guardian();
    let dir = tempfile::tempdir().unwrap();
    // Untrusted content (a retrieved web page) is denied, and nothing is written.
    gate(
        dir.path(),
        &url,
        r#"{"agent": "hermes", "summary": "Summarised a web page about auth tokens", "status": "complete",
            "provenance": {"origins": ["retrieved"], "derived_from": ["step-3"]}}"#,
    )
    .code(1)
    .stderr(predicate::str::contains("deny").or(predicate::str::contains("denied")));
    assert!(
        !dir.path().join("bank/01-active-context.md").exists(),
        "a deny writes nothing"
    );
    let audit = |dir: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.join("bank/_xref/guardian-audit.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let a = &audit(dir.path())[0];
    assert_eq!(
        (&a["received"], &a["applied"], &a["compacted"]),
        (&"deny".into(), &"deny".into(), &false.into()),
        "{a}"
    );
    // mnemo's own Guardian announces its posture (proceed by default).
    assert_eq!(a["postures"]["announced_on_decision_failure"], "proceed");

    // The orchestrator's own summary is allowed.
    gate(
        dir.path(),
        &url,
        r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#,
    )
    .success()
    .stdout(predicate::str::starts_with("Compression complete: 1 entries compressed"));
    assert!(dir.path().join("bank/01-active-context.md").is_file());
    let lines = audit(dir.path());
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["applied"], "allow");
    assert_eq!(lines[1]["compacted"], true);
}

#[test]
fn an_unreachable_guardian_compacts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    gate(
        dir.path(),
        &url,
        r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders", "status": "complete"}"#,
    )
    .code(1)
    .stderr(predicate::str::contains("cannot ask the Guardian"));
    assert!(
        !dir.path()
            .join("bank")
            .join("01-active-context.md")
            .exists()
    );
}
