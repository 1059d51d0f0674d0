//! What one group-commit batch costs on the PostgreSQL store, without HTTP:
//! `MNEMO_TEST_POSTGRES_URL=postgres://… cargo run -p mnemo-guardian-store
//! --example pg_batch -- [batches] [size]` (defaults 200 and 32, the
//! requests one batch of `guard http` holds under wrk `-c32`). Each batch is
//! `size` unique `steps/userMessage`s of one fresh session (validated,
//! replay-checked, recorded, chained) through `Guardian::handle_batch`, as
//! the HTTP decider sends them. Prints the median and p90 wall-clock time a
//! batch took, the time spent waiting on the database, and the round trips a
//! batch waited for (load-independent). Wall-clock figures depend on the
//! machine's load: print `uptime` with them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, Policy};
use mnemo_guardian_store::PostgresStore;
use serde_json::json;
use std::time::Instant;

fn main() {
    let url = std::env::var("MNEMO_BENCH_POSTGRES_URL")
        .or_else(|_| std::env::var("MNEMO_TEST_POSTGRES_URL"))
        .expect("set MNEMO_BENCH_POSTGRES_URL or MNEMO_TEST_POSTGRES_URL");
    let mut args = std::env::args().skip(1);
    let batches: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let size: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000_000)
        .unwrap_or(0);
    let session = format!("7c9e6679-0000-4000-8000-{nanos:012}");
    let mut policy = Policy::default();
    policy.guardian.skew_window_ms = None;
    policy.guardian.require_handshake = false;
    let config = GuardianConfig::from_policy(&policy);
    let store = PostgresStore::open(&url).expect("open");
    let mut g = Guardian::new(policy, config, store);
    let mut n = 0u64;
    let mut wall = Vec::with_capacity(batches);
    let mut trips = Vec::with_capacity(batches);
    for _ in 0..batches {
        let reqs: Vec<_> = (0..size)
            .map(|_| {
                n += 1;
                let rid = format!("00000000-0000-4000-8000-{n:012}");
                json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": n, "params": {
                    "acs_version": "0.1.0", "request_id": rid, "timestamp": "2026-09-19T10:00:00Z",
                    "metadata": {"agent_id": "bench", "session_id": session},
                    "payload": {"content": [{"type": "text", "value": "hello",
                        "provenance": {"provenance_id": format!("p-{rid}"), "origin": "user_input"}}]}}})
            })
            .collect();
        let before = g.store_mut().round_trips();
        let t = Instant::now();
        let out = g.handle_batch(&reqs);
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
        trips.push(g.store_mut().round_trips() - before);
        assert!(
            out.iter().all(|v| v["result"]["decision"] == "allow"),
            "{}",
            out[0]
        );
    }
    wall.sort_by(f64::total_cmp);
    trips.sort_unstable();
    let q = |v: &[f64], p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!(
        "pg_batch: {batches} batches of {size} steps/userMessage, one session: batch p50 {:.2} ms, p90 {:.2} ms, min {:.2} ms; round trips a batch: p50 {}, max {}; {:.0} requests/s of batch time (p50)",
        q(&wall, 0.5),
        q(&wall, 0.9),
        wall[0],
        trips[trips.len() / 2],
        trips[trips.len() - 1],
        size as f64 / q(&wall, 0.5) * 1000.0
    );
}
