//! What the SQLite store writes a request, independent of the machine's
//! load: the requests of `bench/guardian/user-message.lua` (a fresh
//! `steps/userMessage` each, two request-id streams as wrk's two threads
//! give, one session) decided by the Guardian in batches (one transaction
//! each, as `guard http` commits a runtime turn), on a fresh file with no
//! checkpoint past the empty store, so the WAL holds every frame written.
//! `cargo run -p mnemo-guardian-store --example sqlite_wal -- [requests] [batch…]`
//! prints, per batch size: WAL bytes and frames a request, database bytes a
//! request. Count the write calls with
//! `strace -f -c -e trace=pwrite64 target/debug/examples/sqlite_wal 20000 8`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, Policy};
use mnemo_guardian_store::SqliteStore;
use serde_json::{Value, json};

fn request(n: u64, session: &str) -> Value {
    let rid = format!("{:08x}-0000-4000-8000-{:012}", n % 2, n / 2);
    json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": n, "params": {
        "acs_version": "0.1.0", "request_id": rid, "timestamp": "2026-09-19T10:00:00Z",
        "metadata": {"agent_id": "bench", "session_id": session},
        "payload": {"content": [{"type": "text", "value": "hello",
            "provenance": {"provenance_id": format!("p-{rid}"), "origin": "user_input"}}]}}})
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: requests, then batch sizes"))
        .collect();
    let requests = args.first().copied().unwrap_or(20_000);
    let batches: Vec<u64> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![1, 8, 32]
    };
    let dir = std::env::temp_dir().join(format!("mnemo-sqlite-wal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = GuardianConfig {
        skew_window_ms: None,
        require_handshake: false,
        ..GuardianConfig::default()
    };
    for batch in batches {
        let path = dir.join(format!("b{batch}.sqlite3"));
        let store = SqliteStore::open(&path).unwrap();
        let mut g = Guardian::new(Policy::default(), config.clone(), store);
        // A reader holding the snapshot of the empty store: no checkpoint
        // can copy a frame past it, so the WAL is never rewound and keeps
        // every frame the commits write.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("BEGIN").unwrap();
        let _: i64 = c
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        let page: u64 = c
            .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
            .unwrap() as u64;
        let session = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
        let mut n = 0;
        let wal = dir.join(format!("b{batch}.sqlite3-wal"));
        let len = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let wal0 = len(&wal);
        while n < requests {
            let reqs: Vec<Value> = (0..batch.min(requests - n))
                .map(|i| request(n + i + 1, session))
                .collect();
            n += reqs.len() as u64;
            for r in g.handle_batch(&reqs) {
                assert!(r.get("result").is_some(), "{r}");
            }
        }
        let wal_bytes = len(&wal) - wal0;
        let frames = wal_bytes / (page + 24);
        println!(
            "batch {batch:>3}: {requests} requests, WAL {:.0} B/request ({:.2} frames of {page} B), database {:.0} B/request",
            wal_bytes as f64 / requests as f64,
            frames as f64 / requests as f64,
            len(&path) as f64 / requests as f64,
        );
        drop(c);
        drop(g);
    }
    // KEEP=1 leaves the files (for `sqlite3 … 'SELECT … FROM dbstat'`).
    if std::env::var_os("KEEP").is_some() {
        println!("kept {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
