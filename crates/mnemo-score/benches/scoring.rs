//! Scoring throughput on 1 KB summaries (target: ≥ 200,000 records per
//! second on one core). Run: `cargo bench -p mnemo-score --bench scoring`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnemo_model::{Config, Matching};
use mnemo_score::Engine;

#[path = "../examples/support/corpus.rs"]
mod corpus;
use corpus::{score_all, summaries};

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
            b.iter(|| std::hint::black_box(score_all(&engine, &texts)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
