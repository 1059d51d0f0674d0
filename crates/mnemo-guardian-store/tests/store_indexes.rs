//! The preCompact look-ups (`steps_by_id`, `steps_with_origin`,
//! `latest_nodes`, `has_step`) answered from each store's indexes equal
//! the same answers computed from every step; a step number recorded
//! twice is refused and changes nothing; a database written before the
//! indexes existed gains them on open, filled from the steps it holds.
//! PostgreSQL cases need `$MNEMO_TEST_POSTGRES_URL`
//! (`.ci/setup.d/30-postgres.sh`; under CI=true its absence fails).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::{StepRecord, StoreError};
use mnemo_guardian::{MemoryStore, SessionStore};
use mnemo_guardian_store::{PostgresStore, SqliteStore};
use std::collections::{BTreeMap, BTreeSet};

fn pg_url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the PostgreSQL session store tests need a database (.ci/setup.d/30-postgres.sh)",
    )
}

fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{tag}_{}_{nanos}", std::process::id())
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` steps with repeated step ids, provenance ids reused across steps
/// and within a step, every origin, and lineage edges.
fn session_steps(seed: u64, n: u64) -> Vec<StepRecord> {
    let mut r = Rng(seed | 1);
    (1..=n)
        .map(|seq| {
            let k = r.below(4) as usize;
            let provenance = (0..k)
                .map(|_| {
                    let origin = Origin::ALL[r.below(7) as usize];
                    let mut p = Provenance::new(
                        format!("p{}", r.below(n / 2 + 2)),
                        origin,
                        Some(&format!("src-{seq}-{}", r.below(1000))),
                    );
                    for _ in 0..r.below(3) {
                        p.derived_from.push(format!("p{}", r.below(n / 2 + 2)));
                    }
                    p
                })
                .collect();
            StepRecord {
                seq,
                step_id: format!("r{}", r.below(n * 3 / 4 + 1)),
                method: if r.below(3) == 0 {
                    "steps/toolCallRequest".into()
                } else {
                    "steps/userMessage".into()
                },
                provenance,
            }
        })
        .collect()
}

// ---- the answers computed from every step (the trait's contract) ----

fn ref_by_id(steps: &[StepRecord], ids: &[&str]) -> BTreeMap<String, StepRecord> {
    let mut out = BTreeMap::new();
    for st in steps {
        if ids.contains(&st.step_id.as_str()) {
            out.insert(st.step_id.clone(), st.clone());
        }
    }
    out
}

fn ref_with_origin(
    steps: &[StepRecord],
    origins: &[Origin],
    after: u64,
    before: Option<u64>,
    limit: usize,
) -> Vec<StepRecord> {
    let mut out: Vec<StepRecord> = steps
        .iter()
        .filter(|st| {
            st.seq > after
                && before.is_none_or(|b| st.seq < b)
                && st.provenance.iter().any(|p| origins.contains(&p.origin))
        })
        .cloned()
        .collect();
    out.reverse();
    out.truncate(limit);
    out
}

fn ref_nodes(steps: &[StepRecord], ids: &[&str]) -> BTreeMap<String, (u64, Provenance)> {
    let mut out = BTreeMap::new();
    for st in steps {
        for p in &st.provenance {
            if ids.contains(&p.provenance_id.as_str()) {
                out.insert(p.provenance_id.clone(), (st.seq, p.clone()));
            }
        }
    }
    out
}

/// Asks `s` many look-ups over `session` and compares each with the
/// answer computed from `steps`.
fn lookups_agree(s: &mut dyn SessionStore, session: &str, steps: &[StepRecord], seed: u64) {
    let n = steps.len() as u64;
    let mut r = Rng(seed.wrapping_mul(31) | 1);
    for round in 0..60 {
        let ids: Vec<String> = (0..r.below(6) + 1)
            .map(|_| format!("r{}", r.below(n + 3)))
            .collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let got: BTreeMap<String, StepRecord> = s
            .steps_by_id(session, &ids)
            .unwrap()
            .into_iter()
            .map(|st| (st.step_id.clone(), st))
            .collect();
        assert_eq!(got, ref_by_id(steps, &ids), "steps_by_id {ids:?}");

        let origins: Vec<Origin> = (0..r.below(3) + 1)
            .map(|_| Origin::ALL[r.below(7) as usize])
            .collect();
        let after = r.below(n + 1);
        let before = (round % 3 != 0).then(|| after + r.below(n + 2));
        let limit = r.below(20) as usize;
        assert_eq!(
            s.steps_with_origin(session, &origins, after, before, limit)
                .unwrap(),
            ref_with_origin(steps, &origins, after, before, limit),
            "steps_with_origin {origins:?} ({after}, {before:?}) limit {limit}"
        );

        let pids: Vec<String> = (0..r.below(8) + 1)
            .map(|_| format!("p{}", r.below(n / 2 + 4)))
            .collect();
        let pids: Vec<&str> = pids.iter().map(String::as_str).collect();
        let got: BTreeMap<String, (u64, Provenance)> = s
            .latest_nodes(session, &pids)
            .unwrap()
            .into_iter()
            .map(|(seq, p)| (p.provenance_id.clone(), (seq, p)))
            .collect();
        assert_eq!(got, ref_nodes(steps, &pids), "latest_nodes {pids:?}");

        let id = format!("r{}", r.below(n + 3));
        // Step ids are unique within a session (the trait's contract):
        // has_step is only asked of ids recorded at most once.
        let times = steps.iter().filter(|st| st.step_id == id).count();
        for method in if times > 1 {
            [].as_slice()
        } else {
            ["steps/toolCallRequest", "steps/userMessage"].as_slice()
        } {
            assert_eq!(
                s.has_step(session, &id, method).unwrap(),
                steps
                    .iter()
                    .any(|st| st.step_id == id && st.method == *method),
                "has_step {id} {method}"
            );
        }
    }
    // Another session sees none of it.
    let other = format!("{session}-other");
    assert!(s.steps_by_id(&other, &["r1"]).unwrap().is_empty());
    assert!(
        s.steps_with_origin(&other, &Origin::ALL, 0, None, 10)
            .unwrap()
            .is_empty()
    );
    assert!(s.latest_nodes(&other, &["p1"]).unwrap().is_empty());
}

/// Records the steps (half inside one unit of work), then checks the
/// look-ups and that re-recording a step is refused without effect.
fn indexes_and_refusal(s: &mut dyn SessionStore, session: &str, seed: u64) {
    let steps = session_steps(seed, 300);
    let (first, rest) = steps.split_at(150);
    for st in first {
        s.record_step(session, st).unwrap();
    }
    s.begin().unwrap();
    for st in rest {
        s.record_step(session, st).unwrap();
    }
    s.commit().unwrap();
    lookups_agree(s, session, &steps, seed);

    // The same number again, with other content: refused, nothing changes.
    let mut again = steps[41].clone();
    again.step_id = "intruder".into();
    again.provenance = vec![Provenance::new("p-intruder", Origin::UserInput, None)];
    let e = s.record_step(session, &again).err();
    assert!(
        matches!(&e, Some(StoreError::StepExists { seq: 42, .. })),
        "{e:?}"
    );
    assert!(
        e.map(|e| e.to_string())
            .unwrap_or_default()
            .contains("never replaced")
    );
    // Inside a unit of work too, and the unit of work still commits what
    // it did besides.
    s.begin().unwrap();
    assert!(matches!(
        s.record_step(session, &again),
        Err(StoreError::StepExists { .. })
    ));
    let extra = StepRecord {
        seq: 301,
        step_id: "r-extra".into(),
        method: "steps/userMessage".into(),
        provenance: vec![Provenance::new("p-extra", Origin::UserInput, None)],
    };
    s.record_step(session, &extra).unwrap();
    s.commit().unwrap();
    let mut expected = steps.clone();
    expected.push(extra);
    assert_eq!(s.steps(session).unwrap(), expected);
    assert!(s.steps_by_id(session, &["intruder"]).unwrap().is_empty());
    assert!(s.latest_nodes(session, &["p-intruder"]).unwrap().is_empty());
    lookups_agree(s, session, &expected, seed + 1);
}

#[test]
fn memory_store_indexes_agree_and_refuse_a_re_recorded_step() {
    indexes_and_refusal(&mut MemoryStore::new(), "mem", 7);
}

#[test]
fn sqlite_store_indexes_agree_and_refuse_a_re_recorded_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("g.sqlite3")).unwrap();
    indexes_and_refusal(&mut s, "lite", 11);
    // Through the scrubbing wrapper every opened store has.
    let mut w = mnemo_guardian_store::Scrubbed::new(s);
    let kept = w_steps(&mut w, "lite");
    lookups_agree(&mut w, "lite", &kept, 12);
}

fn w_steps(s: &mut dyn SessionStore, session: &str) -> Vec<StepRecord> {
    s.steps(session).unwrap()
}

#[test]
fn postgres_store_indexes_agree_and_refuse_a_re_recorded_step() {
    let Some(url) = pg_url() else { return };
    let mut s = PostgresStore::open(&url).unwrap();
    indexes_and_refusal(&mut s, &unique("pgidx"), 13);
}

/// A SQLite store as the builds before the indexes left it: no index
/// tables, `user_version` 0, steps recorded.
#[test]
fn an_old_sqlite_store_gains_the_indexes_filled_from_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let steps = session_steps(21, 200);
    {
        let c = rusqlite_conn(&path);
        c.execute_batch(
            "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version TEXT NOT NULL, methods TEXT) WITHOUT ROWID;
             CREATE TABLE steps (
               session_id TEXT NOT NULL, seq INTEGER NOT NULL, step_id TEXT NOT NULL,
               method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;",
        )
        .unwrap();
        for (sess, st) in steps
            .iter()
            .map(|s| ("old-a", s))
            .chain(steps.iter().take(50).map(|s| ("old-b", s)))
        {
            c.execute(
                "INSERT INTO steps VALUES (?1, ?2, ?3, ?4, ?5)",
                (
                    sess,
                    st.seq as i64,
                    &st.step_id,
                    &st.method,
                    serde_json::to_string(&st.provenance).unwrap(),
                ),
            )
            .unwrap();
        }
    }
    let mut s = SqliteStore::open(&path).unwrap();
    lookups_agree(&mut s, "old-a", &steps, 21);
    lookups_agree(&mut s, "old-b", &steps[..50], 22);
    // New steps are indexed as they arrive, after the migrated ones.
    let more = session_steps(23, 260);
    for st in &more[200..] {
        s.record_step("old-a", st).unwrap();
    }
    let mut all = steps.clone();
    all.extend_from_slice(&more[200..]);
    lookups_agree(&mut s, "old-a", &all, 23);
    drop(s);
    let c = rusqlite_conn(&path);
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, mnemo_guardian_store::sqlite::SCHEMA_VERSION);
    // Opening again migrates nothing and loses nothing.
    drop(c);
    let mut s = SqliteStore::open(&path).unwrap();
    lookups_agree(&mut s, "old-a", &all, 24);
    drop(s);
    // A store a newer mnemo wrote is refused, untouched.
    rusqlite_conn(&path)
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let e = SqliteStore::open(&path).err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|m| m.contains("newer mnemo") && m.contains("version 99")),
        "{e:?}"
    );
}

fn rusqlite_conn(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// A PostgreSQL database at the Guardian's schema version 1 (before the
/// indexes), in a schema of its own, gains them on open.
#[test]
fn an_old_postgres_store_gains_the_indexes_filled_from_its_steps() {
    let Some(url) = pg_url() else { return };
    let schema = unique("mnemo_mig");
    let admin = mnemo_postgres::Pg::connect(&url).unwrap();
    let create = format!("CREATE SCHEMA {schema}");
    admin
        .call(move |c| c.batch_execute(&create))
        .unwrap()
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let steps = session_steps(31, 200);
    {
        let pg = mnemo_postgres::Pg::connect(&scoped).unwrap();
        let v1: &'static [&'static str] = &mnemo_guardian_store::postgres::MIGRATIONS[..1];
        assert_eq!(
            pg.migrate(mnemo_guardian_store::postgres::COMPONENT, v1)
                .unwrap(),
            1
        );
        let rows: Vec<(i64, String, String, String)> = steps
            .iter()
            .map(|st| {
                (
                    st.seq as i64,
                    st.step_id.clone(),
                    st.method.clone(),
                    serde_json::to_string(&st.provenance).unwrap(),
                )
            })
            .collect();
        pg.call(move |c| {
            for (seq, id, m, p) in &rows {
                c.execute(
                    "INSERT INTO guardian_steps (session_id, seq, step_id, method, provenance) VALUES ('old', $1, $2, $3, $4)",
                    &[seq, id, m, p],
                )
                .unwrap();
            }
        })
        .unwrap();
    }
    let mut s = PostgresStore::open(&scoped).unwrap();
    lookups_agree(&mut s, "old", &steps, 31);
    let more = session_steps(33, 240);
    for st in &more[200..] {
        s.record_step("old", st).unwrap();
    }
    let mut all = steps.clone();
    all.extend_from_slice(&more[200..]);
    lookups_agree(&mut s, "old", &all, 33);
    drop(s);
    let drop_it = format!("DROP SCHEMA {schema} CASCADE");
    admin
        .call(move |c| c.batch_execute(&drop_it))
        .unwrap()
        .unwrap();
}

#[test]
fn reference_generator_covers_the_cases() {
    // The generated sessions repeat step ids and provenance ids (so "the
    // latest" is tested) and carry every origin.
    let steps = session_steps(7, 300);
    let ids: BTreeSet<&str> = steps.iter().map(|s| s.step_id.as_str()).collect();
    assert!(ids.len() < steps.len());
    let origins: BTreeSet<Origin> = steps
        .iter()
        .flat_map(|s| s.provenance.iter().map(|p| p.origin))
        .collect();
    assert_eq!(origins.len(), 7);
    assert!(steps.iter().any(|s| {
        let ids: BTreeSet<&str> = s
            .provenance
            .iter()
            .map(|p| p.provenance_id.as_str())
            .collect();
        ids.len() < s.provenance.len()
    }));
}
