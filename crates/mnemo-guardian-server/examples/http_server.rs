//! HTTP Guardian for load tests and profiling:
//! `cargo run --profile bench -p mnemo-guardian --example http_server -- 127.0.0.1:17717 [STORE.sqlite3]`
//! (timestamps and handshake not checked; memory store unless a path is given).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, Transport};
use mnemo_guardian_server::server::{self, DynStore};
use mnemo_guardian_store::SqliteStore;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:17717".into());
    let store: DynStore = match args.get(2) {
        Some(p) => {
            let mut s = SqliteStore::open(std::path::Path::new(p)).unwrap();
            s.checkpoint_in_background().unwrap();
            Box::new(s)
        }
        None => Box::new(MemoryStore::new()),
    };
    let config = GuardianConfig {
        skew_window_ms: None,
        require_handshake: false,
        transport: Transport::Http,
        ..GuardianConfig::default()
    };
    let g = Guardian::new(Policy::default(), config, store);
    let listener = std::net::TcpListener::bind(&addr).unwrap();
    eprintln!("listening on {addr}");
    server::serve_listener(g, listener).unwrap();
}
