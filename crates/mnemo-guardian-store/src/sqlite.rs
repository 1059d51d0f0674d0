//! The default session store: embedded SQLite in one file (WAL mode, so
//! several Guardian processes — hooks are spawned per event — can share it).

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::{
    CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// `rusqlite` results as store results.
trait Db<T> {
    fn db(self) -> Result<T, StoreError>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T, StoreError> {
        self.map_err(StoreError::backend)
    }
}

/// SQLite-backed [`SessionStore`].
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    in_tx: bool,
    /// A step of the open transaction was written only in part (its row
    /// went in, an index row failed): the transaction must not commit.
    poisoned: bool,
    /// The chain head of the last session asked or appended to, valid only
    /// inside the open transaction (`BEGIN IMMEDIATE` holds the write lock,
    /// so no other process can move it meanwhile); cleared at its end.
    head: Option<(String, Option<(u64, Hash)>)>,
    /// Likewise the handshake of the last session asked (read once a unit
    /// of work, not once a request), kept up to date by `set_handshake`.
    hs: Option<(String, Option<SessionHandshake>)>,
    path: Option<PathBuf>,
    /// Dropping it stops the background checkpointer.
    checkpointer: Option<mpsc::Sender<()>>,
}

/// How often the background checkpointer copies the WAL into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// A busy handler that retries every 100 µs, for at most 5 s.
fn wait_finely(tries: i32) -> bool {
    if tries >= 50_000 {
        return false;
    }
    std::thread::sleep(Duration::from_micros(100));
    true
}

/// A WAL bound for [`SqliteStore::checkpoint_in_background_bounded`]
/// (`MNEMO_SQLITE_WAL_LIMIT=67108864`); not the default: each truncation
/// stalls the writer (p99 145-360 ms against 23-33 ms unbounded, session 9).
pub const WAL_LIMIT_BYTES: u64 = 64 << 20;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, version TEXT NOT NULL) WITHOUT ROWID;
DROP TABLE IF EXISTS requests;
CREATE TABLE IF NOT EXISTS seen_requests (
  session_id TEXT NOT NULL, request_id TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, request_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_requests_at ON seen_requests (at_ms);
CREATE TABLE IF NOT EXISTS seen_nonces (
  session_id TEXT NOT NULL, nonce TEXT NOT NULL, at_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, nonce)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_nonces_at ON seen_nonces (at_ms);
CREATE TABLE IF NOT EXISTS steps (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, step_id TEXT NOT NULL,
  method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chain (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, canonical TEXT NOT NULL,
  hash BLOB NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
  session_id TEXT NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT, step_id TEXT NOT NULL,
  entries TEXT NOT NULL, verdict TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS compactions_session ON compactions (session_id, id);
CREATE TABLE IF NOT EXISTS turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls INTEGER NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget)) WITHOUT ROWID;
";

/// The schema version this build writes (`PRAGMA user_version`): 0 is a
/// store from before the preCompact indexes, 1 has them.
pub const SCHEMA_VERSION: i64 = 1;

/// Version 1: what a preCompact looks up, indexed as steps arrive — steps
/// by step id, the steps carrying each origin, the latest node of each
/// provenance id (the node's JSON, the last one of its step).
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS steps_by_step_id ON steps (session_id, step_id, seq);
CREATE TABLE IF NOT EXISTS step_origins (
  session_id TEXT NOT NULL, origin TEXT NOT NULL, seq INTEGER NOT NULL,
  PRIMARY KEY (session_id, origin, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS step_nodes (
  session_id TEXT NOT NULL, provenance_id TEXT NOT NULL, seq INTEGER NOT NULL,
  node TEXT NOT NULL, PRIMARY KEY (session_id, provenance_id, seq)) WITHOUT ROWID;
";

/// A step's provenance serialised once: each node's JSON, and the array
/// of them (byte for byte what `serde_json::to_string` gives the slice).
fn encode_provenance(provenance: &[Provenance]) -> Result<(String, Vec<String>), StoreError> {
    let nodes = provenance
        .iter()
        .map(|p| serde_json::to_string(p).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect::<Result<Vec<String>, StoreError>>()?;
    let mut array = String::with_capacity(2 + nodes.iter().map(|n| n.len() + 1).sum::<usize>());
    array.push('[');
    for (i, n) in nodes.iter().enumerate() {
        if i > 0 {
            array.push(',');
        }
        array.push_str(n);
    }
    array.push(']');
    Ok((array, nodes))
}

/// Fills the index rows of one step: each origin once, and the last node
/// of each provenance id (`nodes[i]` is `provenance[i]`'s JSON).
fn index_step(
    conn: &Connection,
    session: &str,
    seq: i64,
    provenance: &[Provenance],
    nodes: &[String],
) -> Result<(), StoreError> {
    let mut origins = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO step_origins (session_id, origin, seq) VALUES (?1, ?2, ?3)",
        )
        .db()?;
    for (i, p) in provenance.iter().enumerate() {
        if provenance[..i].iter().any(|q| q.origin == p.origin) {
            continue;
        }
        origins
            .execute(params![session, p.origin.as_str(), seq])
            .db()?;
    }
    let mut insert = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO step_nodes (session_id, provenance_id, seq, node) VALUES (?1, ?2, ?3, ?4)",
        )
        .db()?;
    for (i, (p, node)) in provenance.iter().zip(nodes).enumerate() {
        if provenance[i + 1..]
            .iter()
            .any(|q| q.provenance_id == p.provenance_id)
        {
            continue;
        }
        insert
            .execute(params![session, p.provenance_id, seq, node])
            .db()?;
    }
    Ok(())
}

/// Brings a store to [`SCHEMA_VERSION`]: creates the index tables and
/// fills them from the steps already recorded, in one transaction (a
/// process opening the store at the same time waits, then sees version 1
/// and does nothing). A store written by a newer mnemo is refused.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let version = |c: &Connection| -> Result<i64, StoreError> {
        c.query_row("PRAGMA user_version", [], |r| r.get(0)).db()
    };
    let newer = |found: i64| {
        StoreError::Backend(
            format!(
                "the session store is at schema version {found}, written by a newer mnemo; this build knows versions up to {SCHEMA_VERSION}. Upgrade mnemo (or use another store)"
            )
            .into(),
        )
    };
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
    if found < 1 {
        tx.execute_batch(INDEXES).db()?;
        tx.execute_batch("DELETE FROM step_origins; DELETE FROM step_nodes;")
            .db()?;
        let mut rows: Vec<(String, i64, String)> = Vec::new();
        {
            let mut stmt = tx
                .prepare("SELECT session_id, seq, provenance FROM steps ORDER BY session_id, seq")
                .db()?;
            let it = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .db()?;
            for row in it {
                rows.push(row.db()?);
            }
        }
        for (session, seq, prov) in rows {
            let provenance: Vec<Provenance> =
                serde_json::from_str(&prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let (_, nodes) = encode_provenance(&provenance)?;
            index_step(&tx, &session, seq, &provenance, &nodes)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .db()?;
    tx.commit().db()?;
    Ok(())
}

fn seq_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn step_from(
    seq: i64,
    step_id: String,
    method: String,
    prov: &str,
) -> Result<StepRecord, StoreError> {
    let provenance: Vec<Provenance> =
        serde_json::from_str(prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(StepRecord {
        seq: u64::try_from(seq).unwrap_or(0),
        step_id,
        method,
        provenance,
    })
}

/// Whether `table` has `column` (stores written before a column was added
/// lack it).
pub(crate) fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool, StoreError> {
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .db()?;
    let names = stmt
        .query_map(params![table], |r| r.get::<_, String>(0))
        .db()?;
    for n in names {
        if n.db()? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The reason codes column: a JSON array, or NULL in rows of older stores.
pub(crate) fn reason_codes_from(codes: Option<&str>) -> Result<Vec<String>, StoreError> {
    match codes {
        None => Ok(Vec::new()),
        Some(c) => serde_json::from_str(c).map_err(|e| StoreError::Corrupt(e.to_string())),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, creating parent directories.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        let conn = Connection::open(path).db()?;
        let mut store = Self::init(conn)?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }

    /// An in-memory SQLite store (tests).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().db()?)
    }

    /// For long-running servers: moves WAL checkpoints (the only step that
    /// waits for the disk) off the request path to a thread with its own
    /// connection, so a checkpoint seldom stalls a decision. The thread
    /// stops when the store is dropped. One-shot processes (hooks) keep
    /// SQLite's automatic checkpoints. No-op for in-memory stores. The WAL
    /// is not bounded (see [`SqliteStore::checkpoint_in_background_bounded`]).
    pub fn checkpoint_in_background(&mut self) -> Result<(), StoreError> {
        self.checkpoint_in_background_bounded(u64::MAX)
    }

    /// [`SqliteStore::checkpoint_in_background`] with the WAL bounded by
    /// `wal_limit` bytes (`u64::MAX`: never truncated). Every tick runs a PASSIVE checkpoint, which
    /// copies frames without blocking any writer but never shortens the
    /// WAL file: SQLite rewinds the WAL only when a write transaction
    /// begins with every frame copied, which back-to-back batches seldom
    /// leave room for (the file grew to 381 MB under sustained load). So
    /// when the WAL holds more than `wal_limit` bytes after the PASSIVE
    /// checkpoint, a TRUNCATE checkpoint follows: it waits for the open
    /// write transaction to end, holds writers off while it copies what
    /// was appended since the PASSIVE pass, fsyncs, and truncates the WAL
    /// to zero bytes (a stall of the writer once per `wal_limit` bytes of
    /// WAL, not once a tick).
    pub fn checkpoint_in_background_bounded(&mut self, wal_limit: u64) -> Result<(), StoreError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let side = Connection::open(&path).db()?;
        side.busy_timeout(Duration::from_secs(5)).db()?;
        let page: u64 = side
            .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
            .db()?
            .try_into()
            .unwrap_or(4096);
        // A WAL frame is a page and its 24-byte header.
        let limit_frames = wal_limit / (page + 24);
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("guard-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(CHECKPOINT_EVERY)
                {
                    // PASSIVE never blocks the writer; a busy or failed
                    // checkpoint is retried on the next tick. Its second
                    // column is the WAL's length in frames.
                    let frames = side
                        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
                        .unwrap_or(0);
                    if u64::try_from(frames).is_ok_and(|f| f > limit_frames) {
                        let _ = side.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
                    }
                }
                let _ = side.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            })?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint=0")
            .db()?;
        // The TRUNCATE pass holds writers off for a few milliseconds; the
        // default busy handler would sleep 1, 2, 5, 10, 15 … ms between
        // tries (tens of ms of answers lost to a stall of a few), so the
        // request connection polls every 100 µs instead, up to 5 s.
        self.conn.busy_handler(Some(wait_finely)).db()?;
        self.checkpointer = Some(stop);
        Ok(())
    }

    /// Canonical texts and hashes of a session's chain entries, in order
    /// (for audits and tests).
    pub fn chain_entries(&self, session: &str) -> Result<Vec<(String, Hash)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT canonical, hash FROM chain WHERE session_id = ?1 ORDER BY seq")
            .db()?;
        let rows = stmt
            .query_map(params![session], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .db()?;
        let mut out = Vec::new();
        for row in rows {
            let (canonical, bytes) = row.db()?;
            out.push((canonical, hash_from(bytes)?));
        }
        Ok(out)
    }

    fn read_chain_head(&self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT seq, hash FROM chain WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
            )
            .db()?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        match row {
            None => Ok(None),
            Some((seq, bytes)) => Ok(Some((seq.max(0) as u64, hash_from(bytes)?))),
        }
    }

    /// Runs a statement without parameters or rows through the statement cache.
    fn run_cached(&self, sql: &str) -> Result<(), StoreError> {
        self.conn.prepare_cached(sql).db()?.execute([]).db()?;
        Ok(())
    }

    fn init(mut conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(5)).db()?;
        // Room for every statement the store prepares (about two dozen;
        // rusqlite keeps 16 by default and re-parses what it evicted).
        conn.set_prepared_statement_cache_capacity(64);
        // journal_mode returns a row; ignore which mode was granted (memory dbs say "memory").
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .db()?;
        conn.execute_batch(
            "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16384;",
        )
        .db()?;
        conn.execute_batch(SCHEMA).db()?;
        if !has_column(&conn, "compactions", "reasoning")? {
            conn.execute_batch(
                "ALTER TABLE compactions ADD COLUMN reasoning TEXT; ALTER TABLE compactions ADD COLUMN reason_codes TEXT;",
            )
            .db()?;
        }
        // Stores made before sessions kept their negotiated methods.
        let has_methods: bool = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('sessions') WHERE name = 'methods'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .db()?
            > 0;
        if !has_methods {
            conn.execute_batch("ALTER TABLE sessions ADD COLUMN methods TEXT")
                .db()?;
        }
        migrate(&mut conn)?;
        Ok(SqliteStore {
            conn,
            in_tx: false,
            poisoned: false,
            head: None,
            hs: None,
            path: None,
            checkpointer: None,
        })
    }
}

impl SessionStore for SqliteStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            self.head = None;
            self.hs = None;
            self.poisoned = false;
            // Cached, as every statement of the write path: parsed once.
            self.run_cached("BEGIN IMMEDIATE")?;
            self.in_tx = true;
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.in_tx = false;
            self.head = None;
            self.hs = None;
            if std::mem::take(&mut self.poisoned) {
                let _ = self.run_cached("ROLLBACK");
                return Err(StoreError::Backend(
                    "sqlite: a step of this unit of work was written only in part; nothing of it was kept"
                        .into(),
                ));
            }
            self.run_cached("COMMIT")?;
        }
        Ok(())
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.in_tx = false;
            self.poisoned = false;
            self.head = None;
            self.hs = None;
            self.run_cached("ROLLBACK")?;
        }
        Ok(())
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        if let Some((s, hs)) = &self.hs
            && s == session
            && self.in_tx
        {
            return Ok(hs.clone());
        }
        let row: Option<(String, Option<String>)> = self
            .conn
            .prepare_cached("SELECT version, methods FROM sessions WHERE session_id = ?1")
            .db()?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        let hs = row.map(|(version, methods)| SessionHandshake {
            version,
            // One method name a line (names are namespaced words, never a line break).
            methods: methods.map(|m| m.lines().map(str::to_string).collect()),
        });
        if self.in_tx {
            self.hs = Some((session.to_string(), hs.clone()));
        }
        Ok(hs)
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        let methods = hs.methods.as_ref().map(|m| m.join("\n"));
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO sessions (session_id, version, methods) VALUES (?1, ?2, ?3)",
            )
            .db()?
            .execute(params![session, hs.version, methods])
            .db()?;
        self.hs = self.in_tx.then(|| (session.to_string(), Some(hs.clone())));
        Ok(())
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO seen_requests (session_id, request_id, at_ms) VALUES (?1, ?2, ?3)",
            )
            .db()?
            .execute(params![session, request_id, at_ms])
            .db()?;
        Ok(n == 1)
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO seen_nonces (session_id, nonce, at_ms) VALUES (?1, ?2, ?3)",
            )
            .db()?
            .execute(params![session, nonce, at_ms])
            .db()?;
        Ok(n == 1)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM seen_requests WHERE at_ms < ?1")
            .db()?
            .execute(params![before_ms])
            .db()?;
        self.conn
            .prepare_cached("DELETE FROM seen_nonces WHERE at_ms < ?1")
            .db()?
            .execute(params![before_ms])
            .db()?;
        Ok(())
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        let (prov, nodes) = encode_provenance(&step.provenance)?;
        let seq = seq_i64(step.seq);
        let insert = |conn: &Connection| -> Result<(), StoreError> {
            let inserted = conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO steps (session_id, seq, step_id, method, provenance) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .db()?
                .execute(params![session, seq, step.step_id, step.method, prov])
                .db()?;
            if inserted == 0 {
                // Nothing was written: the unit of work goes on.
                return Err(StoreError::StepExists {
                    session: session.to_string(),
                    seq: step.seq,
                });
            }
            Ok(())
        };
        if self.in_tx {
            // Inside a unit of work the step and its index rows need no
            // savepoint of their own (two statements fewer a step): a
            // refused step writes nothing, and an index row that fails
            // after the step's row went in poisons the transaction, whose
            // commit then rolls everything back and fails (no answer of
            // it is acknowledged).
            insert(&self.conn)?;
            return index_step(&self.conn, session, seq, &step.provenance, &nodes).inspect_err(
                |_| {
                    self.poisoned = true;
                },
            );
        }
        // Alone: one savepoint keeps the step and its index rows together
        // or not at all. Its statements are prepared once (rusqlite's
        // `savepoint()` parses `SAVEPOINT` and `RELEASE` anew each time).
        self.run_cached("SAVEPOINT guard_step")?;
        let written = insert(&self.conn)
            .and_then(|()| index_step(&self.conn, session, seq, &step.provenance, &nodes));
        match written {
            Ok(()) => self.run_cached("RELEASE guard_step"),
            Err(e) => {
                // Undo whatever part was written, then leave the savepoint;
                // the step's own error is what the caller sees.
                let _ = self.run_cached("ROLLBACK TO guard_step");
                let _ = self.run_cached("RELEASE guard_step");
                Err(e)
            }
        }
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, step_id, method, provenance FROM steps WHERE session_id = ?1 ORDER BY seq",
        ).db()?;
        let rows = stmt
            .query_map(params![session], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .db()?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, step_id, method, prov) = row.db()?;
            out.push(step_from(seq, step_id, method, &prov)?);
        }
        Ok(out)
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                // INDEXED BY: without it SQLite walks the session's primary
                // key backwards to avoid a sort (every step, at 100,000 steps).
                "SELECT seq, step_id, method, provenance FROM steps INDEXED BY steps_by_step_id WHERE session_id = ?1 AND step_id = ?2 ORDER BY seq DESC LIMIT 1",
            )
            .db()?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            let row: Option<(i64, String, String, String)> = stmt
                .query_row(params![session, id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
                .db()?;
            if let Some((seq, step_id, method, prov)) = row {
                out.push(step_from(seq, step_id, method, &prov)?);
            }
        }
        Ok(out)
    }
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.seq, s.step_id, s.method, s.provenance FROM step_origins o
                 JOIN steps s ON s.session_id = o.session_id AND s.seq = o.seq
                 WHERE o.session_id = ?1 AND o.origin = ?2 AND o.seq > ?3 AND o.seq < ?4
                 ORDER BY o.seq DESC LIMIT ?5",
            )
            .db()?;
        let after = seq_i64(after);
        let before = before.map_or(i64::MAX, seq_i64);
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut found: std::collections::BTreeMap<i64, (String, String, String)> =
            std::collections::BTreeMap::new();
        let mut done = std::collections::BTreeSet::new();
        for o in origins {
            if !done.insert(*o) {
                continue;
            }
            let rows = stmt
                .query_map(params![session, o.as_str(), after, before, lim], |r| {
                    Ok((r.get::<_, i64>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))
                })
                .db()?;
            for row in rows {
                let (seq, rest) = row.db()?;
                found.insert(seq, rest);
            }
        }
        let mut out = Vec::new();
        for (seq, (step_id, method, prov)) in found.into_iter().rev().take(limit) {
            out.push(step_from(seq, step_id, method, &prov)?);
        }
        Ok(out)
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, node FROM step_nodes WHERE session_id = ?1 AND provenance_id = ?2 ORDER BY seq DESC LIMIT 1",
            )
            .db()?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            let row: Option<(i64, String)> = stmt
                .query_row(params![session, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .db()?;
            if let Some((seq, node)) = row {
                let p: Provenance =
                    serde_json::from_str(&node).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                out.push((u64::try_from(seq).unwrap_or(0), p));
            }
        }
        Ok(out)
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM steps INDEXED BY steps_by_step_id WHERE session_id = ?1 AND step_id = ?2 AND method = ?3)",
            )
            .db()?
            .query_row(params![session, step_id, method], |r| r.get::<_, bool>(0))
            .db()
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        // Within the unit of work (BEGIN IMMEDIATE holds the write lock),
        // so two processes on one file never count the same call twice.
        let n: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO turn_calls (session_id, turn_id, budget, calls) VALUES (?1, ?2, ?3, 1)
                 ON CONFLICT (session_id, turn_id, budget) DO UPDATE SET calls = calls + 1
                 RETURNING calls",
            )
            .db()?
            .query_row(params![session, turn, budget], |r| r.get(0))
            .db()?;
        Ok(Some(u64::try_from(n).unwrap_or(0)))
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        if let Some((s, head)) = &self.head
            && s == session
            && self.in_tx
        {
            return Ok(*head);
        }
        let head = self.read_chain_head(session)?;
        if self.in_tx {
            self.head = Some((session.to_string(), head));
        }
        Ok(head)
    }
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        // Unless the row goes in, the head is read again when next asked.
        let cached = self.head.take();
        self.conn
            .prepare_cached(
                "INSERT INTO chain (session_id, seq, canonical, hash) VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![session, seq as i64, canonical, &hash[..]])
            .db()?;
        if self.in_tx {
            // The new row is the head when it is above the one before.
            self.head = match cached {
                Some((s, prev)) if s == session && prev.is_none_or(|(m, _)| seq > m) => {
                    Some((s, Some((seq, *hash))))
                }
                _ => None,
            };
        }
        Ok(())
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        let entries =
            serde_json::to_string(&rec.entries).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let codes = serde_json::to_string(&rec.reason_codes)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.conn
            .prepare_cached("INSERT INTO compactions (session_id, step_id, entries, verdict, reasoning, reason_codes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)").db()?
            .execute(params![session, rec.step_id, entries, rec.verdict.as_str(), rec.reasoning, codes]).db()?;
        Ok(())
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        type Row = (String, String, String, Option<String>, Option<String>);
        let row: Option<Row> = self
            .conn
            .prepare_cached(
                "SELECT step_id, entries, verdict, reasoning, reason_codes FROM compactions WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
            ).db()?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .optional().db()?;
        match row {
            None => Ok(None),
            Some((step_id, entries, verdict, reasoning, codes)) => Ok(Some(CompactionRecord {
                step_id,
                entries: serde_json::from_str(&entries)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                verdict: verdict_from(&verdict)?,
                reasoning,
                reason_codes: reason_codes_from(codes.as_deref())?,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head kept during a transaction is the database's: it follows
    /// this transaction's appends, is forgotten at rollback and commit, and
    /// what another connection appended in between is seen.
    #[test]
    fn the_chain_head_kept_in_a_transaction_is_the_databases() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("g.sqlite3");
        let mut a = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut b = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        let head = |s: &mut SqliteStore| s.chain_head("s").unwrap_or_else(|e| panic!("{e}"));
        ok(a.begin());
        assert_eq!(head(&mut a), None);
        ok(a.append_chain("s", 1, "{}", &[1; 32]));
        assert_eq!(head(&mut a), Some((1, [1; 32])));
        ok(a.append_chain("s", 2, "{}", &[2; 32]));
        assert_eq!(head(&mut a), Some((2, [2; 32])));
        ok(a.rollback());
        assert_eq!(head(&mut a), None);
        ok(a.begin());
        ok(a.append_chain("s", 1, "{}", &[1; 32]));
        ok(a.commit());
        ok(b.begin());
        assert_eq!(head(&mut b), Some((1, [1; 32])));
        ok(b.append_chain("s", 2, "{}", &[2; 32]));
        ok(b.commit());
        ok(a.begin());
        assert_eq!(head(&mut a), Some((2, [2; 32])));
        // A failed append (the number exists) leaves the head as it was.
        assert!(a.append_chain("s", 2, "{}", &[9; 32]).is_err());
        assert_eq!(head(&mut a), Some((2, [2; 32])));
        ok(a.commit());
    }

    /// After writes that grew the WAL past its limit, the background
    /// checkpointer brings the file back under it, and nothing committed
    /// is lost (without the TRUNCATE pass the file keeps its largest size:
    /// PASSIVE checkpoints never shorten it).
    #[test]
    fn the_background_checkpointer_bounds_the_wal() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("g.sqlite3");
        let wal = dir.path().join("g.sqlite3-wal");
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        let limit: u64 = 256 << 10;
        let mut s = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        ok(s.checkpoint_in_background_bounded(limit));
        let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut largest = 0;
        let mut seq = 0u64;
        let start = std::time::Instant::now();
        // Writes for a second (four ticks), 20 steps a transaction.
        while start.elapsed() < Duration::from_millis(1000) {
            ok(s.begin());
            for _ in 0..20 {
                seq += 1;
                let id = format!("p{seq}");
                ok(s.record_step("s", &step(seq, &[id.as_str()])));
            }
            ok(s.commit());
            largest = largest.max(wal_len());
        }
        assert!(
            largest > limit,
            "the test wrote too little: {largest} bytes of WAL"
        );
        // Within two ticks of the last write the WAL is back under its limit.
        let quiet = std::time::Instant::now();
        while wal_len() > limit && quiet.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(wal_len() <= limit, "WAL {} bytes, limit {limit}", wal_len());
        drop(s);
        let mut again = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let steps = again.steps("s").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(steps.len() as u64, seq);
    }

    fn step(seq: u64, ids: &[&str]) -> StepRecord {
        StepRecord {
            seq,
            step_id: format!("r{seq}"),
            method: "steps/userMessage".into(),
            provenance: ids
                .iter()
                .map(|id| Provenance::new(*id, Origin::UserInput, None))
                .collect(),
        }
    }

    /// The provenance array is written from the nodes' own JSON: it must
    /// be what serialising the whole slice gives.
    #[test]
    fn the_provenance_array_is_its_nodes_joined() {
        let mut prov = step(1, &["a", "b", "a"]).provenance;
        prov[1] = Provenance::new("b", Origin::ToolOutput, Some("Bash"));
        for n in [0, 1, 3] {
            let slice = &prov[..n];
            let (array, nodes) = encode_provenance(slice).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                array,
                serde_json::to_string(slice).unwrap_or_else(|e| panic!("{e}"))
            );
            assert_eq!(nodes.len(), n);
        }
    }

    /// Inside a unit of work a step has no savepoint: a step whose index
    /// row fails after its own row went in poisons the transaction, and
    /// its commit keeps nothing (the steps before it included) and fails.
    /// Alone, the savepoint undoes the step. A refused (existing) step
    /// poisons nothing.
    #[test]
    fn a_step_written_in_part_is_never_committed() {
        let mut s = SqliteStore::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        s.conn
            .execute_batch(
                "CREATE TRIGGER refuse_bad BEFORE INSERT ON step_nodes WHEN NEW.provenance_id = 'bad'
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        let count = |s: &mut SqliteStore| s.steps("s").map(|v| v.len()).unwrap_or(usize::MAX);
        ok(s.begin());
        ok(s.record_step("s", &step(1, &["a"])));
        assert!(s.record_step("s", &step(2, &["bad"])).is_err());
        assert!(
            s.commit().is_err(),
            "a poisoned unit of work must not commit"
        );
        assert_eq!(count(&mut s), 0);
        // The next unit of work starts clean; an existing step is refused
        // without poisoning it.
        ok(s.begin());
        ok(s.record_step("s", &step(1, &["a"])));
        assert!(matches!(
            s.record_step("s", &step(1, &["a"])),
            Err(StoreError::StepExists { seq: 1, .. })
        ));
        ok(s.commit());
        assert_eq!(count(&mut s), 1);
        // Alone (no unit of work): the failed step leaves nothing.
        assert!(s.record_step("s", &step(2, &["bad"])).is_err());
        assert_eq!(count(&mut s), 1);
        ok(s.record_step("s", &step(2, &["b", "b"])));
        assert_eq!(count(&mut s), 2);
        let nodes = s
            .latest_nodes("s", &["a", "b"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            nodes
                .iter()
                .map(|(seq, p)| (*seq, p.provenance_id.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "a"), (2, "b")]
        );
    }

    /// The handshake kept during a transaction is the database's: set in
    /// it, it is what is read back; what another connection wrote between
    /// two transactions is seen by the next.
    #[test]
    fn the_handshake_kept_in_a_transaction_is_the_databases() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("g.sqlite3");
        let mut a = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut b = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        let hs = |v: &str| SessionHandshake {
            version: v.into(),
            methods: Some(vec!["steps/userMessage".into()]),
        };
        let get = |s: &mut SqliteStore, id: &str| s.handshake(id).unwrap_or_else(|e| panic!("{e}"));
        ok(a.begin());
        assert_eq!(get(&mut a, "s"), None);
        ok(a.set_handshake("s", &hs("0.1.0")));
        assert_eq!(get(&mut a, "s"), Some(hs("0.1.0")));
        assert_eq!(get(&mut a, "t"), None);
        assert_eq!(get(&mut a, "s"), Some(hs("0.1.0")));
        ok(a.commit());
        ok(b.begin());
        assert_eq!(get(&mut b, "s"), Some(hs("0.1.0")));
        ok(b.set_handshake("s", &hs("0.1.3")));
        ok(b.commit());
        ok(a.begin());
        assert_eq!(get(&mut a, "s"), Some(hs("0.1.3")));
        ok(a.set_handshake("s", &hs("0.1.4")));
        ok(a.rollback());
        assert_eq!(get(&mut a, "s"), Some(hs("0.1.3")), "rolled back");
    }

    #[test]
    fn replay_marks_are_per_session_and_pruned() {
        let mut s = SqliteStore::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(s.mark_request("s1", "a", 10), Ok(true)));
        assert!(matches!(s.mark_request("s1", "a", 20), Ok(false)));
        assert!(matches!(s.mark_request("s2", "a", 20), Ok(true)));
        assert!(matches!(s.mark_request("s1", "b", 30), Ok(true)));
        assert!(matches!(s.mark_nonce("s1", "n", 10), Ok(true)));
        assert!(matches!(s.mark_nonce("s1", "n", 11), Ok(false)));
        assert!(matches!(s.mark_nonce("s2", "n", 11), Ok(true)));
        assert!(s.prune_requests(20).is_ok());
        assert!(matches!(s.mark_request("s1", "a", 40), Ok(true)));
        assert!(matches!(s.mark_request("s1", "b", 40), Ok(false)));
        assert!(matches!(s.mark_nonce("s1", "n", 40), Ok(true)));
    }

    #[test]
    fn handshake_round_trips_and_old_stores_gain_the_column() {
        let dir = std::env::temp_dir().join(format!("mnemo-hs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("g.sqlite3");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        {
            // A store from before: no methods column, a global requests table.
            let c = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
            c.execute_batch(
                "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version TEXT NOT NULL) WITHOUT ROWID;
                 INSERT INTO sessions VALUES ('old', '0.1.0');
                 CREATE TABLE requests (request_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL) WITHOUT ROWID;",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        let mut s = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let old = s.handshake("old").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            old.map(|h| h.methods),
            Some(None),
            "legacy sessions allow every method"
        );
        let hs = SessionHandshake {
            version: "0.1.0".into(),
            methods: Some(vec!["steps/userMessage".into(), "system/ping".into()]),
        };
        assert!(s.set_handshake("new", &hs).is_ok());
        assert_eq!(s.handshake("new").ok().flatten(), Some(hs));
        assert!(matches!(s.handshake("none"), Ok(None)));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_database_error_is_a_backend_error() {
        let e = rusqlite::Connection::open_in_memory()
            .and_then(|c| c.execute("SELECT * FROM no_such_table", []))
            .db()
            .err();
        assert!(matches!(e, Some(StoreError::Backend(_))), "{e:?}");
    }
}
