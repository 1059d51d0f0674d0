//! One set of `SessionStore` conformance checks, run against every store:
//! in memory, SQLite and PostgreSQL (`$MNEMO_TEST_POSTGRES_URL`, set by
//! `.ci/setup.d/30-postgres.sh`; under CI=true its absence fails). Then the
//! same scripted Guardian conversation against each store must give the
//! same answers, byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::chain;
use mnemo_acs::model::{Origin, Provenance, Verdict};
use mnemo_guardian::protocol::{METHODS, codes};
use mnemo_guardian::store::{CompactionRecord, SessionHandshake, StepRecord};
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, SessionStore};
use mnemo_guardian_store::{PostgresStore, SqliteStore};
use serde_json::{Value, json};

fn pg_url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the PostgreSQL session store tests need a database (.ci/setup.d/30-postgres.sh)",
    )
}

/// A prefix no other run of these tests uses (the database outlives runs).
fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{tag}-{}-{nanos}", std::process::id())
}

fn prov(id: &str, origin: Origin) -> Provenance {
    serde_json::from_value(json!({"provenance_id": id, "origin": origin})).unwrap()
}

/// Every behaviour the Guardian relies on. `p` prefixes session names.
/// `transactional`: the store rolls back (not the in-memory one).
fn conformance(s: &mut dyn SessionStore, p: &str, transactional: bool) {
    let s1 = format!("{p}-s1");
    let s2 = format!("{p}-s2");
    // Replay marks are per session, request ids and nonces apart, pruned by time.
    assert!(matches!(s.mark_request(&s1, "a", 10), Ok(true)));
    assert!(matches!(s.mark_request(&s1, "a", 20), Ok(false)));
    assert!(matches!(s.mark_request(&s2, "a", 20), Ok(true)));
    assert!(matches!(s.mark_request(&s1, "b", 30), Ok(true)));
    assert!(matches!(s.mark_nonce(&s1, "n", 10), Ok(true)));
    assert!(matches!(s.mark_nonce(&s1, "n", 11), Ok(false)));
    assert!(matches!(s.mark_nonce(&s2, "n", 11), Ok(true)));
    assert!(matches!(s.mark_nonce(&s1, "a", 11), Ok(true)));
    s.prune_requests(20).unwrap();
    assert!(matches!(s.mark_request(&s1, "a", 40), Ok(true)), "pruned");
    assert!(matches!(s.mark_request(&s1, "b", 40), Ok(false)), "kept");
    assert!(matches!(s.mark_nonce(&s1, "n", 40), Ok(true)), "pruned");

    // Handshakes: none, then with methods, replaced; legacy without methods.
    assert_eq!(s.handshake(&s1).unwrap(), None);
    let hs = SessionHandshake {
        version: "0.1.0".into(),
        methods: Some(vec!["steps/userMessage".into(), "system/ping".into()]),
    };
    s.set_handshake(&s1, &hs).unwrap();
    assert_eq!(s.handshake(&s1).unwrap(), Some(hs.clone()));
    let legacy = SessionHandshake {
        version: "0.1.0".into(),
        methods: None,
    };
    s.set_handshake(&s1, &legacy).unwrap();
    assert_eq!(s.handshake(&s1).unwrap(), Some(legacy));
    assert_eq!(s.handshake(&s2).unwrap(), None, "another session");

    // Steps in order, with their provenance.
    assert_eq!(s.steps(&s1).unwrap(), vec![]);
    let st = |seq: u64, id: &str, o: Origin| StepRecord {
        seq,
        step_id: id.into(),
        method: "steps/userMessage".into(),
        provenance: vec![prov(&format!("p-{id}"), o)],
    };
    s.record_step(&s1, &st(1, "r1", Origin::UserInput)).unwrap();
    s.record_step(&s1, &st(2, "r2", Origin::ToolOutput))
        .unwrap();
    s.record_step(&s2, &st(1, "x1", Origin::Retrieved)).unwrap();
    assert_eq!(
        s.steps(&s1).unwrap(),
        vec![
            st(1, "r1", Origin::UserInput),
            st(2, "r2", Origin::ToolOutput)
        ]
    );
    assert_eq!(s.steps(&s2).unwrap().len(), 1);

    // The chain: head is the last entry; entries are per session.
    assert_eq!(s.chain_head(&s1).unwrap(), None);
    let h1 = chain::sha256(b"one");
    let h2 = chain::sha256(b"two");
    s.append_chain(&s1, 1, "{\"a\":1}", &h1).unwrap();
    s.append_chain(&s1, 2, "{\"a\":2}", &h2).unwrap();
    assert_eq!(s.chain_head(&s1).unwrap(), Some((2, h2)));
    assert_eq!(s.chain_head(&s2).unwrap(), None);

    // Compactions: the latest one wins.
    assert_eq!(s.last_compaction(&s1).unwrap(), None);
    let c = |id: &str, v: Verdict| CompactionRecord {
        step_id: id.into(),
        entries: vec!["p-r1".into(), format!("{id}-e")],
        verdict: v,
        reasoning: Some(format!("{id}: way out")),
        reason_codes: vec![format!("{id}_code")],
    };
    s.record_compaction(&s1, &c("c1", Verdict::Deny)).unwrap();
    s.record_compaction(&s1, &c("c2", Verdict::Allow)).unwrap();
    assert_eq!(
        s.last_compaction(&s1).unwrap(),
        Some(c("c2", Verdict::Allow))
    );
    assert_eq!(s.last_compaction(&s2).unwrap(), None);

    // Per-turn budget counters: one per (session, turn, budget glob).
    assert_eq!(s.count_turn_call(&s1, "t1", "records.*").unwrap(), Some(1));
    assert_eq!(s.count_turn_call(&s1, "t1", "records.*").unwrap(), Some(2));
    assert_eq!(s.count_turn_call(&s1, "t1", "Bash").unwrap(), Some(1));
    assert_eq!(s.count_turn_call(&s1, "t2", "records.*").unwrap(), Some(1));
    assert_eq!(s.count_turn_call(&s2, "t1", "records.*").unwrap(), Some(1));
    assert_eq!(s.count_turn_call(&s1, "", "records.*").unwrap(), Some(1));
    assert_eq!(s.count_turn_call(&s1, "t1", "records.*").unwrap(), Some(3));
    if transactional {
        s.begin().unwrap();
        assert_eq!(s.count_turn_call(&s1, "t1", "records.*").unwrap(), Some(4));
        s.rollback().unwrap();
        assert_eq!(
            s.count_turn_call(&s1, "t1", "records.*").unwrap(),
            Some(4),
            "a rolled-back count is not kept"
        );
    }

    // A unit of work that commits is kept; one rolled back leaves nothing.
    s.begin().unwrap();
    assert!(matches!(s.mark_request(&s2, "t1", 50), Ok(true)));
    s.append_chain(&s2, 1, "{}", &h1).unwrap();
    s.commit().unwrap();
    assert_eq!(s.chain_head(&s2).unwrap(), Some((1, h1)));
    if transactional {
        s.begin().unwrap();
        assert!(matches!(s.mark_request(&s2, "t2", 50), Ok(true)));
        s.append_chain(&s2, 2, "{}", &h2).unwrap();
        s.set_handshake(&s2, &hs).unwrap();
        s.rollback().unwrap();
        assert_eq!(s.chain_head(&s2).unwrap(), Some((1, h1)));
        assert!(
            matches!(s.mark_request(&s2, "t2", 50), Ok(true)),
            "rolled back"
        );
        assert_eq!(s.handshake(&s2).unwrap(), None, "rolled back");
        // A failed statement inside a unit of work fails its commit too,
        // and nothing of it is kept (PostgreSQL would otherwise turn the
        // COMMIT of an aborted transaction into a silent ROLLBACK).
        s.begin().unwrap();
        assert!(matches!(s.mark_request(&s2, "t3", 50), Ok(true)));
        assert!(s.append_chain(&s2, 1, "{}", &h1).is_err(), "duplicate seq");
        assert!(s.commit().is_err() || s.mark_request(&s2, "t3", 60).ok() == Some(false));
        s.rollback().unwrap();
    }
    // Batches lock their sessions first; locking is not a write.
    s.begin().unwrap();
    let (a, b) = (s1.clone(), s2.clone());
    let mut names = vec![a.as_str(), b.as_str()];
    names.sort_unstable();
    s.lock_sessions(&names).unwrap();
    assert!(matches!(s.mark_request(&s1, "t4", 50), Ok(true)));
    s.commit().unwrap();
    assert_eq!(s.steps(&s1).unwrap().len(), 2);
}

#[test]
fn memory_store_conforms() {
    conformance(&mut MemoryStore::new(), "mem", false);
}

#[test]
fn sqlite_store_conforms() {
    let dir = tempdir("conf");
    let mut s = SqliteStore::open(&dir.join("g.sqlite3")).unwrap();
    conformance(&mut s, "lite", true);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgres_store_conforms() {
    let Some(url) = pg_url() else { return };
    let mut s = PostgresStore::open(&url).unwrap();
    conformance(&mut s, &unique("pg"), true);
}

/// The same checks with the store reached over TLS (`sslmode=verify-full`
/// against the CA that .ci/setup.d/30-postgres.sh made).
#[test]
fn postgres_store_conforms_over_tls() {
    let Some(url) = pg_url() else { return };
    let Some(ca) = mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_TLS_CA",
        "PostgreSQL over TLS (.ci/setup.d/30-postgres.sh makes the CA)",
    ) else {
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let tls = format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}");
    let mut s = PostgresStore::open(&tls).unwrap();
    conformance(&mut s, &unique("pgtls"), true);
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(unique(&format!("mnemo-gstore-{tag}")));
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---- the same conversation against every store ----

const NOW: &str = "2026-09-19T10:00:00Z";

fn now_ms() -> i64 {
    mnemo_acs::time::parse_rfc3339_ms(NOW).unwrap()
}

fn req(session: &str, n: u32, method: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": n, "params": {
        "acs_version": "0.1.0", "request_id": format!("00000000-0000-4000-8000-{n:012}"),
        "timestamp": NOW, "metadata": {"agent_id": "a", "session_id": session}, "payload": payload}})
}

/// A conversation: handshake, trusted and untrusted steps, a replay, a
/// denied preCompact, re-grounding, an allowed one, a batch.
fn conversation<S: SessionStore>(g: &mut Guardian<S>, session: &str) -> Vec<Value> {
    let hello = req(
        session,
        1,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
               "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    );
    let user = |n: u32, id: &str| {
        req(
            session,
            n,
            "steps/userMessage",
            json!({"content": [{"type": "text", "value": "hi", "provenance": {"provenance_id": id, "origin": "user_input"}}]}),
        )
    };
    let tool = |n: u32, id: &str| {
        req(
            session,
            n,
            "steps/toolCallResult",
            json!({"tool": {"name": "web"}, "exit_status": "success",
                   "outputs": [{"value": "out", "provenance": {"provenance_id": id, "origin": "tool_output", "source_id": "web"}}]}),
        )
    };
    let pre = |n: u32, entries: &[&str]| {
        req(
            session,
            n,
            "steps/preCompact",
            json!({"entries_to_compact": entries, "triggered_by": "size_threshold"}),
        )
    };
    let mut out = Vec::new();
    let mut call = |g: &mut Guardian<S>, r: &Value| {
        let v: Value = serde_json::from_slice(&g.handle(r.to_string().as_bytes())).unwrap();
        out.push(v);
    };
    call(g, &hello);
    call(g, &user(2, "p1"));
    call(g, &tool(3, "p2"));
    call(g, &tool(3, "p2"));
    call(g, &pre(4, &["p1", "p2"]));
    call(g, &user(5, "p3"));
    call(g, &pre(6, &["p1", "p2", "p3"]));
    let batch = [
        user(7, "p4"),
        tool(8, "p5"),
        user(7, "p4"),
        pre(9, &["p4", "p5"]),
    ];
    out.extend(g.handle_batch(&batch));
    out
}

/// A session id no earlier run used (the database outlives runs).
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("7c9e6679-7425-40de-944b-{:012}", nanos % 1_000_000_000_000)
}

fn run<S: SessionStore>(store: S, session: &str) -> Vec<Value> {
    let policy = Policy::default();
    let config = GuardianConfig::from_policy(&policy);
    let mut g = Guardian::new(policy, config, store).with_clock(now_ms);
    conversation(&mut g, session)
}

#[test]
fn one_conversation_gives_the_same_answers_on_every_store() {
    // The session id is part of the answers: PostgreSQL's run (the
    // database outlives test runs) gets a fresh one, and its own in-memory
    // reference.
    let session = uuid_like();
    let mem = run(MemoryStore::new(), &session);
    assert!(
        mem.iter().any(|v| v["result"]["decision"] == "deny"),
        "{mem:?}"
    );
    let replays = mem
        .iter()
        .filter(|v| v["error"]["code"] == codes::REPLAY_DETECTED)
        .count();
    assert_eq!(replays, 2, "{mem:?}");
    let dir = tempdir("conv");
    let lite = run(SqliteStore::open(&dir.join("g.sqlite3")).unwrap(), &session);
    assert_eq!(
        lite, mem,
        "SQLite answers differ from the in-memory store's"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let Some(url) = pg_url() else { return };
    let pg_session = uuid_like();
    let pg = run(PostgresStore::open(&url).unwrap(), &pg_session);
    let mem2 = run(MemoryStore::new(), &pg_session);
    assert_eq!(
        pg, mem2,
        "PostgreSQL answers differ from the in-memory store's"
    );
}

/// Three calls allowed per turn: a Guardian makes two, a new Guardian on
/// the same store (a restart) allows the third and denies the fourth.
fn budget_survives_a_restart<S: SessionStore>(open: impl Fn() -> S, session: &str) {
    let policy = || {
        Policy::from_toml("[[tools.budget]]\ntool = \"records.*\"\nmax_calls_per_turn = 3\n")
            .unwrap()
    };
    let guardian = || {
        let p = policy();
        let mut config = GuardianConfig::from_policy(&p);
        config.require_handshake = false;
        Guardian::new(p, config, open()).with_clock(now_ms)
    };
    let call = |g: &mut Guardian<S>, n: u32| -> Value {
        let mut r = req(
            session,
            n,
            "steps/toolCallRequest",
            json!({"tool": {"name": "records.lookup"}, "arguments": {"id": {"value": "c-1"}}}),
        );
        r["params"]["metadata"]["turn_id"] = json!("turn-1");
        serde_json::from_slice(&g.handle(r.to_string().as_bytes())).unwrap()
    };
    let mut g = guardian();
    for n in 1..=2 {
        let r = call(&mut g, n);
        assert_eq!(r["result"]["decision"], "allow", "call {n}: {r}");
    }
    drop(g);
    let mut g = guardian();
    let r = call(&mut g, 3);
    assert_eq!(
        r["result"]["decision"], "allow",
        "call 3 after a restart: {r}"
    );
    let r = call(&mut g, 4);
    assert_eq!(
        r["result"]["decision"], "deny",
        "call 4 after a restart: {r}"
    );
    assert_eq!(r["result"]["reason_codes"], json!(["budget_exhausted"]));
}

#[test]
fn sqlite_keeps_a_turns_budget_across_a_restart() {
    let dir = tempdir("budget");
    let path = dir.join("g.sqlite3");
    budget_survives_a_restart(
        || mnemo_guardian_store::Scrubbed::new(SqliteStore::open(&path).unwrap()),
        &uuid_like(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgres_keeps_a_turns_budget_across_a_restart() {
    let Some(url) = pg_url() else { return };
    budget_survives_a_restart(
        || mnemo_guardian_store::Scrubbed::new(PostgresStore::open(&url).unwrap()),
        &uuid_like(),
    );
}

#[test]
fn postgres_migrates_on_start_and_refuses_a_newer_store() {
    let Some(url) = pg_url() else { return };
    // A schema of its own, so that bumping its version disturbs no other test.
    let schema = unique("mig").replace('-', "_");
    let admin = mnemo_postgres::Pg::connect(&url).unwrap();
    let create = format!("CREATE SCHEMA {schema}");
    admin
        .call(move |c| c.batch_execute(&create))
        .unwrap()
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let mut s = PostgresStore::open(&scoped).unwrap();
    assert!(matches!(s.mark_request("m", "a", 1), Ok(true)));
    drop(s);
    let s = PostgresStore::open(&scoped).unwrap();
    drop(s);
    let bump =
        format!("UPDATE {schema}.mnemo_schema SET version = 99 WHERE component = 'guardian'");
    admin
        .call(move |c| c.batch_execute(&bump))
        .unwrap()
        .unwrap();
    let e = PostgresStore::open(&scoped)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("schema version 99") && e.contains("newer mnemo"),
        "a newer store is refused clearly: {e}"
    );
    let drop_it = format!("DROP SCHEMA {schema} CASCADE");
    admin
        .call(move |c| c.batch_execute(&drop_it))
        .unwrap()
        .unwrap();
}
