//! Times `mnemo report`'s work on a bank directory without the rest of the
//! binary (no store, default configuration): reads the files the report
//! reads, then runs `build` + `to_html` N times and prints each run's
//! milliseconds, the median and the page size. For callgrind:
//! `valgrind --tool=callgrind target/release/examples/report_bench DIR 1`.
//!
//! usage: report_bench BANK_DIR [N]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use mnemo_model::Config;
use mnemo_score::Engine;
use mnemo_scrub::Scrubber;

#[path = "../tests/common/bank_dir.rs"]
mod bank_dir;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = Path::new(args.get(1).expect("usage: report_bench BANK_DIR [N]"));
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let files = bank_dir::bank_files(root);
    let config = Config::default();
    let mut times = Vec::with_capacity(n);
    let mut bytes = 0;
    for _ in 0..n {
        // Each run pays for what one `mnemo report` process pays for after
        // reading: the engine, the scrubber's rules (first run only: they
        // are compiled once per process), the build and the page.
        let t = Instant::now();
        let engine = Engine::new(&config).unwrap();
        let scrubber = Scrubber::default_rules().unwrap();
        let r = mnemo_report::build(&files, None, &config, &engine, scrubber);
        let html = mnemo_report::to_html(&r);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        bytes = html.len();
        println!("run: {ms:.1} ms");
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "median {:.1} ms over {n} runs, {bytes} bytes of HTML",
        times[n / 2]
    );
}
