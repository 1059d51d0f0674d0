//! In-process decision latency: `check_compaction` over a 1,000-entry region,
//! and a whole `steps/preCompact` through `Guardian::handle` (memory store).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use mnemo_guardian::{
    EntryProvenance, Guardian, GuardianConfig, MemoryStore, Origin, Policy, Provenance, Trigger,
    check_compaction,
};
use serde_json::json;
use std::hint::black_box;

fn entries(n: usize) -> Vec<EntryProvenance> {
    (0..n)
        .map(|i| {
            let o = match i % 4 {
                0 => Origin::UserInput,
                1 => Origin::AgentGenerated,
                2 => Origin::ToolOutput,
                _ => Origin::AgentGenerated,
            };
            EntryProvenance::single(
                format!("s{i}"),
                Provenance::new(format!("p{i}"), o, Some("Bash")),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let policy = Policy::default();
    let small = entries(20);
    let big = entries(1000);
    c.bench_function("check_compaction/20", |b| {
        b.iter(|| {
            check_compaction(
                black_box(&policy),
                black_box(&small),
                Trigger::SizeThreshold,
            )
        })
    });
    c.bench_function("check_compaction/1000", |b| {
        b.iter(|| check_compaction(black_box(&policy), black_box(&big), Trigger::SizeThreshold))
    });

    let session = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
    let mut ids = Vec::new();
    let mut setup = Vec::new();
    for i in 0..20u64 {
        let rid = format!("00000000-0000-4000-8000-{i:012}");
        let origin = if i % 3 == 2 {
            "tool_output"
        } else {
            "user_input"
        };
        setup.push(
            json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": i, "params": {
                "acs_version": "0.1.0", "request_id": rid, "timestamp": "2026-09-19T10:00:00Z",
                "metadata": {"agent_id": "a", "session_id": session},
                "payload": {"content": [{"type": "text", "value": "x", "provenance": {"provenance_id": format!("p{i}"), "origin": origin}}]}}})
            .to_string(),
        );
        ids.push(rid);
    }
    let fresh = || {
        let mut g = Guardian::new(
            Policy::default(),
            GuardianConfig {
                skew_window_ms: None,
                require_handshake: false,
                ..GuardianConfig::default()
            },
            MemoryStore::new(),
        );
        for r in &setup {
            g.handle(r.as_bytes());
        }
        g
    };
    let pre = json!({"jsonrpc": "2.0", "method": "steps/preCompact", "id": 99, "params": {
        "acs_version": "0.1.0", "request_id": "00000000-0000-4000-8000-999999999999", "timestamp": "2026-09-19T10:00:00Z",
        "metadata": {"agent_id": "a", "session_id": session},
        "payload": {"entries_to_compact": &ids[..10], "triggered_by": "size_threshold"}}})
    .to_string();
    c.bench_function("guardian_handle/preCompact_20_steps", |b| {
        b.iter_batched_ref(
            fresh,
            |g| black_box(g.handle(pre.as_bytes())),
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
