//! # mnemo-guardian
//!
//! The compaction Guardian of mnemo: an Agent Control Standard (ACS v0.1.0)
//! Guardian for `steps/preCompact` and `steps/postCompact`.
//!
//! **Owns:** the local trust and compaction policy ([`policy`]), the
//! compaction decision and its in-process API ([`decide`]), the preCompact
//! decision read through the store's indexes ([`precompact`]), the JSON-RPC core
//! with its envelope checks and session bookkeeping ([`protocol`]), and the
//! [`SessionStore`] trait with an in-memory store ([`store`]). The standard's
//! model, validation, canonical JSON and hash chain come from `mnemo-acs` and
//! are re-exported here under their old paths.
//!
//! **Must never:** do I/O of its own (stores are behind [`SessionStore`];
//! the SQLite store lives in `mnemo-guardian-store`, transports in
//! `mnemo-guardian-server`, host adapters in `mnemo-hooks`); panic or
//! allocate unboundedly on anything a request controls; let a deny be final
//! (every deny names what ends it); raise trust through compaction (a summary
//! is never more trusted than its lineage); answer `deny` to
//! `steps/postCompact`; trust provenance that the policy does not trust.

pub mod decide;
pub mod policy;
pub mod precompact;
pub mod protocol;
pub mod store;

pub use mnemo_acs::{chain, jcs, model, sign, time, validate};

pub use decide::{CompactionInput, Decision, EntryProvenance, check_compaction, decide_compaction};
pub use model::{Origin, Provenance, Trigger, Verdict};
pub use policy::{Policy, PolicyError, Trust};
pub use protocol::{Guardian, GuardianConfig, Transport};
pub use store::{MemoryStore, SessionStore};
