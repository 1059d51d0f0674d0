//! The default session store: embedded SQLite in one file (WAL mode, so
//! several Guardian processes — hooks are spawned per event — can share it).

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::Provenance;
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
    path: Option<PathBuf>,
    /// Dropping it stops the background checkpointer.
    checkpointer: Option<mpsc::Sender<()>>,
}

/// How often the background checkpointer copies the WAL into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

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
";

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
    /// connection, so a checkpoint never stalls a decision. The thread
    /// stops when the store is dropped. One-shot processes (hooks) keep
    /// SQLite's automatic checkpoints. No-op for in-memory stores.
    pub fn checkpoint_in_background(&mut self) -> Result<(), StoreError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let side = Connection::open(&path).db()?;
        side.busy_timeout(Duration::from_secs(5)).db()?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("guard-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(CHECKPOINT_EVERY)
                {
                    // PASSIVE never blocks the writer; a busy or failed
                    // checkpoint is retried on the next tick.
                    let _ = side.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
                let _ = side.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            })?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint=0")
            .db()?;
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

    fn init(conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(5)).db()?;
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
        Ok(SqliteStore {
            conn,
            in_tx: false,
            path: None,
            checkpointer: None,
        })
    }
}

impl SessionStore for SqliteStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            self.conn.execute_batch("BEGIN IMMEDIATE").db()?;
            self.in_tx = true;
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.in_tx = false;
            self.conn.execute_batch("COMMIT").db()?;
        }
        Ok(())
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.in_tx = false;
            self.conn.execute_batch("ROLLBACK").db()?;
        }
        Ok(())
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        let row: Option<(String, Option<String>)> = self
            .conn
            .prepare_cached("SELECT version, methods FROM sessions WHERE session_id = ?1")
            .db()?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        Ok(row.map(|(version, methods)| SessionHandshake {
            version,
            // One method name a line (names are namespaced words, never a line break).
            methods: methods.map(|m| m.lines().map(str::to_string).collect()),
        }))
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
        let prov = serde_json::to_string(&step.provenance)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO steps (session_id, seq, step_id, method, provenance) VALUES (?1, ?2, ?3, ?4, ?5)",
            ).db()?
            .execute(params![session, step.seq as i64, step.step_id, step.method, prov]).db()?;
        Ok(())
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
            let provenance: Vec<Provenance> =
                serde_json::from_str(&prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            out.push(StepRecord {
                seq: seq.max(0) as u64,
                step_id,
                method,
                provenance,
            });
        }
        Ok(out)
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
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
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO chain (session_id, seq, canonical, hash) VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![session, seq as i64, canonical, &hash[..]])
            .db()?;
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
