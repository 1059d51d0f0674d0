//! The PostgreSQL session store's schema migration from the last released
//! layout (version 2, with the columns that were added outside the
//! numbering), written out here as that release created it: a store
//! holding sessions, handshakes, steps with their indexes, a hash chain,
//! replay marks, nonces, a preCompact decision and turn budgets opens
//! (migrating to integer session keys, bytewise text keys and nodes stored
//! once) with nothing lost, and goes on; a store a newer mnemo wrote is
//! refused with a clear error. Needs `$MNEMO_TEST_POSTGRES_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::chain;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::SessionStore;
use mnemo_guardian::Verdict;
use mnemo_guardian::store::{CompactionRecord, SessionHandshake, StepRecord};
use mnemo_guardian_store::PostgresStore;

fn url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the PostgreSQL migration test needs a database (.ci/setup.d/30-postgres.sh)",
    )
}

/// The Guardian's tables as the release at schema version 2 made them.
const VERSION_2: &str = "
CREATE TABLE mnemo_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
INSERT INTO mnemo_schema VALUES ('guardian', 2);
CREATE TABLE guardian_sessions (session_id TEXT PRIMARY KEY, version TEXT, methods TEXT);
CREATE TABLE guardian_seen_requests (
  session_id TEXT NOT NULL, request_id TEXT NOT NULL, at_ms BIGINT NOT NULL,
  PRIMARY KEY (session_id, request_id));
CREATE INDEX guardian_seen_requests_at ON guardian_seen_requests (at_ms);
CREATE TABLE guardian_seen_nonces (
  session_id TEXT NOT NULL, nonce TEXT NOT NULL, at_ms BIGINT NOT NULL,
  PRIMARY KEY (session_id, nonce));
CREATE INDEX guardian_seen_nonces_at ON guardian_seen_nonces (at_ms);
CREATE TABLE guardian_steps (
  session_id TEXT NOT NULL, seq BIGINT NOT NULL, step_id TEXT NOT NULL,
  method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE guardian_chain (
  session_id TEXT NOT NULL, seq BIGINT NOT NULL, canonical TEXT NOT NULL,
  hash BYTEA NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE guardian_compactions (
  id BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL, step_id TEXT NOT NULL,
  entries TEXT NOT NULL, verdict TEXT NOT NULL, reasoning TEXT, reason_codes TEXT);
CREATE INDEX guardian_compactions_session ON guardian_compactions (session_id, id);
CREATE INDEX guardian_steps_by_step_id ON guardian_steps (session_id, step_id, seq);
CREATE TABLE guardian_step_origins (
  session_id TEXT NOT NULL, origin TEXT NOT NULL, seq BIGINT NOT NULL,
  PRIMARY KEY (session_id, origin, seq));
CREATE TABLE guardian_step_nodes (
  session_id TEXT NOT NULL, provenance_id TEXT NOT NULL, seq BIGINT NOT NULL,
  node TEXT NOT NULL, PRIMARY KEY (session_id, provenance_id, seq));
CREATE TABLE guardian_turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls BIGINT NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget));
";

fn node(id: &str, origin: Origin, derived: &[&str]) -> Provenance {
    let mut p = Provenance::new(id, origin, Some("src"));
    p.derived_from = derived.iter().map(|d| d.to_string()).collect();
    p
}

/// Three steps; `pa` is carried twice by step 2 (its last node there is
/// the one an index look-up answers) and again by step 3.
fn old_steps() -> Vec<StepRecord> {
    vec![
        StepRecord {
            seq: 1,
            step_id: "r1".into(),
            method: "steps/userMessage".into(),
            provenance: vec![node("pa", Origin::UserInput, &[])],
        },
        StepRecord {
            seq: 2,
            step_id: "r2".into(),
            method: "steps/toolCallRequest".into(),
            provenance: vec![
                node("pa", Origin::UserInput, &[]),
                node("pb", Origin::ToolOutput, &["pa"]),
                node("pa", Origin::ToolOutput, &["pb"]),
            ],
        },
        StepRecord {
            seq: 3,
            step_id: "r3".into(),
            method: "steps/toolCallResult".into(),
            provenance: vec![node("pc", Origin::Retrieved, &["pa"])],
        },
    ]
}

/// `s` with one quote doubled (SQL string literal).
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The rows of a version-2 store: session `s` with a handshake and
/// everything else; session `t` with one step and no session row (the
/// oldest stores never wrote one for it).
fn old_rows(chain: &[(String, chain::Hash)]) -> String {
    let mut sql = String::from(
        "INSERT INTO guardian_sessions VALUES ('s', '0.1.0', 'steps/userMessage\nsteps/preCompact');\n",
    );
    for st in old_steps() {
        let prov = serde_json::to_string(&st.provenance).unwrap();
        sql += &format!(
            "INSERT INTO guardian_steps VALUES ('s', {}, {}, {}, {});\n",
            st.seq,
            lit(&st.step_id),
            lit(&st.method),
            lit(&prov)
        );
        let mut origins: Vec<&str> = st.provenance.iter().map(|p| p.origin.as_str()).collect();
        origins.sort_unstable();
        origins.dedup();
        for o in origins {
            sql += &format!(
                "INSERT INTO guardian_step_origins VALUES ('s', {}, {});\n",
                lit(o),
                st.seq
            );
        }
        let mut last: Vec<&Provenance> = Vec::new();
        for p in st.provenance.iter().rev() {
            if !last.iter().any(|q| q.provenance_id == p.provenance_id) {
                last.push(p);
            }
        }
        for p in last {
            sql += &format!(
                "INSERT INTO guardian_step_nodes VALUES ('s', {}, {}, {});\n",
                lit(&p.provenance_id),
                st.seq,
                lit(&serde_json::to_string(p).unwrap())
            );
        }
    }
    for (i, (canonical, hash)) in chain.iter().enumerate() {
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        sql += &format!(
            "INSERT INTO guardian_chain VALUES ('s', {}, {}, '\\x{hex}');\n",
            i + 1,
            lit(canonical)
        );
    }
    sql += "INSERT INTO guardian_seen_requests VALUES ('s', 'r1', 1000), ('s', 'r2', 1001), ('s', 'r3', 1002);
INSERT INTO guardian_seen_nonces VALUES ('s', 'n1', 1000);
INSERT INTO guardian_compactions (session_id, step_id, entries, verdict, reasoning, reason_codes)
  VALUES ('s', 'r3', '[\"pa\",\"pc\"]', 'deny', 'retrieved content since the last user input', '[\"untrusted_since_regrounding\"]');
INSERT INTO guardian_turn_calls VALUES ('s', 'turn-1', 'Bash*', 2);
INSERT INTO guardian_steps VALUES ('t', 1, 'q1', 'steps/userMessage', '[]');
";
    sql
}

#[test]
fn a_version_2_store_migrates_with_nothing_lost_and_a_newer_one_is_refused() {
    let Some(url) = url() else { return };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let schema = format!(
        "mnemo_mig4_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000
    );
    let admin = mnemo_postgres::Pg::connect(&url).unwrap();
    let create = format!("CREATE SCHEMA {schema}");
    admin
        .call(move |c| c.batch_execute(&create))
        .unwrap()
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let mut chain = Vec::new();
    let mut prev: Option<chain::Hash> = None;
    for i in 1..=3 {
        let canonical = format!("{{\"entry\":{i}}}");
        let h = chain::entry_hash_canonical(&canonical, prev.as_ref());
        chain.push((canonical, h));
        prev = Some(h);
    }
    let old = format!("{VERSION_2}{}", old_rows(&chain));
    mnemo_postgres::Pg::connect(&scoped)
        .unwrap()
        .call(move |c| c.batch_execute(&old))
        .unwrap()
        .unwrap();

    let mut s = PostgresStore::open(&scoped).unwrap();
    let version = mnemo_postgres::Pg::connect(&scoped)
        .unwrap()
        .call(|c| {
            c.query_one(
                "SELECT version FROM mnemo_schema WHERE component = 'guardian'",
                &[],
            )
            .map(|r| r.get::<_, i32>(0))
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        version as usize,
        mnemo_guardian_store::postgres::MIGRATIONS.len()
    );
    // Everything read back as written.
    assert_eq!(s.steps("s").unwrap(), old_steps());
    assert_eq!(s.chain_entries("s").unwrap(), chain);
    assert_eq!(s.chain_head("s").unwrap(), Some((3, chain[2].1)));
    assert_eq!(
        s.handshake("s").unwrap(),
        Some(SessionHandshake {
            version: "0.1.0".into(),
            methods: Some(vec!["steps/userMessage".into(), "steps/preCompact".into()]),
        })
    );
    let mut latest = s.latest_nodes("s", &["pa", "pb", "pc", "none"]).unwrap();
    latest.sort_by(|a, b| a.1.provenance_id.cmp(&b.1.provenance_id));
    assert_eq!(
        latest,
        vec![
            (2, node("pa", Origin::ToolOutput, &["pb"])),
            (2, node("pb", Origin::ToolOutput, &["pa"])),
            (3, node("pc", Origin::Retrieved, &["pa"])),
        ],
        "the last node of each id, read from its step"
    );
    let web = s
        .steps_with_origin("s", &[Origin::Retrieved, Origin::ToolOutput], 0, None, 10)
        .unwrap();
    assert_eq!(web.iter().map(|st| st.seq).collect::<Vec<_>>(), vec![3, 2]);
    assert!(s.has_step("s", "r2", "steps/toolCallRequest").unwrap());
    assert!(!s.has_step("s", "r2", "steps/userMessage").unwrap());
    assert_eq!(
        s.last_compaction("s").unwrap(),
        Some(CompactionRecord {
            step_id: "r3".into(),
            entries: vec!["pa".into(), "pc".into()],
            verdict: Verdict::Deny,
            reasoning: Some("retrieved content since the last user input".into()),
            reason_codes: vec!["untrusted_since_regrounding".into()],
        })
    );
    assert_eq!(s.count_turn_call("s", "turn-1", "Bash*").unwrap(), Some(3));
    assert_eq!(s.steps("t").unwrap().len(), 1, "a session without its row");
    // Replay marks and nonces still refuse; new ones are fresh.
    assert!(!s.mark_request("s", "r2", 2000).unwrap());
    assert!(s.mark_request("s", "r4", 2000).unwrap());
    assert!(!s.mark_nonce("s", "n1", 2000).unwrap());
    assert!(s.mark_request("t", "r2", 2000).unwrap(), "per session");
    // The session goes on, in a batch, on the same chain.
    s.begin().unwrap();
    s.lock_sessions(&["s"]).unwrap();
    let (n, head) = s.chain_head("s").unwrap().unwrap();
    let canonical = "{\"entry\":4}".to_string();
    let h = chain::entry_hash_canonical(&canonical, Some(&head));
    s.record_step(
        "s",
        &StepRecord {
            seq: n + 1,
            step_id: "r5".into(),
            method: "steps/userMessage".into(),
            provenance: vec![node("pd", Origin::UserInput, &[])],
        },
    )
    .unwrap();
    s.append_chain("s", n + 1, &canonical, &h).unwrap();
    s.commit().unwrap();
    let entries = s.chain_entries("s").unwrap();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[3], (canonical, h));
    assert_eq!(s.latest_nodes("s", &["pd"]).unwrap()[0].0, 4);
    drop(s);

    // A store a newer mnemo wrote is refused, and left as it is.
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
