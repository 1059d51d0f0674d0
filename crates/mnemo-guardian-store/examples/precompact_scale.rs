//! preCompact decision time at 100 and at 100,000 recorded steps, per
//! store (memory, SQLite file, PostgreSQL when `$MNEMO_TEST_POSTGRES_URL`
//! or `$PG_URL` is set): the indexed decision the Guardian makes
//! (`decide_pre_compact`, one unit of work like a request) and, beside it,
//! the full scan it replaced (`steps()` then `decide_pre_compact_full_scan`).
//! Prints the median of each and the ratio 100,000 / 100.
//! Run by `bench/guardian/precompact-scale.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::precompact::{decide_pre_compact, decide_pre_compact_full_scan};
use mnemo_guardian::store::StepRecord;
use mnemo_guardian::{MemoryStore, Origin, Policy, Provenance, SessionStore, Trigger};
use mnemo_guardian_store::{PostgresStore, SqliteStore};
use std::time::Instant;

/// Steps of a session: a user message every 10th step, tool outputs,
/// agent text derived from the nearest tool output and user message.
fn step(seq: u64) -> StepRecord {
    let (origin, derived) = match seq % 10 {
        0 => (Origin::UserInput, vec![]),
        1 | 4 | 7 => (Origin::ToolOutput, vec![]),
        _ => (
            Origin::AgentGenerated,
            vec![
                format!("p{}", seq - seq % 3),
                format!("p{}", seq - seq % 10),
            ],
        ),
    };
    let mut p = Provenance::new(format!("p{seq}"), origin, Some("Bash"));
    p.derived_from = derived;
    StepRecord {
        seq,
        step_id: format!("r{seq}"),
        method: "steps/userMessage".into(),
        provenance: vec![p],
    }
}

fn fill(s: &mut dyn SessionStore, session: &str, n: u64) {
    let mut seq = 1;
    while seq <= n {
        s.begin().unwrap();
        for _ in 0..2000 {
            if seq > n {
                break;
            }
            s.record_step(session, &step(seq)).unwrap();
            seq += 1;
        }
        s.commit().unwrap();
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Medians (µs) of the indexed decision and of the full scan over a
/// 20-step region in the middle of an `n`-step session.
fn measure(s: &mut dyn SessionStore, session: &str, n: u64, runs: usize) -> (f64, f64) {
    let policy = Policy::default();
    let mid = n / 2;
    let pc = mnemo_guardian::model::PreCompact {
        entries_to_compact: (mid - 10..mid + 10).map(|i| format!("r{i}")).collect(),
        pre_compact_provenance_summary: None,
        triggered_by: Trigger::SizeThreshold,
        estimated_input_tokens: None,
        target_summary_tokens: None,
    };
    let mut indexed = Vec::new();
    let mut verdict = None;
    for _ in 0..runs {
        let t = Instant::now();
        s.begin().unwrap();
        let d = decide_pre_compact(s, &policy, session, &pc).unwrap();
        s.commit().unwrap();
        indexed.push(t.elapsed().as_secs_f64() * 1e6);
        verdict = Some(d);
    }
    let scan_runs = if n > 10_000 { runs.min(15) } else { runs };
    let mut scan = Vec::new();
    for _ in 0..scan_runs {
        let t = Instant::now();
        s.begin().unwrap();
        let steps = s.steps(session).unwrap();
        let d = decide_pre_compact_full_scan(&policy, &steps, &pc);
        s.commit().unwrap();
        scan.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(Some(&d), verdict.as_ref(), "indexed and full scan agree");
    }
    (median(indexed), median(scan))
}

fn run(name: &str, open: &mut dyn FnMut(&str) -> Box<dyn SessionStore>, runs: usize) {
    let mut rows = Vec::new();
    for n in [100u64, 100_000] {
        let session = format!("scale-{n}-{}", std::process::id());
        let mut s = open(&session);
        let t = Instant::now();
        fill(s.as_mut(), &session, n);
        let filled = t.elapsed().as_secs_f64();
        let (idx, scan) = measure(s.as_mut(), &session, n, runs);
        println!(
            "{name:<9} steps={n:>7}  indexed median {idx:>9.1} us   full scan median {scan:>11.1} us   (filled in {filled:.1} s)"
        );
        rows.push((idx, scan));
    }
    println!(
        "{name:<9} ratio 100,000/100: indexed {:.2}x   full scan {:.1}x",
        rows[1].0 / rows[0].0,
        rows[1].1 / rows[0].1
    );
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let only = std::env::var("STORES").unwrap_or_else(|_| "memory,sqlite,postgres".into());
    if only.contains("memory") {
        run("memory", &mut |_| Box::new(MemoryStore::new()), runs);
    }
    let dir = std::env::temp_dir().join(format!("mnemo-scale-{}", std::process::id()));
    if only.contains("sqlite") {
        let d = dir.clone();
        run(
            "sqlite",
            &mut |s| Box::new(SqliteStore::open(&d.join(format!("{s}.sqlite3"))).unwrap()),
            runs,
        );
    }
    if only.contains("postgres") {
        match std::env::var("PG_URL").or_else(|_| std::env::var("MNEMO_TEST_POSTGRES_URL")) {
            Ok(url) => run(
                "postgres",
                &mut |_| Box::new(PostgresStore::open(&url).unwrap()),
                runs,
            ),
            Err(_) => println!("postgres  SKIPPED: set MNEMO_TEST_POSTGRES_URL or PG_URL"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
