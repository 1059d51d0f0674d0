//! `guard http` under a pipelined flood from clients that never read their
//! answers (reliability issue, item 8): 20 connections × 1 MiB of small
//! requests. The server's memory stays bounded in total, and a normal
//! request is answered within a second afterwards. Its own test binary, so
//! the peak RSS (`VmHWM`) is this flood's alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian_server::server;
use serde_json::Value;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;
use common::status_kib;

/// One normal request on a fresh connection; returns how long its answer took.
fn normal_request(addr: std::net::SocketAddr, rid: u32) -> Duration {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&common::user_message(rid)).unwrap();
    let (_, body) = common::read_answer(&mut BufReader::new(s.try_clone().unwrap()));
    let answered_in = t.elapsed();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["decision"], "allow", "{v}");
    answered_in
}

#[test]
fn twenty_flooding_connections_stay_bounded() {
    if !std::path::Path::new("/proc/self/status").exists() {
        mnemo_testkit::skip("needs /proc/self/status to read the peak RSS");
        return;
    }
    let guardian = common::http_guardian();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::serve_listener(guardian, listener));
    let before = status_kib("VmRSS:");

    // 1 MiB of small pipelined pings per connection, never read.
    let flood = std::sync::Arc::new(common::ping_flood());
    let hogs: Vec<_> = (0..20)
        .map(|_| {
            let flood = flood.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
                // The server stops reading once its answers back up: the
                // write then times out, which is the backpressure we want.
                let sent = s.write(&flood[..]).unwrap_or(0);
                let mut off = sent;
                while off < flood.len() {
                    match s.write(&flood[off..]) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => off += n,
                    }
                }
                (s, off)
            })
        })
        .collect();
    let hogs: Vec<(TcpStream, usize)> = hogs.into_iter().map(|h| h.join().unwrap()).collect();
    let sent: usize = hogs.iter().map(|h| h.1).sum();
    std::thread::sleep(Duration::from_millis(500));
    let during = status_kib("VmRSS:");

    // A normal client is answered promptly while the hogs stay connected.
    let answered_in = normal_request(addr, 2);
    drop(hogs);
    std::thread::sleep(Duration::from_millis(300));
    let after = status_kib("VmRSS:");
    // ... and after they disconnect (issue 13 item 8: "afterwards").
    let answered_after = normal_request(addr, 3);
    let peak = status_kib("VmHWM:");
    eprintln!(
        "flood: sent {sent} bytes; RSS before {before} KiB, during {during} KiB, after {after} KiB, peak {peak} KiB; answered in {answered_in:?} during, {answered_after:?} after"
    );
    // The test's own flood buffer (1 MiB) and 20 threads are in this too.
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
    assert!(after < 256 * 1024, "RSS after the hogs left {after} KiB");
}
