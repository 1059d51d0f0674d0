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
//! The only things kept between calls are the locked session's handshake
//! and its chain head (read once, then advanced by each append of this
//! transaction: no other transaction can append while the row is locked),
//! and only until the transaction ends.
//!
//! Pruning the replay window is deferred to after the commit and skips rows
//! another transaction holds, so it never waits inside a unit of work.

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::{Origin, Provenance};
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
pub const MIGRATIONS: &[&str] = &[
    "
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
",
    "
CREATE INDEX guardian_steps_by_step_id ON guardian_steps (session_id, step_id, seq);
CREATE TABLE guardian_step_origins (
  session_id TEXT NOT NULL, origin TEXT NOT NULL, seq BIGINT NOT NULL,
  PRIMARY KEY (session_id, origin, seq));
CREATE TABLE guardian_step_nodes (
  session_id TEXT NOT NULL, provenance_id TEXT NOT NULL, seq BIGINT NOT NULL,
  node TEXT NOT NULL, PRIMARY KEY (session_id, provenance_id, seq));
INSERT INTO guardian_step_origins (session_id, origin, seq)
  SELECT DISTINCT s.session_id, e.value->>'origin', s.seq
  FROM guardian_steps s, json_array_elements(s.provenance::json) AS e(value);
INSERT INTO guardian_step_nodes (session_id, provenance_id, seq, node)
  SELECT DISTINCT ON (s.session_id, e.value->>'provenance_id', s.seq)
         s.session_id, e.value->>'provenance_id', s.seq, e.value::text
  FROM guardian_steps s, json_array_elements(s.provenance::json) WITH ORDINALITY AS e(value, i)
  ORDER BY s.session_id, e.value->>'provenance_id', s.seq, e.i DESC;
",
];

/// Columns added after the first migration, idempotently (ADD COLUMN IF NOT
/// EXISTS), so that they take no migration number that another branch may
/// also use: a preCompact decision's reasoning and reason codes.
/// Under the migrations' advisory lock, so that two processes starting
/// at once do not race on it. Also the per-turn budget counters
/// ([`SessionStore::count_turn_call`]), likewise without a number.
const ADD_COLUMNS: &str = "
BEGIN;
SELECT pg_advisory_xact_lock(7304011);
ALTER TABLE guardian_compactions ADD COLUMN IF NOT EXISTS reasoning TEXT, ADD COLUMN IF NOT EXISTS reason_codes TEXT;
CREATE TABLE IF NOT EXISTS guardian_turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls BIGINT NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget));
COMMIT;
";

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
    steps_by_id: Statement,
    steps_with_origin: Statement,
    latest_nodes: Statement,
    has_step: Statement,
    chain_head: Statement,
    append_chain: Statement,
    record_compaction: Statement,
    last_compaction: Statement,
    count_turn_call: Statement,
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
            // The step and its index rows in one statement; a step number
            // already recorded inserts nothing (and aborts nothing).
            record_step: c.prepare(
                "WITH st AS (
                   INSERT INTO guardian_steps (session_id, seq, step_id, method, provenance)
                   VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id, seq) DO NOTHING RETURNING seq),
                 o AS (
                   INSERT INTO guardian_step_origins (session_id, origin, seq)
                   SELECT $1, x.origin, st.seq FROM st, unnest($6::text[]) AS x(origin)),
                 n AS (
                   INSERT INTO guardian_step_nodes (session_id, provenance_id, seq, node)
                   SELECT $1, u.id, st.seq, u.node FROM st, unnest($7::text[], $8::text[]) AS u(id, node))
                 SELECT count(*) FROM st",
            )?,
            steps: c.prepare(
                "SELECT seq, step_id, method, provenance FROM guardian_steps WHERE session_id = $1 ORDER BY seq",
            )?,
            steps_by_id: c.prepare(
                "SELECT DISTINCT ON (step_id) seq, step_id, method, provenance FROM guardian_steps
                 WHERE session_id = $1 AND step_id = ANY($2::text[]) ORDER BY step_id, seq DESC",
            )?,
            steps_with_origin: c.prepare(
                "SELECT DISTINCT s.seq, s.step_id, s.method, s.provenance
                 FROM unnest($2::text[]) AS g(origin)
                 CROSS JOIN LATERAL (
                   SELECT o.seq FROM guardian_step_origins o
                   WHERE o.session_id = $1 AND o.origin = g.origin AND o.seq > $3 AND o.seq < $4
                   ORDER BY o.seq DESC LIMIT $5) AS x
                 JOIN guardian_steps s ON s.session_id = $1 AND s.seq = x.seq
                 ORDER BY s.seq DESC LIMIT $5",
            )?,
            latest_nodes: c.prepare(
                "SELECT DISTINCT ON (provenance_id) seq, node FROM guardian_step_nodes
                 WHERE session_id = $1 AND provenance_id = ANY($2::text[]) ORDER BY provenance_id, seq DESC",
            )?,
            has_step: c.prepare(
                "SELECT EXISTS (SELECT 1 FROM guardian_steps WHERE session_id = $1 AND step_id = $2 AND method = $3)",
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
            count_turn_call: c.prepare(
                "INSERT INTO guardian_turn_calls (session_id, turn_id, budget, calls) VALUES ($1, $2, $3, 1)
                 ON CONFLICT (session_id, turn_id, budget) DO UPDATE SET calls = guardian_turn_calls.calls + 1
                 RETURNING calls",
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
    /// Chain heads of locked sessions, as this transaction last saw or
    /// wrote them (saves one round trip per step of a batch).
    heads: HashMap<String, Option<(u64, Hash)>>,
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

fn step_row(r: mnemo_postgres::postgres::Row) -> Result<StepRecord, StoreError> {
    let prov: String = r.get(3);
    let provenance: Vec<Provenance> =
        serde_json::from_str(&prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(StepRecord {
        seq: r.get::<_, i64>(0).max(0) as u64,
        step_id: r.get(1),
        method: r.get(2),
        provenance,
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
            heads: HashMap::new(),
            pending_prune: None,
        })
    }

    /// Whether the open transaction holds `session`'s row lock, so that
    /// its cached chain head cannot be moved by another writer.
    fn holds_lock(&self, session: &str) -> bool {
        self.in_tx && self.locked.contains_key(session)
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
                     guardian_steps, guardian_chain, guardian_compactions,
                     guardian_step_origins, guardian_step_nodes, guardian_turn_calls",
                )
            })
            .map_err(db)?
            .map_err(pgerr)
    }

    fn end_tx(&mut self, sql: &'static str) -> Result<(), StoreError> {
        self.in_tx = false;
        self.failed = false;
        self.locked.clear();
        self.heads.clear();
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
            self.heads.clear();
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
        let mut origins: Vec<String> = step
            .provenance
            .iter()
            .map(|p| p.origin.as_str().to_string())
            .collect();
        origins.sort_unstable();
        origins.dedup();
        // The last node of each provenance id within the step.
        let mut last: HashMap<&str, &Provenance> = HashMap::new();
        for p in &step.provenance {
            last.insert(p.provenance_id.as_str(), p);
        }
        let mut node_ids = Vec::with_capacity(last.len());
        let mut nodes = Vec::with_capacity(last.len());
        for (id, p) in last {
            node_ids.push(id.to_string());
            nodes.push(serde_json::to_string(p).map_err(|e| StoreError::Corrupt(e.to_string()))?);
        }
        let inserted = self.with_session(session, move |c, st, s| {
            let row = c
                .query_one(
                    &st.record_step,
                    &[
                        &s, &seq, &step_id, &method, &prov, &origins, &node_ids, &nodes,
                    ],
                )
                .map_err(pgerr)?;
            Ok(row.get::<_, i64>(0))
        })?;
        if inserted == 0 {
            return Err(StoreError::StepExists {
                session: session.to_string(),
                seq: step.seq,
            });
        }
        Ok(())
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        self.with_session(session, |c, st, s| {
            let rows = c.query(&st.steps, &[&s]).map_err(pgerr)?;
            rows.into_iter().map(step_row).collect()
        })
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        self.with_session(session, move |c, st, s| {
            let rows = c.query(&st.steps_by_id, &[&s, &ids]).map_err(pgerr)?;
            rows.into_iter().map(step_row).collect()
        })
    }
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        let mut origins: Vec<String> = origins.iter().map(|o| o.as_str().to_string()).collect();
        origins.sort_unstable();
        origins.dedup();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let before = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_session(session, move |c, st, s| {
            let rows = c
                .query(
                    &st.steps_with_origin,
                    &[&s, &origins, &after, &before, &limit],
                )
                .map_err(pgerr)?;
            rows.into_iter().map(step_row).collect()
        })
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        self.with_session(session, move |c, st, s| {
            let rows = c.query(&st.latest_nodes, &[&s, &ids]).map_err(pgerr)?;
            rows.into_iter()
                .map(|r| {
                    let node: String = r.get(1);
                    let p: Provenance = serde_json::from_str(&node)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                    Ok((r.get::<_, i64>(0).max(0) as u64, p))
                })
                .collect()
        })
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        let step_id = step_id.to_string();
        let method = method.to_string();
        self.with_session(session, move |c, st, s| {
            let row = c
                .query_one(&st.has_step, &[&s, &step_id, &method])
                .map_err(pgerr)?;
            Ok(row.get::<_, bool>(0))
        })
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        // Under the session's row lock: two instances counting calls of one
        // turn take turns, and each sees the other's count.
        let turn = turn.to_string();
        let budget = budget.to_string();
        self.with_session(session, move |c, st, s| {
            let row = c
                .query_one(&st.count_turn_call, &[&s, &turn, &budget])
                .map_err(pgerr)?;
            Ok(Some(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
        })
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        if self.holds_lock(session)
            && let Some(head) = self.heads.get(session)
        {
            return Ok(*head);
        }
        let head = self.with_session(session, |c, st, s| {
            match c.query_opt(&st.chain_head, &[&s]).map_err(pgerr)? {
                None => Ok(None),
                Some(r) => Ok(Some((
                    r.get::<_, i64>(0).max(0) as u64,
                    hash_from(r.get::<_, Vec<u8>>(1))?,
                ))),
            }
        })?;
        if self.holds_lock(session) {
            self.heads.insert(session.to_string(), head);
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
        let n = seq;
        let seq = seq_i64(seq)?;
        let canonical = canonical.to_string();
        let bytes = hash.to_vec();
        let out = self.with_session(session, move |c, st, s| {
            c.execute(&st.append_chain, &[&s, &seq, &canonical, &bytes])
                .map_err(pgerr)?;
            Ok(())
        });
        match (&out, self.holds_lock(session)) {
            (Ok(()), true) => {
                // Advanced only from a head this transaction read: the head
                // is the entry with the highest number.
                if let Some(h) = self.heads.get_mut(session)
                    && h.is_none_or(|(m, _)| n > m)
                {
                    *h = Some((n, *hash));
                }
            }
            _ => {
                self.heads.remove(session);
            }
        }
        out
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
