//! Commit timing, for finding where a long-running server's tail comes
//! from: with `MNEMO_SQLITE_COMMIT_STATS=1` the store times each unit of
//! work's `BEGIN IMMEDIATE` (the wait for the write lock), its body (the
//! decisions and writes between) and its `COMMIT` (the WAL appends), and
//! every two seconds prints their percentiles to stderr, one line each.
//! Off (the default), nothing is timed.

use std::time::{Duration, Instant};

/// The environment variable that turns commit timing on.
pub const COMMIT_STATS_ENV: &str = "MNEMO_SQLITE_COMMIT_STATS";

/// How often the percentiles are printed.
const EVERY: Duration = Duration::from_secs(2);

/// The timings of the units of work since the last report.
#[derive(Debug)]
pub(crate) struct CommitStats {
    since: Instant,
    began: Option<Instant>,
    body_from: Option<Instant>,
    begin_us: Vec<u32>,
    body_us: Vec<u32>,
    commit_us: Vec<u32>,
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// `p`-th percentile of sorted `v` (0 when empty).
fn pct(v: &[u32], p: f64) -> u32 {
    if v.is_empty() {
        return 0;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn line(name: &str, v: &mut [u32]) -> String {
    v.sort_unstable();
    format!(
        "{name} p50 {} p90 {} p99 {} p99.9 {} max {} µs",
        pct(v, 0.5),
        pct(v, 0.9),
        pct(v, 0.99),
        pct(v, 0.999),
        v.last().copied().unwrap_or(0)
    )
}

impl CommitStats {
    /// Timing on when the environment asks for it.
    pub(crate) fn from_env() -> Option<Self> {
        std::env::var_os(COMMIT_STATS_ENV)
            .filter(|v| !v.is_empty() && v != "0")
            .map(|_| CommitStats {
                since: Instant::now(),
                began: None,
                body_from: None,
                begin_us: Vec::new(),
                body_us: Vec::new(),
                commit_us: Vec::new(),
            })
    }

    pub(crate) fn before_begin(&mut self) {
        self.began = Some(Instant::now());
    }

    pub(crate) fn after_begin(&mut self) {
        let now = Instant::now();
        if let Some(t) = self.began.take() {
            self.begin_us.push(micros(now - t));
        }
        self.body_from = Some(now);
    }

    /// Before `COMMIT`: the instant its timing starts from.
    pub(crate) fn before_commit(&mut self) -> Instant {
        let now = Instant::now();
        if let Some(t) = self.body_from.take() {
            self.body_us.push(micros(now - t));
        }
        now
    }

    pub(crate) fn after_commit(&mut self, from: Instant) {
        self.commit_us.push(micros(from.elapsed()));
        if self.since.elapsed() >= EVERY {
            eprintln!(
                "sqlite units of work: {} in {:.1} s; {}; {}; {}",
                self.commit_us.len(),
                self.since.elapsed().as_secs_f64(),
                line("begin", &mut self.begin_us),
                line("body", &mut self.body_us),
                line("commit", &mut self.commit_us),
            );
            self.begin_us.clear();
            self.body_us.clear();
            self.commit_us.clear();
            self.since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_sorted_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(pct(&v, 0.5), 51);
        assert_eq!(pct(&v, 0.99), 99);
        assert_eq!(pct(&v, 1.0), 100);
        assert_eq!(pct(&[], 0.5), 0);
        let mut w = vec![5, 1, 3];
        assert_eq!(line("x", &mut w), "x p50 3 p90 5 p99 5 p99.9 5 max 5 µs");
    }
}
