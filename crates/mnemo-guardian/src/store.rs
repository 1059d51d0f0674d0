//! Session state behind the [`SessionStore`] trait: handshakes (with the
//! methods they negotiated), seen request ids and nonces (replay, scoped to
//! a session as ACS §10.3 says), recorded steps with their provenance, the
//! hash chain head and preCompact decisions. [`MemoryStore`] is for tests and one-shot use;
//! `mnemo_guardian_store::SqliteStore` is the default, in a file.

use crate::chain::Hash;
use crate::model::{Origin, Provenance, Verdict};
use std::collections::{BTreeSet, HashMap};

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

#[derive(Debug, Default)]
struct MemSession {
    handshake: Option<SessionHandshake>,
    requests: FastMap<String, i64>,
    nonces: FastMap<String, i64>,
    steps: Vec<StepRecord>,
    /// Index of `steps` by step id: the latest step's position.
    by_step_id: FastMap<String, usize>,
    /// Per origin, the positions of the steps that carry it (ascending).
    by_origin: FastMap<Origin, Vec<usize>>,
    /// Per provenance id, the latest node: (step position, node position).
    nodes: FastMap<String, (usize, usize)>,
    chain: Vec<(String, Hash)>,
    compactions: Vec<CompactionRecord>,
    /// Calls per (turn, budget glob).
    turn_calls: FastMap<(String, String), u64>,
}

/// In-memory store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: FastMap<String, MemSession>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Canonical texts of a session's chain entries (for tests and audits).
    pub fn chain_entries(&self, session: &str) -> Vec<(String, Hash)> {
        self.sessions
            .get(session)
            .map(|s| s.chain.clone())
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
        let seen = &mut self.s(session)?.requests;
        if seen.contains_key(request_id) {
            return Ok(false);
        }
        seen.insert(request_id.to_string(), at_ms);
        Ok(true)
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        let seen = &mut self.s(session)?.nonces;
        if seen.contains_key(nonce) {
            return Ok(false);
        }
        seen.insert(nonce.to_string(), at_ms);
        Ok(true)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        for s in self.sessions.values_mut() {
            s.requests.retain(|_, at| *at >= before_ms);
            s.nonces.retain(|_, at| *at >= before_ms);
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
            .and_then(|s| s.chain.last().map(|(_, h)| (s.chain.len() as u64, *h))))
    }
    fn append_chain(
        &mut self,
        session: &str,
        _seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        self.s(session)?.chain.push((canonical.to_string(), *hash));
        Ok(())
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        self.s(session)?.compactions.push(rec.clone());
        Ok(())
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .and_then(|s| s.compactions.last().cloned()))
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
