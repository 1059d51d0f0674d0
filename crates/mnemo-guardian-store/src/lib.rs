//! # mnemo-guardian-store
//!
//! Where the compaction Guardian keeps its session state, and how a
//! configured Guardian is opened.
//!
//! **Owns:** the SQLite implementation of `mnemo_guardian::SessionStore`
//! ([`sqlite`]: sessions, the replay window, steps with their provenance,
//! the hash chain, preCompact decisions, per-turn budget counters; WAL checkpoints off the request
//! path for long-running servers), the PostgreSQL one ([`postgres`]: the
//! same state shared by several Guardian processes, a session locked by
//! the transaction that decides it; versioned migrations), the default
//! store location, and
//! [`open`]: loading a policy file, choosing the store and building a
//! `Guardian` (shared by the servers, `guard check` and the host hooks).
//!
//! Every store it opens is wrapped in [`scrubbed::Scrubbed`]: free text
//! (`source_id`s) is scrubbed before it is kept and identifiers that
//! contain a secret are refused, so no secret reaches the database.
//!
//! **Must never:** decide anything (the Guardian decides; a store only keeps
//! what it is given), speak a transport, or lose an acknowledged write: every
//! method that returns `Ok` has made its change durable within the current
//! transaction.

mod decode;
mod keywords;
pub mod open;
pub mod postgres;
pub mod read;
pub mod scrubbed;
pub mod sqlite;

pub use open::{
    DynStore, GuardOptions, OpenError, STORE_ENV, default_store_path, load_policy, open_guardian,
    open_store, store_location,
};
pub use postgres::PostgresStore;
pub use scrubbed::{Scrubbed, SecretRefused};
pub use sqlite::SqliteStore;
