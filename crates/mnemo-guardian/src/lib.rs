//! # mnemo-guardian
//!
//! The Agent Control Standard (ACS v0.1.0) Guardian of mnemo for compaction.
//!
//! **Owns:** the typed model and validation of ACS messages ([`model`],
//! [`validate`]), RFC 8785 canonical JSON ([`jcs`]), the per-session hash
//! chain ([`chain`]), the local trust and compaction policy ([`policy`]),
//! the compaction decision and its in-process API ([`decide`]), the JSON-RPC
//! core ([`protocol`]), session state behind a storage trait ([`store`],
//! [`sqlite`]), Content-Length framing ([`framing`]), HTTP/1.1 request
//! parsing ([`http`]), the stdio/HTTP/one-shot
//! transports ([`server`]), a client for a remote Guardian ([`client`]) and
//! the Claude Code and Codex CLI PreCompact adapters ([`adapters`]).
//!
//! **Must never:** panic or allocate unboundedly on anything a request, a
//! file or a user controls; let a deny be final (every deny names what ends
//! it); raise trust through compaction (a summary is never more trusted than
//! its lineage); answer `deny` to `steps/postCompact`; trust provenance that
//! the policy does not trust. Pure logic lives in modules without I/O; only
//! [`sqlite`], [`server`], [`client`] and [`adapters::io`] touch files,
//! sockets and streams.

pub mod adapters;
pub mod chain;
pub mod client;
pub mod decide;
pub mod framing;
pub mod http;
pub mod jcs;
pub mod model;
pub mod policy;
pub mod protocol;
pub mod server;
pub mod sqlite;
pub mod store;
pub mod time;
pub mod validate;

pub use decide::{CompactionInput, Decision, EntryProvenance, check_compaction, decide_compaction};
pub use model::{Origin, Provenance, Trigger, Verdict};
pub use policy::{Policy, PolicyError, Trust};
pub use protocol::{Guardian, GuardianConfig, Transport};
pub use sqlite::SqliteStore;
pub use store::{MemoryStore, SessionStore};
