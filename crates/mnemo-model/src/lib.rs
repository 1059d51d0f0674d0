//! The data mnemo works on: subtask summary records, their parsers, and the
//! configuration.
//!
//! This crate owns the *input model*. A summary arrives as Pantheon's markdown
//! `## subtask_summary` block, as JSON or as YAML, one record or a list
//! ([`parse::parse_records`]). Layer 1 of the seed's §13 is enforced here:
//! only metadata fields become part of a [`SummaryRecord`]; anything else is
//! dropped and reported in [`SummaryRecord::dropped`], never copied.
//!
//! It also owns [`Config`], every table of the seed as a TOML document with
//! the seed's values as built-in defaults.
//!
//! This crate never does I/O (callers hand it text), never panics on input,
//! and never keeps a field that Layer 1 refused.

mod builtin;
pub mod config;
pub mod date;
pub mod hundredths;
pub mod parse;
pub mod record;

pub use config::{Config, ConfigError, Matching, agent_key};
pub use hundredths::Hundredths;
pub use parse::{Format, ParseError, parse_records};
pub use record::{DroppedField, Origin, Provenance, Status, SummaryRecord, Verdict};
