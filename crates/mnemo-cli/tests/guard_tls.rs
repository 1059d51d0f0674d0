//! `mnemo guard http --tls-cert/--tls-key` with `mnemo gate --guardian-url
//! https://… --guardian-ca`: certificates made at test time (rcgen).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn gate_asks_an_https_guardian_that_it_trusts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    std::fs::write(d.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(d.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(d.join("key.pem"), key.serialize_pem()).unwrap();

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .args(["guard", "http", "--memory", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--tls-cert")
        .arg(d.join("cert.pem"))
        .arg("--tls-key")
        .arg(d.join("key.pem"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the Guardian did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(
        d.join("summary.json"),
        r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#,
    )
    .unwrap();
    let gate = |ca: Option<&str>| {
        let mut c = Command::cargo_bin("mnemo").unwrap();
        c.current_dir(d)
            .env_remove("MNEMO_CONFIG")
            .env_remove("MNEMO_GUARDIAN_CA")
            .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
            .args([
                "--to",
                "aphrodite",
                "--date",
                "2026-11-30",
                "--guardian-url",
            ])
            .arg(format!("https://localhost:{port}/"));
        if let Some(ca) = ca {
            c.args(["--guardian-ca", ca]);
        }
        c.arg("summary.json").assert()
    };
    // Without the CA the server is not trusted: nothing is compacted.
    gate(None).code(1);
    assert!(!d.join("bank/01-active-context.md").exists());
    gate(Some("ca.pem"))
        .success()
        .stdout(predicate::str::starts_with(
            "Compression complete: 1 entries compressed",
        ));
    assert!(d.join("bank/01-active-context.md").is_file());
}

#[test]
fn tls_flags_need_each_other_and_readable_files() {
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["guard", "http", "--memory", "--listen", "127.0.0.1:0"])
        .args(["--tls-cert", "cert.pem"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--tls-key"));
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("mnemo")
        .unwrap()
        .args(["guard", "http", "--memory", "--listen", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(dir.path().join("missing-cert.pem"))
        .arg("--tls-key")
        .arg(dir.path().join("missing-key.pem"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("missing-cert.pem"));
}
