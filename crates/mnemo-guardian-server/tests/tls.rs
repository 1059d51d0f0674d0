//! HTTPS: the Guardian behind rustls, with certificates made at test time
//! (rcgen; no key is committed), optional client certificates, and the
//! remote-Guardian client over `https://` with a CA file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{
    EntryProvenance, Guardian, GuardianConfig, MemoryStore, Origin, Policy, Provenance, Transport,
    Trigger, Verdict,
};
use mnemo_guardian_server::client::{ClientError, RemoteGuardian};
use mnemo_guardian_server::server::{self, DynStore, HttpLimits};
use mnemo_guardian_server::tls::ServerTls;
use std::io::{Read, Write};
use std::path::Path;

mod common;
use common::Pki;

fn start(tls: &ServerTls) -> std::net::SocketAddr {
    let store: DynStore = Box::new(MemoryStore::new());
    let g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            transport: Transport::Http,
            ..GuardianConfig::default()
        },
        store,
    );
    let config = tls.config().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        server::serve_tls_listener(g, listener, config, HttpLimits::default())
    });
    addr
}

fn entries() -> Vec<EntryProvenance> {
    vec![
        EntryProvenance::single("u1", Provenance::new("p-u1", Origin::UserInput, None)),
        EntryProvenance::single("t1", Provenance::new("p-t1", Origin::ToolOutput, Some("x"))),
    ]
}

fn ask(g: &RemoteGuardian, trigger: Trigger) -> Result<Verdict, ClientError> {
    g.check_compaction(&entries(), trigger).map(|d| d.verdict)
}

#[test]
fn https_guardian_answers_a_client_that_trusts_its_ca() {
    let pki = Pki::new("plain");
    let addr = start(&pki.server(false));
    for host in [format!("localhost:{}", addr.port()), addr.to_string()] {
        let g = RemoteGuardian::new(&format!("https://{host}/acs"))
            .unwrap()
            .with_tls(Some(&pki.path("ca.pem")), None)
            .unwrap();
        // The same verdicts as over plain HTTP: untrusted content denies an
        // automatic compaction, a manual one re-grounds.
        assert_eq!(ask(&g, Trigger::SizeThreshold).unwrap(), Verdict::Deny);
        assert_eq!(ask(&g, Trigger::Manual).unwrap(), Verdict::Allow);
    }
    // A client that trusts another CA refuses the server.
    let g = RemoteGuardian::new(&format!("https://localhost:{}/", addr.port()))
        .unwrap()
        .with_tls(Some(&pki.path("other-ca.pem")), None)
        .unwrap();
    let e = ask(&g, Trigger::Manual).unwrap_err().to_string();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // Plain HTTP to the TLS port gets no JSON answer.
    let g = RemoteGuardian::new(&format!("http://{addr}/")).unwrap();
    assert!(ask(&g, Trigger::Manual).is_err());
}

#[test]
fn client_certificates_when_the_server_asks_for_them() {
    let pki = Pki::new("mtls");
    let addr = start(&pki.server(true));
    let url = format!("https://localhost:{}/acs", addr.port());
    let without = RemoteGuardian::new(&url)
        .unwrap()
        .with_tls(Some(&pki.path("ca.pem")), None)
        .unwrap();
    assert!(ask(&without, Trigger::Manual).is_err());
    let with = RemoteGuardian::new(&url)
        .unwrap()
        .with_tls(
            Some(&pki.path("ca.pem")),
            Some((&pki.path("client.pem"), &pki.path("client.key"))),
        )
        .unwrap();
    assert_eq!(ask(&with, Trigger::Manual).unwrap(), Verdict::Allow);
}

/// Raw HTTP over a rustls client stream, for the limit answers.
fn raw(addr: std::net::SocketAddr, ca: &Path, bytes: &[u8]) -> String {
    let mut s = common::tls_stream(addr, &common::client_config(ca));
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn limits_hold_over_tls() {
    let pki = Pki::new("limits");
    let addr = start(&pki.server(false));
    let ca = pki.path("ca.pem");
    let r = raw(
        addr,
        &ca,
        b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("ok"), "{r}");
    let r = raw(
        addr,
        &ca,
        b"POST / HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    let big = format!(
        "POST / HTTP/1.1\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\n{{}}",
        "a".repeat(20_000)
    );
    let r = raw(addr, &ca, big.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    let r = raw(addr, &ca, b"\x00garbage\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
}

#[test]
fn bad_certificate_files_are_named() {
    let pki = Pki::new("bad");
    let missing = ServerTls {
        cert: pki.path("server.pem"),
        key: pki.path("nope.key"),
        client_ca: None,
    };
    let e = missing.config().unwrap_err().to_string();
    assert!(e.contains("nope.key"), "{e}");
    let swapped = ServerTls {
        cert: pki.path("server.key"),
        key: pki.path("server.pem"),
        client_ca: None,
    };
    let e = swapped.config().unwrap_err().to_string();
    assert!(e.contains("server.key") || e.contains("server.pem"), "{e}");
    // A key that does not match the certificate.
    let mismatched = ServerTls {
        cert: pki.path("server.pem"),
        key: pki.path("client.key"),
        client_ca: None,
    };
    assert!(mismatched.config().is_err());
    let e = RemoteGuardian::new("https://localhost:1/")
        .unwrap()
        .with_tls(Some(&pki.path("missing-ca.pem")), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing-ca.pem"), "{e}");
}
