//! The Guardian's session store in PostgreSQL (`--store postgres://…`), for
//! several Guardian processes, on several machines, sharing sessions.
//!
//! Consistency between processes comes from the database alone, never from
//! anything cached across units of work: every unit of work (one request,
//! or one turn's batch) is a transaction, and the first time it touches a
//! session it locks that session's row (`SELECT … FOR UPDATE`, the row is
//! created on first use). A second process deciding a request for the same
//! session waits for the first to commit, then reads what it wrote (READ
//! COMMITTED takes a fresh snapshot per statement): the replay marks, the
//! chain head and the steps. A batch locks all its sessions up front, in
//! order ([`SessionStore::lock_sessions`]), so two batches never deadlock.
//! The only thing kept between calls is the locked session's handshake,
//! and only until the transaction ends.
//!
//! Pruning the replay window is deferred to after the commit and skips rows
//! another transaction holds, so it never waits inside a unit of work.

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::Provenance;
use mnemo_guardian::store::{
    CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError,
};
use mnemo_postgres::postgres::{Client, Statement};
use mnemo_postgres::{Pg, PgError};
use std::collections::HashMap;
use std::sync::Arc;

/// The component name of the Guardian's tables in `mnemo_schema`.
pub const COMPONENT: &str = "guardian";

/// Migrations of the Guardian's tables: version `i + 1` is `MIGRATIONS[i]`.
/// Append only; never edit a released step.
pub const MIGRATIONS: &[&str] = &["
CREATE TABLE guardian_sessions (
  session_id TEXT PRIMARY KEY, version TEXT, methods TEXT);
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
  entries TEXT NOT NULL, verdict TEXT NOT NULL);
CREATE INDEX guardian_compactions_session ON guardian_compactions (session_id, id);
"];

/// Columns added after the first migration, idempotently (ADD COLUMN IF NOT
/// EXISTS), so that they take no migration number that another branch may
/// also use: a preCompact decision's reasoning and reason codes.
const ADD_COLUMNS: &str = "ALTER TABLE guardian_compactions ADD COLUMN IF NOT EXISTS reasoning TEXT, ADD COLUMN IF NOT EXISTS reason_codes TEXT";

/// Statements prepared once per connection.
#[derive(Debug)]
struct Stmts {
    lock: Statement,
    create: Statement,
    set_handshake: Statement,
    mark_request: Statement,
    mark_nonce: Statement,
    record_step: Statement,
    steps: Statement,
    chain_head: Statement,
    append_chain: Statement,
    record_compaction: Statement,
    last_compaction: Statement,
}

impl Stmts {
    fn prepare(c: &mut Client) -> Result<Stmts, mnemo_postgres::postgres::Error> {
        Ok(Stmts {
            lock: c.prepare(
                "SELECT version, methods FROM guardian_sessions WHERE session_id = $1 FOR UPDATE",
            )?,
            create: c.prepare(
                "INSERT INTO guardian_sessions (session_id) VALUES ($1) ON CONFLICT DO NOTHING",
            )?,
            set_handshake: c.prepare(
                "UPDATE guardian_sessions SET version = $2, methods = $3 WHERE session_id = $1",
            )?,
            mark_request: c.prepare(
                "INSERT INTO guardian_seen_requests (session_id, request_id, at_ms) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )?,
            mark_nonce: c.prepare(
                "INSERT INTO guardian_seen_nonces (session_id, nonce, at_ms) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )?,
            record_step: c.prepare(
                "INSERT INTO guardian_steps (session_id, seq, step_id, method, provenance) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (session_id, seq) DO UPDATE SET step_id = EXCLUDED.step_id, method = EXCLUDED.method, provenance = EXCLUDED.provenance",
            )?,
            steps: c.prepare(
                "SELECT seq, step_id, method, provenance FROM guardian_steps WHERE session_id = $1 ORDER BY seq",
            )?,
            chain_head: c.prepare(
                "SELECT seq, hash FROM guardian_chain WHERE session_id = $1 ORDER BY seq DESC LIMIT 1",
            )?,
            append_chain: c.prepare(
                "INSERT INTO guardian_chain (session_id, seq, canonical, hash) VALUES ($1, $2, $3, $4)",
            )?,
            record_compaction: c.prepare(
                "INSERT INTO guardian_compactions (session_id, step_id, entries, verdict, reasoning, reason_codes) VALUES ($1, $2, $3, $4, $5, $6)",
            )?,
            last_compaction: c.prepare(
                "SELECT step_id, entries, verdict, reasoning, reason_codes FROM guardian_compactions WHERE session_id = $1 ORDER BY id DESC LIMIT 1",
            )?,
        })
    }
}

/// PostgreSQL-backed [`SessionStore`].
#[derive(Debug)]
pub struct PostgresStore {
    pg: Pg,
    stmts: Arc<Stmts>,
    in_tx: bool,
    /// A statement of the open transaction failed: PostgreSQL has aborted
    /// it, and its COMMIT would silently roll back.
    failed: bool,
    /// Sessions locked by the open transaction, with their handshake.
    locked: HashMap<String, Option<SessionHandshake>>,
    pending_prune: Option<i64>,
}

fn db(e: PgError) -> StoreError {
    StoreError::backend(e)
}

fn pgerr(e: mnemo_postgres::postgres::Error) -> StoreError {
    StoreError::backend(PgError::Db(e))
}

fn handshake_from(version: Option<String>, methods: Option<String>) -> Option<SessionHandshake> {
    version.map(|version| SessionHandshake {
        version,
        methods: methods.map(|m| m.lines().map(str::to_string).collect()),
    })
}

fn seq_i64(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("step number {seq}")))
}

/// Locks (creating it when new) one session row; its handshake.
fn lock_row(
    c: &mut Client,
    st: &Stmts,
    session: &str,
) -> Result<Option<SessionHandshake>, mnemo_postgres::postgres::Error> {
    if let Some(row) = c.query_opt(&st.lock, &[&session])? {
        return Ok(handshake_from(row.get(0), row.get(1)));
    }
    c.execute(&st.create, &[&session])?;
    let row = c.query_one(&st.lock, &[&session])?;
    Ok(handshake_from(row.get(0), row.get(1)))
}

impl PostgresStore {
    /// Connects to `url`, applies the Guardian's migrations (refusing a
    /// database a newer mnemo wrote) and prepares its statements.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let pg = Pg::connect(url).map_err(db)?;
        pg.migrate(COMPONENT, MIGRATIONS).map_err(db)?;
        pg.call(|c| c.batch_execute(ADD_COLUMNS))
            .map_err(db)?
            .map_err(pgerr)?;
        let stmts = pg.call(Stmts::prepare).map_err(db)?.map_err(pgerr)?;
        Ok(PostgresStore {
            pg,
            stmts: Arc::new(stmts),
            in_tx: false,
            failed: false,
            locked: HashMap::new(),
            pending_prune: None,
        })
    }

    /// Runs `f` on the connection with `session` locked: inside the open
    /// transaction (locking the session on first use), or in a transaction
    /// of its own when none is open.
    fn with_session<R: Send + 'static>(
        &mut self,
        session: &str,
        f: impl FnOnce(&mut Client, &Stmts, &str) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let st = Arc::clone(&self.stmts);
        let s = session.to_string();
        let need_lock = !self.locked.contains_key(session);
        let own_tx = !self.in_tx;
        let out = self
            .pg
            .call(move |c| {
                if own_tx {
                    c.batch_execute("BEGIN").map_err(pgerr)?;
                }
                let run = |c: &mut Client| {
                    let hs = if need_lock {
                        Some(lock_row(c, &st, &s).map_err(pgerr)?)
                    } else {
                        None
                    };
                    let r = f(c, &st, &s)?;
                    Ok::<_, StoreError>((hs, r))
                };
                let out = run(c);
                if own_tx {
                    match &out {
                        Ok(_) => c.batch_execute("COMMIT").map_err(pgerr)?,
                        Err(_) => {
                            let _ = c.batch_execute("ROLLBACK");
                        }
                    }
                }
                out
            })
            .map_err(db)?;
        match out {
            Ok((hs, r)) => {
                if let (Some(hs), false) = (hs, own_tx) {
                    self.locked.insert(session.to_string(), hs);
                }
                Ok(r)
            }
            Err(e) => {
                if !own_tx {
                    self.failed = true;
                }
                Err(e)
            }
        }
    }

    /// Canonical texts and hashes of a session's chain entries, in order
    /// (for audits and tests).
    pub fn chain_entries(&mut self, session: &str) -> Result<Vec<(String, Hash)>, StoreError> {
        let s = session.to_string();
        let rows = self
            .pg
            .call(move |c| {
                c.query(
                    "SELECT canonical, hash FROM guardian_chain WHERE session_id = $1 ORDER BY seq",
                    &[&s],
                )
            })
            .map_err(db)?
            .map_err(pgerr)?;
        rows.into_iter()
            .map(|r| Ok((r.get::<_, String>(0), hash_from(r.get::<_, Vec<u8>>(1))?)))
            .collect()
    }

    /// Deletes every row of the Guardian's tables (tests and resets).
    pub fn clear(&mut self) -> Result<(), StoreError> {
        self.pg
            .call(|c| {
                c.batch_execute(
                    "TRUNCATE guardian_sessions, guardian_seen_requests, guardian_seen_nonces,
                     guardian_steps, guardian_chain, guardian_compactions",
                )
            })
            .map_err(db)?
            .map_err(pgerr)
    }

    fn end_tx(&mut self, sql: &'static str) -> Result<(), StoreError> {
        self.in_tx = false;
        self.failed = false;
        self.locked.clear();
        self.pg
            .call(move |c| c.batch_execute(sql))
            .map_err(db)?
            .map_err(pgerr)
    }

    /// Forgets replay marks older than `before_ms`, outside any unit of
    /// work, skipping rows another transaction holds. Best effort: a
    /// failure leaves rows that the next prune removes (the timestamp
    /// window refuses their replays meanwhile).
    fn prune_now(&mut self, before_ms: i64) {
        let _ = self.pg.call(move |c| {
            for table in ["guardian_seen_requests", "guardian_seen_nonces"] {
                let sql = format!(
                    "DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table} WHERE at_ms < $1 FOR UPDATE SKIP LOCKED)"
                );
                let _ = c.execute(&sql, &[&before_ms]);
            }
        });
    }
}

impl SessionStore for PostgresStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            self.pg
                .call(|c| c.batch_execute("BEGIN"))
                .map_err(db)?
                .map_err(pgerr)?;
            self.in_tx = true;
            self.failed = false;
            self.locked.clear();
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            return Ok(());
        }
        if self.failed {
            let _ = self.end_tx("ROLLBACK");
            return Err(StoreError::Backend(
                "postgres: a statement of this unit of work failed; nothing of it was kept".into(),
            ));
        }
        self.end_tx("COMMIT")?;
        if let Some(before) = self.pending_prune.take() {
            self.prune_now(before);
        }
        Ok(())
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.pending_prune = None;
            self.end_tx("ROLLBACK")?;
        }
        Ok(())
    }
    fn lock_sessions(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        for s in sessions {
            self.with_session(s, |_, _, _| Ok(()))?;
        }
        Ok(())
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        if self.in_tx
            && let Some(hs) = self.locked.get(session)
        {
            return Ok(hs.clone());
        }
        self.with_session(session, |c, st, s| {
            let row = c.query_one(&st.lock, &[&s]).map_err(pgerr)?;
            Ok(handshake_from(row.get(0), row.get(1)))
        })
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        let version = hs.version.clone();
        let methods = hs.methods.as_ref().map(|m| m.join("\n"));
        self.with_session(session, move |c, st, s| {
            c.execute(&st.set_handshake, &[&s, &version, &methods])
                .map_err(pgerr)?;
            Ok(())
        })?;
        if self.in_tx {
            self.locked.insert(session.to_string(), Some(hs.clone()));
        }
        Ok(())
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        let id = request_id.to_string();
        self.with_session(session, move |c, st, s| {
            Ok(c.execute(&st.mark_request, &[&s, &id, &at_ms])
                .map_err(pgerr)?
                == 1)
        })
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        let nonce = nonce.to_string();
        self.with_session(session, move |c, st, s| {
            Ok(c.execute(&st.mark_nonce, &[&s, &nonce, &at_ms])
                .map_err(pgerr)?
                == 1)
        })
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        if self.in_tx {
            self.pending_prune = Some(self.pending_prune.map_or(before_ms, |b| b.max(before_ms)));
        } else {
            self.prune_now(before_ms);
        }
        Ok(())
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        let prov = serde_json::to_string(&step.provenance)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let seq = seq_i64(step.seq)?;
        let step_id = step.step_id.clone();
        let method = step.method.clone();
        self.with_session(session, move |c, st, s| {
            c.execute(&st.record_step, &[&s, &seq, &step_id, &method, &prov])
                .map_err(pgerr)?;
            Ok(())
        })
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        self.with_session(session, |c, st, s| {
            let rows = c.query(&st.steps, &[&s]).map_err(pgerr)?;
            rows.into_iter()
                .map(|r| {
                    let prov: String = r.get(3);
                    let provenance: Vec<Provenance> = serde_json::from_str(&prov)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                    Ok(StepRecord {
                        seq: r.get::<_, i64>(0).max(0) as u64,
                        step_id: r.get(1),
                        method: r.get(2),
                        provenance,
                    })
                })
                .collect()
        })
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        self.with_session(session, |c, st, s| {
            match c.query_opt(&st.chain_head, &[&s]).map_err(pgerr)? {
                None => Ok(None),
                Some(r) => Ok(Some((
                    r.get::<_, i64>(0).max(0) as u64,
                    hash_from(r.get::<_, Vec<u8>>(1))?,
                ))),
            }
        })
    }
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        let seq = seq_i64(seq)?;
        let canonical = canonical.to_string();
        let hash = hash.to_vec();
        self.with_session(session, move |c, st, s| {
            c.execute(&st.append_chain, &[&s, &seq, &canonical, &hash])
                .map_err(pgerr)?;
            Ok(())
        })
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        let entries =
            serde_json::to_string(&rec.entries).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let step_id = rec.step_id.clone();
        let verdict = rec.verdict.as_str().to_string();
        let reasoning = rec.reasoning.clone();
        let codes = serde_json::to_string(&rec.reason_codes)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.with_session(session, move |c, st, s| {
            c.execute(
                &st.record_compaction,
                &[&s, &step_id, &entries, &verdict, &reasoning, &codes],
            )
            .map_err(pgerr)?;
            Ok(())
        })
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        self.with_session(session, |c, st, s| {
            match c.query_opt(&st.last_compaction, &[&s]).map_err(pgerr)? {
                None => Ok(None),
                Some(r) => {
                    let entries: String = r.get(1);
                    let verdict: String = r.get(2);
                    let codes: Option<String> = r.get(4);
                    Ok(Some(CompactionRecord {
                        step_id: r.get(0),
                        entries: serde_json::from_str(&entries)
                            .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                        verdict: verdict_from(&verdict)?,
                        reasoning: r.get(3),
                        reason_codes: crate::sqlite::reason_codes_from(codes.as_deref())?,
                    }))
                }
            }
        })
    }
}
