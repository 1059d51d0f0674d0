//! The SQLite store's tables (schema version 3) and the migration of a
//! store written by an earlier version, in one transaction.
//!
//! Version 3 is shaped for the write path, where each commit appends the
//! pages it touched to the WAL (session 9: 11.7 pages for a lone
//! `steps/userMessage`, 1.7 a step at 32 a commit, in seven B-trees):
//! - a session's text id is kept once (`sessions`), every other table keys
//!   on its integer `sid`;
//! - a step and its chain entry share one rowid row keyed by
//!   `sid · 2³² + seq` ([`key`]): appended at the right edge, the rows fill
//!   their pages whole, and the interior pages hold only integers (version
//!   2 kept the chain entry in a table of its own: two right edges);
//! - a step's id and the replay marks (request ids, nonces) share one
//!   table, `ids`, keyed by `(sid, value, kind, seq)`: a request's mark
//!   and its step's id (the step id is the request id) are neighbours in
//!   one random-key B-tree, one leaf page a request where version 2
//!   touched a leaf in each of two (`seen`, `step_ids`);
//! - a provenance node's JSON is kept once, in its step's row: the node
//!   index (`step_nodes`) holds the id and the step number only;
//! - origins are small integers ([`origin_code`]).

use super::Db;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::StoreError;
use rusqlite::{Connection, params};

/// The schema version this build writes (`PRAGMA user_version`): 0 is a
/// store from before the preCompact indexes, 1 has them (text session
/// keys in every table), 2 has integer session keys ([`SCHEMA_V2`]), 3 is
/// [`SCHEMA`].
pub const SCHEMA_VERSION: i64 = 3;

/// The tables of version 3. In `steps`, a row written by `append_chain`
/// alone has no step (`step_id` NULL), one written by `record_step` alone
/// no chain entry (`hash` NULL); the Guardian writes both. In `ids`, a
/// replay mark has `seq` 0 and its time in `at_ms`; a step id has its
/// step number and no time (so pruning the marks never touches it).
pub(crate) const SCHEMA: &str = "
CREATE TABLE sessions (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE, version TEXT, methods TEXT);
CREATE TABLE steps (
  id INTEGER PRIMARY KEY, step_id TEXT, method TEXT, provenance TEXT, canonical TEXT, hash BLOB);
CREATE TABLE ids (
  sid INTEGER NOT NULL, value TEXT NOT NULL, kind INTEGER NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER,
  PRIMARY KEY (sid, value, kind, seq)) WITHOUT ROWID;
CREATE INDEX ids_by_time ON ids (at_ms) WHERE at_ms IS NOT NULL;
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
";

/// `ids.kind` of a request id (a replay mark).
pub(crate) const ID_REQUEST: i64 = 0;
/// `ids.kind` of a nonce (a replay mark).
pub(crate) const ID_NONCE: i64 = 1;
/// `ids.kind` of a step id.
pub(crate) const ID_STEP: i64 = 2;

/// The tables of version 2 (what versions 0 and 1 are copied into, on
/// their way to version 3).
const SCHEMA_V2: &str = "
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
";

/// Versions 0 and 1, every table they could hold (each came with
/// `CREATE TABLE IF NOT EXISTS`, so an old store may lack some, and
/// columns added later): completed first, then copied.
const V1: &str = "
CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, version TEXT NOT NULL) WITHOUT ROWID;
DROP TABLE IF EXISTS requests;
CREATE TABLE IF NOT EXISTS seen_requests (
  session_id TEXT NOT NULL, request_id TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, request_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen_nonces (
  session_id TEXT NOT NULL, nonce TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, nonce)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS steps (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, step_id TEXT NOT NULL,
  method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chain (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, canonical TEXT NOT NULL,
  hash BLOB NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
  session_id TEXT NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT, step_id TEXT NOT NULL,
  entries TEXT NOT NULL, verdict TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls INTEGER NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget)) WITHOUT ROWID;
";

/// The tables of versions 0 and 1 (the preCompact index tables of
/// version 1 are rebuilt from the steps, not copied).
const V1_TABLES: [&str; 9] = [
    "sessions",
    "seen_requests",
    "seen_nonces",
    "steps",
    "chain",
    "compactions",
    "turn_calls",
    "step_origins",
    "step_nodes",
];

/// Version 2's tables that version 3 replaces (renamed `v2_*` while
/// copied).
const V2_TABLES: [&str; 4] = ["steps", "chain", "seen", "step_ids"];

/// Copies version 2 (those tables renamed `v2_*`) into version 3's: each
/// step with its chain entry (an entry without a step, or a step without
/// one, keeps the half it has), the replay marks and step ids into `ids`.
const COPY_V2: &str = "
CREATE TABLE steps (
  id INTEGER PRIMARY KEY, step_id TEXT, method TEXT, provenance TEXT, canonical TEXT, hash BLOB);
CREATE TABLE ids (
  sid INTEGER NOT NULL, value TEXT NOT NULL, kind INTEGER NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER,
  PRIMARY KEY (sid, value, kind, seq)) WITHOUT ROWID;
CREATE INDEX ids_by_time ON ids (at_ms) WHERE at_ms IS NOT NULL;
INSERT INTO steps (id, step_id, method, provenance, canonical, hash)
  SELECT s.id, s.step_id, s.method, s.provenance, c.canonical, c.hash
  FROM v2_steps s LEFT JOIN v2_chain c ON c.id = s.id
  UNION ALL
  SELECT c.id, NULL, NULL, NULL, c.canonical, c.hash
  FROM v2_chain c WHERE NOT EXISTS (SELECT 1 FROM v2_steps s WHERE s.id = c.id)
  ORDER BY 1;
INSERT INTO ids (sid, value, kind, seq, at_ms) SELECT sid, value, kind, 0, at_ms FROM v2_seen;
INSERT INTO ids (sid, value, kind, seq, at_ms) SELECT sid, step_id, 2, seq, NULL FROM v2_step_ids;
";

/// Copies version 1 (renamed `v1_*`) into version 2's tables.
const COPY_V1: &str = "
INSERT INTO sessions (session_id, version, methods) SELECT session_id, version, methods FROM v1_sessions;
INSERT OR IGNORE INTO sessions (session_id)
  SELECT session_id FROM v1_steps UNION SELECT session_id FROM v1_chain
  UNION SELECT session_id FROM v1_seen_requests UNION SELECT session_id FROM v1_seen_nonces
  UNION SELECT session_id FROM v1_compactions UNION SELECT session_id FROM v1_turn_calls
  ORDER BY 1;
INSERT INTO seen (sid, kind, value, at_ms)
  SELECT s.sid, 0, r.request_id, r.at_ms FROM v1_seen_requests r JOIN sessions s USING (session_id);
INSERT INTO seen (sid, kind, value, at_ms)
  SELECT s.sid, 1, n.nonce, n.at_ms FROM v1_seen_nonces n JOIN sessions s USING (session_id);
INSERT INTO steps (id, step_id, method, provenance)
  SELECT s.sid * 4294967296 + t.seq, t.step_id, t.method, t.provenance
  FROM v1_steps t JOIN sessions s USING (session_id) ORDER BY 1;
INSERT INTO chain (id, canonical, hash)
  SELECT s.sid * 4294967296 + c.seq, c.canonical, c.hash
  FROM v1_chain c JOIN sessions s USING (session_id) ORDER BY 1;
INSERT INTO compactions (id, sid, step_id, entries, verdict, reasoning, reason_codes)
  SELECT c.id, s.sid, c.step_id, c.entries, c.verdict, c.reasoning, c.reason_codes
  FROM v1_compactions c JOIN sessions s USING (session_id) ORDER BY c.id;
INSERT INTO turn_calls (sid, turn_id, budget, calls)
  SELECT s.sid, t.turn_id, t.budget, t.calls FROM v1_turn_calls t JOIN sessions s USING (session_id);
INSERT INTO step_ids (sid, step_id, seq) SELECT id >> 32, step_id, id & 4294967295 FROM steps;
";

/// A step's or chain entry's row key: the session's integer key in the
/// high 32 bits, the step number in the low ones (a session holds at most
/// 2³² − 1 steps; the bound is checked, not wrapped).
pub(crate) fn key(sid: i64, seq: u64) -> Result<i64, StoreError> {
    let seq = u32::try_from(seq).map_err(|_| {
        StoreError::Backend(format!("sqlite: step number {seq} is above 2^32 - 1").into())
    })?;
    Ok((sid << 32) | i64::from(seq))
}

/// The first and last row keys of a session.
pub(crate) fn key_range(sid: i64) -> (i64, i64) {
    (sid << 32, (sid << 32) | 0xFFFF_FFFF)
}

/// The step number of a row key.
pub(crate) fn seq_of(id: i64) -> u64 {
    (id & 0xFFFF_FFFF) as u64
}

/// An origin's stored code (fixed here, whatever order the enum takes).
pub(crate) fn origin_code(o: Origin) -> i64 {
    match o {
        Origin::UserInput => 0,
        Origin::System => 1,
        Origin::ToolOutput => 2,
        Origin::Retrieved => 3,
        Origin::AgentGenerated => 4,
        Origin::A2aInbound => 5,
        Origin::External => 6,
    }
}

/// Fills the index rows of one step: its id, each origin once, each
/// provenance id once (the node itself is read from the step's row).
pub(crate) fn index_step(
    conn: &Connection,
    sid: i64,
    seq: u64,
    step_id: &str,
    provenance: &[Provenance],
) -> Result<(), StoreError> {
    let seq = i64::from(u32::try_from(seq).unwrap_or(u32::MAX));
    conn.prepare_cached("INSERT OR IGNORE INTO ids (sid, value, kind, seq) VALUES (?1, ?2, 2, ?3)")
        .db()?
        .execute(params![sid, step_id, seq])
        .db()?;
    index_provenance(conn, sid, seq, provenance)
}

fn index_provenance(
    conn: &Connection,
    sid: i64,
    seq: i64,
    provenance: &[Provenance],
) -> Result<(), StoreError> {
    let mut origins = conn
        .prepare_cached("INSERT OR IGNORE INTO step_origins (sid, origin, seq) VALUES (?1, ?2, ?3)")
        .db()?;
    for (i, p) in provenance.iter().enumerate() {
        if provenance[..i].iter().any(|q| q.origin == p.origin) {
            continue;
        }
        origins
            .execute(params![sid, origin_code(p.origin), seq])
            .db()?;
    }
    let mut nodes = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO step_nodes (sid, provenance_id, seq) VALUES (?1, ?2, ?3)",
        )
        .db()?;
    for (i, p) in provenance.iter().enumerate() {
        if provenance[..i]
            .iter()
            .any(|q| q.provenance_id == p.provenance_id)
        {
            continue;
        }
        nodes.execute(params![sid, p.provenance_id, seq]).db()?;
    }
    Ok(())
}

fn version(c: &Connection) -> Result<i64, StoreError> {
    c.query_row("PRAGMA user_version", [], |r| r.get(0)).db()
}

fn newer(found: i64) -> StoreError {
    StoreError::Backend(
        format!(
            "the session store is at schema version {found}, written by a newer mnemo; this build knows versions up to {SCHEMA_VERSION}. Upgrade mnemo (or use another store)"
        )
        .into(),
    )
}

/// Brings a store to [`SCHEMA_VERSION`], in one transaction: a new file
/// gets [`SCHEMA`]; a store of version 0 or 1 is completed to version 1's
/// tables, renamed aside, copied into version 2's (sessions, replay
/// marks, steps, chain, decisions and budget counters; the preCompact
/// indexes rebuilt from the steps) and dropped; a store of version 2 (or
/// one just brought to it) has its steps and chain entries joined into
/// one table and its replay marks and step ids into another. A process
/// opening the store at the same time waits, then sees version 3 and
/// does nothing. A store written by a newer mnemo is refused and left as
/// it is.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let found = version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(newer(found));
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .db()?;
    let found = version(&tx)?;
    if found > SCHEMA_VERSION {
        return Err(newer(found));
    }
    if found < SCHEMA_VERSION {
        let old: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN
                 ('sessions', 'requests', 'seen_requests', 'seen_nonces', 'steps', 'chain', 'compactions', 'turn_calls')",
                [],
                |r| r.get(0),
            )
            .db()?;
        if found == 2 {
            from_v2(&tx)?;
        } else if old > 0 {
            from_v1(&tx)?;
            from_v2(&tx)?;
        } else {
            tx.execute_batch(SCHEMA).db()?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .db()?;
    tx.commit().db()?;
    Ok(())
}

fn from_v1(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch(V1).db()?;
    if !super::has_column(tx, "compactions", "reasoning")? {
        tx.execute_batch(
            "ALTER TABLE compactions ADD COLUMN reasoning TEXT; ALTER TABLE compactions ADD COLUMN reason_codes TEXT;",
        )
        .db()?;
    }
    if !super::has_column(tx, "sessions", "methods")? {
        tx.execute_batch("ALTER TABLE sessions ADD COLUMN methods TEXT")
            .db()?;
    }
    let too_long: i64 = tx
        .query_row(
            "SELECT (SELECT count(*) FROM steps WHERE seq < 0 OR seq > 4294967295)
                  + (SELECT count(*) FROM chain WHERE seq < 0 OR seq > 4294967295)",
            [],
            |r| r.get(0),
        )
        .db()?;
    if too_long > 0 {
        return Err(StoreError::Corrupt(
            "a step number outside 0 … 2^32 - 1: the store cannot be migrated".into(),
        ));
    }
    for t in V1_TABLES {
        let present: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                params![t],
                |r| r.get(0),
            )
            .db()?;
        if present > 0 {
            tx.execute_batch(&format!("ALTER TABLE {t} RENAME TO v1_{t}"))
                .db()?;
        }
    }
    tx.execute_batch(SCHEMA_V2).db()?;
    tx.execute_batch(COPY_V1).db()?;
    let mut rows: Vec<(i64, String)> = Vec::new();
    {
        let mut stmt = tx
            .prepare("SELECT id, provenance FROM steps ORDER BY id")
            .db()?;
        let it = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).db()?;
        for row in it {
            rows.push(row.db()?);
        }
    }
    for (id, prov) in rows {
        let provenance: Vec<Provenance> =
            serde_json::from_str(&prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        index_provenance(tx, id >> 32, id & 0xFFFF_FFFF, &provenance)?;
    }
    for t in V1_TABLES {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS v1_{t}"))
            .db()?;
    }
    Ok(())
}

/// Version 2 to 3, inside the migration's transaction.
fn from_v2(tx: &Connection) -> Result<(), StoreError> {
    for t in V2_TABLES {
        tx.execute_batch(&format!("ALTER TABLE {t} RENAME TO v2_{t}"))
            .db()?;
    }
    tx.execute_batch(COPY_V2).db()?;
    for t in V2_TABLES {
        // Their indexes (`seen_by_time`) go with them.
        tx.execute_batch(&format!("DROP TABLE v2_{t}")).db()?;
    }
    Ok(())
}
