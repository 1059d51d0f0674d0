//! Scores N generated 1 KB summaries; for profiling (`valgrind --tool=callgrind`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mnemo_model::Config;
use mnemo_score::Engine;

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{score_all, summaries};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let texts = summaries(n);
    let engine = Engine::new(&Config::default()).unwrap();
    let start = std::time::Instant::now();
    let sum = score_all(&engine, &texts);
    let el = start.elapsed();
    println!(
        "{n} records in {el:?}: {:.0} records/s (checksum {sum})",
        n as f64 / el.as_secs_f64()
    );
}
