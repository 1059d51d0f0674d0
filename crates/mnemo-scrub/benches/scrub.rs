//! Throughput of the scrubber (MB/s) on a generated corpus: source code,
//! logs and config with a fake secret now and then.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnemo_scrub::{Scrubber, StreamOptions};
use std::hint::black_box;

/// Deterministic corpus of about `size` bytes.
fn corpus(size: usize) -> String {
    let lines = [
        "fn handle(req: Request) -> Result<Response, Error> {",
        "    let token = req.headers().get(\"x-token\").ok_or(Error::MissingToken)?;",
        "    let key = format!(\"{}:{}\", req.user(), req.path());",
        "2024-05-01T12:00:00Z INFO request handled in 35 ms path=/api/v1/items/42",
        "password: String,",
        "    \"integrity\": \"sha512-3Xr8M2CrM1tH9wA7vB6zYqK0eJwQ9l5x1nF8dR2sT4uV6wX8yZ0aB2cD4eF6gH8iJ0kL2mN4oP6qR8sT0uV2wX==\",",
        "checksum = \"9f2c5a1e0b7d4c3a8e6f1b2d5c7a9e0f3b6d8c1a4e7f0b3d6c9a2e5f8b1d4c7a\"",
        "import os  # the api key is read from the environment",
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
        "| id | name | created_at |",
    ];
    let mut out = String::with_capacity(size + 256);
    let mut i = 0usize;
    while out.len() < size {
        if i % 400 == 399 {
            out.push_str(&format!("GITHUB_TOKEN=ghp_{:036}\n", i));
        } else {
            out.push_str(lines[i % lines.len()]);
            out.push('\n');
        }
        i += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let s = Scrubber::default_rules().unwrap();
    let text = corpus(4 << 20);
    let mut g = c.benchmark_group("scrub");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("in_memory_4MiB", |b| {
        b.iter(|| black_box(s.scrub(black_box(&text))))
    });
    g.bench_function("find_4MiB", |b| {
        b.iter(|| black_box(s.find(black_box(&text))))
    });
    g.bench_function("stream_4MiB", |b| {
        b.iter(|| {
            let mut sink = std::io::sink();
            s.scrub_stream_with(
                text.as_bytes(),
                &mut sink,
                &StreamOptions::default(),
                |_| {},
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
