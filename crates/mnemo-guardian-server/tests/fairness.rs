//! Fairness of `guard http`'s batching: with a store whose every batch is
//! slow, many connections sending at once are each answered within a few
//! batches of sending, whatever the decider (thread or task). The measure
//! is batches (the store's commits), not wall-clock time: a request that
//! waited while others were decided shows as many commits between its send
//! and its answer. Slack for a client thread descheduled on a shared
//! machine: each batch takes 20 ms and up to 4 batches are allowed, where
//! a fair server needs at most 2 (the one deciding when the request
//! arrived, then the one that decides it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::chain::Hash;
use mnemo_guardian::store::{CompactionRecord, SessionHandshake, StepRecord, StoreError};
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, SessionStore, Transport};
use mnemo_guardian_server::http::{self, Decider, HttpLimits};
use serde_json::Value;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod common;

/// The in-memory store, with every commit taking `delay` and counted.
struct SlowStore {
    inner: MemoryStore,
    commits: Arc<AtomicU64>,
    delay: Duration,
}

impl SessionStore for SlowStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.inner.begin()
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        std::thread::sleep(self.delay);
        let r = self.inner.commit();
        self.commits.fetch_add(1, Ordering::SeqCst);
        r
    }
    fn handshake(&mut self, s: &str) -> Result<Option<SessionHandshake>, StoreError> {
        self.inner.handshake(s)
    }
    fn set_handshake(&mut self, s: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        self.inner.set_handshake(s, hs)
    }
    fn mark_request(&mut self, s: &str, id: &str, at: i64) -> Result<bool, StoreError> {
        self.inner.mark_request(s, id, at)
    }
    fn mark_nonce(&mut self, s: &str, n: &str, at: i64) -> Result<bool, StoreError> {
        self.inner.mark_nonce(s, n, at)
    }
    fn record_step(&mut self, s: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.inner.record_step(s, step)
    }
    fn steps(&mut self, s: &str) -> Result<Vec<StepRecord>, StoreError> {
        self.inner.steps(s)
    }
    fn chain_head(&mut self, s: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        self.inner.chain_head(s)
    }
    fn append_chain(&mut self, s: &str, seq: u64, c: &str, h: &Hash) -> Result<(), StoreError> {
        self.inner.append_chain(s, seq, c, h)
    }
    fn record_compaction(&mut self, s: &str, c: &CompactionRecord) -> Result<(), StoreError> {
        self.inner.record_compaction(s, c)
    }
    fn last_compaction(&mut self, s: &str) -> Result<Option<CompactionRecord>, StoreError> {
        self.inner.last_compaction(s)
    }
}

const CONNECTIONS: u32 = 24;
const REQUESTS: u32 = 8;
const MOST_BATCHES: u64 = 4;

/// Runs the load against a server with `decider`; returns, per request,
/// how many batches were committed between its send and its answer, and
/// the batches committed in all.
fn batches_waited(decider: Decider) -> (Vec<u64>, u64) {
    let commits = Arc::new(AtomicU64::new(0));
    let store = SlowStore {
        inner: MemoryStore::new(),
        commits: commits.clone(),
        delay: Duration::from_millis(20),
    };
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    config.skew_window_ms = None;
    let g = Guardian::new(policy, config, store);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = HttpLimits {
        decider,
        ..HttpLimits::default()
    };
    std::thread::spawn(move || http::serve(g, listener, limits, |s| async move { Some(s) }));
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            let commits = commits.clone();
            std::thread::spawn(move || {
                let s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut waited = Vec::new();
                for i in 0..REQUESTS {
                    let req = common::user_message(1 + c * REQUESTS + i);
                    let before = commits.load(Ordering::SeqCst);
                    w.write_all(&req).unwrap();
                    let (status, body) = common::read_answer(&mut r);
                    let after = commits.load(Ordering::SeqCst);
                    assert!(status.contains("200"), "{status}");
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    assert_eq!(v["result"]["decision"], "allow", "{v}");
                    waited.push(after - before);
                }
                waited
            })
        })
        .collect();
    let waited = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    (waited, commits.load(Ordering::SeqCst))
}

fn check(decider: Decider) {
    let (waited, batches) = batches_waited(decider);
    assert_eq!(waited.len(), (CONNECTIONS * REQUESTS) as usize);
    let most = waited.iter().copied().max().unwrap_or(0);
    let mut hist = [0usize; 8];
    for &w in &waited {
        hist[(w as usize).min(7)] += 1;
    }
    eprintln!("{decider:?}: {batches} batches; batches waited per request (0..=7+): {hist:?}");
    assert!(
        most <= MOST_BATCHES,
        "{decider:?}: a request waited {most} batches (histogram 0..=7+: {hist:?})"
    );
    // Every answer comes after its own batch's commit ...
    assert_eq!(hist[0], 0, "{hist:?}");
    // ... and batching happened: connections shared batches.
    assert!(batches * 4 < waited.len() as u64, "{batches} batches");
}

#[test]
fn no_request_waits_more_than_a_few_batches_thread_decider() {
    check(Decider::Thread);
}

#[test]
fn no_request_waits_more_than_a_few_batches_task_decider() {
    check(Decider::Task);
}
