//! The PostgreSQL store's group commit: a batch defers the writes it can
//! know to be new under its row lock and reads the replay marks it will
//! ask for with the lock. Checked here: two Guardians (two connections)
//! taking turns with batches that replay each other's committed ids and
//! nonces, replay within a batch, resolve a `request_id_ref` and decide a
//! preCompact over steps of the same batch give, answer for answer, what
//! one in-memory Guardian gives for the same sequence; the chain is one
//! chain; and a batch of 64 steps costs two round trips, not three per
//! request. Needs `$MNEMO_TEST_POSTGRES_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::chain;
use mnemo_guardian::protocol::{METHODS, codes};
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, SessionStore};
use mnemo_guardian_store::PostgresStore;
use serde_json::{Value, json};

const NOW: &str = "2026-09-19T10:00:00Z";

fn now_ms() -> i64 {
    mnemo_acs::time::parse_rfc3339_ms(NOW).unwrap()
}

fn url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the PostgreSQL batch tests need a database (.ci/setup.d/30-postgres.sh)",
    )
}

fn fresh_session(tag: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000_000)
        .unwrap_or(0);
    format!("{tag:08x}-0000-4000-8000-{nanos:012}")
}

fn rid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

fn req(session: &str, n: u64, method: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": n, "params": {
        "acs_version": "0.1.0", "request_id": rid(n), "timestamp": NOW,
        "metadata": {"agent_id": "a", "session_id": session}, "payload": payload}})
}

fn user(session: &str, n: u64) -> Value {
    req(
        session,
        n,
        "steps/userMessage",
        json!({"content": [{"type": "text", "value": "hi", "provenance": {"provenance_id": format!("p{n}"), "origin": "user_input"}}]}),
    )
}

fn with_nonce(mut r: Value, nonce: &str) -> Value {
    r["params"]["nonce"] = json!(nonce);
    r
}

fn guardian<S: SessionStore>(store: S) -> Guardian<S> {
    let policy = Policy::default();
    let config = GuardianConfig::from_policy(&policy);
    Guardian::new(policy, config, store).with_clock(now_ms)
}

/// The batches, in the order they are sent (alternately to the two
/// PostgreSQL Guardians).
fn batches(s: &str, t: &str) -> Vec<Vec<Value>> {
    let hello = |session: &str, n: u64| {
        req(
            session,
            n,
            "handshake/hello",
            json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
                   "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
        )
    };
    let tool_req = req(
        s,
        30,
        "steps/toolCallRequest",
        json!({"tool": {"name": "Read"}, "arguments": {}}),
    );
    let tool_res = |n: u64, r: u64| {
        req(
            s,
            n,
            "steps/toolCallResult",
            json!({"execution_id": "e1", "exit_status": "success", "request_id_ref": rid(r),
                   "outputs": [{"value": "out", "provenance": {"provenance_id": format!("p{n}"), "origin": "tool_output", "source_id": "Read"}}]}),
        )
    };
    let pre = |n: u64, entries: &[&str]| {
        req(
            s,
            n,
            "steps/preCompact",
            json!({"entries_to_compact": entries, "triggered_by": "size_threshold"}),
        )
    };
    vec![
        vec![hello(s, 1), hello(t, 2)],
        // Guardian A: fresh steps in two sessions, a nonce.
        vec![
            user(s, 10),
            user(t, 11),
            with_nonce(user(s, 12), "bm9uY2Utbm9uY2Utbm9uY2U="),
            user(s, 13),
        ],
        // Guardian B: replays of A's committed id and nonce, a replay
        // within the batch, fresh steps after them.
        vec![
            user(s, 10),
            with_nonce(user(s, 14), "bm9uY2Utbm9uY2Utbm9uY2U="),
            user(s, 15),
            user(s, 15),
            user(t, 16),
            with_nonce(user(t, 17), "bm9uY2Utbm9uY2Utbm9uY2U="),
        ],
        // A: a tool call and its result in one batch (resolved), a result
        // for a call never made (unresolved), then a preCompact over
        // steps of this very batch (denied: tool output since the last
        // user input) and B's step 15.
        vec![
            user(t, 11),
            tool_req,
            tool_res(31, 30),
            tool_res(32, 99),
            pre(33, &["p15", "p31", "p32"]),
            user(s, 34),
        ],
        // B: A's ids again, then steps that follow A's.
        vec![user(s, 34), user(s, 13), tool_res(31, 30), user(s, 35)],
    ]
}

#[test]
fn batches_on_two_connections_answer_as_one_in_memory_guardian() {
    let Some(url) = url() else { return };
    let (s, t) = (fresh_session(0xb1), fresh_session(0xb2));
    let mut a = guardian(PostgresStore::open(&url).unwrap());
    let mut b = guardian(PostgresStore::open(&url).unwrap());
    let mut mem = guardian(MemoryStore::new());
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (i, batch) in batches(&s, &t).iter().enumerate() {
        let g = if i % 2 == 0 { &mut a } else { &mut b };
        got.push(g.handle_batch(batch));
        want.push(mem.handle_batch(batch));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "batch {i}: PostgreSQL and in-memory answers differ");
    }
    // What the sequence exercises, on the reference's answers.
    let flat: Vec<&Value> = want.iter().flatten().collect();
    let code = |v: &Value| v["error"]["code"].as_i64();
    let replays = flat
        .iter()
        .filter(|v| code(v) == Some(codes::REPLAY_DETECTED))
        .count();
    let brief: Vec<String> = flat
        .iter()
        .map(|v| {
            format!(
                "{}:{}",
                v["id"],
                v["error"]["code"]
                    .as_i64()
                    .map_or_else(|| v["result"]["decision"].to_string(), |c| c.to_string())
            )
        })
        .collect();
    assert_eq!(replays, 7, "{brief:?}");
    assert_eq!(want[3][2]["result"]["decision"], "allow");
    assert!(
        want[3][2]["result"].get("policy_data").is_none(),
        "resolved"
    );
    assert_eq!(
        want[3][3]["result"]["reason_codes"],
        json!(["request_id_ref_unresolved"])
    );
    assert_eq!(want[3][4]["result"]["decision"], "deny", "{}", want[3][4]);
    // Every acknowledged step is recorded once, on one unbroken chain.
    let mut check = PostgresStore::open(&url).unwrap();
    for session in [&s, &t] {
        let acked: Vec<String> = batches(&s, &t)
            .iter()
            .flatten()
            .zip(&flat)
            .filter(|(r, v)| {
                r["params"]["metadata"]["session_id"] == session.as_str()
                    && v["result"]["chain_hash"].is_string()
            })
            .map(|(r, _)| r["params"]["request_id"].as_str().unwrap().to_string())
            .collect();
        assert!(acked.len() >= 3, "{session}: {acked:?}");
        let recorded = check.steps(session).unwrap();
        let ids: Vec<String> = recorded.iter().map(|r| r.step_id.clone()).collect();
        assert_eq!(ids, acked, "{session}");
        assert!(
            recorded
                .iter()
                .enumerate()
                .all(|(i, r)| r.seq == i as u64 + 1)
        );
        let entries = check.chain_entries(session).unwrap();
        assert_eq!(entries.len(), recorded.len());
        let mut prev: Option<chain::Hash> = None;
        for (canonical, hash) in &entries {
            assert_eq!(chain::entry_hash_canonical(canonical, prev.as_ref()), *hash);
            prev = Some(*hash);
        }
        assert_eq!(
            check.chain_head(session).unwrap(),
            prev.map(|h| (recorded.len() as u64, h)),
            "{session}"
        );
    }
}

#[test]
fn a_batch_costs_a_fixed_number_of_round_trips() {
    let Some(url) = url() else { return };
    let s = fresh_session(0xb3);
    let mut g = guardian(PostgresStore::open(&url).unwrap());
    let hello = req(
        &s,
        100,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
               "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    );
    assert_eq!(g.handle_batch(&[hello])[0]["result"]["decision"], "allow");
    let mut n = 100;
    let mut batch = |g: &mut Guardian<PostgresStore>, size: u64| {
        let reqs: Vec<Value> = (0..size)
            .map(|_| {
                n += 1;
                user(&s, n)
            })
            .collect();
        let before = g.store_mut().round_trips();
        let out = g.handle_batch(&reqs);
        assert!(
            out.iter().all(|v| v["result"]["decision"] == "allow"),
            "{}",
            out[0]
        );
        g.store_mut().round_trips() - before
    };
    let first = batch(&mut g, 64);
    let next = batch(&mut g, 64);
    let one = batch(&mut g, 1);
    // Round trips the store waited for. The hello committed the session
    // on this handle, so every batch after it is decided against what the
    // handle committed last and sent in one trip: BEGIN, the session's
    // lock and the check that it is as seen, the rows, COMMIT (the replay
    // window's prune, both tables in one more, came after the hello, the
    // Guardian's first request). Read under the lock first, this was two
    // a batch; one statement at a time, five; before the writes were
    // deferred, three per step, 190 and more.
    assert_eq!(first, 1, "first batch of 64: {first} round trips");
    assert_eq!(next, 1, "next batch of 64: {next} round trips");
    assert_eq!(one, 1, "a batch of one costs what a batch of 64 does");
    assert_eq!(g.store_mut().steps(&s).unwrap().len(), 129);
    // A second handle has seen nothing of the session: BEGIN with the
    // row, its lock and its state in one trip, the rows with COMMIT in
    // another (and, its Guardian's first request, the prune). Then the first handle's copy is stale: its one trip fails
    // (nothing kept), and the batch is decided again in two.
    let mut h = guardian(PostgresStore::open(&url).unwrap());
    let other = batch(&mut h, 8);
    assert_eq!(other, 3, "a handle that saw nothing: {other} round trips");
    let stale = batch(&mut g, 8);
    assert_eq!(stale, 3, "a stale copy: {stale} round trips");
    let again = batch(&mut g, 8);
    assert_eq!(again, 1, "seen again after the retry: {again} round trips");
    let steps = g.store_mut().steps(&s).unwrap();
    assert_eq!(steps.len(), 129 + 24);
    assert!(steps.iter().enumerate().all(|(i, r)| r.seq == i as u64 + 1));
    let entries = g.store_mut().chain_entries(&s).unwrap();
    assert_eq!(entries.len(), steps.len());
    let mut prev: Option<chain::Hash> = None;
    for (canonical, hash) in &entries {
        assert_eq!(chain::entry_hash_canonical(canonical, prev.as_ref()), *hash);
        prev = Some(*hash);
    }
}

/// The server dropping the store's connection (a restart, an operator's
/// `pg_terminate_backend`) fails the unit of work that meets it (nothing
/// acknowledged), and the next one runs on a new connection with the
/// store's statements prepared again: the session goes on, one chain.
#[test]
fn a_dropped_connection_fails_one_batch_then_the_store_goes_on() {
    let Some(url) = url() else { return };
    let s = fresh_session(0xb4);
    let mut g = guardian(PostgresStore::open(&url).unwrap());
    let ok = |out: &[Value]| out.iter().all(|v| v["result"]["decision"] == "allow");
    let hello = req(
        &s,
        199,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
               "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    );
    let first = g.handle_batch(&[hello, user(&s, 200), user(&s, 201)]);
    assert!(ok(&first), "{first:?}");
    let pid = g.store_mut().backend_pid().unwrap();
    let mut other = PostgresStore::open(&url).unwrap();
    assert_ne!(other.backend_pid().unwrap(), pid);
    mnemo_postgres::Pg::connect(&url)
        .unwrap()
        .call(move |c| c.execute("SELECT pg_terminate_backend($1)", &[&pid]))
        .unwrap()
        .unwrap();
    let mut failed = 0;
    let mut after = None;
    for n in 202..252 {
        let out = g.handle_batch(&[user(&s, n)]);
        if ok(&out) {
            after = Some(n);
            break;
        }
        assert_eq!(out[0]["error"]["code"], codes::INTERNAL_ERROR, "{out:?}");
        failed += 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        failed >= 1,
        "the batch on the dropped connection is not acknowledged"
    );
    let after = after.expect("the store recovers on a new connection");
    assert_ne!(g.store_mut().backend_pid().unwrap(), pid);
    let recorded: Vec<String> = other
        .steps(&s)
        .unwrap()
        .iter()
        .map(|r| r.step_id.clone())
        .collect();
    assert_eq!(recorded, vec![rid(200), rid(201), rid(after)]);
    let entries = other.chain_entries(&s).unwrap();
    let mut prev: Option<chain::Hash> = None;
    for (canonical, hash) in &entries {
        assert_eq!(chain::entry_hash_canonical(canonical, prev.as_ref()), *hash);
        prev = Some(*hash);
    }
    assert_eq!(entries.len(), 3);
}

/// The check a one-trip batch sends with its rows refuses a copy that
/// another handle made stale by something no row of the batch collides
/// with (here the handshake): the commit fails, nothing is kept,
/// `take_stale` says so once, and the same work done again reads the
/// database's handshake under the lock.
#[test]
fn a_copy_made_stale_by_another_handshake_fails_its_check() {
    let Some(url) = url() else { return };
    let s = fresh_session(0xb5);
    let mut a = PostgresStore::open(&url).unwrap();
    let mut b = PostgresStore::open(&url).unwrap();
    let hs = |methods: &[&str]| mnemo_guardian::store::SessionHandshake {
        version: "0.1.0".into(),
        methods: Some(methods.iter().map(|m| m.to_string()).collect()),
    };
    // A commits the session (its copy: this handshake, no step).
    a.begin().unwrap();
    a.lock_sessions(&[&s]).unwrap();
    a.set_handshake(&s, &hs(&["steps/userMessage"])).unwrap();
    a.commit().unwrap();
    // B replaces the handshake.
    b.set_handshake(&s, &hs(&["steps/preCompact"])).unwrap();
    // A decides against its copy, in one trip, which fails its check.
    a.begin().unwrap();
    a.expect_marks(&s, &["m1"], &[]).unwrap();
    a.lock_sessions(&[&s]).unwrap();
    let before = a.round_trips();
    assert_eq!(a.handshake(&s).unwrap(), Some(hs(&["steps/userMessage"])));
    assert!(a.mark_request(&s, "m1", 1).unwrap());
    assert!(a.commit().is_err(), "a stale copy is never committed");
    assert_eq!(a.round_trips() - before, 1);
    assert!(a.take_stale());
    assert!(!a.take_stale(), "said once");
    // Nothing was kept: B sees m1 unseen; A, again, reads B's handshake.
    a.begin().unwrap();
    a.expect_marks(&s, &["m1"], &[]).unwrap();
    a.lock_sessions(&[&s]).unwrap();
    assert_eq!(a.handshake(&s).unwrap(), Some(hs(&["steps/preCompact"])));
    assert!(a.mark_request(&s, "m1", 1).unwrap(), "m1 was not kept");
    a.commit().unwrap();
    assert!(!a.take_stale());
    assert!(!b.mark_request(&s, "m1", 2).unwrap());
}
