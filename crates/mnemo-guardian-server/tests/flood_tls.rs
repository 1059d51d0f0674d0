//! The flood of `tests/flood.rs` over TLS: 20 connections × 1 MiB of small
//! pipelined requests that never read their answers, against the HTTPS
//! server (rustls; certificates made at test time with rcgen). The
//! server's memory stays bounded in total (peak RSS `VmHWM` of this test
//! binary, the clients' TLS state included) and a normal request over TLS
//! is answered within a second, during the flood and after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, Policy, Transport};
use mnemo_guardian_server::server::{self, DynStore, HttpLimits};
use mnemo_guardian_server::tls::ServerTls;
use mnemo_guardian_store::SqliteStore;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A CA and a server certificate for localhost, in a fresh directory.
fn pki() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mnemo-flood-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, "flood CA");
    let ca = p.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["localhost".into()]).unwrap();
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = p.signed_by(&key, &ca, &ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    dir
}

fn client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in mnemo_guardian_server::tls::load_certs(ca).unwrap() {
        roots.add(c).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

fn tls_stream(
    addr: SocketAddr,
    config: &Arc<rustls::ClientConfig>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let conn =
        rustls::ClientConnection::new(config.clone(), "localhost".try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

fn post(body: &str) -> Vec<u8> {
    let mut b = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    b.extend_from_slice(body.as_bytes());
    b
}

fn request(rid: u32, method: &str, payload: serde_json::Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "id": rid, "params": {
        "acs_version": "0.1.0", "request_id": format!("00000000-0000-4000-8000-{rid:012}"),
        "timestamp": mnemo_guardian::time::format_rfc3339_ms(mnemo_guardian::time::now_ms()),
        "metadata": {"agent_id": "a", "session_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"},
        "payload": payload}})
    .to_string()
}

/// One normal request over a fresh TLS connection (handshake included);
/// its status line and how long the answer took.
fn normal_request(
    addr: SocketAddr,
    config: &Arc<rustls::ClientConfig>,
    rid: u32,
) -> (String, Duration) {
    let t = Instant::now();
    let mut s = tls_stream(addr, config);
    s.write_all(&post(&request(
        rid,
        "steps/userMessage",
        serde_json::json!({"content": [{"type": "text", "value": "hi",
            "provenance": {"provenance_id": format!("p{rid}"), "origin": "user_input"}}]}),
    )))
    .unwrap();
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).unwrap();
    let body = String::from_utf8_lossy(&body).into_owned();
    assert!(body.contains("\"decision\":\"allow\""), "{status} {body}");
    (status, t.elapsed())
}

#[test]
fn twenty_flooding_tls_connections_stay_bounded() {
    if !Path::new("/proc/self/status").exists() {
        mnemo_testkit::skip("needs /proc/self/status to read the peak RSS");
        return;
    }
    let dir = pki();
    let tls = ServerTls {
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
        client_ca: None,
    };
    let server_config = tls.config().unwrap();
    let client = client_config(&dir.join("ca.pem"));
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    let store: DynStore = Box::new(SqliteStore::open_in_memory().unwrap());
    let guardian = Guardian::new(policy, config, store);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        server::serve_tls_listener(guardian, listener, server_config, HttpLimits::default())
    });
    // The server answers before the flood (and the first handshake's
    // allocations are in `before`).
    let (status, _) = normal_request(addr, &client, 10);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let before = status_kib("VmRSS:");

    let one = post(&request(1, "system/ping", serde_json::json!({})));
    let mut flood = Vec::with_capacity((1 << 20) + one.len());
    while flood.len() < 1 << 20 {
        flood.extend_from_slice(&one);
    }
    let flood = Arc::new(flood);
    let hogs: Vec<_> = (0..20)
        .map(|_| {
            let flood = flood.clone();
            let client = client.clone();
            std::thread::spawn(move || {
                let mut s = tls_stream(addr, &client);
                // The server stops reading once its answers back up; the
                // write then times out (backpressure), and the hog stays
                // connected without reading.
                let mut off = 0;
                while off < flood.len() {
                    match s.write(&flood[off..(off + 16 * 1024).min(flood.len())]) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => off += n,
                    }
                }
                (s, off)
            })
        })
        .collect();
    let hogs: Vec<_> = hogs.into_iter().map(|h| h.join().unwrap()).collect();
    let sent: usize = hogs.iter().map(|h| h.1).sum();
    std::thread::sleep(Duration::from_millis(500));
    let during = status_kib("VmRSS:");
    let (status, answered_in) = normal_request(addr, &client, 2);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    drop(hogs);
    std::thread::sleep(Duration::from_millis(300));
    let after = status_kib("VmRSS:");
    let (status, answered_after) = normal_request(addr, &client, 3);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let peak = status_kib("VmHWM:");
    eprintln!(
        "flood over TLS: sent {sent} bytes; RSS before {before} KiB, during {during} KiB, after {after} KiB, peak {peak} KiB; answered in {answered_in:?} during, {answered_after:?} after"
    );
    assert!(sent >= 20 << 10, "the hogs wrote something: {sent}");
    assert!(peak < 256 * 1024, "peak RSS {peak} KiB");
    assert!(
        during.saturating_sub(before) < 64 * 1024,
        "grew {before} → {during} KiB"
    );
    assert!(answered_in < Duration::from_secs(1), "{answered_in:?}");
    assert!(
        answered_after < Duration::from_secs(1),
        "after the hogs left: {answered_after:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
