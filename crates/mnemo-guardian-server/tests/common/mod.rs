//! What the HTTP and TLS tests share: certificates made at test time
//! (rcgen; no key is committed), a rustls client, reading this process's
//! memory, the requests the flood tests send, the 1 MiB of pipelined pings,
//! and reading one HTTP answer. Each flood stays its own test binary, so
//! its peak RSS is its own.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, Policy, Transport};
use mnemo_guardian_server::server::DynStore;
use mnemo_guardian_server::tls::ServerTls;
use mnemo_guardian_store::SqliteStore;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use serde_json::{Value, json};
use std::io::BufRead;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A field of `/proc/self/status` in KiB (`VmRSS:`, `VmHWM:`); 0 if absent.
pub fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `body` as one HTTP/1.1 POST.
pub fn post(body: &str) -> Vec<u8> {
    let mut b = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    b.extend_from_slice(body.as_bytes());
    b
}

/// An ACS request of `method` with request id number `rid`, stamped now.
pub fn request(rid: u32, method: &str, payload: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "id": rid, "params": {
        "acs_version": "0.1.0", "request_id": format!("00000000-0000-4000-8000-{rid:012}"),
        "timestamp": mnemo_guardian::time::format_rfc3339_ms(mnemo_guardian::time::now_ms()),
        "metadata": {"agent_id": "a", "session_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"},
        "payload": payload}})
    .to_string()
}

/// The normal request of the flood tests: a user message (allowed).
pub fn user_message(rid: u32) -> Vec<u8> {
    post(&request(
        rid,
        "steps/userMessage",
        json!({"content": [{"type": "text", "value": "hi",
            "provenance": {"provenance_id": format!("p{rid}"), "origin": "user_input"}}]}),
    ))
}

/// 1 MiB (and a little) of small pipelined pings.
pub fn ping_flood() -> Vec<u8> {
    let one = post(&request(1, "system/ping", json!({})));
    let mut flood = Vec::with_capacity((1 << 20) + one.len());
    while flood.len() < 1 << 20 {
        flood.extend_from_slice(&one);
    }
    flood
}

/// A Guardian for HTTP without a handshake, on an in-memory SQLite store.
pub fn http_guardian() -> Guardian<DynStore> {
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    let store: DynStore = Box::new(SqliteStore::open_in_memory().unwrap());
    Guardian::new(policy, config, store)
}

/// One HTTP answer: its status line and its body (by `Content-Length`).
pub fn read_answer(r: &mut impl BufRead) -> (String, Vec<u8>) {
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (status, body)
}

/// A rustls client that trusts the CA certificates in `ca` (PEM).
pub fn client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
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

/// A TLS connection to `addr` as `localhost` (5 s read, 3 s write timeout).
pub fn tls_stream(
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

pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// A CA, a server certificate for localhost / 127.0.0.1 and a client
    /// certificate, all signed by the CA; and a second, unrelated CA.
    pub fn new(name: &str) -> Pki {
        let dir =
            std::env::temp_dir().join(format!("mnemo-tls-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ca = |cn: &str| {
            let key = KeyPair::generate().unwrap();
            let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p.distinguished_name.push(DnType::CommonName, cn);
            let cert = p.self_signed(&key).unwrap();
            (cert, key)
        };
        let (ca_cert, ca_key) = ca("mnemo test CA");
        let (other_cert, _) = ca("another CA");
        let leaf = |sans: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().unwrap();
            let mut p = CertificateParams::new(sans).unwrap();
            p.extended_key_usages = vec![usage];
            let cert = p.signed_by(&key, &ca_cert, &ca_key).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (srv, srv_key) = leaf(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (cli, cli_key) = leaf(vec!["agent".into()], ExtendedKeyUsagePurpose::ClientAuth);
        for (f, text) in [
            ("ca.pem", ca_cert.pem()),
            ("other-ca.pem", other_cert.pem()),
            ("server.pem", srv),
            ("server.key", srv_key),
            ("client.pem", cli),
            ("client.key", cli_key),
        ] {
            std::fs::write(dir.join(f), text).unwrap();
        }
        Pki { dir }
    }

    pub fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }

    pub fn server(&self, client_ca: bool) -> ServerTls {
        ServerTls {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            client_ca: client_ca.then(|| self.path("ca.pem")),
        }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
