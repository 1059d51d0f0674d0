//! Two Guardians, each with its own PostgreSQL connection (as two `mnemo
//! guard` processes would have), deciding interleaved requests for the
//! same sessions at once: single requests and group-committed batches that
//! mix two sessions in opposite orders, with every "shared" request id
//! sent by both. Afterwards: each shared id was accepted exactly once,
//! every other id once, the steps are numbered 1..n without a gap or a
//! double, and the hash chain is one unbroken chain over exactly those
//! steps. Needs `$MNEMO_TEST_POSTGRES_URL` (`.ci/setup.d/30-postgres.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::chain;
use mnemo_guardian::protocol::{METHODS, codes};
use mnemo_guardian::{Guardian, GuardianConfig, Policy, SessionStore};
use mnemo_guardian_store::PostgresStore;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const NOW: &str = "2026-09-19T10:00:00Z";
/// Per Guardian: single requests with ids of its own.
const OWN: u64 = 300;
/// Ids both Guardians send (each must be accepted once in all).
const SHARED: u64 = 200;
/// Per Guardian: batches of `BATCH`, half for each session.
const BATCHES: u64 = 40;
const BATCH: u64 = 8;

fn now_ms() -> i64 {
    mnemo_acs::time::parse_rfc3339_ms(NOW).unwrap()
}

fn rid(tag: u64, k: u64) -> String {
    format!("{tag:08x}-0000-4000-8000-{k:012x}")
}

fn req(session: &str, id: &str, method: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": id, "params": {
        "acs_version": "0.1.0", "request_id": id, "timestamp": NOW,
        "metadata": {"agent_id": "a", "session_id": session}, "payload": payload}})
}

fn user(session: &str, id: &str) -> Value {
    req(
        session,
        id,
        "steps/userMessage",
        json!({"content": [{"type": "text", "value": "hi", "provenance": {"provenance_id": format!("p-{id}"), "origin": "user_input"}}]}),
    )
}

fn guardian(url: &str) -> Guardian<PostgresStore> {
    let policy = Policy::default();
    let config = GuardianConfig::from_policy(&policy);
    Guardian::new(policy, config, PostgresStore::open(url).unwrap()).with_clock(now_ms)
}

/// What one Guardian saw: accepted ids per session, replays refused.
#[derive(Default)]
struct Seen {
    accepted: BTreeMap<String, Vec<String>>,
    replays: u64,
    other: Vec<Value>,
}

impl Seen {
    fn note(&mut self, sent: &Value, got: &Value) {
        let session = sent["params"]["metadata"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let id = sent["params"]["request_id"].as_str().unwrap().to_string();
        if got["result"]["chain_hash"].is_string() {
            self.accepted.entry(session).or_default().push(id);
        } else if got["error"]["code"] == codes::REPLAY_DETECTED {
            self.replays += 1;
        } else {
            self.other.push(got.clone());
        }
    }
}

fn hammer(url: String, me: u64, sessions: [String; 2]) -> Seen {
    let mut g = guardian(&url);
    let mut seen = Seen::default();
    let (a, b) = (&sessions[0], &sessions[1]);
    for k in 0..OWN.max(SHARED).max(BATCHES) {
        if k < OWN {
            let r = user(a, &rid(0x1000 + me, k));
            let out: Value = serde_json::from_slice(&g.handle(r.to_string().as_bytes())).unwrap();
            seen.note(&r, &out);
        }
        if k < SHARED {
            // Both Guardians send these, in the same order, at about the same time.
            let r = user(a, &rid(0x2000, k));
            let out: Value = serde_json::from_slice(&g.handle(r.to_string().as_bytes())).unwrap();
            seen.note(&r, &out);
        }
        if k < BATCHES {
            // Guardian 0 lists session a first, Guardian 1 session b first.
            let batch: Vec<Value> = (0..BATCH)
                .map(|j| {
                    let s = if (j < BATCH / 2) == (me == 0) { a } else { b };
                    user(s, &rid(0x3000 + me, k * BATCH + j))
                })
                .collect();
            let out = g.handle_batch(&batch);
            for (r, o) in batch.iter().zip(&out) {
                seen.note(r, o);
            }
        }
    }
    seen
}

/// Checks one session's steps and chain against what was accepted.
fn check_session(store: &mut PostgresStore, session: &str, accepted: &[String]) {
    let steps = store.steps(session).unwrap();
    assert_eq!(
        steps.len(),
        accepted.len(),
        "every accepted step recorded, once"
    );
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s.seq, i as u64 + 1, "steps numbered without a gap");
    }
    let recorded: BTreeSet<&str> = steps.iter().map(|s| s.step_id.as_str()).collect();
    let acked: BTreeSet<&str> = accepted.iter().map(String::as_str).collect();
    assert_eq!(recorded.len(), steps.len(), "no step recorded twice");
    assert_eq!(
        recorded, acked,
        "the recorded steps are the acknowledged ones"
    );
    let entries = store.chain_entries(session).unwrap();
    assert_eq!(entries.len(), steps.len(), "one chain entry per step");
    let mut prev: Option<chain::Hash> = None;
    for (canonical, hash) in &entries {
        assert_eq!(
            chain::entry_hash_canonical(canonical, prev.as_ref()),
            *hash,
            "the chain is unbroken"
        );
        prev = Some(*hash);
    }
    assert_eq!(
        store.chain_head(session).unwrap().map(|(n, _)| n),
        Some(steps.len() as u64)
    );
}

#[test]
fn two_guardians_on_one_database_decide_one_session_consistently() {
    let Some(url) = mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "two Guardians on one PostgreSQL database (.ci/setup.d/30-postgres.sh)",
    ) else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000_000)
        .unwrap_or(0);
    let sessions = [
        format!("11111111-0000-4000-8000-{nanos:012}"),
        format!("22222222-0000-4000-8000-{nanos:012}"),
    ];
    // Handshakes, from a third Guardian.
    let mut g = guardian(&url);
    for s in &sessions {
        let hello = req(
            s,
            &rid(0x4000, 0),
            "handshake/hello",
            json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
                   "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
        );
        let out: Value = serde_json::from_slice(&g.handle(hello.to_string().as_bytes())).unwrap();
        assert_eq!(out["result"]["decision"], "allow", "{out}");
    }
    let started = std::time::Instant::now();
    let workers: Vec<_> = (0..2)
        .map(|me| {
            let (url, sessions) = (url.clone(), sessions.clone());
            std::thread::spawn(move || hammer(url, me, sessions))
        })
        .collect();
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let sent = 2 * (OWN + SHARED + BATCHES * BATCH);
    eprintln!(
        "two Guardians: {sent} requests in {:.2} s ({:.0} requests/s, both together, debug build)",
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64()
    );
    for s in &seen {
        assert!(
            s.other.is_empty(),
            "unexpected answers: {:?}",
            &s.other[..s.other.len().min(3)]
        );
    }
    let replays: u64 = seen.iter().map(|s| s.replays).sum();
    assert_eq!(replays, SHARED, "each shared id refused exactly once");
    let mut store = PostgresStore::open(&url).unwrap();
    for session in &sessions {
        let accepted: Vec<String> = seen
            .iter()
            .flat_map(|s| s.accepted.get(session).cloned().unwrap_or_default())
            .collect();
        check_session(&mut store, session, &accepted);
    }
    let a = seen
        .iter()
        .map(|s| s.accepted.get(&sessions[0]).map_or(0, Vec::len))
        .sum::<usize>();
    assert_eq!(a as u64, 2 * OWN + SHARED + BATCHES * BATCH, "session a");
    let shared_by: Vec<usize> = seen
        .iter()
        .map(|s| {
            s.accepted[&sessions[0]]
                .iter()
                .filter(|id| id.starts_with("00002000"))
                .count()
        })
        .collect();
    eprintln!("shared ids accepted by each Guardian: {shared_by:?}");
}
