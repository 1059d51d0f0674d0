//! `guard http` and broken framing (issue 13 item 7, the HTTP side): a
//! request with `Content-Length: -5`, or with a length of 10^12 it never
//! sends, is answered with an error status at once, and the server answers
//! the next client normally.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, Policy, Transport};
use mnemo_guardian_server::server;
use mnemo_guardian_store::SqliteStore;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn start() -> SocketAddr {
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    let store: server::DynStore = Box::new(SqliteStore::open_in_memory().unwrap());
    let guardian = Guardian::new(policy, config, store);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::serve_listener(guardian, listener));
    addr
}

fn ping(rid: u32) -> String {
    json!({"jsonrpc": "2.0", "method": "system/ping", "id": rid, "params": {
        "acs_version": "0.1.0", "request_id": format!("00000000-0000-4000-8000-{rid:012}"),
        "timestamp": mnemo_guardian::time::format_rfc3339_ms(mnemo_guardian::time::now_ms()),
        "metadata": {"agent_id": "a", "session_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"},
        "payload": {}}})
    .to_string()
}

/// Sends `head` + `body` on a fresh connection; returns the status code and
/// the body of the answer (read up to its Content-Length or the close).
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    s.flush().unwrap();
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)
        .expect("an answer within 5 s, not a client left waiting");
    let code: u16 = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {status:?}"));
    let mut len: Option<usize> = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok();
        }
    }
    let mut out = Vec::new();
    match len {
        Some(n) => {
            out.resize(n, 0);
            r.read_exact(&mut out).unwrap();
        }
        None => {
            let _ = r.read_to_end(&mut out);
        }
    }
    (code, out)
}

fn post_head(len: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
}

fn assert_normal_request_answered(addr: SocketAddr, rid: u32) {
    let body = ping(rid);
    let (code, answer) = exchange(addr, &post_head(&body.len().to_string()), body.as_bytes());
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&answer));
    let v: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(v["id"], rid, "{v}");
    assert!(v.get("error").is_none(), "{v}");
}

#[test]
fn negative_content_length_is_answered_with_an_error_and_the_next_client_served() {
    let addr = start();
    assert_normal_request_answered(addr, 1);
    let body = ping(2);
    let (code, _) = exchange(addr, &post_head("-5"), body.as_bytes());
    assert!(
        (400..500).contains(&code),
        "Content-Length -5 must get a 4xx, got {code}"
    );
    assert_normal_request_answered(addr, 3);
}

#[test]
fn unbelievable_content_length_is_answered_without_waiting_for_the_body() {
    let addr = start();
    let (code, _) = exchange(addr, &post_head("1000000000000"), b"{}");
    assert!(
        (400..500).contains(&code),
        "Content-Length 10^12 must get a 4xx at once, got {code}"
    );
    assert_normal_request_answered(addr, 4);
}
