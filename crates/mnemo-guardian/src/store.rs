//! Session state behind the [`SessionStore`] trait: handshakes (with the
//! methods they negotiated), seen request ids and nonces (replay, scoped to
//! a session as ACS §10.3 says), recorded steps with their provenance, the
//! hash chain head and preCompact decisions. [`MemoryStore`] is for tests and one-shot use;
//! `mnemo_guardian_store::SqliteStore` is the default, in a file.

use crate::chain::Hash;
use crate::model::{Origin, Provenance, Verdict};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database behind the store said no.
    #[error("session store: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// Stored data did not decode.
    #[error("session store: corrupt record: {0}")]
    Corrupt(String),
    /// Filesystem.
    #[error("session store: {0}")]
    Io(#[from] std::io::Error),
    /// A step with this number is already recorded in the session: a
    /// recorded step is never replaced.
    #[error(
        "session store: step {seq} of session {session} is already recorded; a step is never replaced"
    )]
    StepExists {
        /// The session.
        session: String,
        /// The step number.
        seq: u64,
    },
}

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// Order within the session (assigned by the Guardian, 1-based).
    pub seq: u64,
    /// The step id (the request's `request_id`).
    pub step_id: String,
    /// The ACS method.
    pub method: String,
    /// Provenance of what it carried.
    pub provenance: Vec<Provenance>,
}

/// What a session's `handshake/hello` negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHandshake {
    /// The negotiated ACS version.
    pub version: String,
    /// The methods the ServerHello evaluates for this session
    /// (`methods_evaluated`); any other method is CAPABILITY_NOT_NEGOTIATED.
    /// `None`: recorded before methods were kept (every method is allowed).
    pub methods: Option<Vec<String>>,
}

impl SessionHandshake {
    /// Whether `method` was negotiated.
    pub fn allows(&self, method: &str) -> bool {
        self.methods
            .as_ref()
            .is_none_or(|m| m.iter().any(|x| x == method))
    }
}

/// A preCompact decision, kept to check the matching postCompact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRecord {
    /// The preCompact's request id.
    pub step_id: String,
    /// Its `entries_to_compact`.
    pub entries: Vec<String>,
    /// The verdict given.
    pub verdict: Verdict,
    /// The decision's reasoning (a deny says what ends it: its way out)
    /// and its reason codes; `None` in records of stores written before
    /// they were kept.
    pub reasoning: Option<String>,
    /// The decision's machine-readable reason codes.
    pub reason_codes: Vec<String>,
}

/// Storage of the Guardian's session state. Every method is one small
/// operation; `begin`/`commit` bracket one request.
pub trait SessionStore {
    /// Starts a unit of work (one request).
    fn begin(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Ends a unit of work.
    fn commit(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Abandons a unit of work (after a store failure), where supported.
    fn rollback(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Within a unit of work, takes whatever lock the store keeps per
    /// session for every session of `sessions` (sorted, without
    /// duplicates), before any of them is touched. A store shared by
    /// several processes locks a session on first use; a batch naming
    /// several sessions calls this first, so that two processes always
    /// lock in the same order and never wait on each other in a cycle.
    fn lock_sessions(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        let _ = sessions;
        Ok(())
    }
    /// Within a unit of work, before [`lock_sessions`](Self::lock_sessions):
    /// the request ids and nonces that the unit of work is about to mark in
    /// `session`, so that a store paying a round trip per statement can
    /// look them all up at once, when it locks the session. A hint only: the
    /// answers of [`mark_request`](Self::mark_request) and
    /// [`mark_nonce`](Self::mark_nonce) never depend on it.
    fn expect_marks(
        &mut self,
        session: &str,
        request_ids: &[&str],
        nonces: &[&str],
    ) -> Result<(), StoreError> {
        let _ = (session, request_ids, nonces);
        Ok(())
    }
    /// Whether [`expect_marks`](Self::expect_marks) does anything here
    /// (the Guardian skips collecting the marks otherwise: 4.5 % of a
    /// request's instructions on the in-memory store).
    fn wants_marks_ahead(&self) -> bool {
        false
    }
    /// Another handle on this same store with a connection of its own, for
    /// a second decider thread of one process: only a store whose state
    /// lives wholly in a database that several processes share (so two
    /// handles decide as two processes would, under the database's row
    /// locks) and whose units of work wait on the network (PostgreSQL).
    /// `None` (the default): the store has one handle, decided on one
    /// thread.
    fn another(&self) -> Option<Result<Box<dyn SessionStore + Send>, StoreError>> {
        None
    }
    /// Whether the unit of work that just failed had been decided against
    /// this handle's own copy of a session's state (what it last
    /// committed: chain head, last step, handshake) that another process
    /// had since moved on, or with a replay mark another process holds:
    /// the store found out when it sent the unit of work and kept nothing
    /// of it, and has dropped its copy, so the same requests run again are
    /// decided against the database. Reading clears it. `false` (the
    /// default): the store never decides against a copy.
    fn take_stale(&mut self) -> bool {
        false
    }
    /// The session's handshake, when it completed one.
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError>;
    /// Records (or replaces) the session's handshake.
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError>;
    /// Records a request id within its session; `false` when the session
    /// already saw it (replay). The same id in another session is fresh.
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Records a `nonce` within its session; `false` when the session
    /// already saw it (replay) inside the window that pruning keeps.
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError>;
    /// Forgets request ids and nonces recorded before `before_ms` (they can
    /// no longer be replayed: their timestamps are outside the window).
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        let _ = before_ms;
        Ok(())
    }
    /// Appends a step. A step whose number the session already recorded
    /// is refused with [`StoreError::StepExists`] and changes nothing.
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError>;
    /// All steps of a session, in order.
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError>;
    /// For each of `ids`, the latest recorded step with that step id (ids
    /// never recorded have none), in any order. A store indexes it; the
    /// default reads every step.
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        let mut latest: HashMap<String, StepRecord> = HashMap::new();
        for st in self.steps(session)? {
            if ids.contains(&st.step_id.as_str()) {
                latest.insert(st.step_id.clone(), st);
            }
        }
        Ok(latest.into_values().collect())
    }
    /// The steps numbered above `after` and below `before` (unbounded when
    /// `None`) that carry a provenance node of one of `origins`, newest
    /// first, at most `limit`. A store indexes it; the default reads every
    /// step.
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        let mut out: Vec<StepRecord> = self
            .steps(session)?
            .into_iter()
            .filter(|st| {
                st.seq > after
                    && before.is_none_or(|b| st.seq < b)
                    && st.provenance.iter().any(|p| origins.contains(&p.origin))
            })
            .collect();
        out.reverse();
        out.truncate(limit);
        Ok(out)
    }
    /// For each of `ids`, the latest recorded provenance node with that id
    /// (the last of the latest step that carries it) and that step's
    /// number; ids never recorded have none. In any order. A store indexes
    /// it; the default reads every step.
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        let mut latest: HashMap<String, (u64, Provenance)> = HashMap::new();
        for st in self.steps(session)? {
            for p in st.provenance {
                if ids.contains(&p.provenance_id.as_str()) {
                    latest.insert(p.provenance_id.clone(), (st.seq, p));
                }
            }
        }
        Ok(latest.into_values().collect())
    }
    /// Whether the session recorded a step `step_id` of `method` (a
    /// `steps/toolCallResult`'s `request_id_ref` resolves against the
    /// session's `steps/toolCallRequest` records, hooks.md). Step ids are
    /// request ids, unique within a session, so the default asks
    /// [`steps_by_id`](Self::steps_by_id) (indexed where the store indexes
    /// it) for the latest step with the id.
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        Ok(self
            .steps_by_id(session, &[step_id])?
            .iter()
            .any(|s| s.step_id == step_id && s.method == method))
    }
    /// Counts one call against the per-turn budget `budget` (the rule's
    /// tool glob) in `turn` of the session and returns the number of calls
    /// counted there so far, this one included. `None`: the store keeps no
    /// such counters and the Guardian counts in its own process.
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        let _ = (session, turn, budget);
        Ok(None)
    }
    /// Chain head: number of entries and last hash.
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError>;
    /// Appends a chain entry.
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError>;
    /// Records a preCompact decision.
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError>;
    /// The most recent preCompact decision.
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError>;
}

/// The in-memory store's maps: keyed by ids a client chooses (session,
/// request, step and provenance ids), hashed with foldhash under a
/// per-process random seed (SipHash cost ~5x as many instructions a key).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A session's replay window for one kind of mark (request ids, or
/// nonces): every mark with the time it was made, and the marks in the
/// order they were made, so that pruning forgets the oldest ones without
/// visiting the rest (a `retain` over the map at every pruning made each
/// one cost the whole window: at 40,000 requests a second and a 5-minute
/// window, 24 M marks every 4,096 requests). A mark's text is shared
/// between the two.
#[derive(Debug, Default)]
struct ReplayWindow {
    seen: FastMap<Arc<str>, i64>,
    order: VecDeque<(i64, Arc<str>)>,
}

impl ReplayWindow {
    /// Marks `id` at `at_ms`; `false` when it is already marked.
    fn mark(&mut self, id: &str, at_ms: i64) -> bool {
        if self.seen.contains_key(id) {
            return false;
        }
        let id: Arc<str> = Arc::from(id);
        self.seen.insert(Arc::clone(&id), at_ms);
        self.order.push_back((at_ms, id));
        true
    }

    /// Forgets the marks made before `before_ms`. Marks are queued in the
    /// order they were made; the clock may step back, so a mark made
    /// earlier than one queued before it stays until that one goes (kept
    /// longer, never forgotten early). Costs the marks it forgets, not the
    /// window.
    fn prune(&mut self, before_ms: i64) {
        while let Some((at, _)) = self.order.front() {
            if *at >= before_ms {
                break;
            }
            if let Some((at, id)) = self.order.pop_front() {
                // The map holds the same time: the id is marked once.
                if self.seen.get(&*id).is_some_and(|&t| t == at) {
                    self.seen.remove(&*id);
                }
            }
        }
        if self.order.is_empty() && self.seen.capacity() > 64 {
            self.seen = FastMap::default();
            self.order = VecDeque::new();
        }
    }
}

#[derive(Debug, Default)]
struct MemSession {
    handshake: Option<SessionHandshake>,
    requests: ReplayWindow,
    nonces: ReplayWindow,
    steps: Vec<StepRecord>,
    /// Index of `steps` by step id: the latest step's position.
    by_step_id: FastMap<String, usize>,
    /// Per origin, the positions of the steps that carry it (ascending).
    by_origin: FastMap<Origin, Vec<usize>>,
    /// Per provenance id, the latest node: (step position, node position).
    nodes: FastMap<String, (usize, usize)>,
    /// Entries appended to the chain, and the last one's hash.
    chain_len: u64,
    chain_head: Option<Hash>,
    /// The canonical texts of the newest entries, at most
    /// [`MemoryStore::chain_text_kept`]: nothing decides on them (a
    /// decision reads the head), they are for tests and audits.
    chain_tail: VecDeque<(String, Hash)>,
    /// The latest preCompact decision (the only one read).
    last_compaction: Option<CompactionRecord>,
    /// Calls per (turn, budget glob).
    turn_calls: FastMap<(String, String), u64>,
}

/// How many chain entries' canonical texts a [`MemoryStore`] keeps per
/// session by default (the newest; see [`MemoryStore::chain_entries`]).
pub const CHAIN_TEXT_KEPT: usize = 1024;

/// In-memory store. What it keeps grows with what a decision needs: per
/// session the steps with their provenance and indexes, the replay window
/// (request ids and nonces; bounded by time when the Guardian checks
/// timestamps, forever otherwise: an id that can no longer be told stale
/// by its timestamp is refused for the session's life), the chain's
/// length and head, the latest preCompact decision and the turn budgets'
/// counts. The canonical text of chain entries is kept for the newest
/// [`CHAIN_TEXT_KEPT`] entries only (an in-memory store is lost on exit,
/// so it is no audit trail: the durable stores keep every entry).
#[derive(Debug)]
pub struct MemoryStore {
    sessions: FastMap<String, MemSession>,
    chain_text_kept: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            sessions: FastMap::default(),
            chain_text_kept: CHAIN_TEXT_KEPT,
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that keeps the canonical texts of the newest `n`
    /// chain entries of each session (0: none).
    pub fn with_chain_text_kept(n: usize) -> Self {
        MemoryStore {
            chain_text_kept: n,
            ..Self::default()
        }
    }

    /// How many chain entries' canonical texts are kept per session.
    pub fn chain_text_kept(&self) -> usize {
        self.chain_text_kept
    }

    /// Canonical texts of a session's newest chain entries, oldest first:
    /// all of them while the session has at most
    /// [`chain_text_kept`](Self::chain_text_kept), else that many (the
    /// first of them is entry number `chain length - kept + 1`; for tests
    /// and audits).
    pub fn chain_entries(&self, session: &str) -> Vec<(String, Hash)> {
        self.sessions
            .get(session)
            .map(|s| s.chain_tail.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The session's state, made on first use. Looked up before it is
    /// made: `entry` would copy the id into a new key on every call (three
    /// times a step).
    fn s(&mut self, session: &str) -> Result<&mut MemSession, StoreError> {
        if !self.sessions.contains_key(session) {
            self.sessions
                .insert(session.to_string(), MemSession::default());
        }
        self.sessions
            .get_mut(session)
            .ok_or_else(|| StoreError::Corrupt(format!("session {session:?} vanished")))
    }
}

impl SessionStore for MemoryStore {
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        Ok(self.sessions.get(session).and_then(|s| s.handshake.clone()))
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        self.s(session)?.handshake = Some(hs.clone());
        Ok(())
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.s(session)?.requests.mark(request_id, at_ms))
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        Ok(self.s(session)?.nonces.mark(nonce, at_ms))
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        for s in self.sessions.values_mut() {
            s.requests.prune(before_ms);
            s.nonces.prune(before_ms);
        }
        Ok(())
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        let s = self.s(session)?;
        if s.steps.binary_search_by_key(&step.seq, |st| st.seq).is_ok() {
            return Err(StoreError::StepExists {
                session: session.to_string(),
                seq: step.seq,
            });
        }
        if s.steps.last().is_some_and(|last| last.seq >= step.seq) {
            return Err(StoreError::Corrupt(format!(
                "step {} recorded after step {}",
                step.seq,
                s.steps.last().map_or(0, |l| l.seq)
            )));
        }
        let at = s.steps.len();
        s.by_step_id.insert(step.step_id.clone(), at);
        let origins: BTreeSet<Origin> = step.provenance.iter().map(|p| p.origin).collect();
        for o in origins {
            s.by_origin.entry(o).or_default().push(at);
        }
        s.nodes.reserve(step.provenance.len());
        for (i, p) in step.provenance.iter().enumerate() {
            s.nodes.insert(p.provenance_id.clone(), (at, i));
        }
        s.steps.push(step.clone());
        Ok(())
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .map(|s| s.steps.clone())
            .unwrap_or_default())
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        let Some(s) = self.sessions.get(session) else {
            return Ok(Vec::new());
        };
        let mut at: Vec<usize> = ids
            .iter()
            .filter_map(|id| s.by_step_id.get(*id).copied())
            .collect();
        at.sort_unstable();
        at.dedup();
        Ok(at
            .into_iter()
            .filter_map(|i| s.steps.get(i).cloned())
            .collect())
    }
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        let Some(s) = self.sessions.get(session) else {
            return Ok(Vec::new());
        };
        // Positions of steps numbered in (after, before): steps are kept in
        // ascending order of their numbers.
        let lo = s.steps.partition_point(|st| st.seq <= after);
        let hi = before.map_or(s.steps.len(), |b| s.steps.partition_point(|st| st.seq < b));
        let mut at: Vec<usize> = Vec::new();
        for o in origins {
            if let Some(list) = s.by_origin.get(o) {
                let end = list.partition_point(|&i| i < hi);
                let start = list
                    .partition_point(|&i| i < lo)
                    .max(end.saturating_sub(limit));
                at.extend_from_slice(&list[start..end]);
            }
        }
        at.sort_unstable_by(|a, b| b.cmp(a));
        at.dedup();
        at.truncate(limit);
        Ok(at
            .into_iter()
            .filter_map(|i| s.steps.get(i).cloned())
            .collect())
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        let Some(s) = self.sessions.get(session) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            if let Some(&(st, i)) = s.nodes.get(*id)
                && let Some(step) = s.steps.get(st)
                && let Some(p) = step.provenance.get(i)
            {
                out.push((step.seq, p.clone()));
            }
        }
        Ok(out)
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        // Step ids are request ids, unique within a session (replays are
        // refused before a step is recorded), so the latest step with the
        // id is the only one.
        Ok(self.sessions.get(session).is_some_and(|s| {
            s.by_step_id
                .get(step_id)
                .and_then(|&i| s.steps.get(i))
                .is_some_and(|st| st.method == method)
        }))
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        let n = self
            .s(session)?
            .turn_calls
            .entry((turn.to_string(), budget.to_string()))
            .or_insert(0);
        *n += 1;
        Ok(Some(*n))
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .and_then(|s| s.chain_head.map(|h| (s.chain_len, h))))
    }
    fn append_chain(
        &mut self,
        session: &str,
        _seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        let kept = self.chain_text_kept;
        let s = self.s(session)?;
        s.chain_len += 1;
        s.chain_head = Some(*hash);
        if kept > 0 {
            if s.chain_tail.len() >= kept {
                s.chain_tail.pop_front();
            }
            s.chain_tail.push_back((canonical.to_string(), *hash));
        }
        Ok(())
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        self.s(session)?.last_compaction = Some(rec.clone());
        Ok(())
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .and_then(|s| s.last_compaction.clone()))
    }
}

impl StoreError {
    /// Wraps a backend's own error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend(Box::new(e))
    }
}

impl<T: SessionStore + ?Sized> SessionStore for Box<T> {
    fn begin(&mut self) -> Result<(), StoreError> {
        (**self).begin()
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        (**self).commit()
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        (**self).rollback()
    }
    fn lock_sessions(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        (**self).lock_sessions(sessions)
    }
    fn expect_marks(
        &mut self,
        session: &str,
        request_ids: &[&str],
        nonces: &[&str],
    ) -> Result<(), StoreError> {
        (**self).expect_marks(session, request_ids, nonces)
    }
    fn wants_marks_ahead(&self) -> bool {
        (**self).wants_marks_ahead()
    }
    fn another(&self) -> Option<Result<Box<dyn SessionStore + Send>, StoreError>> {
        (**self).another()
    }
    fn take_stale(&mut self) -> bool {
        (**self).take_stale()
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        (**self).handshake(session)
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        (**self).set_handshake(session, hs)
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        (**self).mark_request(session, request_id, at_ms)
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        (**self).mark_nonce(session, nonce, at_ms)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        (**self).prune_requests(before_ms)
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        (**self).record_step(session, step)
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        (**self).steps(session)
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        (**self).steps_by_id(session, ids)
    }
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        (**self).steps_with_origin(session, origins, after, before, limit)
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        (**self).latest_nodes(session, ids)
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        (**self).has_step(session, step_id, method)
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        (**self).count_turn_call(session, turn, budget)
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        (**self).chain_head(session)
    }
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        (**self).append_chain(session, seq, canonical, hash)
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        (**self).record_compaction(session, rec)
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        (**self).last_compaction(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_marks_are_per_session_and_pruned() {
        let mut s = MemoryStore::new();
        assert!(matches!(s.mark_request("s1", "a", 10), Ok(true)));
        assert!(matches!(s.mark_request("s1", "a", 20), Ok(false)));
        assert!(
            matches!(s.mark_request("s2", "a", 20), Ok(true)),
            "another session"
        );
        assert!(matches!(s.mark_request("s1", "b", 30), Ok(true)));
        assert!(matches!(s.mark_nonce("s1", "n", 10), Ok(true)));
        assert!(matches!(s.mark_nonce("s1", "n", 11), Ok(false)));
        assert!(matches!(s.mark_nonce("s2", "n", 11), Ok(true)));
        assert!(
            matches!(s.mark_nonce("s1", "a", 11), Ok(true)),
            "nonces and ids apart"
        );
        assert!(s.prune_requests(20).is_ok());
        assert!(matches!(s.mark_request("s1", "a", 40), Ok(true)));
        assert!(matches!(s.mark_request("s1", "b", 40), Ok(false)));
        assert!(matches!(s.mark_nonce("s1", "n", 40), Ok(true)));
    }

    #[test]
    fn pruning_forgets_the_oldest_marks_and_keeps_later_ones() {
        let mut s = MemoryStore::new();
        for i in 0..10_000i64 {
            assert!(matches!(s.mark_request("s", &format!("r{i}"), i), Ok(true)));
        }
        // The clock stepped back: a mark made at 5 after one made at 9,999.
        assert!(matches!(s.mark_request("s", "late", 5), Ok(true)));
        assert!(s.prune_requests(9_000).is_ok());
        assert!(
            matches!(s.mark_request("s", "r8999", 1), Ok(true)),
            "forgotten"
        );
        assert!(matches!(s.mark_request("s", "r9000", 1), Ok(false)), "kept");
        assert!(matches!(s.mark_request("s", "r9999", 1), Ok(false)), "kept");
        // Queued after a later mark: kept longer, never forgotten early.
        assert!(matches!(s.mark_request("s", "late", 1), Ok(false)));
        assert!(s.prune_requests(20_000).is_ok());
        assert!(matches!(s.mark_request("s", "late", 1), Ok(true)));
        assert!(matches!(s.mark_request("s", "r9999", 1), Ok(true)));
        // Re-marked ids live on from their new mark.
        assert!(s.prune_requests(1).is_ok());
        assert!(matches!(s.mark_request("s", "late", 30_000), Ok(false)));
    }

    #[test]
    fn chain_head_counts_every_entry_and_texts_are_bounded() {
        let mut s = MemoryStore::with_chain_text_kept(3);
        assert!(matches!(s.chain_head("s"), Ok(None)));
        for i in 1..=5u8 {
            assert!(
                s.append_chain("s", u64::from(i), &format!("e{i}"), &[i; 32])
                    .is_ok()
            );
        }
        assert!(matches!(s.chain_head("s"), Ok(Some((5, h))) if h == [5; 32]));
        let kept: Vec<String> = s.chain_entries("s").into_iter().map(|(t, _)| t).collect();
        assert_eq!(kept, ["e3", "e4", "e5"]);
        let mut none = MemoryStore::with_chain_text_kept(0);
        assert!(none.append_chain("s", 1, "e1", &[1; 32]).is_ok());
        assert!(matches!(none.chain_head("s"), Ok(Some((1, h))) if h == [1; 32]));
        assert!(none.chain_entries("s").is_empty());
        assert_eq!(MemoryStore::new().chain_text_kept(), CHAIN_TEXT_KEPT);
    }

    #[test]
    fn the_latest_compaction_is_the_one_kept() {
        let mut s = MemoryStore::new();
        assert!(matches!(s.last_compaction("s"), Ok(None)));
        for (id, v) in [("c1", Verdict::Deny), ("c2", Verdict::Allow)] {
            let rec = CompactionRecord {
                step_id: id.into(),
                entries: vec!["e".into()],
                verdict: v,
                reasoning: None,
                reason_codes: Vec::new(),
            };
            assert!(s.record_compaction("s", &rec).is_ok());
        }
        let last = s.last_compaction("s").ok().flatten();
        assert_eq!(
            last.map(|r| (r.step_id, r.verdict)),
            Some(("c2".into(), Verdict::Allow))
        );
    }

    #[test]
    fn handshake_keeps_negotiated_methods() {
        let mut s = MemoryStore::new();
        assert!(matches!(s.handshake("s1"), Ok(None)));
        let hs = SessionHandshake {
            version: "0.1.0".into(),
            methods: Some(vec!["steps/userMessage".into()]),
        };
        assert!(s.set_handshake("s1", &hs).is_ok());
        let got = s.handshake("s1").ok().flatten();
        assert_eq!(got.as_ref(), Some(&hs));
        assert!(got.as_ref().is_some_and(|h| h.allows("steps/userMessage")));
        assert!(!got.as_ref().is_some_and(|h| h.allows("steps/sessionEnd")));
        let legacy = SessionHandshake {
            version: "0.1.0".into(),
            methods: None,
        };
        assert!(legacy.allows("steps/sessionEnd"));
    }
}
