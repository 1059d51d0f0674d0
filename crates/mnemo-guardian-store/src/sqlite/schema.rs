//! The SQLite store's tables (schema version 2) and the migration of a
//! store written by an earlier version, in one transaction.
//!
//! Version 2 is shaped for the write path, where each commit appends the
//! pages it touched to the WAL (session 9: 11.7 pages for a lone
//! `steps/userMessage`, 1.7 a step at 32 a commit, in seven B-trees):
//! - a session's text id is kept once (`sessions`), every other table keys
//!   on its integer `sid`;
//! - steps and chain entries are rowid tables keyed by
//!   `sid · 2³² + seq` ([`key`]): appended at the right edge, they fill
//!   their pages whole, and their interior pages hold only integers;
//! - a provenance node's JSON is kept once, in its step's row: the node
//!   index (`step_nodes`) holds the id and the step number only;
//! - origins are small integers ([`origin_code`]);
//! - replay marks (request ids and nonces) share one table.

use super::Db;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::StoreError;
use rusqlite::{Connection, params};

/// The schema version this build writes (`PRAGMA user_version`): 0 is a
/// store from before the preCompact indexes, 1 has them (text session
/// keys in every table), 2 is [`SCHEMA`].
pub const SCHEMA_VERSION: i64 = 2;

/// The tables of version 2.
pub(crate) const SCHEMA: &str = "
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

/// `seen.kind` of a request id.
pub(crate) const SEEN_REQUEST: i64 = 0;
/// `seen.kind` of a nonce.
pub(crate) const SEEN_NONCE: i64 = 1;

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
    conn.prepare_cached("INSERT OR IGNORE INTO step_ids (sid, step_id, seq) VALUES (?1, ?2, ?3)")
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
/// indexes rebuilt from the steps) and dropped. A process opening the
/// store at the same time waits, then sees version 2 and does nothing. A
/// store written by a newer mnemo is refused and left as it is.
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
        if old > 0 {
            from_v1(&tx)?;
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
    tx.execute_batch(SCHEMA).db()?;
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
