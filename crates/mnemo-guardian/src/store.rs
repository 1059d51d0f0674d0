//! Session state behind the [`SessionStore`] trait: handshakes, seen request
//! ids (replay), recorded steps with their provenance, the hash chain head and
//! preCompact decisions. [`MemoryStore`] is for tests and one-shot use;
//! `mnemo_guardian_store::SqliteStore` is the default, in a file.

use crate::chain::Hash;
use crate::model::{Provenance, Verdict};
use std::collections::HashMap;

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

/// A preCompact decision, kept to check the matching postCompact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRecord {
    /// The preCompact's request id.
    pub step_id: String,
    /// Its `entries_to_compact`.
    pub entries: Vec<String>,
    /// The verdict given.
    pub verdict: Verdict,
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
    /// Whether the session completed `handshake/hello`.
    fn is_handshaken(&mut self, session: &str) -> Result<bool, StoreError>;
    /// Marks the session as handshaken with a version.
    fn set_handshaken(&mut self, session: &str, version: &str) -> Result<(), StoreError>;
    /// Records a request id; `false` when it was already seen (replay).
    fn mark_request(&mut self, request_id: &str, at_ms: i64) -> Result<bool, StoreError>;
    /// Forgets request ids recorded before `before_ms` (they can no longer
    /// be replayed: their timestamps are outside the window).
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        let _ = before_ms;
        Ok(())
    }
    /// Appends a step.
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError>;
    /// All steps of a session, in order.
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError>;
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

#[derive(Debug, Default)]
struct MemSession {
    handshaken: bool,
    steps: Vec<StepRecord>,
    chain: Vec<(String, Hash)>,
    compactions: Vec<CompactionRecord>,
}

/// In-memory store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: HashMap<String, MemSession>,
    requests: HashMap<String, i64>,
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

    fn s(&mut self, session: &str) -> &mut MemSession {
        self.sessions.entry(session.to_string()).or_default()
    }
}

impl SessionStore for MemoryStore {
    fn is_handshaken(&mut self, session: &str) -> Result<bool, StoreError> {
        Ok(self.sessions.get(session).is_some_and(|s| s.handshaken))
    }
    fn set_handshaken(&mut self, session: &str, _version: &str) -> Result<(), StoreError> {
        self.s(session).handshaken = true;
        Ok(())
    }
    fn mark_request(&mut self, request_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        if self.requests.contains_key(request_id) {
            return Ok(false);
        }
        self.requests.insert(request_id.to_string(), at_ms);
        Ok(true)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        self.requests.retain(|_, at| *at >= before_ms);
        Ok(())
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.s(session).steps.push(step.clone());
        Ok(())
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .map(|s| s.steps.clone())
            .unwrap_or_default())
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
        self.s(session).chain.push((canonical.to_string(), *hash));
        Ok(())
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        self.s(session).compactions.push(rec.clone());
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
    fn is_handshaken(&mut self, session: &str) -> Result<bool, StoreError> {
        (**self).is_handshaken(session)
    }
    fn set_handshaken(&mut self, session: &str, version: &str) -> Result<(), StoreError> {
        (**self).set_handshaken(session, version)
    }
    fn mark_request(&mut self, request_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        (**self).mark_request(request_id, at_ms)
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
    fn replay_marks_and_pruning() {
        let mut s = MemoryStore::new();
        assert!(matches!(s.mark_request("a", 10), Ok(true)));
        assert!(matches!(s.mark_request("a", 20), Ok(false)));
        assert!(matches!(s.mark_request("b", 30), Ok(true)));
        assert!(s.prune_requests(20).is_ok());
        assert!(matches!(s.mark_request("a", 40), Ok(true)));
        assert!(matches!(s.mark_request("b", 40), Ok(false)));
    }
}
