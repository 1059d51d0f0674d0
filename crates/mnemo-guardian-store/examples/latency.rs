//! Decision latency percentiles (p50 / p99 / max), in process:
//! `cargo run --profile bench -p mnemo-guardian-store --example latency`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{
    EntryProvenance, Guardian, GuardianConfig, MemoryStore, Origin, Policy, Provenance,
    SessionStore, Trigger, check_compaction,
};
use mnemo_guardian_store::SqliteStore;
use serde_json::json;
use std::time::Instant;

fn entries(n: usize) -> Vec<EntryProvenance> {
    (0..n)
        .map(|i| {
            let o = [
                Origin::UserInput,
                Origin::AgentGenerated,
                Origin::ToolOutput,
                Origin::AgentGenerated,
            ][i % 4];
            EntryProvenance::single(
                format!("s{i}"),
                Provenance::new(format!("p{i}"), o, Some("Bash")),
            )
        })
        .collect()
}

fn report(name: &str, mut ns: Vec<u128>) {
    ns.sort_unstable();
    let p = |q: f64| ns[((ns.len() as f64 - 1.0) * q) as usize] as f64 / 1000.0;
    println!(
        "{name:<44} n={:<6} p50={:>8.1}µs p99={:>8.1}µs max={:>8.1}µs",
        ns.len(),
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

fn rid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

fn session(n: u64) -> String {
    format!("10000000-0000-4000-8000-{n:012}")
}

fn guardian_run<S: SessionStore>(name: &str, mut g: Guardian<S>, samples: u64, steps: usize) {
    let mut times = Vec::new();
    let mut next = 0u64;
    for s in 0..samples {
        let sid = session(s);
        let mut ids = Vec::new();
        for i in 0..steps {
            next += 1;
            let origin = if i % 3 == 2 {
                "tool_output"
            } else {
                "user_input"
            };
            let r = json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": next, "params": {
                "acs_version": "0.1.0", "request_id": rid(next), "timestamp": "2026-09-19T10:00:00Z",
                "metadata": {"agent_id": "a", "session_id": sid},
                "payload": {"content": [{"type": "text", "value": "x", "provenance": {"provenance_id": format!("p{next}"), "origin": origin}}]}}});
            g.handle(r.to_string().as_bytes());
            ids.push(rid(next));
        }
        next += 1;
        let pre = json!({"jsonrpc": "2.0", "method": "steps/preCompact", "id": next, "params": {
            "acs_version": "0.1.0", "request_id": rid(next), "timestamp": "2026-09-19T10:00:00Z",
            "metadata": {"agent_id": "a", "session_id": sid},
            "payload": {"entries_to_compact": &ids[..10], "triggered_by": "size_threshold"}}})
        .to_string();
        let t = Instant::now();
        let out = g.handle(pre.as_bytes());
        times.push(t.elapsed().as_nanos());
        assert!(out.windows(8).any(|w| w == b"\"result\""));
    }
    report(name, times);
}

fn main() {
    let policy = Policy::default();
    for n in [20usize, 200, 1000] {
        let e = entries(n);
        let mut times = Vec::new();
        for _ in 0..(200_000 / n).max(2000) {
            let t = Instant::now();
            let d = check_compaction(&policy, std::hint::black_box(&e), Trigger::SizeThreshold);
            times.push(t.elapsed().as_nanos());
            std::hint::black_box(d);
        }
        report(&format!("check_compaction, {n} entries"), times);
    }
    let config = GuardianConfig {
        skew_window_ms: None,
        require_handshake: false,
        ..GuardianConfig::default()
    };
    guardian_run(
        "handle(preCompact), 20-step session, memory",
        Guardian::new(Policy::default(), config.clone(), MemoryStore::new()),
        5000,
        20,
    );
    let dir = std::env::temp_dir().join(format!("mnemo-latency-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // As `mnemo guard stdio|http` opens it: checkpoints on a background thread.
    let open = |name: &str| {
        let mut store = SqliteStore::open(&dir.join(name)).unwrap();
        store.checkpoint_in_background().unwrap();
        store
    };
    guardian_run(
        "handle(preCompact), 20-step session, sqlite",
        Guardian::new(Policy::default(), config.clone(), open("a.sqlite3")),
        2000,
        20,
    );
    guardian_run(
        "handle(preCompact), 10,000-step session, sqlite",
        Guardian::new(Policy::default(), config, open("b.sqlite3")),
        20,
        10_000,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
