//! A SQLite store written by schema version 1 (the DDL of that version is
//! written out here, as its builds left it) is migrated on open to the
//! current version in one go, and nothing is lost: handshakes, replay
//! marks (request ids and nonces), steps, the hash chain (which still
//! verifies), preCompact decisions and per-turn budget counters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::chain::{Hash, entry_hash_canonical};
use mnemo_acs::model::{Origin, Provenance, Verdict};
use mnemo_guardian::SessionStore;
use mnemo_guardian::store::{CompactionRecord, SessionHandshake, StepRecord};
use mnemo_guardian_store::SqliteStore;
use rusqlite::{Connection, params};

/// Version 1's tables, as `CREATE TABLE IF NOT EXISTS` plus the columns
/// added to them over time left a store (`PRAGMA user_version = 1`).
const V1_DDL: &str = "
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version TEXT NOT NULL, methods TEXT) WITHOUT ROWID;
CREATE TABLE seen_requests (
  session_id TEXT NOT NULL, request_id TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, request_id)) WITHOUT ROWID;
CREATE INDEX seen_requests_at ON seen_requests (at_ms);
CREATE TABLE seen_nonces (
  session_id TEXT NOT NULL, nonce TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, nonce)) WITHOUT ROWID;
CREATE INDEX seen_nonces_at ON seen_nonces (at_ms);
CREATE TABLE steps (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, step_id TEXT NOT NULL,
  method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE chain (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, canonical TEXT NOT NULL,
  hash BLOB NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE compactions (
  session_id TEXT NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT, step_id TEXT NOT NULL,
  entries TEXT NOT NULL, verdict TEXT NOT NULL, reasoning TEXT, reason_codes TEXT);
CREATE INDEX compactions_session ON compactions (session_id, id);
CREATE TABLE turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls INTEGER NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget)) WITHOUT ROWID;
CREATE INDEX steps_by_step_id ON steps (session_id, step_id, seq);
CREATE TABLE step_origins (
  session_id TEXT NOT NULL, origin TEXT NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (session_id, origin, seq)) WITHOUT ROWID;
CREATE TABLE step_nodes (
  session_id TEXT NOT NULL, provenance_id TEXT NOT NULL, seq INTEGER NOT NULL,
  node TEXT NOT NULL, PRIMARY KEY (session_id, provenance_id, seq)) WITHOUT ROWID;
PRAGMA user_version = 1;
";

const A: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const B: &str = "legacy-session";
/// A session that only ever marked a request (no step, no handshake).
const C: &str = "marks-only";

fn step(seq: u64) -> StepRecord {
    let origin = Origin::ALL[(seq % 7) as usize];
    let mut p = Provenance::new(format!("p{}", seq % 5), origin, Some("Bash"));
    if seq > 2 {
        p.derived_from.push(format!("p{}", (seq - 2) % 5));
    }
    let q = Provenance::new(format!("q{seq}"), Origin::UserInput, None);
    StepRecord {
        seq,
        step_id: format!("r{seq}"),
        method: if seq.is_multiple_of(3) {
            "steps/toolCallRequest".into()
        } else {
            "steps/userMessage".into()
        },
        provenance: vec![p, q],
    }
}

/// Version 1 as its code filled it: the steps with their index rows, a
/// chain whose hashes link, marks, decisions, counters.
fn fill_v1(c: &Connection) -> Vec<(String, Hash)> {
    c.execute_batch(V1_DDL).unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (?1, '0.1.0', ?2)",
        params![A, "steps/userMessage\nsteps/preCompact"],
    )
    .unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (?1, '0.1.0', NULL)",
        params![B],
    )
    .unwrap();
    let mut chain = Vec::new();
    let mut prev: Option<Hash> = None;
    for seq in 1..=40u64 {
        let st = step(seq);
        let prov = serde_json::to_string(&st.provenance).unwrap();
        c.execute(
            "INSERT INTO steps VALUES (?1, ?2, ?3, ?4, ?5)",
            params![A, seq as i64, st.step_id, st.method, prov],
        )
        .unwrap();
        for p in &st.provenance {
            c.execute(
                "INSERT OR IGNORE INTO step_origins VALUES (?1, ?2, ?3)",
                params![A, p.origin.as_str(), seq as i64],
            )
            .unwrap();
            c.execute(
                "INSERT OR REPLACE INTO step_nodes VALUES (?1, ?2, ?3, ?4)",
                params![
                    A,
                    p.provenance_id,
                    seq as i64,
                    serde_json::to_string(p).unwrap()
                ],
            )
            .unwrap();
        }
        let canonical = format!("{{\"entry_id\":\"{seq}\",\"step_id\":\"r{seq}\"}}");
        let hash = entry_hash_canonical(&canonical, prev.as_ref());
        c.execute(
            "INSERT INTO chain VALUES (?1, ?2, ?3, ?4)",
            params![A, seq as i64, canonical, &hash[..]],
        )
        .unwrap();
        chain.push((canonical, hash));
        prev = Some(hash);
        c.execute(
            "INSERT INTO seen_requests VALUES (?1, ?2, ?3)",
            params![A, st.step_id, 1000 + seq as i64],
        )
        .unwrap();
    }
    c.execute("INSERT INTO seen_requests VALUES (?1, 'r1', 5)", params![C])
        .unwrap();
    c.execute("INSERT INTO seen_nonces VALUES (?1, 'n-1', 7)", params![A])
        .unwrap();
    c.execute("INSERT INTO seen_nonces VALUES (?1, 'n-1', 9)", params![B])
        .unwrap();
    for (step_id, verdict, reasoning) in [
        ("r10", "deny", Some("denied: re-ground to end it")),
        ("r20", "allow", None),
    ] {
        c.execute(
            "INSERT INTO compactions (session_id, step_id, entries, verdict, reasoning, reason_codes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![A, step_id, "[\"r1\",\"r2\"]", verdict, reasoning, reasoning.map(|_| "[\"untrusted_content\"]")],
        )
        .unwrap();
    }
    c.execute(
        "INSERT INTO compactions (session_id, step_id, entries, verdict) VALUES (?1, 'x', '[]', 'modify')",
        params![B],
    )
    .unwrap();
    c.execute(
        "INSERT INTO turn_calls VALUES (?1, 't1', 'Bash', 3)",
        params![A],
    )
    .unwrap();
    chain
}

#[test]
fn a_version_1_store_is_migrated_on_open_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite3");
    let chain = fill_v1(&Connection::open(&path).unwrap());
    let mut s = SqliteStore::open(&path).unwrap();

    // Handshakes: one with its methods, one from before they were kept.
    assert_eq!(
        s.handshake(A).unwrap(),
        Some(SessionHandshake {
            version: "0.1.0".into(),
            methods: Some(vec!["steps/userMessage".into(), "steps/preCompact".into()]),
        })
    );
    assert_eq!(s.handshake(B).unwrap().map(|h| h.methods), Some(None));
    assert_eq!(
        s.handshake(C).unwrap(),
        None,
        "marks alone are no handshake"
    );

    // Steps, in order, as recorded.
    let want: Vec<StepRecord> = (1..=40).map(step).collect();
    assert_eq!(s.steps(A).unwrap(), want);
    assert!(s.steps(B).unwrap().is_empty());

    // The chain: the same entries, each hash linking to the one before.
    let got = s.chain_entries(A).unwrap();
    assert_eq!(got, chain);
    let mut prev: Option<Hash> = None;
    for (canonical, hash) in &got {
        assert_eq!(*hash, entry_hash_canonical(canonical, prev.as_ref()));
        prev = Some(*hash);
    }
    assert_eq!(s.chain_head(A).unwrap(), Some((40, chain[39].1)));

    // Replay marks survive, per session; the window still prunes them.
    assert!(!s.mark_request(A, "r7", 2000).unwrap());
    assert!(!s.mark_request(C, "r1", 2000).unwrap());
    assert!(s.mark_request(B, "r7", 2000).unwrap());
    assert!(!s.mark_nonce(A, "n-1", 2000).unwrap());
    assert!(!s.mark_nonce(B, "n-1", 2000).unwrap());
    assert!(s.mark_nonce(C, "n-1", 2000).unwrap());
    s.prune_requests(1010).unwrap();
    assert!(s.mark_request(A, "r7", 2001).unwrap(), "pruned");
    assert!(
        !s.mark_request(A, "r30", 2001).unwrap(),
        "inside the window"
    );

    // Decisions and counters.
    assert_eq!(
        s.last_compaction(A).unwrap(),
        Some(CompactionRecord {
            step_id: "r20".into(),
            entries: vec!["r1".into(), "r2".into()],
            verdict: Verdict::Allow,
            reasoning: None,
            reason_codes: vec![],
        })
    );
    assert_eq!(
        s.last_compaction(B).unwrap().map(|c| c.verdict),
        Some(Verdict::Modify)
    );
    assert_eq!(s.count_turn_call(A, "t1", "Bash").unwrap(), Some(4));

    // The preCompact indexes are rebuilt from the steps.
    let by_id = s.steps_by_id(A, &["r3", "r40", "nope"]).unwrap();
    let mut seqs: Vec<u64> = by_id.iter().map(|st| st.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [3, 40]);
    assert!(s.has_step(A, "r3", "steps/toolCallRequest").unwrap());
    assert!(!s.has_step(A, "r4", "steps/toolCallRequest").unwrap());
    let tools: Vec<u64> = s
        .steps_with_origin(A, &[Origin::ToolOutput], 0, None, 100)
        .unwrap()
        .iter()
        .map(|st| st.seq)
        .collect();
    let want_tools: Vec<u64> = (1..=40)
        .rev()
        .filter(|q| Origin::ALL[(q % 7) as usize] == Origin::ToolOutput)
        .collect();
    assert_eq!(tools, want_tools);
    let nodes = s.latest_nodes(A, &["p0", "q17"]).unwrap();
    let mut nodes: Vec<(u64, String)> = nodes
        .into_iter()
        .map(|(seq, p)| (seq, p.provenance_id))
        .collect();
    nodes.sort();
    assert_eq!(nodes, [(17, "q17".to_string()), (40, "p0".to_string())]);

    // New steps go on where the old ones ended; the store reads back the same.
    let next = 41;
    let canonical = "{\"entry_id\":\"41\"}";
    let hash = entry_hash_canonical(canonical, Some(&chain[39].1));
    s.append_chain(A, next, canonical, &hash).unwrap();
    s.record_step(A, &step(next)).unwrap();
    assert!(s.record_step(A, &step(40)).is_err(), "step 40 exists");
    assert_eq!(s.steps(A).unwrap().len(), 41);
    drop(s);

    // Version 2 now, no table of version 1 left; a second open changes nothing.
    let c = Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, mnemo_guardian_store::sqlite::SCHEMA_VERSION);
    let old: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('seen_requests', 'seen_nonces', 'steps_by_step_id') OR name LIKE 'v1_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old, 0);
    drop(c);
    let records = mnemo_guardian_store::read::read_sessions(&path).unwrap();
    let a = records.iter().find(|r| r.session_id == A).unwrap();
    assert_eq!(a.steps.len(), 41);
    assert_eq!(a.compactions.len(), 2);
    assert_eq!(
        a.compactions[0].reasoning.as_deref(),
        Some("denied: re-ground to end it")
    );
    // `mnemo hook decision` reads the old layout too, newest first.
    let recent = mnemo_guardian_store::read::recent_compactions(&path, Some(A), 5).unwrap();
    assert_eq!(
        recent
            .iter()
            .map(|(_, c)| c.step_id.clone())
            .collect::<Vec<_>>(),
        a.compactions
            .iter()
            .rev()
            .map(|c| c.step_id.clone())
            .collect::<Vec<_>>()
    );
    assert!(recent.iter().all(|(id, _)| id == A));
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.steps(A).unwrap().len(), 41);
    assert_eq!(s.chain_head(A).unwrap(), Some((41, hash)));
}

/// The migration is one transaction: a store it cannot migrate (a step
/// number beyond what version 2 keys) is refused and left at version 1.
#[test]
fn a_store_that_cannot_be_migrated_is_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite3");
    {
        let c = Connection::open(&path).unwrap();
        fill_v1(&c);
        c.execute(
            "INSERT INTO steps VALUES (?1, ?2, 'big', 'steps/userMessage', '[]')",
            params![A, 1i64 << 33],
        )
        .unwrap();
    }
    let before: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
        .unwrap();
    let e = SqliteStore::open(&path).err().map(|e| e.to_string());
    assert!(e.as_deref().is_some_and(|m| m.contains("2^32")), "{e:?}");
    let c = Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1);
    let after: i64 = c
        .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
        .unwrap();
    assert_eq!(after, before);
}

/// Version 2's tables, as its builds created them (`PRAGMA user_version = 2`).
const V2_DDL: &str = "
CREATE TABLE sessions (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE, version TEXT, methods TEXT);
CREATE TABLE seen (
  sid INTEGER NOT NULL, kind INTEGER NOT NULL, value TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (sid, kind, value)) WITHOUT ROWID;
CREATE INDEX seen_by_time ON seen (at_ms);
CREATE TABLE steps (id INTEGER PRIMARY KEY, step_id TEXT NOT NULL, method TEXT NOT NULL, provenance TEXT NOT NULL);
CREATE TABLE chain (id INTEGER PRIMARY KEY, canonical TEXT NOT NULL, hash BLOB NOT NULL);
CREATE TABLE step_ids (
  sid INTEGER NOT NULL, step_id TEXT NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (sid, step_id, seq)) WITHOUT ROWID;
CREATE TABLE step_origins (
  sid INTEGER NOT NULL, origin INTEGER NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (sid, origin, seq)) WITHOUT ROWID;
CREATE TABLE step_nodes (
  sid INTEGER NOT NULL, provenance_id TEXT NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (sid, provenance_id, seq)) WITHOUT ROWID;
CREATE TABLE compactions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, sid INTEGER NOT NULL, step_id TEXT NOT NULL,
  entries TEXT NOT NULL, verdict TEXT NOT NULL, reasoning TEXT, reason_codes TEXT);
CREATE INDEX compactions_by_session ON compactions (sid, id);
CREATE TABLE turn_calls (
  sid INTEGER NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls INTEGER NOT NULL,
  PRIMARY KEY (sid, turn_id, budget)) WITHOUT ROWID;
PRAGMA user_version = 2;
";

/// Version 2 as its code filled it: session A (sid 1) with 30 steps,
/// chained, each step's request id marked and indexed; a chain entry 31
/// whose step was never written; marks of session C (sid 3) alone.
fn fill_v2(c: &Connection) -> Vec<(String, Hash)> {
    c.execute_batch(V2_DDL).unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (1, ?1, '0.1.0', 'steps/userMessage')",
        params![A],
    )
    .unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (2, ?1, '0.1.0', NULL)",
        params![B],
    )
    .unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (3, ?1, NULL, NULL)",
        params![C],
    )
    .unwrap();
    let mut chain = Vec::new();
    let mut prev: Option<Hash> = None;
    for seq in 1..=31u64 {
        let id = (1i64 << 32) + seq as i64;
        let canonical =
            format!("{{\"entry_id\":\"{seq}\",\"step_id\":\"r{seq}\",\"timestamp\":\"t{seq}\"}}");
        let hash = entry_hash_canonical(&canonical, prev.as_ref());
        c.execute(
            "INSERT INTO chain VALUES (?1, ?2, ?3)",
            params![id, canonical, &hash[..]],
        )
        .unwrap();
        chain.push((canonical, hash));
        prev = Some(hash);
        if seq == 31 {
            break;
        }
        let st = step(seq);
        let prov = serde_json::to_string(&st.provenance).unwrap();
        c.execute(
            "INSERT INTO steps VALUES (?1, ?2, ?3, ?4)",
            params![id, st.step_id, st.method, prov],
        )
        .unwrap();
        c.execute(
            "INSERT INTO step_ids VALUES (1, ?1, ?2)",
            params![st.step_id, seq as i64],
        )
        .unwrap();
        for (i, p) in st.provenance.iter().enumerate() {
            if st.provenance[..i].iter().any(|q| q.origin == p.origin) {
                continue;
            }
            let code: i64 = match p.origin {
                Origin::UserInput => 0,
                Origin::System => 1,
                Origin::ToolOutput => 2,
                Origin::Retrieved => 3,
                Origin::AgentGenerated => 4,
                Origin::A2aInbound => 5,
                Origin::External => 6,
            };
            c.execute(
                "INSERT OR IGNORE INTO step_origins VALUES (1, ?1, ?2)",
                params![code, seq as i64],
            )
            .unwrap();
        }
        for p in &st.provenance {
            c.execute(
                "INSERT OR IGNORE INTO step_nodes VALUES (1, ?1, ?2)",
                params![p.provenance_id, seq as i64],
            )
            .unwrap();
        }
        c.execute(
            "INSERT INTO seen VALUES (1, 0, ?1, ?2)",
            params![st.step_id, 1000 + seq as i64],
        )
        .unwrap();
    }
    c.execute("INSERT INTO seen VALUES (3, 0, 'r1', 5)", [])
        .unwrap();
    c.execute("INSERT INTO seen VALUES (1, 1, 'n-1', 7)", [])
        .unwrap();
    c.execute(
        "INSERT INTO compactions (sid, step_id, entries, verdict) VALUES (1, 'r10', '[\"r1\"]', 'allow')",
        [],
    )
    .unwrap();
    c.execute("INSERT INTO turn_calls VALUES (1, 't1', 'Bash', 2)", [])
        .unwrap();
    chain
}

/// A version 2 store (steps and chain entries in two tables, replay marks
/// and step ids in two more) is migrated on open to version 3 and loses
/// nothing: steps with their chain entries (and an entry whose step was
/// never written), marks that still refuse replays and still prune, step
/// ids that still find their steps, decisions and counters.
#[test]
fn a_version_2_store_is_migrated_on_open_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.sqlite3");
    let chain = fill_v2(&Connection::open(&path).unwrap());
    let mut s = SqliteStore::open(&path).unwrap();

    let want: Vec<StepRecord> = (1..=30).map(step).collect();
    assert_eq!(s.steps(A).unwrap(), want);
    assert_eq!(s.chain_entries(A).unwrap(), chain);
    assert_eq!(s.chain_head(A).unwrap(), Some((31, chain[30].1)));

    assert!(!s.mark_request(A, "r7", 2000).unwrap());
    assert!(!s.mark_request(C, "r1", 2000).unwrap());
    assert!(s.mark_request(B, "r7", 2000).unwrap());
    assert!(!s.mark_nonce(A, "n-1", 2000).unwrap());
    assert!(s.mark_nonce(B, "n-1", 2000).unwrap());
    s.prune_requests(1010).unwrap();
    assert!(s.mark_request(A, "r7", 2001).unwrap(), "pruned");
    assert!(
        !s.mark_request(A, "r20", 2001).unwrap(),
        "inside the window"
    );

    // Pruning the marks left every step id.
    let by_id = s.steps_by_id(A, &["r3", "r7", "r30", "r31"]).unwrap();
    let mut seqs: Vec<u64> = by_id.iter().map(|st| st.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [3, 7, 30]);
    assert!(s.has_step(A, "r3", "steps/toolCallRequest").unwrap());
    assert!(!s.has_step(A, "r4", "steps/toolCallRequest").unwrap());
    let nodes = s.latest_nodes(A, &["q17"]).unwrap();
    assert_eq!(nodes.first().map(|(seq, _)| *seq), Some(17));
    assert_eq!(
        s.last_compaction(A).unwrap().map(|c| c.step_id),
        Some("r10".to_string())
    );
    assert_eq!(s.count_turn_call(A, "t1", "Bash").unwrap(), Some(3));

    // Step 31's entry is there without its step: the step can still come.
    assert!(
        s.append_chain(A, 31, "{}", &[0; 32]).is_err(),
        "entry 31 exists"
    );
    s.record_step(A, &step(31)).unwrap();
    assert!(s.record_step(A, &step(31)).is_err(), "step 31 exists");
    let canonical = "{\"entry_id\":\"32\",\"timestamp\":\"t32\"}";
    let hash = entry_hash_canonical(canonical, Some(&chain[30].1));
    s.append_chain(A, 32, canonical, &hash).unwrap();
    s.record_step(A, &step(32)).unwrap();
    assert_eq!(s.steps(A).unwrap().len(), 32);
    assert_eq!(s.chain_head(A).unwrap(), Some((32, hash)));
    drop(s);

    let c = Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 3);
    let old: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('seen', 'chain', 'step_ids', 'seen_by_time') OR name LIKE 'v2_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old, 0);
    drop(c);
    let records = mnemo_guardian_store::read::read_sessions(&path).unwrap();
    let a = records.iter().find(|r| r.session_id == A).unwrap();
    assert_eq!(a.steps.len(), 32);
    let times: Vec<String> = a.steps.iter().filter_map(|(_, t)| t.clone()).collect();
    let want: Vec<String> = (1..=32).map(|n| format!("t{n}")).collect();
    assert_eq!(times, want, "every step read with its chain entry");
}
