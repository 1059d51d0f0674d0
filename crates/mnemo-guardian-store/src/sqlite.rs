//! The default session store: embedded SQLite in one file (WAL mode, so
//! several Guardian processes — hooks are spawned per event — can share it).
//! The tables and their migration are in [`schema`].

mod schema;
mod stats;

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::{
    CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError,
};
use rusqlite::{Connection, OptionalExtension, params};
pub use schema::SCHEMA_VERSION;
use schema::{ID_NONCE, ID_REQUEST, ID_STEP, index_step, key, key_range, origin_code, seq_of};
pub use stats::COMMIT_STATS_ENV;
use std::collections::HashMap;
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
    /// The integer key of each session id seen (a session's row is never
    /// deleted or renumbered, so a committed key holds for every process).
    sids: HashMap<String, i64>,
    /// Keys created by the open transaction: forgotten if it rolls back.
    created: Vec<String>,
    path: Option<PathBuf>,
    /// Dropping it stops the background checkpointer.
    checkpointer: Option<mpsc::Sender<()>>,
    /// Commit timing ([`COMMIT_STATS_ENV`]), off unless asked for.
    stats: Option<stats::CommitStats>,
}

/// The page size of a store this build creates (SQLite's default is 4096;
/// a store created with another size keeps it). A commit appends every
/// page it dirtied, whole, to the WAL, and a request dirties a leaf of
/// the random-key `ids` B-tree besides the steps' right edge: at 2 KiB a
/// request writes 4.1 instead of 5.9 kB of WAL at 16 a transaction (2.7
/// instead of 3.8 kB at 32; `examples/sqlite_wal.rs`), so the checkpoints
/// have less to sync and a commit seldom waits behind one. Through `guard
/// http` (session 12, 5 interleaved runs, other work stopped): median
/// 28,963 vs 27,148 req/s, p99 4.38 vs 5.97 ms; 1 KiB pages wrote
/// 3.3 kB but gave 25,613 req/s, p99 5.49 ms.
pub const PAGE_SIZE: u32 = 2048;

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

/// The checkpointer's busy handler: polls every 100 µs, gives up after
/// 50 ms (the pass is tried again on the next tick).
fn wait_briefly(tries: i32) -> bool {
    if tries >= 500 {
        return false;
    }
    std::thread::sleep(Duration::from_micros(100));
    true
}

/// A WAL bound for [`SqliteStore::checkpoint_in_background_bounded`]
/// (`MNEMO_SQLITE_WAL_LIMIT=67108864`); not the default: its RESTART pass
/// costs the tail (p99 29-30 ms against 12-13 ms unbounded, session 10).
pub const WAL_LIMIT_BYTES: u64 = 64 << 20;

/// A step's provenance as stored: the JSON array of its nodes.
fn encode_provenance(provenance: &[Provenance]) -> Result<String, StoreError> {
    serde_json::to_string(provenance).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn step_from(
    id: i64,
    step_id: String,
    method: String,
    prov: &str,
) -> Result<StepRecord, StoreError> {
    let provenance: Vec<Provenance> =
        serde_json::from_str(prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(StepRecord {
        seq: seq_of(id),
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

type StepRow = (i64, String, String, String);

fn step_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StepRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
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
    /// `wal_limit` bytes (`u64::MAX`: never bounded). Every tick runs a
    /// PASSIVE checkpoint, which copies frames without blocking any writer
    /// but never shortens the WAL: SQLite starts the WAL over only when a
    /// write transaction begins with every frame copied, which
    /// back-to-back batches never leave room for (the file grew to 700 MB
    /// under sustained load). So when the WAL holds more than `wal_limit`
    /// bytes after the PASSIVE pass, a RESTART checkpoint follows: it holds
    /// writers off only while it copies what was appended since the
    /// PASSIVE pass (a few milliseconds of frames) and syncs, and it makes
    /// the next write transaction start the WAL from its beginning; that
    /// transaction's commit then truncates the file to `wal_limit`
    /// (`journal_size_limit`). The checkpointer polls for the write lock
    /// every 100 µs and gives up after 50 ms (it tries again on the next
    /// tick): it never sleeps while holding writers off, which is what
    /// made session 9's TRUNCATE pass (5 s busy timeout, sleeps of up to
    /// 100 ms) cost p99 150 ms.
    pub fn checkpoint_in_background_bounded(&mut self, wal_limit: u64) -> Result<(), StoreError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let side = Connection::open(&path).db()?;
        side.busy_handler(Some(wait_briefly)).db()?;
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
                        let _ = side.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
                    }
                }
                let _ = side.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            })?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint=0")
            .db()?;
        if let Ok(limit) = i64::try_from(wal_limit) {
            // The commit that starts the WAL over truncates the file to this.
            let _: i64 = self
                .conn
                .query_row(&format!("PRAGMA journal_size_limit={limit}"), [], |r| {
                    r.get(0)
                })
                .db()?;
        }
        // The RESTART pass holds writers off for a few milliseconds; the
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
        let Some(sid) = self.lookup_sid(session)? else {
            return Ok(Vec::new());
        };
        let (lo, hi) = key_range(sid);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT canonical, hash FROM steps WHERE id BETWEEN ?1 AND ?2 AND hash IS NOT NULL ORDER BY id",
            )
            .db()?;
        let rows = stmt
            .query_map(params![lo, hi], |r| {
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

    /// The session's integer key, if the store knows the session.
    fn lookup_sid(&self, session: &str) -> Result<Option<i64>, StoreError> {
        if let Some(sid) = self.sids.get(session) {
            return Ok(Some(*sid));
        }
        self.conn
            .prepare_cached("SELECT sid FROM sessions WHERE session_id = ?1")
            .db()?
            .query_row(params![session], |r| r.get(0))
            .optional()
            .db()
    }

    /// [`Self::lookup_sid`], the key kept for the next time (a key read
    /// from the table is committed: it holds).
    fn sid(&mut self, session: &str) -> Result<Option<i64>, StoreError> {
        let sid = self.lookup_sid(session)?;
        if let Some(sid) = sid {
            self.sids.entry(session.to_string()).or_insert(sid);
        }
        Ok(sid)
    }

    /// The session's integer key, its row created when it has none yet
    /// (within the open transaction, if any).
    fn sid_for_write(&mut self, session: &str) -> Result<i64, StoreError> {
        if let Some(sid) = self.sid(session)? {
            return Ok(sid);
        }
        let sid: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO sessions (session_id) VALUES (?1)
                 ON CONFLICT (session_id) DO UPDATE SET session_id = excluded.session_id
                 RETURNING sid",
            )
            .db()?
            .query_row(params![session], |r| r.get(0))
            .db()?;
        self.remember(session, sid);
        Ok(sid)
    }

    fn remember(&mut self, session: &str, sid: i64) {
        if self.sids.insert(session.to_string(), sid).is_none() && self.in_tx {
            self.created.push(session.to_string());
        }
    }

    /// Forgets the keys the transaction that just ended without
    /// committing had created.
    fn forget_created(&mut self) {
        for s in std::mem::take(&mut self.created) {
            self.sids.remove(&s);
        }
    }

    fn read_chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        let Some(sid) = self.sid(session)? else {
            return Ok(None);
        };
        let (lo, hi) = key_range(sid);
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT id, hash FROM steps WHERE id BETWEEN ?1 AND ?2 AND hash IS NOT NULL ORDER BY id DESC LIMIT 1",
            )
            .db()?
            .query_row(params![lo, hi], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        match row {
            None => Ok(None),
            Some((id, bytes)) => Ok(Some((seq_of(id), hash_from(bytes)?))),
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
        // Only a database with no page yet takes it (before WAL mode
        // writes the header); an existing store keeps its own.
        conn.execute_batch(&format!("PRAGMA page_size={PAGE_SIZE}"))
            .db()?;
        // journal_mode returns a row; ignore which mode was granted (memory dbs say "memory").
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .db()?;
        conn.execute_batch(
            "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16384;",
        )
        .db()?;
        schema::migrate(&mut conn)?;
        Ok(SqliteStore {
            conn,
            in_tx: false,
            poisoned: false,
            head: None,
            hs: None,
            sids: HashMap::new(),
            created: Vec::new(),
            path: None,
            checkpointer: None,
            stats: stats::CommitStats::from_env(),
        })
    }

    /// Marks `value` of `kind` in the session; `false` when already there.
    fn mark(
        &mut self,
        session: &str,
        kind: i64,
        value: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        let sid = self.sid_for_write(session)?;
        let n = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO ids (sid, kind, value, seq, at_ms) VALUES (?1, ?2, ?3, 0, ?4)",
            )
            .db()?
            .execute(params![sid, kind, value, at_ms])
            .db()?;
        Ok(n == 1)
    }
}

impl SessionStore for SqliteStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            self.head = None;
            self.hs = None;
            self.poisoned = false;
            self.created.clear();
            // Cached, as every statement of the write path: parsed once.
            if let Some(st) = &mut self.stats {
                st.before_begin();
            }
            self.run_cached("BEGIN IMMEDIATE")?;
            if let Some(st) = &mut self.stats {
                st.after_begin();
            }
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
                self.forget_created();
                return Err(StoreError::Backend(
                    "sqlite: a step of this unit of work was written only in part; nothing of it was kept"
                        .into(),
                ));
            }
            let timed = self.stats.as_mut().map(stats::CommitStats::before_commit);
            let committed = self.run_cached("COMMIT");
            if let (Some(st), Some(from)) = (&mut self.stats, timed) {
                st.after_commit(from);
            }
            if let Err(e) = committed {
                // Nothing of it is kept (SQLite may have rolled it back
                // already); a key it created names no row.
                if !self.conn.is_autocommit() {
                    let _ = self.run_cached("ROLLBACK");
                }
                self.forget_created();
                return Err(e);
            }
            self.created.clear();
        }
        Ok(())
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.in_tx = false;
            self.poisoned = false;
            self.head = None;
            self.hs = None;
            self.forget_created();
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
        let row: Option<(Option<String>, Option<String>)> = self
            .conn
            .prepare_cached("SELECT version, methods FROM sessions WHERE session_id = ?1")
            .db()?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        // A session's row without a version is one that never completed a
        // handshake (its row holds its key for the other tables).
        let hs = row.and_then(|(version, methods)| {
            Some(SessionHandshake {
                version: version?,
                // One method name a line (names are namespaced words, never a line break).
                methods: methods.map(|m| m.lines().map(str::to_string).collect()),
            })
        });
        if self.in_tx {
            self.hs = Some((session.to_string(), hs.clone()));
        }
        Ok(hs)
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        let methods = hs.methods.as_ref().map(|m| m.join("\n"));
        let sid: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO sessions (session_id, version, methods) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, methods = excluded.methods
                 RETURNING sid",
            )
            .db()?
            .query_row(params![session, hs.version, methods], |r| r.get(0))
            .db()?;
        self.remember(session, sid);
        self.hs = self.in_tx.then(|| (session.to_string(), Some(hs.clone())));
        Ok(())
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        self.mark(session, ID_REQUEST, request_id, at_ms)
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.mark(session, ID_NONCE, nonce, at_ms)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        self.conn
            // Step ids have no time: only marks are pruned.
            .prepare_cached("DELETE FROM ids WHERE at_ms < ?1")
            .db()?
            .execute(params![before_ms])
            .db()?;
        Ok(())
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        let prov = encode_provenance(&step.provenance)?;
        // Outside a unit of work the session's row commits on its own,
        // before the step's savepoint (a key without steps is harmless).
        let sid = self.sid_for_write(session)?;
        let id = key(sid, step.seq)?;
        let insert = |conn: &Connection| -> Result<(), StoreError> {
            let inserted = conn
                // The row may hold the step's chain entry already.
                .prepare_cached(
                    "INSERT INTO steps (id, step_id, method, provenance) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (id) DO UPDATE SET step_id = excluded.step_id,
                       method = excluded.method, provenance = excluded.provenance
                     WHERE step_id IS NULL",
                )
                .db()?
                .execute(params![id, step.step_id, step.method, prov])
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
            return index_step(&self.conn, sid, step.seq, &step.step_id, &step.provenance)
                .inspect_err(|_| {
                    self.poisoned = true;
                });
        }
        // Alone: one savepoint keeps the step and its index rows together
        // or not at all. Its statements are prepared once (rusqlite's
        // `savepoint()` parses `SAVEPOINT` and `RELEASE` anew each time).
        self.run_cached("SAVEPOINT guard_step")?;
        let written = insert(&self.conn)
            .and_then(|()| index_step(&self.conn, sid, step.seq, &step.step_id, &step.provenance));
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
        let Some(sid) = self.sid(session)? else {
            return Ok(Vec::new());
        };
        let (lo, hi) = key_range(sid);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, step_id, method, provenance FROM steps
                 WHERE id BETWEEN ?1 AND ?2 AND step_id IS NOT NULL ORDER BY id",
            )
            .db()?;
        let rows = stmt.query_map(params![lo, hi], step_row).db()?;
        let mut out = Vec::new();
        for row in rows {
            let (id, step_id, method, prov) = row.db()?;
            out.push(step_from(id, step_id, method, &prov)?);
        }
        Ok(out)
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        let Some(sid) = self.sid(session)? else {
            return Ok(Vec::new());
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.step_id, s.method, s.provenance FROM ids i
                 JOIN steps s ON s.id = i.sid * 4294967296 + i.seq
                 WHERE i.sid = ?1 AND i.value = ?2 AND i.kind = ?3 ORDER BY i.seq DESC LIMIT 1",
            )
            .db()?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            let row = stmt
                .query_row(params![sid, id, ID_STEP], step_row)
                .optional()
                .db()?;
            if let Some((id, step_id, method, prov)) = row {
                out.push(step_from(id, step_id, method, &prov)?);
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
        let Some(sid) = self.sid(session)? else {
            return Ok(Vec::new());
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.step_id, s.method, s.provenance FROM step_origins o
                 JOIN steps s ON s.id = o.sid * 4294967296 + o.seq
                 WHERE o.sid = ?1 AND o.origin = ?2 AND o.seq > ?3 AND o.seq < ?4
                 ORDER BY o.seq DESC LIMIT ?5",
            )
            .db()?;
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let before = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut found: std::collections::BTreeMap<i64, (String, String, String)> =
            std::collections::BTreeMap::new();
        let mut done = std::collections::BTreeSet::new();
        for o in origins {
            if !done.insert(*o) {
                continue;
            }
            let rows = stmt
                .query_map(params![sid, origin_code(*o), after, before, lim], |r| {
                    Ok((r.get::<_, i64>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))
                })
                .db()?;
            for row in rows {
                let (id, rest) = row.db()?;
                found.insert(id, rest);
            }
        }
        let mut out = Vec::new();
        for (id, (step_id, method, prov)) in found.into_iter().rev().take(limit) {
            out.push(step_from(id, step_id, method, &prov)?);
        }
        Ok(out)
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        let Some(sid) = self.sid(session)? else {
            return Ok(Vec::new());
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.provenance FROM step_nodes n
                 JOIN steps s ON s.id = n.sid * 4294967296 + n.seq
                 WHERE n.sid = ?1 AND n.provenance_id = ?2 ORDER BY n.seq DESC LIMIT 1",
            )
            .db()?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            let row: Option<(i64, String)> = stmt
                .query_row(params![sid, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .db()?;
            if let Some((key, prov)) = row {
                // The node is the step's last with the id.
                let nodes: Vec<Provenance> =
                    serde_json::from_str(&prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let node = nodes
                    .into_iter()
                    .rfind(|p| p.provenance_id == *id)
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "step {} has no provenance node {id} its index names",
                            seq_of(key)
                        ))
                    })?;
                out.push((seq_of(key), node));
            }
        }
        Ok(out)
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        let Some(sid) = self.sid(session)? else {
            return Ok(false);
        };
        self.conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM ids i JOIN steps s ON s.id = i.sid * 4294967296 + i.seq
                 WHERE i.sid = ?1 AND i.value = ?2 AND i.kind = ?4 AND s.method = ?3)",
            )
            .db()?
            .query_row(params![sid, step_id, method, ID_STEP], |r| {
                r.get::<_, bool>(0)
            })
            .db()
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        let sid = self.sid_for_write(session)?;
        // Within the unit of work (BEGIN IMMEDIATE holds the write lock),
        // so two processes on one file never count the same call twice.
        let n: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO turn_calls (sid, turn_id, budget, calls) VALUES (?1, ?2, ?3, 1)
                 ON CONFLICT (sid, turn_id, budget) DO UPDATE SET calls = calls + 1
                 RETURNING calls",
            )
            .db()?
            .query_row(params![sid, turn, budget], |r| r.get(0))
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
        let sid = self.sid_for_write(session)?;
        let id = key(sid, seq)?;
        // The entry's row is its step's (written before or after it).
        let n = self
            .conn
            .prepare_cached(
                "INSERT INTO steps (id, canonical, hash) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET canonical = excluded.canonical, hash = excluded.hash
                 WHERE hash IS NULL",
            )
            .db()?
            .execute(params![id, canonical, &hash[..]])
            .db()?;
        if n == 0 {
            return Err(StoreError::Backend(
                format!("sqlite: session {session} has a chain entry {seq} already").into(),
            ));
        }
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
        let sid = self.sid_for_write(session)?;
        self.conn
            .prepare_cached("INSERT INTO compactions (sid, step_id, entries, verdict, reasoning, reason_codes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)").db()?
            .execute(params![sid, rec.step_id, entries, rec.verdict.as_str(), rec.reasoning, codes]).db()?;
        Ok(())
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        type Row = (String, String, String, Option<String>, Option<String>);
        let Some(sid) = self.sid(session)? else {
            return Ok(None);
        };
        let row: Option<Row> = self
            .conn
            .prepare_cached(
                "SELECT step_id, entries, verdict, reasoning, reason_codes FROM compactions WHERE sid = ?1 ORDER BY id DESC LIMIT 1",
            ).db()?
            .query_row(params![sid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
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

    fn page_size_of(path: &Path) -> i64 {
        let c = Connection::open(path).unwrap_or_else(|e| panic!("{e}"));
        c.query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A store this build creates has [`PAGE_SIZE`] pages; a store created
    /// with SQLite's default 4096 (every store before session 12) keeps
    /// its pages and its rows when this build opens and writes it.
    #[test]
    fn a_new_store_has_small_pages_and_an_old_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fresh = dir.path().join("new.sqlite3");
        // Opens the store at `path` and commits one chain entry.
        let write_one = |path: &Path| {
            let mut s = SqliteStore::open(path).unwrap_or_else(|e| panic!("{e}"));
            s.begin().unwrap_or_else(|e| panic!("{e}"));
            s.append_chain("s", 1, "{}", &[1; 32])
                .unwrap_or_else(|e| panic!("{e}"));
            s.commit().unwrap_or_else(|e| panic!("{e}"));
        };
        write_one(&fresh);
        assert_eq!(page_size_of(&fresh), i64::from(PAGE_SIZE));

        let old = dir.path().join("old.sqlite3");
        {
            let c = Connection::open(&old).unwrap_or_else(|e| panic!("{e}"));
            c.execute_batch("PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE t (x)")
                .unwrap_or_else(|e| panic!("{e}"));
        }
        write_one(&old);
        assert_eq!(page_size_of(&old), 4096);
        let s = SqliteStore::open(&old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s.chain_entries("s").unwrap_or_else(|e| panic!("{e}")).len(),
            1
        );
    }

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

    /// Under writes that never pause, the WAL goes back under its limit:
    /// the background checkpointer's RESTART pass makes the next commit
    /// start the WAL over and cut the file to the limit (PASSIVE passes
    /// alone never do while a writer keeps committing: the file only
    /// grows), and nothing committed is lost.
    #[test]
    fn the_background_checkpointer_bounds_the_wal_under_writes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("g.sqlite3");
        let wal = dir.path().join("g.sqlite3-wal");
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        let limit: u64 = 256 << 10;
        let mut s = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        ok(s.checkpoint_in_background_bounded(limit));
        let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut largest = 0;
        let mut cut = 0;
        let mut seq = 0u64;
        let start = std::time::Instant::now();
        // Back-to-back transactions of 20 steps for up to 5 s (20 ticks).
        while start.elapsed() < Duration::from_secs(5) && cut < 2 {
            ok(s.begin());
            for _ in 0..20 {
                seq += 1;
                let id = format!("p{seq}");
                ok(s.record_step("s", &step(seq, &[id.as_str()])));
            }
            ok(s.commit());
            let len = wal_len();
            if largest > limit && len <= limit {
                cut += 1;
                largest = 0;
            }
            largest = largest.max(len);
        }
        assert!(cut >= 2, "the WAL was cut {cut} times under writes");
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
