//! Gate latency on large banks (run by `bench/bank/run.sh`, release build).
//!
//! For each size N it writes a bank whose `## Completed Phases` holds N
//! entries (CRITICAL/HIGH, so C7 never removes them), whose progress log
//! holds N sections and whose index holds N/4 entity rows, then times
//! `mnemo_bank::gate` (in process: the scrubber is loaded once) over a batch
//! of three summaries, each run a new phase (a real append), and prints the
//! median, min and max.
//!
//! With `--log-mb M` the bank's gate log (`_xref/gate-log.jsonl`) starts
//! with M MB of earlier gates' lines: a gate appends its line without
//! reading or rewriting the log, so its cost does not grow with it.
//!
//! Usage: `gate_bench [N…] [--runs R] [--log-mb M]` (default 1000 10000
//! 100000, R = 15, M = 0).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_bank::ops::{GateOptions, Input};
use mnemo_bank::{Bank, gate, init_bank};
use mnemo_guardian::model::Trigger;
use mnemo_guardian::policy::Policy;
use mnemo_model::Config;

fn build(root: &Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    init_bank(root)?;
    let mut active =
        String::from("# Active Context\n\n## Current Focus\nBenchmark.\n\n## Completed Phases\n\n");
    let mut log = String::from("# Progress Log\n\n");
    let mut index = String::from(
        "# Cross-Reference Index\n\n## By Feature\n\n| Feature | Phase(s) | Agent(s) | Priority | Summary |\n|---------|----------|----------|----------|---------|\n\n## By Entity\n\n| Entity ID | Type | Name | Location | Phase | Agent |\n|-----------|------|------|----------|-------|-------|\n",
    );
    for i in 0..n {
        let band = if i % 3 == 0 {
            "CRITICAL 0.80"
        } else {
            "HIGH 0.60"
        };
        let _ = writeln!(
            active,
            "- **2026-01-01 · P{i} · Hermes** — {band} — What changed: Added GET /api/items/{i} with pagination; files src/items_{i}.rs <!-- mnemo:key=2026-01-01|{i}|hermes hash={i:016x} -->\n  - To next agent: Aphrodite builds on GET /api/items/{i}."
        );
        let _ = writeln!(
            log,
            "### 2026-01-01 — Phase {i}: Hermes\n\n**Status:** complete · **Priority:** HIGH (0.60)\n**Summary:** Added GET /api/items/{i} with pagination.\n"
        );
        if i % 4 == 0 {
            let _ = writeln!(
                index,
                "| E{:04} | endpoint | GET /api/items/{i} | src/items_{i}.rs | P{i} | Hermes |",
                i / 4 + 1
            );
        }
    }
    index.push_str("\n## Decision Links\n\n| Ref ID | Type | Summary | Links To | Phase |\n|--------|------|---------|----------|-------|\n");
    std::fs::write(root.join("01-active-context.md"), active)?;
    std::fs::write(root.join("02-progress-log.md"), log)?;
    std::fs::write(root.join("_xref/index.md"), index)?;
    Ok(())
}

/// `mb` MB of gate-log lines (records of earlier gates, numbered).
fn prefill_log(root: &Path, mb: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut log = String::with_capacity(mb * 1_000_000 + 2_000);
    let mut seq = 0u64;
    while log.len() < mb * 1_000_000 {
        seq += 1;
        let line = serde_json::json!({
            "version": 1, "seq": seq, "date": "2026-01-01", "phase": format!("{seq}"),
            "from": ["hermes"], "to": ["themis"], "feature": "bench",
            "confirmation": format!("Compression complete: 3 entries (phase {seq}) {}", "x".repeat(700)),
            "xrefs_added": 2,
            "budget": {"base_half_lines": 40, "carry_in_half_lines": 0, "allocated_half_lines": 40,
                "used_half_lines": 12, "carried_half_lines": 5, "over_budget": false},
            "flags": [], "entries": [], "skipped": [], "c7": null
        });
        log.push_str(&line.to_string());
        log.push('\n');
    }
    std::fs::write(root.join("_xref/gate-log.jsonl"), log)?;
    Ok(())
}

fn inputs() -> Vec<Input> {
    let recs = [
        (
            "hermes",
            "Added POST /auth/login and POST /auth/refresh endpoints with JWT rotation; refresh answers 401 when expired. Note: tokens are hashed before storage.",
        ),
        (
            "demeter",
            "CREATE TABLE refresh_tokens with columns token_hash, expires_at; migration 0012 adds a unique index.",
        ),
        (
            "aphrodite",
            "Login page component with email and password validation. Hits POST /auth/login.",
        ),
    ];
    recs.iter()
        .map(|(a, s)| Input {
            name: format!("{a}.json"),
            text: serde_json::json!({"agent": a, "summary": s, "status": "complete",
                "files_changed": [format!("src/{a}.rs")]})
            .to_string(),
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sizes = Vec::new();
    let mut runs = 15usize;
    let mut log_mb = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse()?;
        } else if a == "--log-mb" {
            log_mb = args.next().ok_or("--log-mb needs a number")?.parse()?;
        } else {
            sizes.push(a.parse::<usize>()?);
        }
    }
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    let config = Config::default();
    let inputs = inputs();
    println!("| entries | 01 size | median | min | max | runs |");
    println!("|--------:|--------:|-------:|----:|----:|-----:|");
    for n in sizes {
        let dir = std::env::temp_dir().join(format!("mnemo-gate-bench-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        build(&dir, n)?;
        if log_mb > 0 {
            prefill_log(&dir, log_mb)?;
        }
        let bank = Bank::new(&dir);
        let size = std::fs::metadata(dir.join("01-active-context.md"))?.len();
        let mut times: Vec<Duration> = Vec::with_capacity(runs);
        for r in 0..=runs {
            let opts = GateOptions {
                phase: format!("{}", n + r + 1),
                from: vec!["hermes".into()],
                to: vec!["themis".into()],
                phases: None,
                date: "2026-06-20".into(),
                feature: Some("bench".into()),
                policy: Policy::default(),
                guardian_url: None,
                guardian_cmd: None,
                trace_quiet: false,
                guardian_tls: Default::default(),
                trigger: Trigger::FrameworkInitiated,
                lock_timeout: Duration::from_secs(30),
            };
            let t = Instant::now();
            gate(&bank, &config, &opts, &inputs)?;
            if r > 0 {
                // Run 0 warms the scrubber and the page cache.
                times.push(t.elapsed());
            }
        }
        times.sort();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {n} | {:.1} MB | {} | {} | {} | {runs} |",
            size as f64 / 1e6,
            ms(times[times.len() / 2]),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
