//! The flood of `tests/flood.rs` over TLS: 20 connections × 1 MiB of small
//! pipelined requests that never read their answers, against the HTTPS
//! server (rustls; certificates made at test time with rcgen). The
//! server's memory stays bounded in total (peak RSS `VmHWM` of this test
//! binary, the clients' TLS state included) and a normal request over TLS
//! is answered within a second, during the flood and after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian_server::server::{self, HttpLimits};
use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{Pki, status_kib, tls_stream};

/// One normal request over a fresh TLS connection (handshake included);
/// its status line and how long the answer took.
fn normal_request(
    addr: SocketAddr,
    config: &Arc<rustls::ClientConfig>,
    rid: u32,
) -> (String, Duration) {
    let t = Instant::now();
    let mut s = tls_stream(addr, config);
    s.write_all(&common::user_message(rid)).unwrap();
    let (status, body) = common::read_answer(&mut BufReader::new(s));
    let body = String::from_utf8_lossy(&body).into_owned();
    assert!(body.contains("\"decision\":\"allow\""), "{status} {body}");
    (status, t.elapsed())
}

#[test]
fn twenty_flooding_tls_connections_stay_bounded() {
    if !std::path::Path::new("/proc/self/status").exists() {
        mnemo_testkit::skip("needs /proc/self/status to read the peak RSS");
        return;
    }
    let pki = Pki::new("flood");
    let server_config = pki.server(false).config().unwrap();
    let client = common::client_config(&pki.path("ca.pem"));
    let guardian = common::http_guardian();
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

    let flood = Arc::new(common::ping_flood());
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
}
