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

/// The preCompact of a 20-step region in the middle of an `n`-step session.
fn region(n: u64) -> mnemo_guardian::model::PreCompact {
    let mid = n / 2;
    mnemo_guardian::model::PreCompact {
        entries_to_compact: (mid - 10..mid + 10).map(|i| format!("r{i}")).collect(),
        pre_compact_provenance_summary: None,
        triggered_by: Trigger::SizeThreshold,
        estimated_input_tokens: None,
        target_summary_tokens: None,
    }
}

/// One session of the benchmark: its size, id, store and preCompact.
struct Case {
    n: u64,
    session: String,
    store: Box<dyn SessionStore>,
    pc: mnemo_guardian::model::PreCompact,
}

/// Medians (µs) of the indexed decision and of the full scan, for each
/// case. The cases take turns, one decision each (interleaved: a load that
/// drifts during the run, or a database still settling after the large
/// fill, weighs on every size alike).
fn measure(cases: &mut [Case], runs: usize) -> Vec<(f64, f64)> {
    let policy = Policy::default();
    let mut indexed = vec![Vec::new(); cases.len()];
    let mut verdicts: Vec<Option<_>> = cases.iter().map(|_| None).collect();
    for _ in 0..runs {
        for (i, c) in cases.iter_mut().enumerate() {
            let s = c.store.as_mut();
            let t = Instant::now();
            s.begin().unwrap();
            let d = decide_pre_compact(s, &policy, &c.session, &c.pc).unwrap();
            s.commit().unwrap();
            indexed[i].push(t.elapsed().as_secs_f64() * 1e6);
            verdicts[i] = Some(d);
        }
    }
    let scan_runs = if cases.iter().any(|c| c.n > 10_000) {
        runs.min(15)
    } else {
        runs
    };
    let mut scan = vec![Vec::new(); cases.len()];
    for _ in 0..scan_runs {
        for (i, c) in cases.iter_mut().enumerate() {
            let s = c.store.as_mut();
            let t = Instant::now();
            s.begin().unwrap();
            let steps = s.steps(&c.session).unwrap();
            let d = decide_pre_compact_full_scan(&policy, &steps, &c.pc);
            s.commit().unwrap();
            scan[i].push(t.elapsed().as_secs_f64() * 1e6);
            assert_eq!(
                Some(&d),
                verdicts[i].as_ref(),
                "indexed and full scan agree"
            );
        }
    }
    indexed
        .into_iter()
        .map(median)
        .zip(scan.into_iter().map(median))
        .collect()
}

fn run(name: &str, open: &mut dyn FnMut(&str) -> Box<dyn SessionStore>, runs: usize) {
    let mut cases = Vec::new();
    for n in [100u64, 100_000] {
        let session = format!("scale-{n}-{}", std::process::id());
        let mut store = open(&session);
        let t = Instant::now();
        fill(store.as_mut(), &session, n);
        println!(
            "{name:<9} steps={n:>7}  filled in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        cases.push(Case {
            n,
            session,
            store,
            pc: region(n),
        });
    }
    let rows = measure(&mut cases, runs);
    for (c, (idx, scan)) in cases.iter().zip(&rows) {
        println!(
            "{name:<9} steps={:>7}  indexed median {idx:>9.1} us   full scan median {scan:>11.1} us",
            c.n
        );
    }
    println!(
        "{name:<9} ratio 100,000/100: indexed {:.2}x   full scan {:.1}x   (interleaved, {runs} decisions a size)",
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
