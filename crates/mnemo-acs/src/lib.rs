//! # mnemo-acs
//!
//! The Agent Control Standard (ACS v0.1.0) as data, for mnemo's compaction
//! Guardian and its clients.
//!
//! **Owns:** the typed model of the standard's messages ([`model`]), their
//! validation against every constraint of the standard's JSON Schemas
//! ([`validate`]), RFC 8785 canonical JSON ([`jcs`]), the per-session audit
//! hash chain ([`chain`]), the HMAC-SHA256 signatures of §10 with their
//! per-session HKDF keys ([`sign`]) and RFC 3339 time handling ([`time`]).
//!
//! **Must never:** do I/O, keep state, decide anything (trust, allow or deny
//! belong to `mnemo-guardian`), or panic on anything a message contains.
//! Everything here is a pure function of its input, so a client and a
//! server of the standard agree byte for byte.

pub mod chain;
pub mod jcs;
pub mod model;
pub mod sign;
pub mod time;
pub mod validate;

pub use model::{Origin, Provenance, Trigger, Verdict};
