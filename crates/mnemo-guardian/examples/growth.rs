//! How a request's cost grows with the in-memory store's size: drives one
//! session of `steps/userMessage` requests (the shape of
//! `bench/guardian/callgrind-http.py`) through `Guardian::handle` over a
//! `MemoryStore` and prints, per chunk, the wall time a request and the
//! process's resident memory.
//! Usage: `cargo run --profile measure -p mnemo-guardian --example growth -- [N] [CHUNK] [--timestamps]`
//! (`--timestamps`: the skew window on, so the replay window is pruned).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy};
use std::time::Instant;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn fixed_clock() -> i64 {
    // 2026-09-19T10:00:00Z, the requests' timestamp.
    1_790_157_600_000
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let chunk: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let timestamps = args.iter().any(|a| a == "--timestamps");
    let mut config = GuardianConfig {
        require_handshake: false,
        ..GuardianConfig::default()
    };
    if !timestamps {
        config.skew_window_ms = None;
    }
    let mut g =
        Guardian::new(Policy::default(), config, MemoryStore::new()).with_clock(fixed_clock);
    let session = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
    let mut t = Instant::now();
    let mut bytes = 0usize;
    println!("requests\tns/request\tRSS MiB");
    for k in 1..=n {
        let rid = format!("00000000-0000-4000-8000-{k:012}");
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"steps/userMessage","id":{k},"params":{{"acs_version":"0.1.0","request_id":"{rid}","timestamp":"2026-09-19T10:00:00Z","metadata":{{"agent_id":"bench","session_id":"{session}"}},"payload":{{"content":[{{"type":"text","value":"hello","provenance":{{"provenance_id":"p-{rid}","origin":"user_input"}}}}]}}}}}}"#
        );
        let out = g.handle(body.as_bytes());
        bytes += out.len();
        if k % chunk == 0 {
            let ns = t.elapsed().as_nanos() / u128::from(chunk);
            println!("{k}\t{ns}\t{:.1}", rss_kib() as f64 / 1024.0);
            t = Instant::now();
        }
    }
    println!("response bytes {bytes}");
}
