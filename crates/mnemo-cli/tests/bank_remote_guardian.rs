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
    start_guardian_with(&[], &[])
}

/// `mnemo guard http --memory` on a free loopback port with `args` and
/// `env`, once it accepts connections.
fn start_guardian_with(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> (Server, String) {
    let port = free_port();
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .args([
            "guard",
            "http",
            "--memory",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(args)
        .envs(env.iter().copied())
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

/// `[guardian_client] hmac_key_id` / `hmac_key_env` (or `--guardian-key-id`
/// / `--guardian-key-env`): against a real `mnemo guard http` that has a
/// key, a gate that signs is answered and compacts; one with no key, the
/// wrong secret or an unset variable compacts nothing and says why.
#[test]
fn the_gate_signs_for_a_guardian_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[guardian.hmac_keys]]\nkey_id = \"k1\"\nenv = \"SRV_KEY\"\nencoding = \"hex\"\n",
    )
    .unwrap();
    let secret_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let (_server, url) = start_guardian_with(
        &["--policy".as_ref(), policy.as_os_str()],
        &[("SRV_KEY", secret_hex)],
    );
    let summary = r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#;
    let run = |name: &str, config: Option<&str>, env: &[(&str, &str)], flags: &[&str]| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("summary.json"), summary).unwrap();
        if let Some(c) = config {
            std::fs::write(d.join("mnemo.toml"), c).unwrap();
        }
        let mut c = Command::cargo_bin("mnemo").unwrap();
        c.current_dir(&d)
            .env_remove("MNEMO_CONFIG")
            .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
            .args([
                "--to",
                "aphrodite",
                "--date",
                "2026-11-30",
                "--guardian-url",
                &url,
            ])
            .args(flags)
            .arg("summary.json");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let compacted = d.join("bank/01-active-context.md").is_file();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            compacted,
        )
    };
    let keyed = "[guardian_client]\nhmac_key_id = \"k1\"\nhmac_key_env = \"CLIENT_KEY\"\nhmac_key_encoding = \"hex\"\n";
    // Signed under the right secret (mnemo.toml): answered, compacted.
    let (code, err, compacted) = run("signed", Some(keyed), &[("CLIENT_KEY", secret_hex)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(compacted);
    // No key: the Guardian refuses the unsigned hello; nothing compacted.
    let (code, err, compacted) = run("unsigned", None, &[], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!compacted);
    assert!(
        err.contains("-32004") || err.to_lowercase().contains("signature"),
        "{err}"
    );
    // The wrong secret: refused too.
    let wrong = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
    let (code, err, compacted) = run("wrong", Some(keyed), &[("CLIENT_KEY", wrong)], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!compacted);
    // The flags name the label and the variable (the encoding stays the
    // configuration's: hex here).
    let hex_only = "[guardian_client]\nhmac_key_encoding = \"hex\"\n";
    let (code, err, compacted) = run(
        "flags",
        Some(hex_only),
        &[("OTHER_VAR", secret_hex)],
        &["--guardian-key-id", "k1", "--guardian-key-env", "OTHER_VAR"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(compacted);
    // An unset variable is a usage error naming it; nothing is asked.
    let (code, err, compacted) = run("unset", Some(keyed), &[], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!compacted);
    assert!(
        err.contains("guardian_client.hmac_key_env names CLIENT_KEY, which is not set"),
        "{err}"
    );
    // Half a key: named.
    let (code, err, _) = run(
        "half",
        Some("[guardian_client]\nhmac_key_id = \"k1\"\n"),
        &[],
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("hmac_key_id needs guardian_client.hmac_key_env"),
        "{err}"
    );
    // A secret that does not decode: named.
    let (code, err, _) = run("bad", Some(keyed), &[("CLIENT_KEY", "zz")], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("CLIENT_KEY (guardian_client.hmac_key_env) is not valid hex"),
        "{err}"
    );
}
