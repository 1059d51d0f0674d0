//! # mnemo-guardian-server
//!
//! The compaction Guardian's transports (the I/O edge of `mnemo-guardian`).
//!
//! **Owns:** Content-Length framing ([`framing`]), the HTTP server on
//! `hyper` ([`http`]: a decider decides whatever is queued in one store
//! transaction, by default on a thread of its own; for PostgreSQL
//! optionally several, sharded by session; total memory bounded), the stdio server and the
//! one-shot `check` ([`server`]), TLS with rustls ([`tls`]), and a client
//! for a remote Guardian over HTTP, HTTPS or stdio ([`client`], its stdio
//! transport in [`stdio_client`]), with the postures that resolve its
//! failures and its audit record ([`posture`]).
//!
//! **Must never:** decide (every answer comes from `Guardian::handle`),
//! buffer without bound for a client that sends or never reads, or let one
//! malformed frame cost the next valid one.

pub mod client;
pub mod framing;
pub mod http;
pub mod posture;
pub mod server;
pub mod stats;
pub mod stdio_client;
pub mod tls;
pub mod trace;

pub use mnemo_guardian_store::{DynStore, GuardOptions, OpenError};
pub use server::ServeError;
