//! Server-side latency histograms of the HTTP server, off by default.
//!
//! With `MNEMO_HTTP_STATS=<seconds>` set (see [`STATS_ENV`]), the server
//! records, per request: the time from the first byte of a request read to
//! its answer written (`request`), the time its connection waited for the
//! in-flight budget (`budget`), the time from handing it to the decider to
//! its answer coming back (`decide`); per batch: its size and the time the
//! store took (`batch`); and every that many seconds it prints one line
//! per histogram to stderr (the last interval, then the total so far).
//! When it is not set, a record is one relaxed load of a flag.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that turns the histograms on: the interval of
/// the report in seconds (1 to 3600).
pub const STATS_ENV: &str = "MNEMO_HTTP_STATS";

const BUCKETS: usize = 16 + 8 * 40;

/// A log-linear histogram of non-negative values (µs, or counts): exact
/// below 16, then 8 buckets per power of two (at most 12.5 % off).
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    max: AtomicU64,
    sum: AtomicU64,
}

fn bucket(v: u64) -> usize {
    if v < 16 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // >= 4
    let sub = ((v >> (e - 3)) & 7) as usize;
    (16 + (e - 4) * 8 + sub).min(BUCKETS - 1)
}

/// The smallest value of bucket `i`.
fn floor_of(i: usize) -> u64 {
    if i < 16 {
        return i as u64;
    }
    let e = (i - 16) / 8 + 4;
    let sub = ((i - 16) % 8) as u64;
    (8 + sub) << (e - 3)
}

impl Histogram {
    /// An empty histogram.
    pub const fn new() -> Histogram {
        Histogram {
            counts: [const { AtomicU64::new(0) }; BUCKETS],
            max: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }

    /// Counts `v`.
    pub fn record(&self, v: u64) {
        self.counts[bucket(v)].fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
    }

    /// A copy of the counts.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            max: self.max.load(Ordering::Relaxed),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The counts of a [`Histogram`] at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    counts: Vec<u64>,
    max: u64,
    sum: u64,
}

impl Snapshot {
    /// How many values.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The lower bound of the bucket that holds quantile `q` (0..=1).
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return floor_of(i);
            }
        }
        self.max
    }

    /// What was counted since `earlier` (the max is the total's).
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            counts: self
                .counts
                .iter()
                .enumerate()
                .map(|(i, c)| c.saturating_sub(earlier.counts.get(i).copied().unwrap_or(0)))
                .collect(),
            max: self.max,
            sum: self.sum.saturating_sub(earlier.sum),
        }
    }

    /// `n=… mean p50 p90 p99 p99.9 max`.
    pub fn line(&self) -> String {
        let n = self.count();
        let mean = self.sum.checked_div(n).unwrap_or(0);
        format!(
            "n={n} mean={mean} p50={} p90={} p99={} p99.9={} max={}",
            self.quantile(0.5),
            self.quantile(0.9),
            self.quantile(0.99),
            self.quantile(0.999),
            self.max
        )
    }
}

/// The server's histograms.
pub struct Stats {
    /// First byte of a request read → its answer written, µs.
    pub request: Histogram,
    /// Waiting for the in-flight budget, µs.
    pub budget: Histogram,
    /// Handed to the decider → answer back on the connection's task, µs.
    pub decide: Histogram,
    /// Requests a batch.
    pub batch_size: Histogram,
    /// The store's time for one batch, µs.
    pub batch_time: Histogram,
    /// Requests a runtime turn handed to the decider thread at once.
    pub turn_size: Histogram,
    /// Requests decided so far (for the slow-batch lines).
    pub decided: AtomicU64,
}

/// A batch that takes longer than this is reported on its own line, with
/// how many requests were decided before it (a store's growth shows as
/// slow batches at powers of two).
pub const SLOW_BATCH_US: u64 = 10_000;

impl Stats {
    /// Counts one decided batch of `size` requests that took `us`.
    pub fn batch(&self, size: usize, us: u64) {
        self.batch_time.record(us);
        self.batch_size.record(size as u64);
        let before = self.decided.fetch_add(size as u64, Ordering::Relaxed);
        if us >= SLOW_BATCH_US {
            eprintln!("http-stats slow batch: {us} us for {size} requests after {before} decided");
        }
    }
}

static STATS: Stats = Stats {
    request: Histogram::new(),
    budget: Histogram::new(),
    decide: Histogram::new(),
    batch_size: Histogram::new(),
    batch_time: Histogram::new(),
    turn_size: Histogram::new(),
    decided: AtomicU64::new(0),
};

static INTERVAL: OnceLock<Option<Duration>> = OnceLock::new();

fn interval() -> Option<Duration> {
    *INTERVAL.get_or_init(|| {
        let secs = std::env::var(STATS_ENV)
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=3600).contains(s))?;
        Some(Duration::from_secs(secs))
    })
}

/// The histograms when [`STATS_ENV`] is set.
pub fn get() -> Option<&'static Stats> {
    interval().map(|_| &STATS)
}

/// Microseconds since `t`.
pub fn micros(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Starts the reporting thread when [`STATS_ENV`] is set (once).
pub fn start_reporting() {
    static STARTED: OnceLock<()> = OnceLock::new();
    let Some(every) = interval() else { return };
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("http-stats".into())
            .spawn(move || report(every));
    });
}

fn report(every: Duration) {
    let names = [
        "request_us",
        "budget_us",
        "decide_us",
        "batch_size",
        "batch_us",
        "turn_size",
    ];
    let hs = |s: &Stats| {
        [
            s.request.snapshot(),
            s.budget.snapshot(),
            s.decide.snapshot(),
            s.batch_size.snapshot(),
            s.batch_time.snapshot(),
            s.turn_size.snapshot(),
        ]
    };
    let mut last = hs(&STATS);
    let start = Instant::now();
    loop {
        std::thread::sleep(every);
        let now = hs(&STATS);
        let t = start.elapsed().as_secs();
        for ((name, n), l) in names.iter().zip(&now).zip(&last) {
            eprintln!(
                "http-stats t={t}s {name} last: {} | total: {}",
                n.since(l).line(),
                n.line()
            );
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_bound_their_values() {
        let mut prev = 0;
        for v in (0..5000u64).chain([1 << 20, 123_456_789, u64::MAX / 4]) {
            let b = bucket(v);
            assert!(b >= prev || v >= 5000, "{v}");
            prev = b;
            assert!(floor_of(b) <= v, "{v} in {b} floor {}", floor_of(b));
            assert!(
                b == BUCKETS - 1 || floor_of(b + 1) > v,
                "{v} in {b} next {}",
                floor_of(b + 1)
            );
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let h = Histogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 1000);
        let p50 = s.quantile(0.5);
        assert!((448..=500).contains(&p50), "{p50}");
        let p99 = s.quantile(0.99);
        assert!((896..=990).contains(&p99), "{p99}");
        assert_eq!(s.max, 1000);
        let later = {
            h.record(5000);
            h.snapshot()
        };
        assert_eq!(later.since(&s).count(), 1);
    }
}
