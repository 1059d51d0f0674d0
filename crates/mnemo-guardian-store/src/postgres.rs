//! The Guardian's session store in PostgreSQL (`--store postgres://…`), for
//! several Guardian processes, on several machines, sharing sessions.
//!
//! Consistency between processes comes from the database alone: every
//! unit of work (one request, or one turn's batch) is a transaction, and
//! the first time it touches a session it locks that session's row
//! (`SELECT … FOR UPDATE`, the row is created on first use). A second
//! process deciding a request for the same session waits for the first to
//! commit, then reads what it wrote (READ COMMITTED takes a fresh snapshot
//! per statement): the replay marks, the chain head and the steps. A batch
//! locks all its sessions up front, in order
//! ([`SessionStore::lock_sessions`]), so two batches never deadlock. Within
//! a transaction the locked session's handshake and chain head are read
//! once, then advanced by each append (no other transaction can append
//! while the row is locked). Across transactions a handle keeps only a copy
//! of what it last committed of each session, which a batch may be decided
//! against; it is never committed without the session's lock and a check,
//! in the same transaction, that the session is still as copied (else
//! nothing is kept and the batch is decided again, see [`PostgresStore`]).
//! Sessions are keyed by an integer (`sid`) in every table but
//! `guardian_sessions` (schema version 4).
//!
//! Pruning the replay window is deferred to after the commit and skips rows
//! another transaction holds, so it never waits inside a unit of work.

use crate::decode::{hash_from, verdict_from};
use mnemo_acs::chain::Hash;
use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::store::{
    CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError,
};
use mnemo_postgres::postgres::Statement;
use mnemo_postgres::postgres::types::ToSql;
use mnemo_postgres::{Pg, PgError, PgPipe, PipeClient as Client, Step};
use std::collections::HashMap;

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
    // Raises STALE_STATE unless `ok`: the statement that checks, inside a
    // unit of work sent in one trip, that a session is as this process
    // last committed it, so that the writes after it never land on a
    // session another process moved on.
    "
CREATE FUNCTION guardian_fresh(ok BOOLEAN) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION 'mnemo: the session moved on since this process last committed it'
      USING ERRCODE = 'MN409';
  END IF;
  RETURN true;
END $$;
",
    // Version 4: every row names its session by an integer key (`sid`,
    // given by guardian_sessions) instead of the 36-byte id, text keys
    // compare bytewise (COLLATE "C": the database's locale compares with
    // strcoll), and a step's nodes index points into the step's
    // provenance (`idx`) instead of holding a second copy of each node.
    // The columns that used to be added outside the numbering come first,
    // so that a database of any earlier version has them.
    "
ALTER TABLE guardian_compactions ADD COLUMN IF NOT EXISTS reasoning TEXT,
  ADD COLUMN IF NOT EXISTS reason_codes TEXT;
CREATE TABLE IF NOT EXISTS guardian_turn_calls (
  session_id TEXT NOT NULL, turn_id TEXT NOT NULL, budget TEXT NOT NULL, calls BIGINT NOT NULL,
  PRIMARY KEY (session_id, turn_id, budget));
INSERT INTO guardian_sessions (session_id)
  SELECT session_id FROM guardian_seen_requests UNION SELECT session_id FROM guardian_seen_nonces
  UNION SELECT session_id FROM guardian_steps UNION SELECT session_id FROM guardian_chain
  UNION SELECT session_id FROM guardian_compactions UNION SELECT session_id FROM guardian_turn_calls
  UNION SELECT session_id FROM guardian_step_origins UNION SELECT session_id FROM guardian_step_nodes
  ON CONFLICT DO NOTHING;
ALTER TABLE guardian_sessions ALTER COLUMN session_id TYPE TEXT COLLATE \"C\",
  ADD COLUMN sid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE;

CREATE TABLE guardian_seen_requests_4 (
  sid BIGINT NOT NULL, request_id TEXT COLLATE \"C\" NOT NULL, at_ms BIGINT NOT NULL,
  PRIMARY KEY (sid, request_id));
INSERT INTO guardian_seen_requests_4 SELECT k.sid, t.request_id, t.at_ms
  FROM guardian_seen_requests t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_seen_requests;
ALTER TABLE guardian_seen_requests_4 RENAME TO guardian_seen_requests;
CREATE INDEX guardian_seen_requests_at ON guardian_seen_requests (at_ms);

CREATE TABLE guardian_seen_nonces_4 (
  sid BIGINT NOT NULL, nonce TEXT COLLATE \"C\" NOT NULL, at_ms BIGINT NOT NULL,
  PRIMARY KEY (sid, nonce));
INSERT INTO guardian_seen_nonces_4 SELECT k.sid, t.nonce, t.at_ms
  FROM guardian_seen_nonces t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_seen_nonces;
ALTER TABLE guardian_seen_nonces_4 RENAME TO guardian_seen_nonces;
CREATE INDEX guardian_seen_nonces_at ON guardian_seen_nonces (at_ms);

CREATE TABLE guardian_step_nodes_4 (
  sid BIGINT NOT NULL, provenance_id TEXT COLLATE \"C\" NOT NULL, seq BIGINT NOT NULL,
  idx INTEGER NOT NULL, PRIMARY KEY (sid, provenance_id, seq));
INSERT INTO guardian_step_nodes_4
  SELECT DISTINCT ON (k.sid, e.value->>'provenance_id', s.seq)
         k.sid, e.value->>'provenance_id', s.seq, (e.i - 1)::integer
  FROM guardian_steps s JOIN guardian_sessions k ON k.session_id = s.session_id,
       json_array_elements(s.provenance::json) WITH ORDINALITY AS e(value, i)
  ORDER BY k.sid, e.value->>'provenance_id', s.seq, e.i DESC;
DROP TABLE guardian_step_nodes;
ALTER TABLE guardian_step_nodes_4 RENAME TO guardian_step_nodes;

CREATE TABLE guardian_step_origins_4 (
  sid BIGINT NOT NULL, origin TEXT COLLATE \"C\" NOT NULL, seq BIGINT NOT NULL,
  PRIMARY KEY (sid, origin, seq));
INSERT INTO guardian_step_origins_4 SELECT k.sid, t.origin, t.seq
  FROM guardian_step_origins t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_step_origins;
ALTER TABLE guardian_step_origins_4 RENAME TO guardian_step_origins;

CREATE TABLE guardian_steps_4 (
  sid BIGINT NOT NULL, seq BIGINT NOT NULL, step_id TEXT COLLATE \"C\" NOT NULL,
  method TEXT NOT NULL, provenance TEXT NOT NULL, PRIMARY KEY (sid, seq));
INSERT INTO guardian_steps_4 SELECT k.sid, t.seq, t.step_id, t.method, t.provenance
  FROM guardian_steps t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_steps;
ALTER TABLE guardian_steps_4 RENAME TO guardian_steps;
CREATE INDEX guardian_steps_by_step_id ON guardian_steps (sid, step_id, seq);

CREATE TABLE guardian_chain_4 (
  sid BIGINT NOT NULL, seq BIGINT NOT NULL, canonical TEXT NOT NULL, hash BYTEA NOT NULL,
  PRIMARY KEY (sid, seq));
INSERT INTO guardian_chain_4 SELECT k.sid, t.seq, t.canonical, t.hash
  FROM guardian_chain t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_chain;
ALTER TABLE guardian_chain_4 RENAME TO guardian_chain;

CREATE TABLE guardian_turn_calls_4 (
  sid BIGINT NOT NULL, turn_id TEXT COLLATE \"C\" NOT NULL, budget TEXT COLLATE \"C\" NOT NULL,
  calls BIGINT NOT NULL, PRIMARY KEY (sid, turn_id, budget));
INSERT INTO guardian_turn_calls_4 SELECT k.sid, t.turn_id, t.budget, t.calls
  FROM guardian_turn_calls t JOIN guardian_sessions k ON k.session_id = t.session_id;
DROP TABLE guardian_turn_calls;
ALTER TABLE guardian_turn_calls_4 RENAME TO guardian_turn_calls;

ALTER TABLE guardian_compactions ADD COLUMN sid BIGINT;
UPDATE guardian_compactions t SET sid = k.sid FROM guardian_sessions k
  WHERE k.session_id = t.session_id;
ALTER TABLE guardian_compactions DROP COLUMN session_id, ALTER COLUMN sid SET NOT NULL;
CREATE INDEX guardian_compactions_session ON guardian_compactions (sid, id);
",
];

/// The SQLSTATE `guardian_fresh` raises.
const STALE_STATE: &str = "MN409";

/// Statements prepared once per connection.
#[derive(Debug)]
struct Stmts {
    lock: Statement,
    state: Statement,
    fresh: Statement,
    flush: Statement,
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
    prune_requests: Statement,
    prune_nonces: Statement,
}

impl Stmts {
    fn prepare(c: &mut Client) -> Result<Stmts, mnemo_postgres::postgres::Error> {
        Ok(Stmts {
            lock: c.prepare(
                "SELECT version, methods, sid FROM guardian_sessions WHERE session_id = $1 FOR UPDATE",
            )?,
            // What a unit of work needs of a session it has just locked, in
            // one round trip (a statement of its own, after the lock, so
            // that it reads what the previous holder committed): the chain
            // head, the last step number, and which of the request ids and
            // nonces it is about to mark the session has already seen.
            state: c.prepare(
                "SELECT h.seq, h.hash,
                   (SELECT max(seq) FROM guardian_steps WHERE sid = k.sid),
                   ARRAY(SELECT request_id FROM guardian_seen_requests
                         WHERE sid = k.sid AND request_id = ANY($2::text[])),
                   ARRAY(SELECT nonce FROM guardian_seen_nonces
                         WHERE sid = k.sid AND nonce = ANY($3::text[]))
                 FROM guardian_sessions AS k
                 LEFT JOIN LATERAL (SELECT seq, hash FROM guardian_chain WHERE sid = k.sid
                                    ORDER BY seq DESC LIMIT 1) AS h ON true
                 WHERE k.session_id = $1",
            )?,
            // After the lock, in a statement of its own (a fresh snapshot):
            // raises STALE_STATE unless the session's handshake, last step
            // and chain head are the ones given ($2-$6, NULL for none).
            fresh: c.prepare(
                "SELECT guardian_fresh(
                   EXISTS (SELECT 1 FROM guardian_sessions WHERE sid = $1::bigint
                           AND version IS NOT DISTINCT FROM $2::text
                           AND methods IS NOT DISTINCT FROM $3::text)
                   AND (SELECT max(seq) FROM guardian_steps WHERE sid = $1::bigint)
                       IS NOT DISTINCT FROM $4::bigint
                   AND (SELECT max(seq) FROM guardian_chain WHERE sid = $1::bigint)
                       IS NOT DISTINCT FROM $5::bigint
                   AND (SELECT hash FROM guardian_chain WHERE sid = $1::bigint
                        ORDER BY seq DESC LIMIT 1) IS NOT DISTINCT FROM $6::bytea)",
            )?,
            // The writes a unit of work deferred (rows it knows to be new),
            // all in one statement: every data-modifying WITH runs once.
            // Plain INSERTs (no ON CONFLICT: its speculative insertion
            // writes a WAL record more a row): a row that is there after
            // all would be a unique violation, failing the unit of work,
            // never a replay silently accepted.
            flush: c.prepare(
                "WITH r AS (
                   INSERT INTO guardian_seen_requests (sid, request_id, at_ms)
                   SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[])),
                 n AS (
                   INSERT INTO guardian_seen_nonces (sid, nonce, at_ms)
                   SELECT * FROM unnest($4::bigint[], $5::text[], $6::bigint[])),
                 ch AS (
                   INSERT INTO guardian_chain (sid, seq, canonical, hash)
                   SELECT * FROM unnest($7::bigint[], $8::bigint[], $9::text[], $10::bytea[])),
                 st AS (
                   INSERT INTO guardian_steps (sid, seq, step_id, method, provenance)
                   SELECT * FROM unnest($11::bigint[], $12::bigint[], $13::text[], $14::text[], $15::text[])),
                 o AS (
                   INSERT INTO guardian_step_origins (sid, origin, seq)
                   SELECT * FROM unnest($16::bigint[], $17::text[], $18::bigint[])),
                 nd AS (
                   INSERT INTO guardian_step_nodes (sid, provenance_id, seq, idx)
                   SELECT * FROM unnest($19::bigint[], $20::text[], $21::bigint[], $22::integer[]))
                 SELECT 1",
            )?,
            create: c.prepare(
                "INSERT INTO guardian_sessions (session_id) VALUES ($1) ON CONFLICT DO NOTHING",
            )?,
            set_handshake: c.prepare(
                "UPDATE guardian_sessions SET version = $2, methods = $3 WHERE session_id = $1",
            )?,
            mark_request: c.prepare(
                "INSERT INTO guardian_seen_requests (sid, request_id, at_ms)
                 SELECT sid, $2, $3 FROM guardian_sessions WHERE session_id = $1 ON CONFLICT DO NOTHING",
            )?,
            mark_nonce: c.prepare(
                "INSERT INTO guardian_seen_nonces (sid, nonce, at_ms)
                 SELECT sid, $2, $3 FROM guardian_sessions WHERE session_id = $1 ON CONFLICT DO NOTHING",
            )?,
            // The step and its index rows in one statement; a step number
            // already recorded inserts nothing (and aborts nothing).
            record_step: c.prepare(
                "WITH st AS (
                   INSERT INTO guardian_steps (sid, seq, step_id, method, provenance)
                   SELECT sid, $2, $3, $4, $5 FROM guardian_sessions WHERE session_id = $1
                   ON CONFLICT (sid, seq) DO NOTHING RETURNING sid, seq),
                 o AS (
                   INSERT INTO guardian_step_origins (sid, origin, seq)
                   SELECT st.sid, x.origin, st.seq FROM st, unnest($6::text[]) AS x(origin)),
                 n AS (
                   INSERT INTO guardian_step_nodes (sid, provenance_id, seq, idx)
                   SELECT st.sid, u.id, st.seq, u.idx FROM st, unnest($7::text[], $8::integer[]) AS u(id, idx))
                 SELECT count(*) FROM st",
            )?,
            steps: c.prepare(
                "SELECT seq, step_id, method, provenance FROM guardian_steps
                 WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1) ORDER BY seq",
            )?,
            steps_by_id: c.prepare(
                "SELECT DISTINCT ON (step_id) seq, step_id, method, provenance FROM guardian_steps
                 WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1)
                   AND step_id = ANY($2::text[]) ORDER BY step_id, seq DESC",
            )?,
            steps_with_origin: c.prepare(
                "SELECT DISTINCT s.seq, s.step_id, s.method, s.provenance
                 FROM guardian_sessions k
                 CROSS JOIN unnest($2::text[]) AS g(origin)
                 CROSS JOIN LATERAL (
                   SELECT o.seq FROM guardian_step_origins o
                   WHERE o.sid = k.sid AND o.origin = g.origin AND o.seq > $3 AND o.seq < $4
                   ORDER BY o.seq DESC LIMIT $5) AS x
                 JOIN guardian_steps s ON s.sid = k.sid AND s.seq = x.seq
                 WHERE k.session_id = $1
                 ORDER BY s.seq DESC LIMIT $5",
            )?,
            latest_nodes: c.prepare(
                // The node itself is read from its step (stored once).
                "SELECT d.seq, (s.provenance::json -> d.idx)::text
                 FROM (SELECT DISTINCT ON (provenance_id) sid, seq, idx FROM guardian_step_nodes
                       WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1)
                         AND provenance_id = ANY($2::text[])
                       ORDER BY provenance_id, seq DESC) AS d
                 JOIN guardian_steps s ON s.sid = d.sid AND s.seq = d.seq",
            )?,
            has_step: c.prepare(
                "SELECT EXISTS (SELECT 1 FROM guardian_steps
                 WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1)
                   AND step_id = $2 AND method = $3)",
            )?,
            chain_head: c.prepare(
                "SELECT seq, hash FROM guardian_chain
                 WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1)
                 ORDER BY seq DESC LIMIT 1",
            )?,
            append_chain: c.prepare(
                "INSERT INTO guardian_chain (sid, seq, canonical, hash)
                 SELECT sid, $2, $3, $4 FROM guardian_sessions WHERE session_id = $1",
            )?,
            record_compaction: c.prepare(
                "INSERT INTO guardian_compactions (sid, step_id, entries, verdict, reasoning, reason_codes)
                 SELECT sid, $2, $3, $4, $5, $6 FROM guardian_sessions WHERE session_id = $1",
            )?,
            last_compaction: c.prepare(
                "SELECT step_id, entries, verdict, reasoning, reason_codes FROM guardian_compactions
                 WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1)
                 ORDER BY id DESC LIMIT 1",
            )?,
            count_turn_call: c.prepare(
                "INSERT INTO guardian_turn_calls (sid, turn_id, budget, calls)
                 SELECT sid, $2, $3, 1 FROM guardian_sessions WHERE session_id = $1
                 ON CONFLICT (sid, turn_id, budget) DO UPDATE SET calls = guardian_turn_calls.calls + 1
                 RETURNING calls",
            )?,
            // Skipping rows another transaction holds: never waits.
            prune_requests: c.prepare(
                "DELETE FROM guardian_seen_requests WHERE ctid IN (SELECT ctid FROM guardian_seen_requests WHERE at_ms < $1 FOR UPDATE SKIP LOCKED)",
            )?,
            prune_nonces: c.prepare(
                "DELETE FROM guardian_seen_nonces WHERE ctid IN (SELECT ctid FROM guardian_seen_nonces WHERE at_ms < $1 FOR UPDATE SKIP LOCKED)",
            )?,
        })
    }
}

/// Rows a unit of work has written but not yet sent: only rows it knows
/// to be new (their session is locked and their number is above the last
/// one, or their id was looked up under the lock), sent in one statement
/// before the next statement of the transaction and at its commit.
#[derive(Debug, Default)]
struct Pending {
    /// Replay marks: session, request id, time.
    req_session: Vec<i64>,
    req_id: Vec<String>,
    req_at: Vec<i64>,
    /// Nonces: session, nonce, time.
    nonce_session: Vec<i64>,
    nonce: Vec<String>,
    nonce_at: Vec<i64>,
    /// Chain entries: session, number, canonical text, hash.
    chain_session: Vec<i64>,
    chain_seq: Vec<i64>,
    chain_canonical: Vec<String>,
    chain_hash: Vec<Vec<u8>>,
    /// Steps: session, number, step id, method, provenance (JSON).
    step_session: Vec<i64>,
    step_seq: Vec<i64>,
    step_id: Vec<String>,
    step_method: Vec<String>,
    step_provenance: Vec<String>,
    /// Their origins index: session, origin, number.
    origin_session: Vec<i64>,
    origin: Vec<String>,
    origin_seq: Vec<i64>,
    /// Their nodes index: session, provenance id, number, the node's
    /// place in the step's provenance.
    node_session: Vec<i64>,
    node_id: Vec<String>,
    node_seq: Vec<i64>,
    node_idx: Vec<i32>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.req_id.is_empty()
            && self.nonce.is_empty()
            && self.chain_seq.is_empty()
            && self.step_seq.is_empty()
    }

    /// The flush statement's parameters ([`Stmts::flush`]).
    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        vec![
            &self.req_session,
            &self.req_id,
            &self.req_at,
            &self.nonce_session,
            &self.nonce,
            &self.nonce_at,
            &self.chain_session,
            &self.chain_seq,
            &self.chain_canonical,
            &self.chain_hash,
            &self.step_session,
            &self.step_seq,
            &self.step_id,
            &self.step_method,
            &self.step_provenance,
            &self.origin_session,
            &self.origin,
            &self.origin_seq,
            &self.node_session,
            &self.node_id,
            &self.node_seq,
            &self.node_idx,
        ]
    }

    fn flush(&self, c: &mut Client, st: &Stmts) -> Result<(), StoreError> {
        if self.is_empty() {
            return Ok(());
        }
        c.execute(&st.flush, &self.params()).map_err(pgerr)?;
        Ok(())
    }
}

/// What the open transaction knows of a session whose row it locked
/// (nothing else can write the session until it ends).
#[derive(Debug, Default, Clone)]
struct Locked {
    /// The session's integer key.
    sid: i64,
    handshake: Option<SessionHandshake>,
    /// The chain head, as this transaction last read or wrote it.
    head: Option<(u64, Hash)>,
    /// The highest step number recorded.
    last_step: Option<u64>,
    /// Request ids looked up under the lock: `true` once seen.
    requests: HashMap<String, bool>,
    /// Likewise nonces.
    nonces: HashMap<String, bool>,
}

/// What this process last committed of a session (or read under its lock
/// and committed unchanged): what a batch is decided against when every
/// session it names has one, before anything is sent.
#[derive(Debug, Clone)]
struct Seen {
    sid: i64,
    handshake: Option<SessionHandshake>,
    head: Option<(u64, Hash)>,
    last_step: Option<u64>,
}

/// The most sessions whose [`Seen`] a store keeps (beyond it, it forgets
/// them all and reads each again under its lock).
const SEEN_MAX: usize = 65_536;

/// [`Seen`] as the freshness check's parameters ([`Stmts::fresh`]).
#[derive(Debug)]
struct Check {
    session: String,
    sid: i64,
    version: Option<String>,
    methods: Option<String>,
    last_step: Option<i64>,
    head_seq: Option<i64>,
    head_hash: Option<Vec<u8>>,
}

impl Check {
    fn new(session: String, seen: &Seen) -> Check {
        Check {
            session,
            sid: seen.sid,
            version: seen.handshake.as_ref().map(|h| h.version.clone()),
            methods: seen
                .handshake
                .as_ref()
                .and_then(|h| h.methods.as_ref().map(|m| m.join("\n"))),
            last_step: seen.last_step.and_then(|s| i64::try_from(s).ok()),
            head_seq: seen.head.and_then(|(s, _)| i64::try_from(s).ok()),
            head_hash: seen.head.map(|(_, h)| h.to_vec()),
        }
    }

    /// Lock the session's row, then check it: two steps of a pipeline.
    fn steps<'a>(&'a self, st: &'a Stmts, steps: &mut Vec<Step<'a>>) {
        steps.push(Step::Query(&st.lock, vec![&self.session]));
        steps.push(Step::Query(
            &st.fresh,
            vec![
                &self.sid,
                &self.version,
                &self.methods,
                &self.last_step,
                &self.head_seq,
                &self.head_hash,
            ],
        ));
    }
}

/// Whether a pipeline's first failure says that what a unit of work was
/// decided against is out of date: the freshness check refused, or a row
/// it took to be new (a replay mark, a step, a chain entry) was there.
fn stale_in(results: &[Result<Rows, mnemo_postgres::postgres::Error>]) -> bool {
    use mnemo_postgres::postgres::error::SqlState;
    results
        .iter()
        .find_map(|r| r.as_ref().err())
        .and_then(|e| e.code())
        .is_some_and(|c| c.code() == STALE_STATE || *c == SqlState::UNIQUE_VIOLATION)
}

/// PostgreSQL-backed [`SessionStore`].
///
/// Round trips are its cost (each one also crosses to the connection's
/// thread and back), so a unit of work defers the writes whose outcome it
/// can know under its row lock (replay marks of announced ids, chain
/// entries and steps numbered above the session's last) and sends them in
/// one statement before its next statement or at commit, and it sends
/// statements that need no answer in between at once (pipelined,
/// [`mnemo_postgres::PgPipe`]): a batch of `steps/userMessage`s waits
/// twice, whatever its size and however many sessions it spans — once for
/// BEGIN with every session's row, lock and state, once for its rows with
/// COMMIT.
///
/// When every session of a batch is one this handle committed last (its
/// copy: handshake, last step, chain head), the batch is decided
/// against that, and sent in one trip: BEGIN, each session's lock and a
/// check that it is still as seen, the rows, COMMIT. A check that fails
/// (another process moved the session on) or a row that is there after
/// all (a replay mark another process holds) aborts the transaction:
/// nothing is kept, the copy is dropped, and
/// [`SessionStore::take_stale`] tells the Guardian to decide the batch
/// again, the two-trip way. A statement the batch needs the database for
/// (an index look-up, say) first sends the locks and checks.
#[derive(Debug)]
pub struct PostgresStore {
    /// The connection, with the statements prepared on it.
    pg: PgPipe<Stmts>,
    /// Where it connects ([`SessionStore::another`] opens another).
    url: Url,
    in_tx: bool,
    /// The open transaction's BEGIN is not sent yet: it goes with its
    /// first statement (one trip to the connection fewer), and a unit of
    /// work that sent nothing ends without a trip at all.
    begin_unsent: bool,
    /// A statement of the open transaction failed: PostgreSQL has aborted
    /// it, and its COMMIT would silently roll back.
    failed: bool,
    /// Sessions locked by the open transaction.
    locked: HashMap<String, Locked>,
    /// Replay marks announced for sessions not locked yet
    /// ([`SessionStore::expect_marks`]).
    expected: HashMap<String, (Vec<String>, Vec<String>)>,
    pending: Pending,
    pending_prune: Option<i64>,
    /// Per session, what this handle last committed.
    seen: HashMap<String, Seen>,
    /// The open transaction's sessions decided against [`Seen`] and not
    /// yet locked in the database (sorted), with what they were seen as.
    optimistic: Vec<(String, Seen)>,
    /// The last unit of work failed on a stale [`Seen`].
    stale: bool,
}

/// A connection string, shown without its password.
struct Url(String);

impl std::fmt::Debug for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&mnemo_postgres::redact_url(&self.0))
    }
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

type Rows = Vec<mnemo_postgres::postgres::Row>;

/// A pipeline's rows, step by step, or its first failure (after a failed
/// step the later ones only say that the transaction is aborted).
fn all_rows(
    results: Vec<Result<Rows, mnemo_postgres::postgres::Error>>,
) -> Result<Vec<Rows>, StoreError> {
    results.into_iter().map(|r| r.map_err(pgerr)).collect()
}

/// What a just-locked session's state row says ([`Stmts::state`]), with
/// the handshake its lock read.
fn locked_from(
    lock: &Rows,
    state: &Rows,
    ids: Vec<String>,
    nonces: Vec<String>,
) -> Result<Locked, StoreError> {
    let (sid, handshake) = match lock.first() {
        Some(row) => (row.get::<_, i64>(2), handshake_from(row.get(0), row.get(1))),
        None => {
            return Err(StoreError::Corrupt(
                "postgres: the session row was not there to lock".into(),
            ));
        }
    };
    let Some(row) = state.first() else {
        return Err(StoreError::Corrupt(
            "postgres: the session state query returned no row".into(),
        ));
    };
    let head = match (
        row.get::<_, Option<i64>>(0),
        row.get::<_, Option<Vec<u8>>>(1),
    ) {
        (Some(seq), Some(h)) => Some((seq.max(0) as u64, hash_from(h)?)),
        _ => None,
    };
    let last_step = row.get::<_, Option<i64>>(2).map(|s| s.max(0) as u64);
    let seen_ids: Vec<String> = row.get(3);
    let seen_nonces: Vec<String> = row.get(4);
    let mut requests: HashMap<String, bool> = ids.into_iter().map(|i| (i, false)).collect();
    for i in seen_ids {
        requests.insert(i, true);
    }
    let mut nonce_map: HashMap<String, bool> = nonces.into_iter().map(|n| (n, false)).collect();
    for n in seen_nonces {
        nonce_map.insert(n, true);
    }
    Ok(Locked {
        sid,
        handshake,
        head,
        last_step,
        requests,
        nonces: nonce_map,
    })
}

impl PostgresStore {
    /// Connects to `url`, applies the Guardian's migrations (refusing a
    /// database a newer mnemo wrote) and prepares its statements.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        // Migrations on a connection of their own (the driver's
        // transactions), closed when done; the store's on a pipelining one.
        {
            let mig = Pg::connect(url).map_err(db)?;
            mig.migrate(COMPONENT, MIGRATIONS).map_err(db)?;
        }
        PostgresStore::connect(url)
    }

    /// Connects to `url`, whose migrations are applied, and prepares the
    /// store's statements.
    fn connect(url: &str) -> Result<Self, StoreError> {
        let pg = PgPipe::connect_with(url, Stmts::prepare).map_err(db)?;
        Ok(PostgresStore {
            pg,
            url: Url(url.to_string()),
            in_tx: false,
            begin_unsent: false,
            failed: false,
            locked: HashMap::new(),
            expected: HashMap::new(),
            pending: Pending::default(),
            pending_prune: None,
            seen: HashMap::new(),
            optimistic: Vec::new(),
            stale: false,
        })
    }

    /// How many times this store has waited for the database (a
    /// statement, or several sent at once): its round trips; for tests
    /// and benchmarks.
    pub fn round_trips(&self) -> u64 {
        self.pg.round_trips()
    }

    /// The process id of this store's database backend
    /// (`pg_backend_pid()`; for tests and operators matching it to
    /// `pg_stat_activity`).
    pub fn backend_pid(&mut self) -> Result<i32, StoreError> {
        self.pg
            .call(|c, _| c.query_sql("SELECT pg_backend_pid()", &[]))
            .map_err(db)?
            .map_err(pgerr)?
            .first()
            .map(|r| r.get::<_, i32>(0))
            .ok_or_else(|| StoreError::Corrupt("pg_backend_pid() returned no row".into()))
    }

    /// The open transaction's view of `session`, when it holds its row
    /// lock (so that nobody else can write the session meanwhile).
    fn locked_mut(&mut self, session: &str) -> Option<&mut Locked> {
        if self.in_tx {
            self.locked.get_mut(session)
        } else {
            None
        }
    }

    /// Inside the open transaction, locks `session` (and reads its state)
    /// unless it holds it already.
    fn lock(&mut self, session: &str) -> Result<(), StoreError> {
        if self.in_tx && !self.locked.contains_key(session) {
            self.lock_many(&[session])?;
        }
        Ok(())
    }

    /// Inside the open transaction, locks those of `sessions` it does not
    /// hold yet, in the order given, and reads each one's state: one round
    /// trip for all of them, the transaction's BEGIN and the writes
    /// deferred so far included (each session: create its row if new,
    /// lock it, then read its state in a statement of its own, which
    /// therefore sees what the previous holder committed).
    fn lock_many(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        let mut todo: Vec<String> = Vec::new();
        for s in sessions {
            if !self.locked.contains_key(*s) && !todo.iter().any(|t| t == s) {
                todo.push((*s).to_string());
            }
        }
        if !self.in_tx || (todo.is_empty() && self.optimistic.is_empty()) {
            return Ok(());
        }
        let expects: Vec<(Vec<String>, Vec<String>)> = todo
            .iter()
            .map(|s| self.expected.remove(s).unwrap_or_default())
            .collect();
        let pending = std::mem::take(&mut self.pending);
        let begin = std::mem::take(&mut self.begin_unsent);
        // Sessions decided against what was seen: locked and checked
        // first, before the rows written against them.
        let checks: Vec<Check> = std::mem::take(&mut self.optimistic)
            .into_iter()
            .map(|(s, seen)| Check::new(s, &seen))
            .collect();
        let out = self
            .pg
            .call(move |c, st| {
                let mut steps: Vec<Step<'_>> =
                    Vec::with_capacity(2 + 2 * checks.len() + 3 * todo.len());
                if begin {
                    steps.push(Step::Simple("BEGIN"));
                }
                for check in &checks {
                    check.steps(st, &mut steps);
                }
                if !pending.is_empty() {
                    steps.push(Step::Query(&st.flush, pending.params()));
                }
                let first = steps.len();
                for (s, (ids, nonces)) in todo.iter().zip(&expects) {
                    steps.push(Step::Query(&st.create, vec![s]));
                    steps.push(Step::Query(&st.lock, vec![s]));
                    steps.push(Step::Query(&st.state, vec![s, ids, nonces]));
                }
                let results = c.pipeline(&steps);
                drop(steps);
                let stale = !checks.is_empty() && stale_in(&results);
                let rows = match all_rows(results) {
                    Ok(rows) => rows,
                    Err(e) => return Err((e, stale)),
                };
                let mut locked = Vec::with_capacity(todo.len());
                for (i, (s, (ids, nonces))) in todo.into_iter().zip(expects).enumerate() {
                    let at = first + 3 * i;
                    let l = locked_from(&rows[at + 1], &rows[at + 2], ids, nonces)
                        .map_err(|e| (e, false))?;
                    locked.push((s, l));
                }
                Ok(locked)
            })
            .map_err(|e| (db(e), false));
        match out.and_then(|o| o) {
            Ok(locked) => {
                self.locked.extend(locked);
                Ok(())
            }
            Err((e, stale)) => {
                self.failed = true;
                self.stale |= stale;
                Err(e)
            }
        }
    }

    /// Sends the open transaction's locks and checks of the sessions it
    /// decided against what it had seen, if any (before a statement that
    /// needs the database as it is).
    fn settle(&mut self) -> Result<(), StoreError> {
        if self.in_tx && !self.optimistic.is_empty() {
            self.lock_many(&[])?;
        }
        Ok(())
    }

    /// After a commit: what the transaction's sessions are now.
    fn remember(&mut self, locked: HashMap<String, Locked>) {
        if self.seen.len() + locked.len() > SEEN_MAX {
            self.seen.clear();
        }
        for (s, l) in locked {
            self.seen.insert(
                s,
                Seen {
                    sid: l.sid,
                    handshake: l.handshake,
                    head: l.head,
                    last_step: l.last_step,
                },
            );
        }
    }

    /// After a failure or a rollback: the transaction's sessions are read
    /// again under their locks next time.
    fn forget(&mut self, locked: &HashMap<String, Locked>) {
        for s in locked.keys() {
            self.seen.remove(s);
        }
    }

    /// Runs `f` on the connection with `session` locked: inside the open
    /// transaction (locking the session on first use and reading its
    /// state, then sending the deferred writes), or in a transaction of
    /// its own when none is open.
    fn with_session<R: Send + 'static>(
        &mut self,
        session: &str,
        f: impl FnOnce(&mut Client, &Stmts, &str) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let s = session.to_string();
        if !self.in_tx {
            // A transaction of its own: BEGIN and the lock in one trip.
            return self
                .pg
                .call(move |c, st| {
                    let locked = all_rows(c.pipeline(&[
                        Step::Simple("BEGIN"),
                        Step::Query(&st.create, vec![&s]),
                        Step::Query(&st.lock, vec![&s]),
                    ]));
                    let out = locked.and_then(|_| f(c, st, &s));
                    match &out {
                        Ok(_) => c.batch_execute("COMMIT").map_err(pgerr)?,
                        Err(_) => {
                            let _ = c.batch_execute("ROLLBACK");
                        }
                    }
                    out
                })
                .map_err(db)?;
        }
        self.settle()?;
        self.lock(session)?;
        let pending = std::mem::take(&mut self.pending);
        let out = self
            .pg
            .call(move |c, st| {
                pending.flush(c, st)?;
                f(c, st, &s)
            })
            .map_err(db);
        match out.and_then(|o| o) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Canonical texts and hashes of a session's chain entries, in order
    /// (for audits and tests).
    pub fn chain_entries(&mut self, session: &str) -> Result<Vec<(String, Hash)>, StoreError> {
        let s = session.to_string();
        self.settle()?;
        // After this transaction's deferred writes, without locking.
        let pending = std::mem::take(&mut self.pending);
        let rows = self
            .pg
            .call(move |c, st| {
                pending.flush(c, st)?;
                c.query_sql(
                    "SELECT canonical, hash FROM guardian_chain
                     WHERE sid = (SELECT sid FROM guardian_sessions WHERE session_id = $1) ORDER BY seq",
                    &[&s],
                )
                .map_err(pgerr)
            })
            .map_err(db)??;
        rows.into_iter()
            .map(|r| Ok((r.get::<_, String>(0), hash_from(r.get::<_, Vec<u8>>(1))?)))
            .collect()
    }

    /// Deletes every row of the Guardian's tables (tests and resets).
    pub fn clear(&mut self) -> Result<(), StoreError> {
        self.pg
            .call(|c, _| {
                c.batch_execute(
                    "TRUNCATE guardian_sessions, guardian_seen_requests, guardian_seen_nonces,
                     guardian_steps, guardian_chain, guardian_compactions,
                     guardian_step_origins, guardian_step_nodes, guardian_turn_calls",
                )
            })
            .map_err(db)?
            .map_err(pgerr)?;
        self.seen.clear();
        Ok(())
    }

    /// Ends the open transaction: sends the deferred writes and commits
    /// (`commit`), or drops them and rolls back. A transaction decided
    /// against what was seen sends its locks and checks with its rows and
    /// COMMIT, in one trip.
    fn end_tx(&mut self, commit: bool) -> Result<(), StoreError> {
        self.in_tx = false;
        self.failed = false;
        let locked = std::mem::take(&mut self.locked);
        self.expected.clear();
        let pending = std::mem::take(&mut self.pending);
        let optimistic = std::mem::take(&mut self.optimistic);
        let begin = std::mem::take(&mut self.begin_unsent);
        if begin && (!commit || pending.is_empty()) {
            // Nothing was sent, and nothing is to be written: there is no
            // transaction to end.
            if commit {
                self.remember(locked);
            } else {
                self.forget(&locked);
            }
            return Ok(());
        }
        let checks: Vec<Check> = optimistic
            .into_iter()
            .map(|(s, seen)| Check::new(s, &seen))
            .collect();
        let out = self
            .pg
            .call(move |c, st| {
                if !commit {
                    return (c.batch_execute("ROLLBACK").map_err(pgerr), false);
                }
                // The deferred rows and COMMIT in one trip: when the rows
                // fail, the transaction is aborted and its COMMIT rolls
                // back; the rows' error is the answer.
                let mut steps = Vec::with_capacity(3 + 2 * checks.len());
                if begin {
                    steps.push(Step::Simple("BEGIN"));
                }
                for check in &checks {
                    check.steps(st, &mut steps);
                }
                if !pending.is_empty() {
                    steps.push(Step::Query(&st.flush, pending.params()));
                }
                steps.push(Step::Simple("COMMIT"));
                let results = c.pipeline(&steps);
                let stale = !checks.is_empty() && stale_in(&results);
                (all_rows(results).map(drop), stale)
            })
            .map_err(db);
        match out {
            Ok((Ok(()), _)) if commit => {
                self.remember(locked);
                Ok(())
            }
            Ok((Ok(()), _)) => {
                self.forget(&locked);
                Ok(())
            }
            Ok((Err(e), stale)) => {
                self.stale |= stale;
                self.forget(&locked);
                Err(e)
            }
            Err(e) => {
                self.forget(&locked);
                Err(e)
            }
        }
    }

    /// Forgets replay marks older than `before_ms`, outside any unit of
    /// work, skipping rows another transaction holds. Best effort: a
    /// failure leaves rows that the next prune removes (the timestamp
    /// window refuses their replays meanwhile).
    fn prune_now(&mut self, before_ms: i64) {
        let _ = self.pg.call(move |c, st| {
            let _ = c.pipeline(&[
                Step::Query(&st.prune_requests, vec![&before_ms]),
                Step::Query(&st.prune_nonces, vec![&before_ms]),
            ]);
        });
    }
}

impl SessionStore for PostgresStore {
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            self.in_tx = true;
            self.begin_unsent = true;
            self.failed = false;
            self.stale = false;
            self.locked.clear();
            self.optimistic.clear();
            self.pending = Pending::default();
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        if !self.in_tx {
            return Ok(());
        }
        if self.failed {
            let _ = self.end_tx(false);
            return Err(StoreError::Backend(
                "postgres: a statement of this unit of work failed; nothing of it was kept".into(),
            ));
        }
        self.end_tx(true)?;
        if let Some(before) = self.pending_prune.take() {
            self.prune_now(before);
        }
        Ok(())
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.in_tx {
            self.pending_prune = None;
            self.end_tx(false)?;
        }
        Ok(())
    }
    fn lock_sessions(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        // Every session seen, nothing sent yet: decide against what was
        // seen, and lock and check at commit (or before the first
        // statement that needs the database).
        if self.in_tx
            && self.begin_unsent
            && !self.failed
            && self.locked.is_empty()
            && self.pending.is_empty()
            && !sessions.is_empty()
            && sessions.iter().all(|s| self.seen.contains_key(*s))
        {
            let mut sorted: Vec<&str> = sessions.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            for s in sorted {
                let Some(seen) = self.seen.get(s).cloned() else {
                    continue;
                };
                let (ids, nonces) = self.expected.remove(s).unwrap_or_default();
                self.locked.insert(
                    s.to_string(),
                    Locked {
                        sid: seen.sid,
                        handshake: seen.handshake.clone(),
                        head: seen.head,
                        last_step: seen.last_step,
                        requests: ids.into_iter().map(|i| (i, false)).collect(),
                        nonces: nonces.into_iter().map(|n| (n, false)).collect(),
                    },
                );
                self.optimistic.push((s.to_string(), seen));
            }
            return Ok(());
        }
        self.lock_many(sessions)
    }
    fn take_stale(&mut self) -> bool {
        std::mem::take(&mut self.stale)
    }
    fn wants_marks_ahead(&self) -> bool {
        true
    }
    /// A second connection to the same database: everything a decision
    /// reads is there, under its row locks, so two handles decide as two
    /// processes would.
    fn another(&self) -> Option<Result<Box<dyn SessionStore + Send>, StoreError>> {
        Some(
            PostgresStore::connect(&self.url.0)
                .map(|s| Box::new(s) as Box<dyn SessionStore + Send>),
        )
    }
    fn expect_marks(
        &mut self,
        session: &str,
        request_ids: &[&str],
        nonces: &[&str],
    ) -> Result<(), StoreError> {
        if self.in_tx && !self.locked.contains_key(session) {
            let e = self.expected.entry(session.to_string()).or_default();
            e.0.extend(request_ids.iter().map(|s| s.to_string()));
            e.1.extend(nonces.iter().map(|s| s.to_string()));
        }
        Ok(())
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        self.lock(session)?;
        if let Some(l) = self.locked_mut(session) {
            return Ok(l.handshake.clone());
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
        if let Some(l) = self.locked_mut(session) {
            l.handshake = Some(hs.clone());
        }
        Ok(())
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        self.lock(session)?;
        if let Some(l) = self.locked_mut(session)
            && let Some(seen) = l.requests.get_mut(request_id)
        {
            if *seen {
                return Ok(false);
            }
            *seen = true;
            let sid = l.sid;
            let p = &mut self.pending;
            p.req_session.push(sid);
            p.req_id.push(request_id.to_string());
            p.req_at.push(at_ms);
            return Ok(true);
        }
        let id = request_id.to_string();
        self.with_session(session, move |c, st, s| {
            Ok(c.execute(&st.mark_request, &[&s, &id, &at_ms])
                .map_err(pgerr)?
                == 1)
        })
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.lock(session)?;
        if let Some(l) = self.locked_mut(session)
            && let Some(seen) = l.nonces.get_mut(nonce)
        {
            if *seen {
                return Ok(false);
            }
            *seen = true;
            let sid = l.sid;
            let p = &mut self.pending;
            p.nonce_session.push(sid);
            p.nonce.push(nonce.to_string());
            p.nonce_at.push(at_ms);
            return Ok(true);
        }
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
        // The place of the last node of each provenance id within the
        // step (the node itself is read from the step's provenance).
        let mut last: HashMap<&str, i32> = HashMap::new();
        for (i, p) in step.provenance.iter().enumerate() {
            let i = i32::try_from(i)
                .map_err(|_| StoreError::Corrupt(format!("{i} provenance nodes in a step")))?;
            last.insert(p.provenance_id.as_str(), i);
        }
        let mut node_ids = Vec::with_capacity(last.len());
        let mut nodes = Vec::with_capacity(last.len());
        for (id, i) in last {
            node_ids.push(id.to_string());
            nodes.push(i);
        }
        self.lock(session)?;
        // Above the session's last step (under the lock): certainly new.
        if let Some(l) = self.locked_mut(session)
            && l.last_step.is_none_or(|m| step.seq > m)
        {
            l.last_step = Some(step.seq);
            let sid = l.sid;
            let p = &mut self.pending;
            p.step_session.push(sid);
            p.step_seq.push(seq);
            p.step_id.push(step_id);
            p.step_method.push(method);
            p.step_provenance.push(prov);
            for o in origins {
                p.origin_session.push(sid);
                p.origin.push(o);
                p.origin_seq.push(seq);
            }
            for (id, node) in node_ids.into_iter().zip(nodes) {
                p.node_session.push(sid);
                p.node_id.push(id);
                p.node_seq.push(seq);
                p.node_idx.push(node);
            }
            return Ok(());
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
        self.lock(session)?;
        if let Some(l) = self.locked_mut(session) {
            return Ok(l.head);
        }
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
        let n = seq;
        let seq = seq_i64(seq)?;
        self.lock(session)?;
        // Above the head (the entry with the highest number, under the
        // lock): certainly new.
        if let Some(l) = self.locked_mut(session)
            && l.head.is_none_or(|(m, _)| n > m)
        {
            l.head = Some((n, *hash));
            let sid = l.sid;
            let p = &mut self.pending;
            p.chain_session.push(sid);
            p.chain_seq.push(seq);
            p.chain_canonical.push(canonical.to_string());
            p.chain_hash.push(hash.to_vec());
            return Ok(());
        }
        let canonical = canonical.to_string();
        let bytes = hash.to_vec();
        self.with_session(session, move |c, st, s| {
            c.execute(&st.append_chain, &[&s, &seq, &canonical, &bytes])
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
