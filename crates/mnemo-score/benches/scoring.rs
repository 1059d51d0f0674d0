//! Scoring throughput on 1 KB summaries (target: ≥ 200,000 records per
//! second on one core). Run: `cargo bench -p mnemo-score --bench scoring`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnemo_model::{Config, Matching};
use mnemo_score::{Engine, ScoreInput};

/// Deterministic 1 KB summaries made of realistic phrases.
fn summaries(n: usize) -> Vec<String> {
    const PHRASES: &[&str] = &[
        "Added POST /api/v1/orders returning 201 with the order id.",
        "Migration 0014 creates the orders table with a foreign key to users.",
        "Refactored the payment service to retry idempotently on timeouts.",
        "The OrderForm component validates quantities before submitting.",
        "Updated the Docker image and the deploy pipeline for staging.",
        "Tests cover the happy path and the 422 error for unknown products.",
        "Renamed the legacy helper and removed a dead code path.",
        "Coverage rose from 84% to 91% across the backend package.",
        "This unblocked the frontend work on the checkout page.",
        "The cache layer now invalidates on every order status change.",
        "Documented the retry semantics in the module docstring.",
        "Permissions are checked per organisation, not per user.",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|_| {
            let mut s = String::with_capacity(1100);
            while s.len() < 1024 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(PHRASES[(state % PHRASES.len() as u64) as usize]);
                s.push(' ');
            }
            s.truncate(1024);
            s
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let config = Config::default();
    let texts = summaries(1000);
    let mut group = c.benchmark_group("score_1kb");
    group.throughput(Throughput::Elements(texts.len() as u64));
    for (name, matching) in [
        ("word-start", Matching::WordStart),
        ("substring", Matching::Substring),
    ] {
        let engine = Engine::with_matching(&config, matching).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut sum = 0u32;
                for t in &texts {
                    let s = engine.score(&ScoreInput {
                        text: t,
                        files: 3,
                        from: Some("hermes"),
                        to: Some("aphrodite"),
                        ..Default::default()
                    });
                    sum += s.total.ten_thousandths();
                }
                std::hint::black_box(sum)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
